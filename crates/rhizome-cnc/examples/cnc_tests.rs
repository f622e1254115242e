//! Runs the CnC suite (`tests/cnc_suite`) in one world, on whatever transport and PE
//! count the environment selects (`RHIZOME_PES=4 cargo run --example cnc_tests`, or
//! `mpirun -np 4` with the `mpi` feature). Exits non-zero if a test fails.
//!
//! Usage: `cnc_tests [NAME_FILTER]`.

#[path = "../tests/cnc_suite/mod.rs"]
mod cnc_suite;
#[path = "../../rhizome/examples/support/suite.rs"]
mod support;

fn main() -> std::process::ExitCode {
    let only = std::env::args().nth(1);
    let r = rhizome::World::builder()
        .run(|ctx| support::run_tests(ctx, cnc_suite::TESTS, only.as_deref()));
    support::exit_code("cnc_tests", r)
}
