//! Futures and cluster work stealing on the local transport: every body of `tasks_suite`
//! on 1, 2 and 4 PEs with 1 and 2 workers per PE, plus the failures that end a world
//! (each needs a world of its own). `tests/mpi.rs` runs the same suite under `mpirun`.

mod tasks_suite;

use rhizome::tasks::Tasks;
use rhizome::{Ctx, World};
use tasks_suite::{Boom, Fib, tasks};

/// (PEs, workers per PE).
const SHAPES: &[(usize, usize)] = &[(1, 1), (2, 1), (4, 1), (1, 2), (2, 2)];

fn on_all_shapes(name: &str, body: fn(&Ctx)) {
    for &(pes, workers) in SHAPES {
        if let Err(e) = World::builder().pes(pes).workers(workers).run(body) {
            panic!("{name} on {pes} PEs x {workers} workers: {e}");
        }
    }
}

macro_rules! suite_tests {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let (n, body) = tasks_suite::TESTS
                .iter()
                .find(|(n, _)| *n == stringify!($name))
                .expect("test listed in tasks_suite::TESTS");
            on_all_shapes(n, *body);
        }
    )*};
}

suite_tests!(
    fib_is_right_everywhere,
    every_job_runs_exactly_once_under_heavy_stealing,
    futures_passed_between_pes_in_any_order,
    async_on_runs_where_asked_and_futures_cross_pes,
    errors_reach_the_waiter,
    many_outstanding_futures,
    await_and_make_future,
    repeated_runs_and_idle_pes,
    stress_mixed_closures_and_jobs,
    a_future_outlives_its_run,
    fork_join_in_jobs_reaches_every_worker,
    join_and_futures_mixed_in_one_job,
    sendable_halves_reach_every_pe,
);

#[test]
fn every_suite_test_has_a_cargo_test() {
    // Keeps the macro list above and tasks_suite::TESTS in step.
    assert_eq!(tasks_suite::TESTS.len(), 13);
}

/// The fork-join bodies again with 4 workers per PE (more thieves than cores here).
#[test]
fn fork_join_in_jobs_with_4_workers() {
    let bodies = [
        "fork_join_in_jobs_reaches_every_worker",
        "join_and_futures_mixed_in_one_job",
    ]
    .map(|name| {
        tasks_suite::TESTS
            .iter()
            .find(|(n, _)| *n == name)
            .expect("listed in tasks_suite::TESTS")
    });
    for &(name, body) in bodies {
        for pes in [1, 2] {
            if let Err(e) = World::builder().pes(pes).workers(4).run(body) {
                panic!("{name} on {pes} PEs x 4 workers: {e}");
            }
        }
    }
}

#[test]
fn a_panic_in_get_fails_the_world_without_hanging() {
    for pes in [1, 2] {
        let r = World::builder().pes(pes).run(|ctx| {
            let tasks = tasks(ctx);
            tasks.run(ctx, |t| {
                if t.my_pe() == 0 {
                    t.spawn(Boom(2)).get();
                }
            })
        });
        let e = r.unwrap_err().to_string();
        assert!(e.contains("boom at the leaf"), "{e}");
    }
}

#[test]
fn an_unregistered_job_type_is_a_clear_error() {
    let r = World::builder().pes(2).run(|ctx| {
        let tasks = Tasks::new(ctx);
        if ctx.my_pe() == 0 {
            tasks.register::<Fib>();
        }
        // PE 0's first spawned job goes to PE 1 (initial sharing), which cannot decode it.
        tasks.run(ctx, |t| (t.my_pe() == 0).then(|| t.spawn(Fib(20)).get()))
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("has not registered"), "{e}");
}
