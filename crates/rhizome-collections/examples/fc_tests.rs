//! Runs the flat-combining SPMD suite (`tests/fc_suite`) in one world, on whatever
//! transport and PE count the environment selects (`RHIZOME_PES=4 cargo run --example
//! fc_tests`, or `mpirun -np 4` with the `mpi` feature). Exits non-zero if a test fails.
//!
//! Usage: `fc_tests [NAME_FILTER]`.

#[path = "../tests/fc_suite/mod.rs"]
mod fc_suite;
#[path = "../../rhizome/examples/support/suite.rs"]
mod support;

fn main() -> std::process::ExitCode {
    let only = std::env::args().nth(1);
    let r = rhizome::World::builder()
        .run(|ctx| support::run_tests(ctx, fc_suite::TESTS, only.as_deref()));
    support::exit_code("fc_tests", r)
}
