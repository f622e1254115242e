//! Runs the whole SPMD test suite in one world, on whatever transport and PE count the
//! environment selects (e.g. `RHIZOME_PES=4 cargo run --example spmd_tests`, or later
//! under `mpirun -np 4` with the `mpi` feature). Exits non-zero if any test fails.
//!
//! Usage: `spmd_tests [NAME_FILTER] [--agg BYTES]`; `--agg` sets the size of the
//! aggregation buffers (tiny sizes make nearly every message flush).

#[path = "../tests/suite/mod.rs"]
mod suite;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut only: Option<String> = None;
    let mut builder = rhizome::World::builder();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--agg" {
            match args.next().and_then(|v| v.parse().ok()) {
                Some(n) => builder = builder.aggregation_bytes(n),
                None => {
                    eprintln!("spmd_tests: --agg needs a number of bytes");
                    return ExitCode::from(2);
                }
            }
        } else {
            only = Some(a);
        }
    }
    let r = builder.run(|ctx| {
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
