//! Runs an SPMD suite of the collections (`tests/dht_suite`, `tests/fc_suite`) in one
//! world, on whatever transport and PE count the environment selects
//! (`RHIZOME_PES=4 cargo run --example collections_tests -- fc`, or `mpirun -np 4` with
//! the `mpi` feature). Exits non-zero if a test fails.
//!
//! Usage: `collections_tests dht|fc [NAME_FILTER]`.

#[path = "../tests/dht_suite/mod.rs"]
mod dht_suite;
#[path = "../tests/fc_suite/mod.rs"]
mod fc_suite;
#[path = "../../rhizome/examples/support/suite.rs"]
mod support;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let suite = args.next();
    let tests = match suite.as_deref() {
        Some("dht") => dht_suite::TESTS,
        Some("fc") => fc_suite::TESTS,
        _ => {
            eprintln!("usage: collections_tests dht|fc [NAME_FILTER]");
            return std::process::ExitCode::from(2);
        }
    };
    let only = args.next();
    let r = rhizome::World::builder().run(|ctx| support::run_tests(ctx, tests, only.as_deref()));
    support::exit_code("collections_tests", r)
}
