//! Failure handling on the local transport: a failing PE ends the run on every PE with a
//! clear error, never a hang.

#[path = "support/failing_selector.rs"]
mod failing_selector;

use failing_selector::failing_selector;
use rhizome::{RunError, World};
use std::fmt::Debug;

/// The run failed, with a message that contains every one of `want`.
fn assert_fails_with<R: Debug>(r: Result<Vec<R>, RunError>, want: &[&str]) {
    match r {
        Err(RunError::Failed(msg)) => {
            for w in want {
                assert!(msg.contains(w), "no {w:?} in {msg}");
            }
        }
        other => panic!("expected failure, got {other:?}"),
    }
}

#[test]
fn panicking_pe_wakes_others_in_barrier() {
    for pes in [1, 2, 4] {
        let r = World::builder().pes(pes).run(|ctx| {
            if ctx.my_pe() == pes - 1 {
                panic!("boom on purpose");
            }
            // Everyone else waits in a barrier the failed PE never reaches.
            ctx.barrier();
            ctx.barrier();
        });
        let panicked = format!("PE {} panicked", pes - 1);
        assert_fails_with(r, &[&panicked, "boom on purpose"]);
    }
}

#[test]
fn panicking_pe_wakes_others_in_finish_call_and_collectives() {
    for pes in [2, 4] {
        let r = World::builder().pes(pes).run(|ctx| {
            let slow = ctx.register_call(|_ctx, x: u64| x);
            ctx.barrier();
            match ctx.my_pe() {
                0 => panic!("PE zero fails"),
                1 => {
                    // Waits for a reply that PE 0 will never send.
                    let _ = ctx.call(0, slow, &1).wait();
                }
                _ => {
                    let _ = ctx.broadcast(0u64, 0);
                }
            }
            ctx.finish(|| ());
        });
        assert_fails_with(r, &["PE 0 panicked: PE zero fails"]);
    }
}

#[test]
fn panicking_handler_ends_the_run() {
    let r = World::builder().pes(2).run(|ctx| {
        let bad = ctx.register(|_ctx, v: u64| {
            if v == 3 {
                panic!("handler rejects {v}");
            }
        });
        ctx.finish(|| {
            for v in 0..5u64 {
                ctx.send(1, bad, &v);
            }
        });
    });
    assert_fails_with(r, &["PE 1 panicked: handler rejects 3"]);
}

#[test]
fn panicking_selector_handler_or_task_ends_the_run() {
    for pes in [1, 2, 4] {
        let r = World::builder()
            .pes(pes)
            .run(|ctx| failing_selector(ctx, false));
        let want = format!("PE {} panicked: selector handler rejects 1", pes - 1);
        assert_fails_with(r, &[&want]);
        let r = World::builder()
            .pes(pes)
            .workers(2)
            .run(|ctx| failing_selector(ctx, true));
        let want = format!("PE {} panicked: task rejects 1", pes - 1);
        assert_fails_with(r, &[&want]);
    }
}

#[test]
fn out_of_bounds_access_ends_the_run_with_a_clear_message() {
    let r = World::builder().pes(2).run(|ctx| {
        let a = ctx.alloc::<u64>(8);
        ctx.barrier();
        if ctx.my_pe() == 1 {
            let _ = ctx.get(a.ptr(0, 8));
        }
        ctx.barrier();
    });
    assert_fails_with(
        r,
        &[
            "PE 1 panicked",
            "out-of-bounds global access: PE 0, segment 0, bytes 64..72 (segment length 64)",
        ],
    );
}

#[test]
fn mismatched_collective_allocation_is_an_error() {
    let r = World::builder().pes(2).run(|ctx| {
        let _ = ctx.alloc::<u64>(4 + ctx.my_pe());
    });
    assert_fails_with(r, &["collective misuse"]);
}

#[test]
fn bad_configuration_is_an_error() {
    let r = World::builder().pes(0).run(|_| ());
    assert!(matches!(r, Err(RunError::Config(_))));
}

#[test]
fn results_come_back_in_pe_order() {
    let r = World::builder()
        .pes(4)
        .workers(3)
        .run(|ctx| (ctx.my_pe(), ctx.workers()))
        .unwrap();
    assert_eq!(r, vec![(0, 3), (1, 3), (2, 3), (3, 3)]);
}

#[test]
fn pe_panicking_mid_conveyor_round_ends_the_others() {
    for pes in [2, 4] {
        let r = World::builder().pes(pes).run(|ctx| {
            let mut c = rhizome::conveyor::Conveyor::<u64>::with_capacity(ctx, 2);
            let mut i = 0u64;
            // The others wait, in advance, for the last PE's final batches forever.
            while c.advance(i >= 1000) {
                assert!(ctx.my_pe() + 1 < pes || i < 500, "conveyor PE gives up");
                while i < 1000 && c.push(i, i as usize % pes) {
                    i += 1;
                }
                while c.pull().is_some() {}
            }
        });
        let Err(RunError::Failed(msg)) = r else {
            panic!("expected failure, got {r:?}")
        };
        assert!(
            msg.contains(&format!("PE {} panicked: conveyor PE gives up", pes - 1)),
            "{msg}"
        );
    }
}
