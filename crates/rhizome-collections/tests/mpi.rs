//! The hash table's SPMD suite and the flat-combining suite (`examples/collections_tests`)
//! on the `mpi` transport, under `mpirun -np 2` and `-np 4`: one-sided access and
//! delegates then really cross processes. Needs the cargo feature `mpi`, Open MPI's
//! `mpirun` on the `PATH`, and the example built
//! (`cargo build --release -p rhizome-collections --features mpi --examples`).
//!
//! Each launch has a generous time limit so that a hang fails the test instead of
//! blocking it; nothing here measures time.
#![cfg(feature = "mpi")]

mod dht_suite;
mod fc_suite;
#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome/tests/support/mpi_suite.rs"]
mod mpi_suite;

use std::time::Duration;

/// A named SPMD test body, as the suites list them.
type Test = (&'static str, fn(&rhizome::Ctx));

/// Launches the suite `suite` under `mpirun -np np` and expects an `ok` line for every
/// test of it.
fn suite_on(suite: &str, tests: &[Test], np: usize) {
    let names = tests.iter().map(|(name, _)| *name);
    let limit = Duration::from_secs(240);
    mpi_suite::expect_suite("collections_tests", &[suite], np, names, limit);
}

#[test]
fn dht_suite_on_2_and_4_ranks() {
    for np in [2, 4] {
        suite_on("dht", dht_suite::TESTS, np);
    }
}

#[test]
fn dht_suite_with_rma_windows() {
    // On one node the ranks map each other's partitions (shared windows) by default; the
    // path of ranks on several nodes, MPI RMA for every access, forced here.
    let names = dht_suite::TESTS.iter().map(|(name, _)| *name);
    let limit = Duration::from_secs(240);
    let env = [("RHIZOME_MPI_RMA", "windows")];
    mpi_suite::expect_suite_env("collections_tests", &["dht"], &env, 2, names, limit);
}

#[test]
fn fc_suite_on_2_and_4_ranks() {
    for np in [2, 4] {
        suite_on("fc", fc_suite::TESTS, np);
    }
}
