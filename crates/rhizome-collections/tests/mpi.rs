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

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// A named SPMD test body, as the suites list them.
type Test = (&'static str, fn(&rhizome::Ctx));

/// One launch at a time: the machine may have few cores and the ranks busy-poll.
static LAUNCH: Mutex<()> = Mutex::new(());

/// Launches the suite `suite` under `mpirun -np np` and expects an `ok` line for every
/// test of it.
fn suite_on(suite: &str, tests: &[Test], np: usize) {
    let _one = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
    // target/<profile>/deps/mpi-<hash> -> target/<profile>/examples/collections_tests
    let exe = std::env::current_exe().expect("test binary path");
    let program = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .join("examples/collections_tests");
    assert!(
        program.exists(),
        "{} is missing: build it with `cargo build --examples --features mpi` (same profile)",
        program.display()
    );
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .arg(&program)
        .arg(suite);
    launch::clear_rhizome_env(&mut cmd);
    let o = launch::run(
        cmd,
        &format!("mpirun -np {np} collections_tests {suite} (is Open MPI installed?)"),
        Duration::from_secs(240),
    );
    assert_eq!(o.code, Some(0), "{}", o.context());
    for (name, _) in tests {
        let line = format!("ok   {name} ({np} PEs, mpi)");
        assert!(
            o.stdout.lines().any(|l| l == line),
            "no {line:?}: {}",
            o.context()
        );
    }
}

#[test]
fn dht_suite_on_2_and_4_ranks() {
    for np in [2, 4] {
        suite_on("dht", dht_suite::TESTS, np);
    }
}

#[test]
fn fc_suite_on_2_and_4_ranks() {
    for np in [2, 4] {
        suite_on("fc", fc_suite::TESTS, np);
    }
}
