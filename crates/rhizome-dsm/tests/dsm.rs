//! The DSM suite (`tests/suite`, each test with 1 and 2 application threads per PE) on 1,
//! 2 and 4 local PEs, and failures (`examples/dsm_failure`) on 2 local PEs; with the
//! feature `mpi`, both under `mpirun -np 2` too (one launch at a time: the ranks poll).

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
mod suite;

use rhizome::World;
use std::process::Command;
use std::time::Duration;

fn run_suite(pes: usize) {
    for (name, test) in suite::TESTS {
        World::builder()
            .pes(pes)
            .run(*test)
            .unwrap_or_else(|e| panic!("{name} on {pes} PEs: {e}"));
    }
}

#[test]
fn suite_on_one_pe() {
    run_suite(1);
}
#[test]
fn suite_on_two_pes() {
    run_suite(2);
}
#[test]
fn suite_on_four_pes() {
    run_suite(4);
}

/// Runs example `program` (built beside this test) with `args` on 2 PEs: local PEs, or
/// ranks of `mpirun -np 2` with `mpi`.
fn launch_example(program: &str, args: &[&str], mpi: bool) -> launch::Outcome {
    // This test is target/<profile>/deps/dsm-<hash>; the examples are built beside it in
    // target/<profile>/examples.
    let mut path = std::env::current_exe().expect("test binary path");
    path.pop();
    path.set_file_name("examples");
    path.push(program);
    let mut cmd = Command::new(if mpi {
        "mpirun"
    } else {
        path.as_os_str().to_str().expect("UTF-8 path")
    });
    if mpi {
        cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
            .arg(&path);
    }
    launch::clear_rhizome_env(&mut cmd);
    cmd.env("RHIZOME_PES", "2").args(args);
    let what = format!("{program} {args:?} (mpi: {mpi}; is Open MPI installed?)");
    launch::run(cmd, &what, Duration::from_secs(240))
}

/// The failure checks: `(mode, text the error line must hold)`.
pub const FAILURES: &[(&str, &str)] = &[
    (
        "panic",
        "rhizome: error: an application thread of PE 1 panicked",
    ),
    ("outside", "rhizome: error: PE 1 accessed byte"),
];

fn check_failure(mode: &str, want: &str, mpi: bool) {
    let o = launch_example("dsm_failure", &[mode], mpi);
    assert!(o.code.is_some_and(|c| c != 0), "{}", o.context());
    assert!(o.stderr.contains(want), "no {want:?}: {}", o.context());
    assert!(!o.stderr.contains("stack backtrace"), "{}", o.context());
}

#[test]
fn a_failing_pe_ends_every_pe_with_one_error() {
    for (mode, want) in FAILURES {
        check_failure(mode, want, false);
    }
}

/// The suite under `mpirun -np 2` (`examples/dsm_tests`): the protocol across processes.
#[cfg(feature = "mpi")]
#[test]
fn suite_on_two_ranks() {
    let o = launch_example("dsm_tests", &[], true);
    assert_eq!(o.code, Some(0), "{}", o.context());
    let missing: Vec<&str> = suite::TESTS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !o.stdout.contains(&format!("ok   {name} (2 PEs, mpi)\n")))
        .collect();
    assert!(
        missing.is_empty(),
        "not passed: {missing:?}\n{}",
        o.context()
    );
}

#[cfg(feature = "mpi")]
#[test]
fn a_failing_rank_ends_every_rank_with_one_error() {
    for (mode, want) in FAILURES {
        check_failure(mode, want, true);
    }
}
