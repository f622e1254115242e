//! Launching an example that runs an SPMD suite (`examples/support/suite.rs`) under
//! `mpirun -np N`, with a hang limit, and expecting its `ok   NAME (N PEs, mpi)` line for
//! every test. Shared by the launch tests of `rhizome-collections` and `rhizome-cnc`
//! (`tests/mpi.rs`), which include it by path beside `launch.rs` (as `mod launch`).

use crate::launch;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// One launch at a time: the machine may have few cores and the ranks busy-poll.
static LAUNCH: Mutex<()> = Mutex::new(());

/// Launches `example args` (built beside the running test binary, same profile) under
/// `mpirun -np np`; it must exit 0 within `limit` and print an `ok` line for each name.
pub fn expect_suite<'a>(
    example: &str,
    args: &[&str],
    np: usize,
    names: impl IntoIterator<Item = &'a str>,
    limit: Duration,
) {
    expect_suite_env(example, args, &[], np, names, limit);
}

/// [`expect_suite`] with `env` set for the ranks (e.g. `RHIZOME_MPI_RMA`).
pub fn expect_suite_env<'a>(
    example: &str,
    args: &[&str],
    env: &[(&str, &str)],
    np: usize,
    names: impl IntoIterator<Item = &'a str>,
    limit: Duration,
) {
    let _one = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/examples/<example>
    let exe = std::env::current_exe().expect("test binary path");
    let program = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .join("examples")
        .join(example);
    assert!(
        program.exists(),
        "{} is missing: build it with `cargo build --examples --features mpi` (same profile)",
        program.display()
    );
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .arg(&program)
        .args(args);
    launch::clear_rhizome_env(&mut cmd);
    cmd.envs(env.iter().copied());
    let what = format!(
        "mpirun -np {np} {example} {} {env:?} (is Open MPI installed?)",
        args.join(" ")
    );
    let o = launch::run(cmd, &what, limit);
    assert_eq!(o.code, Some(0), "{}", o.context());
    for name in names {
        let line = format!("ok   {name} ({np} PEs, mpi)");
        assert!(
            o.stdout.lines().any(|l| l == line),
            "no {line:?}: {}",
            o.context()
        );
    }
}
