//! SPMD test bodies shared by `cargo test` (local transport, 1/2/4 PEs) and by
//! `examples/spmd_tests.rs` (any transport, e.g. under `mpirun -np 4`).
//!
//! Each body runs on every PE with that PE's context and panics on failure; a panic on one
//! PE fails the whole run.

mod actor;
mod arrival;
mod conveyor;
mod coop;
mod direct;

use actor::*;
use arrival::*;
use conveyor::*;
use coop::*;
use direct::*;
use rhizome::{AtomicOp, Ctx, Memory, ReduceOp, TransportError};
use std::cell::Cell;
use std::rc::Rc;

/// A named test body.
pub type Test = (&'static str, fn(&Ctx));

/// Every test, in the order the example runs them.
pub const TESTS: &[Test] = &[
    ("identity", identity),
    ("put_get_slices", put_get_slices),
    ("atomics_semantics", atomics_semantics),
    ("fetch_add_stress", fetch_add_stress),
    ("cas_stress", cas_stress),
    ("direct_words_agree", direct_words_agree),
    ("nonblocking_many_in_flight", nonblocking_many_in_flight),
    ("ordering_barrier", ordering_barrier),
    ("ordering_flag", ordering_flag),
    ("ordering_message_after_put", ordering_message_after_put),
    ("out_of_bounds_is_error", out_of_bounds_is_error),
    ("am_counts", am_counts),
    ("am_storm", am_storm),
    ("am_call", am_call),
    ("aggregation_edges", aggregation_edges),
    ("finish_repeated", finish_repeated),
    ("collectives", collectives),
    ("call_inside_finish", call_inside_finish),
    ("conveyor_all_to_all", conveyor_all_to_all),
    ("conveyor_silent_and_self", conveyor_silent_and_self),
    ("conveyor_reset_rounds", conveyor_reset_rounds),
    ("conveyor_refuses_when_full", conveyor_refuses_when_full),
    ("aggregate_matches_direct", aggregate_matches_direct),
    ("aggregate_scopes_repeated", aggregate_scopes_repeated),
    ("coop_many_blocked_calls", coop_many_blocked_calls),
    ("coop_memory_delegates", coop_memory_delegates),
    ("coop_lock_excludes", coop_lock_excludes),
    ("coop_condvar_and_event", coop_condvar_and_event),
    ("actor_exactly_once", actor_exactly_once),
    ("actor_multi_hop", actor_multi_hop),
    ("actor_done_order", actor_done_order),
    ("actor_look_ahead", actor_look_ahead),
    ("actor_tasks_in_handlers", actor_tasks_in_handlers),
    ("arrival_hook_counts_messages", arrival_hook_counts_messages),
    ("actor_stress", actor_stress),
];

fn identity(ctx: &Ctx) {
    assert!(ctx.my_pe() < ctx.num_pes());
    let all = ctx.allgather(ctx.my_pe() as u64);
    assert_eq!(all, (0..ctx.num_pes() as u64).collect::<Vec<_>>());
}

fn put_get_slices(ctx: &Ctx) {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    let right = (me + 1) % n;
    let bytes = ctx.alloc::<u8>(1024);
    let words = ctx.alloc::<u64>(64);
    // Write to the right neighbour: various lengths at various (unaligned) offsets.
    let mut off = 0;
    for len in [1usize, 7, 8, 16, 33, 64, 128] {
        let data: Vec<u8> = (0..len).map(|i| (me * 31 + len + i) as u8).collect();
        ctx.put_slice(bytes.ptr(right, off + 3), &data);
        off += len + 5;
    }
    let w: Vec<u64> = (0..64).map(|i| (me as u64) << 32 | i).collect();
    ctx.put_slice(words.ptr(right, 0), &w);
    ctx.barrier();
    let left = (me + n - 1) % n;
    let mut off = 0;
    for len in [1usize, 7, 8, 16, 33, 64, 128] {
        let want: Vec<u8> = (0..len).map(|i| (left * 31 + len + i) as u8).collect();
        // Read both locally and from the neighbour's view of us (a remote get of our data).
        assert_eq!(ctx.get_slice(bytes.ptr(me, off + 3), len), want);
        off += len + 5;
    }
    let got = ctx.get_slice(words.ptr(me, 0), 64);
    assert_eq!(
        got,
        (0..64).map(|i| (left as u64) << 32 | i).collect::<Vec<_>>()
    );
    assert_eq!(ctx.get(words.ptr(me, 5)), (left as u64) << 32 | 5);
    // Remote single-element get of the neighbour's words.
    assert_eq!(ctx.get(words.ptr(right, 7)), (me as u64) << 32 | 7);
    ctx.barrier();
}

fn atomics_semantics(ctx: &Ctx) {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    let a = ctx.alloc::<u64>(4);
    let target = (me + 1) % n;
    // Each PE operates only on its right neighbour's word 0..3, so results are exact.
    let p = a.ptr(target, 0);
    assert_eq!(ctx.load(p), 0);
    ctx.store(p, 5);
    assert_eq!(ctx.swap(p, 9), 5);
    assert_eq!(ctx.fetch_add(p, 3), 9);
    assert_eq!(ctx.compare_exchange(p, 12, 20), Ok(12));
    assert_eq!(ctx.compare_exchange(p, 12, 30), Err(20));
    assert_eq!(ctx.load(p), 20);
    assert_eq!(ctx.fetch_add(p, u64::MAX), 20, "wrapping add");
    assert_eq!(ctx.load(p), 19);
    assert_eq!(ctx.try_atomic(a.ptr(target, 1), AtomicOp::Swap(7)), Ok(0));
    ctx.barrier();
    assert_eq!(ctx.load(a.ptr(me, 0)), 19);
    assert_eq!(ctx.load(a.ptr(me, 1)), 7);
    ctx.barrier();
}

const THREADS: usize = 4;

/// Runs `work` on `THREADS` threads of this PE at once, each with its own memory handle.
fn on_threads(ctx: &Ctx, work: impl Fn(&Memory) + Sync) {
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let (mem, work) = (ctx.memory().clone(), &work);
            s.spawn(move || work(&mem));
        }
    });
}

fn fetch_add_stress(ctx: &Ctx) {
    let word = ctx.alloc::<u64>(1);
    let per_thread = 20_000u64;
    on_threads(ctx, |mem| {
        for i in 0..per_thread {
            mem.fetch_add(word.ptr(0, 0), 1 + (i & 1));
        }
    });
    ctx.barrier();
    // Each thread adds per_thread/2 ones and per_thread/2 twos.
    let want = ctx.num_pes() as u64 * THREADS as u64 * (per_thread / 2 * 3);
    assert_eq!(ctx.load(word.ptr(0, 0)), want);
    ctx.barrier();
}

fn cas_stress(ctx: &Ctx) {
    let word = ctx.alloc::<u64>(1);
    let per_thread = 5_000u64;
    let target = ctx.num_pes() - 1;
    on_threads(ctx, |mem| {
        for _ in 0..per_thread {
            let p = word.ptr(target, 0);
            let mut cur = mem.load(p);
            loop {
                match mem.compare_exchange(p, cur, cur + 1) {
                    Ok(_) => break,
                    Err(actual) => cur = actual,
                }
            }
        }
    });
    ctx.barrier();
    assert_eq!(
        ctx.load(word.ptr(target, 0)),
        ctx.num_pes() as u64 * THREADS as u64 * per_thread
    );
    ctx.barrier();
}

fn nonblocking_many_in_flight(ctx: &Ctx) {
    let (n, me) = (ctx.num_pes(), ctx.my_pe());
    let arr = ctx.alloc::<u64>(256);
    let right = (me + 1) % n;
    // Many puts in flight, completed by one quiet.
    let puts: Vec<_> = (0..256)
        .map(|i| ctx.put_nb(arr.ptr(right, i), &[(me * 1000 + i) as u64]))
        .collect();
    ctx.quiet();
    for h in puts {
        h.wait();
    }
    ctx.barrier();
    let left = (me + n - 1) % n;
    // Many gets in flight, each waited separately.
    let gets: Vec<_> = (0..256).map(|i| ctx.get_nb(arr.ptr(me, i), 1)).collect();
    for (i, h) in gets.into_iter().enumerate() {
        assert_eq!(h.wait(), vec![(left * 1000 + i) as u64]);
    }
    let slice = ctx.get_nb(arr.ptr(right, 10), 20).wait();
    assert_eq!(
        slice,
        (10..30).map(|i| (me * 1000 + i) as u64).collect::<Vec<_>>()
    );
    ctx.barrier();
    // Non-blocking atomics on one word: the previous values are distinct, the sum exact.
    let counter = ctx.alloc::<u64>(1);
    let hs: Vec<_> = (0..100)
        .map(|_| ctx.fetch_add_nb(counter.ptr(0, 0), 1))
        .collect();
    let mut olds: Vec<u64> = hs.into_iter().map(|h| h.wait()).collect();
    olds.sort_unstable();
    olds.dedup();
    assert_eq!(olds.len(), 100);
    ctx.barrier();
    assert_eq!(ctx.load(counter.ptr(0, 0)), 100 * n as u64);
    ctx.barrier();
    let cas = ctx
        .compare_exchange_nb(counter.ptr(0, 0), 100 * n as u64, 1)
        .wait();
    ctx.barrier();
    // Exactly one PE's CAS succeeded.
    let won = ctx.sum_u64((cas == 100 * n as u64) as u64);
    assert_eq!(won, 1);
    assert_eq!(ctx.load(counter.ptr(0, 0)), 1);
    ctx.barrier();
}

fn ordering_barrier(ctx: &Ctx) {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    let arr = ctx.alloc::<u64>(n);
    for round in 1..=20u64 {
        // Non-blocking puts to every PE, completed by the barrier alone.
        let hs: Vec<_> = (0..n)
            .map(|pe| ctx.put_nb(arr.ptr(pe, me), &[round * 100 + me as u64]))
            .collect();
        ctx.barrier();
        for src in 0..n {
            assert_eq!(
                ctx.get(arr.ptr(me, src)),
                round * 100 + src as u64,
                "round {round}"
            );
        }
        ctx.barrier();
        drop(hs);
    }
}

fn ordering_flag(ctx: &Ctx) {
    let n = ctx.num_pes();
    if n < 2 {
        return;
    }
    let data = ctx.alloc::<u64>(64);
    let flag = ctx.alloc::<u64>(1);
    for round in 1..=50u64 {
        if ctx.my_pe() == 0 {
            let payload: Vec<u64> = (0..64).map(|i| round * 1000 + i).collect();
            let h = ctx.put_nb(data.ptr(1, 0), &payload);
            h.wait(); // the data is visible before the flag
            ctx.store(flag.ptr(1, 0), round);
        } else if ctx.my_pe() == 1 {
            while ctx.load(flag.ptr(1, 0)) != round {
                std::hint::spin_loop();
            }
            let got = ctx.get_slice(data.ptr(1, 0), 64);
            assert_eq!(got, (0..64).map(|i| round * 1000 + i).collect::<Vec<_>>());
        }
        ctx.barrier();
    }
}

fn ordering_message_after_put(ctx: &Ctx) {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    let data = ctx.alloc::<u64>(1);
    let mem = ctx.memory().clone();
    let seen = Rc::new(Cell::new(0u64));
    let s2 = seen.clone();
    let check = ctx.register(move |_ctx, (src, v): (u64, u64)| {
        // The sender's blocking put completed before it sent this message.
        assert_eq!(
            mem.get(data.ptr(mem.my_pe(), 0)),
            v,
            "put from PE {src} not visible"
        );
        s2.set(s2.get() + 1);
    });
    let right = (me + 1) % n;
    for round in 1..=10u64 {
        ctx.finish(|| {
            ctx.put(data.ptr(right, 0), round * 7 + me as u64);
            ctx.send(right, check, &(me as u64, round * 7 + me as u64));
        });
        ctx.barrier();
    }
    assert_eq!(seen.get(), 10);
}

fn out_of_bounds_is_error(ctx: &Ctx) {
    let a = ctx.alloc::<u64>(4);
    let me = ctx.my_pe();
    let mut buf = [0u64; 2];
    match ctx.try_get_into(a.ptr(me, 3), &mut buf) {
        Err(TransportError::OutOfBounds {
            offset,
            len_access,
            len,
            ..
        }) => {
            assert_eq!((offset, len_access, len), (24, 16, 32));
        }
        other => panic!("expected out-of-bounds, got {other:?}"),
    }
    assert!(matches!(
        ctx.try_put_slice(a.ptr(me, 4), &[1u64]),
        Err(TransportError::OutOfBounds { .. })
    ));
    assert!(matches!(
        ctx.try_put_slice(a.ptr(ctx.num_pes(), 0), &[1u64]),
        Err(TransportError::OutOfBounds { .. })
    ));
    let mis = rhizome::GlobalPtr::<u64>::from_parts(me, a.segment(), 4);
    assert!(matches!(
        ctx.try_atomic(mis, AtomicOp::Load),
        Err(TransportError::Misaligned { offset: 4, .. })
    ));
    let msg = TransportError::OutOfBounds {
        pe: 1,
        segment: 2,
        offset: 24,
        len_access: 16,
        len: 32,
    }
    .to_string();
    assert!(msg.contains("PE 1") && msg.contains("24..40"), "{msg}");
    ctx.barrier();
}

fn am_counts(ctx: &Ctx) {
    let n = ctx.num_pes();
    let count = Rc::new(Cell::new(0u64));
    let sum = Rc::new(Cell::new(0u64));
    let (c2, s2) = (count.clone(), sum.clone());
    let incr = ctx.register(move |_ctx, v: u64| {
        c2.set(c2.get() + 1);
        s2.set(s2.get() + v);
    });
    let k = 10_000u64;
    ctx.finish(|| {
        for i in 0..k {
            for pe in 0..n {
                ctx.send(pe, incr, &i);
            }
        }
    });
    assert_eq!(count.get(), k * n as u64);
    assert_eq!(sum.get(), n as u64 * k * (k - 1) / 2);
    ctx.barrier();
}

/// A (ttl, salt) message that forwards itself.
type Forward = rhizome::Am<(u32, u32)>;

fn am_storm(ctx: &Ctx) {
    let n = ctx.num_pes();
    let handled = Rc::new(Cell::new(0u64));
    let h2 = handled.clone();
    // A message with ttl t is handled once and forwards one with ttl t-1 to another PE,
    // so a start message with ttl t causes t+1 handler runs.
    let slot: Rc<Cell<Option<Forward>>> = Rc::new(Cell::new(None));
    let slot2 = slot.clone();
    let fwd = ctx.register(move |ctx: &Ctx, (ttl, salt): (u32, u32)| {
        h2.set(h2.get() + 1);
        if ttl > 0 {
            let am = slot2.get().expect("registered");
            let dest = (ctx.my_pe() + salt as usize + ttl as usize) % ctx.num_pes();
            ctx.send(dest, am, &(ttl - 1, salt.wrapping_mul(7).wrapping_add(1)));
            if ttl % 5 == 0 {
                // Fan out: an extra branch with a short life.
                ctx.send((dest + 1) % ctx.num_pes(), am, &(1, salt));
            }
        }
    });
    slot.set(Some(fwd));
    let starts = 2_000u32;
    let ttl = 20u32;
    ctx.finish(|| {
        for i in 0..starts {
            ctx.send((ctx.my_pe() + i as usize) % n, fwd, &(ttl, i));
        }
    });
    let total = ctx.sum_u64(handled.get());
    // ttl 20..1 has 4 multiples of 5 (20, 15, 10, 5), each adding a 2-run branch.
    let per_start = (ttl as u64 + 1) + 4 * 2;
    assert_eq!(total, n as u64 * starts as u64 * per_start);
    ctx.barrier();
}

fn am_call(ctx: &Ctx) {
    let n = ctx.num_pes();
    let me = ctx.my_pe() as u64;
    let square = ctx.register_call(move |ctx: &Ctx, x: u64| (x * x, ctx.my_pe() as u64));
    let echo = ctx.register_call(|_ctx: &Ctx, s: String| format!("{s}!"));
    let handles: Vec<_> = (0..200u64)
        .map(|i| ctx.call((i as usize) % n, square, &(i + me)))
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let (sq, from) = h.wait();
        assert_eq!(sq, (i as u64 + me) * (i as u64 + me));
        assert_eq!(from, (i % n) as u64);
    }
    let r = ctx
        .call((ctx.my_pe() + 1) % n, echo, &format!("hi {me}"))
        .wait();
    assert_eq!(r, format!("hi {me}!"));
    // Calls must also be answered while the target waits in finish.
    ctx.finish(|| ());
    ctx.barrier();
}

fn aggregation_edges(ctx: &Ctx) {
    let n = ctx.num_pes();
    let agg = ctx.aggregation_bytes();
    let got = Rc::new(Cell::new(0u64));
    let bytes = Rc::new(Cell::new(0u64));
    let (g2, b2) = (got.clone(), bytes.clone());
    let blob = ctx.register(move |_ctx, v: Vec<u8>| {
        // Content check: byte i is (len + i) mod 251.
        for (i, b) in v.iter().enumerate() {
            assert_eq!(*b as usize, (v.len() + i) % 251, "corrupt payload");
        }
        g2.set(g2.get() + 1);
        b2.set(b2.get() + v.len() as u64);
    });
    let make = |len: usize| {
        (0..len)
            .map(|i| ((len + i) % 251) as u8)
            .collect::<Vec<u8>>()
    };
    // Header 2 bytes + length 8 bytes + payload.
    let exact = agg - 10;
    let sizes = [0usize, 1, exact, exact - 1, exact + 1, 2 * agg + 3, 5];
    // Zero messages: finish still terminates.
    // (A PE leaving a finish may start sending for the next one while others are still
    // leaving this one, hence the blocking barriers around per-PE checks.)
    ctx.finish(|| ());
    assert_eq!(got.get(), 0);
    ctx.barrier();
    ctx.finish(|| {
        for pe in 0..n {
            for &s in &sizes {
                ctx.send(pe, blob, &make(s));
            }
        }
    });
    assert_eq!(got.get(), (n * sizes.len()) as u64);
    assert_eq!(bytes.get(), (n * sizes.iter().sum::<usize>()) as u64);
    ctx.barrier();
    // Many tiny messages crossing buffer boundaries at every alignment.
    ctx.finish(|| {
        for i in 0..(3 * agg / 11 + 7) {
            ctx.send((ctx.my_pe() + i) % n, blob, &make(1));
        }
    });
    let total = ctx.sum_u64(got.get());
    assert_eq!(total, (n * n * sizes.len() + n * (3 * agg / 11 + 7)) as u64);
    ctx.barrier();
}

fn finish_repeated(ctx: &Ctx) {
    let n = ctx.num_pes();
    let count = Rc::new(Cell::new(0u64));
    let c2 = count.clone();
    let ping = ctx.register(move |_ctx, ()| c2.set(c2.get() + 1));
    for round in 0..100usize {
        ctx.finish(|| {
            if round % 3 != 0 {
                ctx.send((ctx.my_pe() + round) % n, ping, &());
            }
        });
    }
    let total = ctx.sum_u64(count.get());
    assert_eq!(
        total,
        n as u64 * (0..100).filter(|r| r % 3 != 0).count() as u64
    );
    ctx.barrier();
}

fn collectives(ctx: &Ctx) {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    for root in 0..n {
        let v = ctx.broadcast(if me == root { root as u64 * 11 } else { 0 }, root);
        assert_eq!(v, root as u64 * 11);
        let s = ctx.broadcast(format!("from {me}"), root);
        assert_eq!(s, format!("from {root}"));
        let g = ctx.gather((me as u32, vec![me as u8; me]), root);
        if me == root {
            let g = g.expect("root gets the gather");
            assert_eq!(g.len(), n);
            for (pe, (p, v)) in g.into_iter().enumerate() {
                assert_eq!(p as usize, pe);
                assert_eq!(v, vec![pe as u8; pe]);
            }
        } else {
            assert!(g.is_none());
        }
        let r = ctx.reduce(me as u64 + 1, root, |a, b| a * b);
        if me == root {
            assert_eq!(r, Some((1..=n as u64).product()));
        }
    }
    assert_eq!(ctx.sum_u64(me as u64 + 1), (n * (n + 1) / 2) as u64);
    assert_eq!(ctx.min_u64(me as u64 + 3), 3);
    assert_eq!(ctx.max_u64(me as u64 + 3), n as u64 + 2);
    let mut v = [me as u64, 100 - me as u64, 1];
    ctx.allreduce_u64(&mut v, ReduceOp::Sum);
    assert_eq!(
        v,
        [
            (n * (n - 1) / 2) as u64,
            (100 * n - n * (n - 1) / 2) as u64,
            n as u64
        ]
    );
    let f = ctx.allreduce(0.5 * me as f64, |a, b| a + b);
    assert_eq!(f, 0.25 * (n * (n - 1)) as f64);
    let all = ctx.allgather(vec![me as u16; 3]);
    assert_eq!(all, (0..n).map(|p| vec![p as u16; 3]).collect::<Vec<_>>());
    // Entry `q` of PE `p`'s vector goes to PE `q`, which gets them in PE order.
    let sent: Vec<Vec<u64>> = (0..n)
        .map(|to| vec![(me * 10 + to) as u64; to + 1])
        .collect();
    let got = ctx.alltoall(sent);
    let want: Vec<Vec<u64>> = (0..n)
        .map(|from| vec![(from * 10 + me) as u64; me + 1])
        .collect();
    assert_eq!(got, want);
    for _ in 0..100 {
        ctx.barrier();
    }
}

/// Calls made inside a finish are answered by PEs already waiting in that finish.
fn call_inside_finish(ctx: &Ctx) {
    let n = ctx.num_pes();
    let twice = ctx.register_call(|_ctx: &Ctx, x: u64| 2 * x);
    let r = ctx.finish(|| {
        if ctx.my_pe() == 0 {
            (0..50u64)
                .map(|i| ctx.call((i as usize) % n, twice, &i).wait())
                .sum::<u64>()
        } else {
            0
        }
    });
    if ctx.my_pe() == 0 {
        assert_eq!(r, 2 * (0..50u64).sum::<u64>());
    }
}
