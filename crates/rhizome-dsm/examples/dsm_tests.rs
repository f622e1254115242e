//! Runs the DSM's SPMD suite (`tests/suite`) in one world, on whatever transport and PE
//! count the environment selects (`RHIZOME_PES=4 cargo run --example dsm_tests`, or
//! `mpirun -np 2` with the `mpi` feature). Exits non-zero if a test fails.
//!
//! Usage: `dsm_tests [NAME_FILTER]`.

#[path = "../tests/suite/mod.rs"]
mod suite;
#[path = "../../rhizome/examples/support/suite.rs"]
mod support;

fn main() -> std::process::ExitCode {
    let only = std::env::args().nth(1);
    let r =
        rhizome::World::builder().run(|ctx| support::run_tests(ctx, suite::TESTS, only.as_deref()));
    support::exit_code("dsm_tests", r)
}
