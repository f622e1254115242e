//! The SPMD suite (`examples/spmd_tests`), the futures / work-stealing suite
//! (`examples/tasks_tests`) and failure handling (`examples/failure_demo`) on the `mpi`
//! transport, under `mpirun -np 2` and `-np 4`. Needs the cargo feature `mpi`, Open MPI's
//! `mpirun` on the `PATH`, and the examples built (`cargo test --features mpi` builds them).
//!
//! Each launch has a generous time limit so that a hang fails the test instead of
//! blocking it; nothing here measures time.
#![cfg(feature = "mpi")]

// Only for the names of its tests: the launched `tasks_tests` example runs them.
#[path = "support/launch.rs"]
mod launch;
mod suite;
mod tasks_suite;

use launch::Outcome;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// A launch that has not ended after this long is a hang.
const HANG_LIMIT: Duration = Duration::from_secs(240);

/// One launch at a time: the machine may have few cores and the ranks busy-poll.
static LAUNCH: Mutex<()> = Mutex::new(());

fn example(name: &str) -> PathBuf {
    // The test binary is target/<profile>/deps/mpi-<hash>; examples are in
    // target/<profile>/examples.
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile> directory");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: build the examples with `cargo build --examples --features mpi` (same profile)",
        path.display()
    );
    path
}

fn mpirun(np: usize, program: &str, args: &[&str]) -> Outcome {
    mpirun_env(np, program, args, &[])
}

fn mpirun_env(np: usize, program: &str, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let _one = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .arg(example(program))
        .args(args);
    launch::clear_rhizome_env(&mut cmd);
    cmd.envs(env.iter().copied());
    launch::run(
        cmd,
        &format!("mpirun -np {np} {program} {args:?} (is Open MPI installed?)"),
        HANG_LIMIT,
    )
}

/// The `identity` test of the SPMD suite on 2 ranks with `env` set.
fn identity_on_2_ranks(env: &[(&str, &str)]) -> Outcome {
    mpirun_env(2, "spmd_tests", &["identity"], env)
}

fn suite_on(np: usize) {
    // On one node the default path maps every rank's memory (shared windows).
    suite_on_env(np, &[("RHIZOME_TEST_DIRECT", "all")]);
}

fn suite_on_env(np: usize, env: &[(&str, &str)]) {
    let o = mpirun_env(np, "spmd_tests", &[], env);
    assert_eq!(o.code, Some(0), "{}", o.context());
    let passed = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("ok ") && l.contains(&format!("({np} PEs, mpi)")))
        .count();
    assert_eq!(passed, suite::TESTS.len(), "stdout:\n{}", o.stdout);
}

#[test]
fn spmd_suite_on_2_ranks() {
    suite_on(2);
}

#[test]
fn spmd_suite_on_4_ranks() {
    suite_on(4);
}

#[test]
fn spmd_suite_with_one_sided_operations_as_messages() {
    // The mode for ranks that share no memory (scripts/netns-cluster.sh runs it across
    // network namespaces); here on one node, so every `cargo test` checks it.
    for np in [2, 4] {
        suite_on_env(
            np,
            &[
                ("RHIZOME_MPI_RMA", "messages"),
                ("RHIZOME_TEST_DIRECT", "own"),
            ],
        );
    }
}

#[test]
fn spmd_suite_with_rma_windows() {
    // The path of ranks on several nodes (MPI RMA for every rank), forced on one node.
    for np in [2, 4] {
        suite_on_env(
            np,
            &[
                ("RHIZOME_MPI_RMA", "windows"),
                ("RHIZOME_TEST_DIRECT", "none"),
            ],
        );
    }
}

#[test]
fn shared_windows_when_asked_for_on_one_node() {
    let env = [
        ("RHIZOME_MPI_RMA", "shared"),
        ("RHIZOME_TEST_DIRECT", "all"),
    ];
    let o = mpirun_env(2, "spmd_tests", &["direct_words_agree"], &env);
    assert_eq!(o.code, Some(0), "{}", o.context());
    assert!(o.stdout.contains("ok   direct_words_agree"), "{}", o.stdout);
}

#[test]
fn message_mode_rejects_an_unknown_value() {
    let o = identity_on_2_ranks(&[("RHIZOME_MPI_RMA", "shm")]);
    assert!(o.code.is_some_and(|c| c != 0), "{}", o.context());
    assert!(
        o.stderr.contains(
            "RHIZOME_MPI_RMA=\"shm\" is not one of `auto`, `shared`, `windows`, `messages`"
        ),
        "stderr:\n{}",
        o.stderr
    );
}

#[test]
fn message_tests_with_tiny_aggregation_buffers() {
    // As `small_aggregation_buffers` in tests/spmd.rs: nearly every message flushes.
    for agg in ["16", "257"] {
        for filter in ["am_", "actor_", "aggregation_edges", "finish_repeated"] {
            let o = mpirun(4, "spmd_tests", &[filter, "--agg", agg]);
            assert_eq!(
                o.code,
                Some(0),
                "spmd_tests {filter} --agg {agg} failed\nstdout:\n{}\nstderr:\n{}",
                o.stdout,
                o.stderr
            );
            assert!(o.stdout.contains("ok "), "nothing ran: {}", o.stdout);
        }
    }
}

/// The whole tasks suite in one launch of `np` ranks with `workers` worker threads each.
fn tasks_suite_on(np: usize, workers: usize) {
    let w = workers.to_string();
    let o = mpirun_env(np, "tasks_tests", &[], &[("RHIZOME_WORKERS", &w)]);
    assert_eq!(
        o.code,
        Some(0),
        "tasks_tests failed under mpirun -np {np} with {workers} workers\nstdout:\n{}\nstderr:\n{}",
        o.stdout,
        o.stderr
    );
    // The ranks read RHIZOME_WORKERS themselves: make sure it reached them.
    assert!(
        o.stdout
            .lines()
            .any(|l| l == format!("tasks_tests: {np} PEs x {workers} workers, mpi")),
        "stdout:\n{}",
        o.stdout
    );
    let oks: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("ok ")).collect();
    assert_eq!(oks.len(), tasks_suite::TESTS.len(), "stdout:\n{}", o.stdout);
    for (name, _) in tasks_suite::TESTS {
        let line = format!("ok   {name} ({np} PEs, mpi)");
        assert!(
            oks.contains(&line.as_str()),
            "no {line:?} in stdout:\n{}",
            o.stdout
        );
    }
}

#[test]
fn tasks_suite_on_2_ranks() {
    tasks_suite_on(2, 1);
}

#[test]
fn tasks_suite_on_4_ranks() {
    tasks_suite_on(4, 1);
}

#[test]
fn tasks_suite_with_2_workers_per_rank() {
    // Local steals between a rank's workers alongside remote steals between ranks.
    tasks_suite_on(2, 2);
    tasks_suite_on(4, 2);
}

/// A failure on one rank ends every rank (mpirun returns, non-zero) with the reason.
fn fails_with(np: usize, mode: &str, want: &str) {
    let o = mpirun(np, "failure_demo", &[mode]);
    assert!(
        o.code.is_some_and(|c| c != 0),
        "failure_demo {mode} on {np} ranks exited with {:?}\nstderr:\n{}",
        o.code,
        o.stderr
    );
    assert!(
        o.stderr.contains(want),
        "failure_demo {mode} on {np} ranks: no {want:?} in stderr:\n{}",
        o.stderr
    );
}

/// [`fails_with`] on 2 and on 4 ranks; `want` is given the last rank.
fn fails_on_2_and_4_with(mode: &str, want: impl Fn(usize) -> String) {
    for np in [2, 4] {
        fails_with(np, mode, &want(np - 1));
    }
}

#[test]
fn panic_on_one_rank_ends_all_ranks() {
    fails_on_2_and_4_with("panic", |last| {
        format!("rhizome: run aborted on rank {last}: PE {last} panicked: boom on purpose")
    });
}

#[test]
fn panic_while_others_wait_for_calls_and_collectives() {
    fails_on_2_and_4_with("call", |_| {
        "rhizome: run aborted on rank 0: PE 0 panicked: PE zero fails".into()
    });
}

#[test]
fn panicking_handler_ends_all_ranks() {
    fails_with(
        2,
        "handler",
        "rhizome: run aborted on rank 1: PE 1 panicked: handler rejects 3",
    );
}

#[test]
fn actor_tests_with_2_workers_per_rank() {
    let o = mpirun_env(2, "spmd_tests", &["actor_"], &[("RHIZOME_WORKERS", "2")]);
    assert_eq!(
        o.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        o.stdout,
        o.stderr
    );
    assert!(
        o.stdout.contains("ok   actor_tasks_in_handlers"),
        "{}",
        o.stdout
    );
}

#[test]
fn panicking_selector_handler_or_task_ends_all_ranks() {
    fails_on_2_and_4_with("actor", |last| {
        format!(
            "rhizome: run aborted on rank {last}: PE {last} panicked: selector handler rejects 1"
        )
    });
    fails_on_2_and_4_with("actor-task", |last| {
        format!("rhizome: run aborted on rank {last}: PE {last} panicked: task rejects 1")
    });
}

#[test]
fn out_of_bounds_access_is_a_clear_error() {
    fails_with(
        2,
        "oob",
        "PE 1 panicked: rhizome: out-of-bounds global access: PE 0, segment 0, bytes 64..72 (segment length 64)",
    );
}

#[test]
fn mismatched_allocation_is_a_clear_error() {
    fails_with(4, "alloc", "collective misuse: segment 1");
}

#[test]
fn a_job_panicking_on_another_rank_ends_all_ranks() {
    // The job panics on the last rank; its future is awaited on rank 0, which fails with
    // the job's message (naming the rank the job ran on) and takes every rank down.
    fails_on_2_and_4_with("job", |last| {
        format!("rhizome: run aborted on rank 0: PE 0 panicked: job fails on PE {last}")
    });
}

#[test]
fn an_unregistered_job_type_on_one_rank_is_a_clear_error() {
    fails_on_2_and_4_with("unregistered", |last| {
        format!(
            "rhizome: run aborted on rank {last}: PE {last} panicked: rhizome: PE {last} received a job of a type it has not registered (Tasks::register must be called on every PE)"
        )
    });
}

#[test]
fn a_run_without_failure_exits_zero() {
    let o = mpirun(2, "failure_demo", &["none"]);
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
}

#[test]
fn rhizome_transport_overrides_the_choice() {
    // `local` under mpirun: every rank runs its own one-PE world.
    let o = identity_on_2_ranks(&[("RHIZOME_TRANSPORT", "local")]);
    assert_eq!(o.code, Some(0), "stderr:\n{}", o.stderr);
    assert_eq!(o.stdout.matches("ok   identity (1 PEs, local)").count(), 2);
    // A wrong value is a configuration error on every rank, not a hang.
    let o = identity_on_2_ranks(&[("RHIZOME_TRANSPORT", "tcp")]);
    assert!(o.code.is_some_and(|c| c != 0));
    assert!(
        o.stderr
            .contains("RHIZOME_TRANSPORT=\"tcp\" is neither `local` nor `mpi`"),
        "stderr:\n{}",
        o.stderr
    );
}
