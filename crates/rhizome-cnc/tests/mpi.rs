//! The CnC suite (`examples/cnc_tests`) on the `mpi` transport, under `mpirun -np 2` and
//! `-np 4`: puts, item requests and deliveries, and step instances then really cross
//! processes. Needs the cargo feature `mpi`, Open MPI's `mpirun` on the `PATH`, and the
//! example built (`cargo build --release -p rhizome-cnc --features mpi --examples`).
//!
//! Each launch has a generous time limit so that a hang (say, a get never reported at
//! quiescence) fails the test instead of blocking it; nothing here measures time.
#![cfg(feature = "mpi")]

mod cnc_suite;
#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome/tests/support/mpi_suite.rs"]
mod mpi_suite;

use std::time::Duration;

#[test]
fn cnc_suite_on_2_and_4_ranks() {
    for np in [2, 4] {
        let names = cnc_suite::TESTS.iter().map(|(name, _)| *name);
        mpi_suite::expect_suite("cnc_tests", &[], np, names, Duration::from_secs(240));
    }
}
