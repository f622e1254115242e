//! Runs every SPMD test body of `suite` on the local transport with 1, 2 and 4 PEs.

mod suite;

use rhizome::World;

/// Runs the body that `suite::TESTS` lists as `name` on 1, 2 and 4 PEs.
fn run_on_all_sizes(name: &str) {
    let (_, body) = suite::TESTS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("test listed in suite::TESTS");
    for pes in [1, 2, 4] {
        if let Err(e) = World::builder().pes(pes).run(body) {
            panic!("{name} on {pes} PEs: {e}");
        }
    }
}

macro_rules! spmd_tests {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            run_on_all_sizes(stringify!($name));
        }
    )*};
}

spmd_tests!(
    identity,
    put_get_slices,
    atomics_semantics,
    fetch_add_stress,
    cas_stress,
    direct_words_agree,
    nonblocking_many_in_flight,
    ordering_barrier,
    ordering_flag,
    ordering_message_after_put,
    out_of_bounds_is_error,
    am_counts,
    am_storm,
    am_call,
    aggregation_edges,
    finish_repeated,
    collectives,
    call_inside_finish,
    conveyor_all_to_all,
    conveyor_silent_and_self,
    conveyor_reset_rounds,
    conveyor_refuses_when_full,
    aggregate_matches_direct,
    aggregate_scopes_repeated,
    coop_many_blocked_calls,
    coop_memory_delegates,
    coop_lock_excludes,
    coop_condvar_and_event,
    actor_exactly_once,
    actor_multi_hop,
    actor_done_order,
    actor_look_ahead,
    actor_tasks_in_handlers,
    arrival_hook_counts_messages,
    actor_stress,
);

#[test]
fn every_suite_test_has_a_cargo_test() {
    // Keeps the macro list above and suite::TESTS in step.
    assert_eq!(suite::TESTS.len(), 35);
}

#[test]
fn small_aggregation_buffers() {
    // The same message tests with buffers so small that nearly every message flushes.
    for pes in [1, 2, 4] {
        for agg in [16, 40, 257] {
            World::builder()
                .pes(pes)
                .aggregation_bytes(agg)
                .run(|ctx| {
                    for (name, body) in suite::TESTS {
                        if name.starts_with("am_")
                            || name.starts_with("actor_")
                            || *name == "aggregation_edges"
                            || *name == "finish_repeated"
                        {
                            body(ctx);
                        }
                    }
                })
                .unwrap_or_else(|e| panic!("{pes} PEs, {agg}-byte buffers: {e}"));
        }
    }
}

#[test]
fn actors_with_2_workers_per_pe() {
    // Blocking and non-blocking tasks in handlers on a pool with a background worker.
    for pes in [1, 2, 4] {
        World::builder()
            .pes(pes)
            .workers(2)
            .run(|ctx| {
                for (name, body) in suite::TESTS {
                    if name.starts_with("actor_") {
                        body(ctx);
                    }
                }
            })
            .unwrap_or_else(|e| panic!("{pes} PEs x 2 workers: {e}"));
    }
}
