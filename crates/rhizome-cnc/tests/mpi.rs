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

use std::process::Command;
use std::time::Duration;

/// Launches the suite under `mpirun -np np` and expects an `ok` line for every test.
fn suite_on(np: usize) {
    // target/<profile>/deps/mpi-<hash> -> target/<profile>/examples/cnc_tests
    let exe = std::env::current_exe().expect("test binary path");
    let program = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .join("examples/cnc_tests");
    assert!(
        program.exists(),
        "{} is missing: build it with `cargo build --examples --features mpi` (same profile)",
        program.display()
    );
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .arg(&program);
    launch::clear_rhizome_env(&mut cmd);
    let o = launch::run(
        cmd,
        &format!("mpirun -np {np} cnc_tests (is Open MPI installed?)"),
        Duration::from_secs(240),
    );
    assert_eq!(o.code, Some(0), "{}", o.context());
    for (name, _) in cnc_suite::TESTS {
        let line = format!("ok   {name} ({np} PEs, mpi)");
        assert!(
            o.stdout.lines().any(|l| l == line),
            "no {line:?}: {}",
            o.context()
        );
    }
}

/// One test runs both launches in turn: the ranks busy-poll, and the machine may have few
/// cores.
#[test]
fn cnc_suite_on_2_and_4_ranks() {
    for np in [2, 4] {
        suite_on(np);
    }
}
