//! Runs the whole SPMD test suite in one world, on whatever transport and PE count the
//! environment selects (e.g. `RHIZOME_PES=4 cargo run --example spmd_tests`, or later
//! under `mpirun -np 4` with the `mpi` feature). Exits non-zero if any test fails.
//!
//! Usage: `spmd_tests [NAME_FILTER] [--agg BYTES]`; `--agg` sets the size of the
//! aggregation buffers (tiny sizes make nearly every message flush).

#[path = "../tests/suite/mod.rs"]
mod suite;
#[path = "support/suite.rs"]
mod support;

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
    let r = builder.run(|ctx| support::run_tests(ctx, suite::TESTS, only.as_deref()));
    support::exit_code("spmd_tests", r)
}
