//! Runs the hash table's SPMD suite (`tests/dht_suite`) in one world, on whatever
//! transport and PE count the environment selects (`RHIZOME_PES=4 cargo run --example
//! dht_tests`, or `mpirun -np 4` with the `mpi` feature). Exits non-zero if a test fails.
//!
//! Usage: `dht_tests [NAME_FILTER]`.

#[path = "../tests/dht_suite/mod.rs"]
mod dht_suite;
#[path = "../../rhizome/examples/support/suite.rs"]
mod support;

fn main() -> std::process::ExitCode {
    let only = std::env::args().nth(1);
    let r = rhizome::World::builder()
        .run(|ctx| support::run_tests(ctx, dht_suite::TESTS, only.as_deref()));
    support::exit_code("dht_tests", r)
}
