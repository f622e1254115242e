//! Runs the whole SPMD test suite in one world, on whatever transport and PE count the
//! environment selects (e.g. `RHIZOME_PES=4 cargo run --example spmd_tests`, or later
//! under `mpirun -np 4` with the `mpi` feature). Exits non-zero if any test fails.

#[path = "../tests/suite/mod.rs"]
mod suite;

use std::process::ExitCode;

fn main() -> ExitCode {
    let only: Option<String> = std::env::args().nth(1);
    let r = rhizome::World::run(|ctx| {
        for (name, body) in suite::TESTS {
            if only.as_deref().is_some_and(|o| !name.contains(o)) {
                continue;
            }
            ctx.barrier();
            body(ctx);
            ctx.barrier();
            if ctx.my_pe() == 0 {
                println!(
                    "ok   {name} ({} PEs, {})",
                    ctx.num_pes(),
                    ctx.transport_name()
                );
            }
        }
    });
    match r {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spmd_tests: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
