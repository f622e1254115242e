//! SPMD test bodies of the flat-combining structures, shared by `cargo test` (local
//! transport, 1, 2 and 4 PEs: `tests/fc.rs`) and by `examples/collections_tests.rs` (any
//! transport, e.g. under `mpirun -np 4`: `tests/mpi.rs`).
//!
//! Each body runs on every PE and panics on failure, which fails the whole run.

mod counters;
pub mod lincheck;

use lincheck::{Call, Event, Spec, linearizable};
use rhizome::coop::Coop;
use rhizome::rng::XorShift64;
use rhizome::{Ctx, GlobalPtr};
use rhizome_collections::fc::{Fifo, GlobalMap, GlobalSet, Lifo, Mode, Order, PushPop};
use std::cell::RefCell;
use std::collections::HashMap;

/// A test: it runs on every PE.
type Body = fn(&Ctx);

/// Every test, with its name, in the order the example runs them. Each runs in every
/// mode, or in the ones its size allows (`none` serializes every operation on a lock).
pub const TESTS: &[(&str, Body)] = &[
    ("stack_linearizable", |c| {
        each_mode(|m| histories::<Lifo>(c, m))
    }),
    ("queue_linearizable", |c| {
        each_mode(|m| histories::<Fifo>(c, m))
    }),
    ("set_linearizable", |c| each_mode(|m| set_histories(c, m))),
    ("stack_bulk_linearizable", |c| {
        each_mode(|m| bulk_histories::<Lifo>(c, m))
    }),
    ("queue_bulk_linearizable", |c| {
        each_mode(|m| bulk_histories::<Fifo>(c, m))
    }),
    ("stack_stress", |c| {
        stress::<Lifo>(c, Mode::None, 100);
        stress::<Lifo>(c, Mode::Distributed, 1000);
    }),
    ("queue_stress", |c| {
        stress::<Fifo>(c, Mode::Centralized, 300);
        stress::<Fifo>(c, Mode::Distributed, 1000);
    }),
    ("bulk_stress", |c| {
        bulk_stress::<Lifo>(c, Mode::None, 50);
        bulk_stress::<Lifo>(c, Mode::Distributed, 500);
        bulk_stress::<Fifo>(c, Mode::Centralized, 100);
        bulk_stress::<Fifo>(c, Mode::Distributed, 500);
    }),
    ("batch_stress", |c| {
        for mode in Mode::ALL {
            let tasks = if mode == Mode::Distributed { 300 } else { 10 };
            batch_stress::<Fifo>(c, mode, tasks);
            batch_stress::<Lifo>(c, mode, tasks);
        }
    }),
    ("stack_pops_answered_in_one_message", |c| {
        counters::stack_pops_answered_in_one_message(c)
    }),
    ("queue_hands_a_whole_chunk_back_uncopied", |c| {
        counters::queue_hands_a_whole_chunk_back_uncopied(c)
    }),
    ("set_repeats_join_a_full_proxy", |c| {
        counters::set_repeats_join_a_full_proxy(c)
    }),
    ("map_stress", |c| {
        map_stress(c, Mode::None, 200);
        map_stress(c, Mode::Centralized, 300);
        map_stress(c, Mode::Distributed, 1000);
    }),
];

fn each_mode(test: impl Fn(Mode)) {
    Mode::ALL.into_iter().for_each(test);
}

/// A recorded operation: (invoked, answered, task | `KIND_BIT`, value or `NONE`), as it
/// travels to PE 0.
type Record = (u64, u64, u64, u64);
/// A push, an insert.
const KIND_BIT: u64 = 1 << 63;
const NONE: u64 = u64::MAX;

/// Runs `tasks` tasks per PE, each making `ops` operations with `op(rng, task, seq)`,
/// which returns (`KIND_BIT` or 0, value); stamps each operation's invocation and
/// answer with a global clock (a counter at PE 0). Returns every PE's records at PE 0.
fn run_recorded(
    ctx: &Ctx,
    coop: &Coop<'_>,
    tasks: u64,
    ops: u64,
    op: impl AsyncFn(&mut XorShift64, u64, u64) -> (u64, u64),
) -> Option<Vec<Record>> {
    run_recorded_bulk(ctx, coop, tasks, ops, async |rng, task, seq| {
        vec![op(rng, task, seq).await]
    })
}

/// [`run_recorded`] with calls that each make several concurrent operations (all
/// stamped with the call's invocation and answer).
fn run_recorded_bulk(
    ctx: &Ctx,
    coop: &Coop<'_>,
    tasks: u64,
    ops: u64,
    op: impl AsyncFn(&mut XorShift64, u64, u64) -> Vec<(u64, u64)>,
) -> Option<Vec<Record>> {
    let clock: GlobalPtr<u64> = ctx.alloc::<u64>(1).ptr(0, 0);
    let records = RefCell::new(Vec::new());
    let me = ctx.my_pe() as u64;
    coop.run(|scope| {
        for t in 0..tasks {
            let (records, op) = (&records, &op);
            let task = me << 32 | t;
            scope.spawn(async move {
                let mut rng = XorShift64::for_stream(task);
                for seq in 0..ops {
                    let invoked = ctx.fetch_add(clock, 1);
                    let done = op(&mut rng, task, seq).await;
                    let answered = ctx.fetch_add(clock, 1);
                    let mut records = records.borrow_mut();
                    for (kind, value) in done {
                        records.push((invoked, answered, task | kind, value));
                    }
                }
            });
        }
    });
    let all = ctx.gather(records.into_inner(), 0)?;
    Some(all.into_iter().flatten().collect())
}

/// Random pushes (of values unique to the task, increasing) and pops on a fresh
/// structure, recorded; at PE 0, what a final drain popped is appended, as pops after
/// everything else.
fn run_push_pop<O: Order>(ctx: &Ctx, mode: Mode, tasks: u64, ops: u64) -> Option<Vec<Record>> {
    run_push_pop_calls::<O>(ctx, mode, tasks, ops, 1)
}

/// [`run_push_pop`] with calls of `per_call` concurrent pushes (`push_all`, of values
/// `task << 16 | seq << 4 | j`), pops (`pop_all`) or both (`push_all_then_pop`, its
/// pops recorded as concurrent with its pushes) each; one per call uses `push` and
/// `pop`.
fn run_push_pop_calls<O: Order>(
    ctx: &Ctx,
    mode: Mode,
    tasks: u64,
    ops: u64,
    per_call: u64,
) -> Option<Vec<Record>> {
    let coop = Coop::new(ctx);
    let s = PushPop::<u64, O>::with_capacity(&coop, mode, 8);
    let records = run_recorded_bulk(ctx, &coop, tasks, ops, async |rng, task, seq| {
        let kind = rng.below(if per_call == 1 { 2 } else { 3 });
        let push = kind == 0;
        if per_call == 1 && push {
            let v = task << 16 | seq << 4;
            s.push(v).await;
            vec![(KIND_BIT, v)]
        } else if per_call == 1 {
            vec![(0, s.pop().await.unwrap_or(NONE))]
        } else if push {
            let values: Vec<u64> = (0..per_call).map(|j| task << 16 | seq << 4 | j).collect();
            s.push_all(values.clone()).await;
            values.into_iter().map(|v| (KIND_BIT, v)).collect()
        } else if kind == 2 {
            let values: Vec<u64> = (0..per_call).map(|j| task << 16 | seq << 4 | j).collect();
            let got = s.push_all_then_pop(values.clone(), per_call as usize).await;
            let missing = per_call as usize - got.len();
            let pushes = values.into_iter().map(|v| (KIND_BIT, v));
            let pops = got.into_iter().chain(std::iter::repeat_n(NONE, missing));
            pushes.chain(pops.map(|v| (0, v))).collect()
        } else {
            let got = s.pop_all(per_call as usize).await;
            got.into_iter().map(|v| (0, v.unwrap_or(NONE))).collect()
        }
    });
    ctx.barrier();
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
    let mut all = records?;
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

/// Checks `history` against `spec`, with what the run was in the message.
fn check(spec: Spec, mode: Mode, history: Vec<Event>) {
    assert!(
        linearizable(spec, &history),
        "{spec:?} {mode:?}: not linearizable: {history:?}"
    );
}

/// Tasks per PE of the histories: about 20 operations in all, as the search is
/// exponential in how many overlap (and a loaded machine makes operations without
/// combining overlap a lot).
fn history_tasks(ctx: &Ctx) -> u64 {
    (10 / ctx.num_pes() as u64).max(2)
}

/// Small concurrent runs whose histories the checker must accept.
fn histories<O: Order>(ctx: &Ctx, mode: Mode) {
    push_pop_histories::<O>(ctx, mode, 2, 1);
}

/// As [`histories`], with calls of two concurrent pushes or pops each, by fewer tasks
/// (the operations of a call overlap with everything its others overlap with).
fn bulk_histories<O: Order>(ctx: &Ctx, mode: Mode) {
    push_pop_histories::<O>(ctx, mode, 1, 2);
}

fn push_pop_histories<O: Order>(ctx: &Ctx, mode: Mode, calls: u64, per_call: u64) {
    for _ in 0..5 {
        let tasks = (history_tasks(ctx) * 3 / 5).max(1);
        let tasks = if per_call == 1 {
            history_tasks(ctx)
        } else {
            tasks
        };
        let Some(records) = run_push_pop_calls::<O>(ctx, mode, tasks, calls, per_call) else {
            continue;
        };
        let history = records
            .iter()
            .map(|&(invoked, answered, kind, value)| Event {
                invoked,
                answered,
                call: if kind & KIND_BIT != 0 {
                    Call::Push(value)
                } else {
                    Call::Pop((value != NONE).then_some(value))
                },
            });
        check(spec::<O>(), mode, history.collect());
    }
}

/// Inserts and lookups of a few keys, so that they collide.
fn set_histories(ctx: &Ctx, mode: Mode) {
    const FOUND: u64 = 1 << 32;
    for _ in 0..5 {
        let coop = Coop::new(ctx);
        let set = GlobalSet::with_capacity(&coop, mode, 8);
        let records = run_recorded(ctx, &coop, history_tasks(ctx), 2, async |rng, _, _| {
            let key = rng.below(4) as u64;
            if rng.below(2) == 0 {
                set.insert(key).await;
                (KIND_BIT, key)
            } else {
                (0, key | (FOUND * set.contains(key).await as u64))
            }
        });
        let Some(records) = records else {
            continue;
        };
        let history = records.iter().map(|&(invoked, answered, kind, v)| Event {
            invoked,
            answered,
            call: if kind & KIND_BIT != 0 {
                Call::Insert(v)
            } else {
                Call::Lookup(v & !FOUND, v & FOUND != 0)
            },
        });
        check(Spec::Set, mode, history.collect());
    }
}

/// Many tasks, random pushes and pops: every value pushed is popped exactly once (by a
/// task or the final drain), nothing else is popped, and each task's values leave in
/// the order the structure promises relative to each other.
fn stress<O: Order>(ctx: &Ctx, mode: Mode, tasks: u64) {
    check_stress::<O>(mode, run_push_pop::<O>(ctx, mode, tasks, 8));
}

/// As [`stress`], with calls of four concurrent pushes or pops each (values of one
/// call have no order among them, so only values of different calls are compared).
fn bulk_stress<O: Order>(ctx: &Ctx, mode: Mode, tasks: u64) {
    check_stress::<O>(mode, run_push_pop_calls::<O>(ctx, mode, tasks, 4, 4));
}

fn check_stress<O: Order>(mode: Mode, records: Option<Vec<Record>>) {
    let Some(records) = records else {
        return;
    };
    let mut pushed: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut popped: HashMap<u64, (u64, u64)> = HashMap::new();
    for &(invoked, answered, kind, value) in &records {
        let into = if kind & KIND_BIT != 0 {
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
        if a >> 16 != b >> 16 || a >> 4 == b >> 4 {
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

/// Every task of every PE pushes values and pops as many, twice, each time in one
/// `push_all_then_pop`, on a fresh structure with a small buffer: no pop finds it
/// empty (its pops follow its pushes, and every call adds as much as it takes), every
/// value comes out once, and it is empty afterwards. Combining, each PE gets back values
/// it pushed (a commit's pops are served from the run it has just appended).
fn batch_stress<O: Order>(ctx: &Ctx, mode: Mode, tasks: u64) {
    const PER_CALL: u64 = 4;
    let coop = Coop::new(ctx);
    let s = PushPop::<u64, O>::with_capacity(&coop, mode, 8);
    // Every PE has registered the structure's handlers before any commit reaches it.
    ctx.barrier();
    let me = ctx.my_pe() as u64;
    let (pushed, popped) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
    coop.run(|scope| {
        for t in 0..tasks {
            let (s, pushed, popped) = (&s, &pushed, &popped);
            scope.spawn(async move {
                for seq in 0..2 {
                    let values: Vec<u64> = (0..PER_CALL)
                        .map(|j| me << 32 | t << 16 | seq << 4 | j)
                        .collect();
                    pushed.borrow_mut().extend(&values);
                    let got = s.push_all_then_pop(values, PER_CALL as usize).await;
                    assert_eq!(
                        got.len(),
                        PER_CALL as usize,
                        "{mode:?}: a pop found it empty"
                    );
                    popped.borrow_mut().extend(got);
                }
            });
        }
    });
    let left = RefCell::new(None);
    coop.run(|scope| {
        let (s, left) = (&s, &left);
        scope.spawn(async move { *left.borrow_mut() = s.pop().await });
    });
    assert_eq!(left.into_inner(), None, "{mode:?}: a value was left");
    all_came_out(ctx, mode, pushed.into_inner(), popped.into_inner());
}

/// Collective: with combining, this PE popped only values it pushed (values carry their
/// PE in the top 32 bits); over all PEs, every value pushed was popped once.
fn all_came_out(ctx: &Ctx, mode: Mode, pushed: Vec<u64>, popped: Vec<u64>) {
    let me = ctx.my_pe() as u64;
    if mode == Mode::Distributed {
        assert!(
            popped.iter().all(|v| v >> 32 == me),
            "{mode:?}: a PE got another's values"
        );
    }
    let all_pushed = ctx.gather(pushed, 0);
    let all_popped = ctx.gather(popped, 0);
    if let (Some(a), Some(b)) = (all_pushed, all_popped) {
        let mut a: Vec<u64> = a.into_iter().flatten().collect();
        let mut b: Vec<u64> = b.into_iter().flatten().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{mode:?}: values lost or duplicated");
    }
}

/// The value every insert of `key` stores, so that a lookup's answer can be checked.
fn value_of(key: u64) -> u64 {
    key.wrapping_mul(3) ^ 0x5A5A
}

/// Many tasks insert and look up keys of a range of 1024 (shared by all PEs): a lookup
/// finds the key's one value or nothing, never nothing once an insert of the key was
/// answered before it began; afterwards every key inserted is found with its value.
fn map_stress(ctx: &Ctx, mode: Mode, tasks: u64) {
    let coop = Coop::new(ctx);
    let map = GlobalMap::<u64>::new(&coop, mode);
    let records = run_recorded(ctx, &coop, tasks, 8, async |rng, _, _| {
        let key = rng.below(1024) as u64;
        if rng.below(2) == 0 {
            map.insert(key, value_of(key)).await;
            (KIND_BIT, key)
        } else {
            match map.lookup(key).await {
                Some(v) => {
                    assert_eq!(v, value_of(key), "key {key}: a value never inserted");
                    (0, key)
                }
                None => (0, key | 1 << 32),
            }
        }
    });
    ctx.barrier();
    let inserted: Vec<u64> = ctx.broadcast(
        records
            .iter()
            .flatten()
            .filter(|r| r.2 & KIND_BIT != 0)
            .map(|r| r.3)
            .collect(),
        0,
    );
    if let Some(records) = &records {
        // The first answer to an insert of each key.
        let mut first: HashMap<u64, u64> = HashMap::new();
        for &(_, answered, _, key) in records.iter().filter(|r| r.2 & KIND_BIT != 0) {
            let at = first.entry(key).or_insert(answered);
            *at = (*at).min(answered);
        }
        for &(invoked, _, kind, v) in records {
            let (key, missed) = (v & 0xFFFF_FFFF, v >> 32 == 1);
            if kind & KIND_BIT == 0 && missed {
                assert!(
                    first.get(&key).is_none_or(|&at| at > invoked),
                    "{mode:?}: key {key} missed after its insert was answered"
                );
            } else if kind & KIND_BIT == 0 {
                assert!(first.contains_key(&key), "key {key} found, never inserted");
            }
        }
    }
    // Every PE looks every inserted key up afterwards.
    coop.run(|scope| {
        for chunk in inserted.chunks(64) {
            let map = &map;
            scope.spawn(async move {
                for &key in chunk {
                    assert_eq!(map.lookup(key).await, Some(value_of(key)), "key {key} lost");
                }
            });
        }
    });
}
