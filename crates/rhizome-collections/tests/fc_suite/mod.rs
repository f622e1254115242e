//! SPMD test bodies of the flat-combining structures, shared by `cargo test` (local
//! transport, 1, 2 and 4 PEs: `tests/fc.rs`) and by `examples/fc_tests.rs` (any
//! transport, e.g. under `mpirun -np 4`: `tests/mpi.rs`).
//!
//! Each body runs on every PE and panics on failure, which fails the whole run.

pub mod lincheck;

use lincheck::{Call, Event, Spec, linearizable};
use rhizome::coop::Coop;
use rhizome::rng::XorShift64;
use rhizome::{Ctx, GlobalPtr};
use rhizome_collections::fc::{Fifo, Lifo, Mode, Order, PushPop};
use std::cell::RefCell;
use std::collections::HashMap;

/// A test: it runs on every PE.
type Body = fn(&Ctx);

/// Every test, with its name, in the order the example runs them.
pub const TESTS: &[(&str, Body)] = &[
    ("stack_linearizable_none", |c| {
        histories::<Lifo>(c, Mode::None)
    }),
    ("stack_linearizable_centralized", |c| {
        histories::<Lifo>(c, Mode::Centralized)
    }),
    ("stack_linearizable_distributed", |c| {
        histories::<Lifo>(c, Mode::Distributed)
    }),
    ("queue_linearizable_none", |c| {
        histories::<Fifo>(c, Mode::None)
    }),
    ("queue_linearizable_centralized", |c| {
        histories::<Fifo>(c, Mode::Centralized)
    }),
    ("queue_linearizable_distributed", |c| {
        histories::<Fifo>(c, Mode::Distributed)
    }),
    ("stack_stress_none", |c| stress::<Lifo>(c, Mode::None, 100)),
    ("stack_stress_distributed", |c| {
        stress::<Lifo>(c, Mode::Distributed, 1000)
    }),
    ("queue_stress_centralized", |c| {
        stress::<Fifo>(c, Mode::Centralized, 300)
    }),
    ("queue_stress_distributed", |c| {
        stress::<Fifo>(c, Mode::Distributed, 1000)
    }),
];

/// A recorded operation: (invoked, answered, task | push bit, value or `NONE`), as it
/// travels to PE 0.
type Record = (u64, u64, u64, u64);
const PUSH_BIT: u64 = 1 << 63;
const NONE: u64 = u64::MAX;

/// Runs `tasks` tasks per PE, each making `ops` random pushes (of values unique to the
/// task, increasing) and pops on one structure, stamping each operation's invocation
/// and answer with a global clock (a counter at PE 0); returns every PE's records, at
/// PE 0, with what a final drain popped appended (as pops).
fn run_recorded<O: Order>(ctx: &Ctx, mode: Mode, tasks: u64, ops: u64) -> Option<Vec<Record>> {
    let coop = Coop::new(ctx);
    let s = PushPop::<u64, O>::with_capacity(&coop, mode, 8);
    let clock: GlobalPtr<u64> = ctx.alloc::<u64>(1).ptr(0, 0);
    let records = RefCell::new(Vec::new());
    let me = ctx.my_pe() as u64;
    coop.run(|scope| {
        for t in 0..tasks {
            let (s, records) = (&s, &records);
            let task = me << 32 | t;
            scope.spawn(async move {
                let mut rng = XorShift64::for_stream(task);
                for seq in 0..ops {
                    let invoked = ctx.fetch_add(clock, 1);
                    let (kind, value) = if rng.below(2) == 0 {
                        let v = task << 16 | seq;
                        s.push(v).await;
                        (PUSH_BIT, v)
                    } else {
                        (0, s.pop().await.unwrap_or(NONE))
                    };
                    let answered = ctx.fetch_add(clock, 1);
                    records
                        .borrow_mut()
                        .push((invoked, answered, task | kind, value));
                }
            });
        }
    });
    ctx.barrier();
    // PE 0 drains what is left, after everything else.
    let drained = RefCell::new(Vec::new());
    coop.run(|scope| {
        if ctx.my_pe() == 0 {
            let (s, drained) = (&s, &drained);
            scope.spawn(async move {
                while let Some(v) = s.pop().await {
                    drained.borrow_mut().push(v);
                }
            });
        }
    });
    let all = ctx.gather(records.into_inner(), 0)?;
    let mut all: Vec<Record> = all.into_iter().flatten().collect();
    // The drain's pops, one after the other, after every recorded operation.
    let end = all.iter().map(|r| r.1).max().unwrap_or(0) + 1;
    let drained = drained.into_inner().into_iter().chain([NONE]);
    all.extend(
        (end..)
            .step_by(2)
            .zip(drained)
            .map(|(t, v)| (t, t + 1, 0, v)),
    );
    Some(all)
}

fn spec<O: Order>() -> Spec {
    if O::ELIMINATES {
        Spec::Stack
    } else {
        Spec::Queue
    }
}

/// Small concurrent runs whose histories the checker must accept.
fn histories<O: Order>(ctx: &Ctx, mode: Mode) {
    // About 20 operations in all: the search is exponential in how many overlap (and a
    // loaded machine makes operations without combining overlap a lot).
    let tasks = (10 / ctx.num_pes() as u64).max(2);
    for _ in 0..5 {
        let Some(records) = run_recorded::<O>(ctx, mode, tasks, 2) else {
            continue;
        };
        let history: Vec<Event> = records
            .iter()
            .map(|&(invoked, answered, kind, value)| Event {
                invoked,
                answered,
                call: if kind & PUSH_BIT != 0 {
                    Call::Push(value)
                } else {
                    Call::Pop((value != NONE).then_some(value))
                },
            })
            .collect();
        assert!(
            linearizable(spec::<O>(), &history),
            "{:?} {mode:?}: not linearizable: {history:?}",
            spec::<O>()
        );
    }
}

/// Many tasks, random pushes and pops: every value pushed is popped exactly once (by a
/// task or the final drain), nothing else is popped, and each task's values leave in
/// the order the structure promises relative to each other.
fn stress<O: Order>(ctx: &Ctx, mode: Mode, tasks: u64) {
    let Some(records) = run_recorded::<O>(ctx, mode, tasks, 8) else {
        return;
    };
    let mut pushed: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut popped: HashMap<u64, (u64, u64)> = HashMap::new();
    for &(invoked, answered, kind, value) in &records {
        let into = if kind & PUSH_BIT != 0 {
            &mut pushed
        } else if value == NONE {
            continue;
        } else {
            &mut popped
        };
        assert!(
            into.insert(value, (invoked, answered)).is_none(),
            "{value:#x} twice"
        );
    }
    let mut keys: Vec<u64> = pushed.keys().copied().collect();
    keys.sort_unstable();
    let mut got: Vec<u64> = popped.keys().copied().collect();
    got.sort_unstable();
    assert_eq!(got, keys, "values lost or invented");
    // Two values of one task, a pushed before b (program order): with b pushed before
    // a's pop began, a stack must pop b first, so b's pop cannot start after a's
    // ended; a queue must pop a first.
    for pair in keys.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a >> 16 != b >> 16 {
            continue;
        }
        let (pop_a, pop_b) = (popped[&a], popped[&b]);
        let violated = if O::ELIMINATES {
            pushed[&b].1 < pop_a.0 && pop_a.1 < pop_b.0
        } else {
            pop_b.1 < pop_a.0
        };
        assert!(!violated, "{mode:?}: {a:#x} and {b:#x} left out of order");
    }
}
