//! SPMD test bodies of conveyors and aggregation contexts (part of the SPMD suite, so
//! they run on 1, 2 and 4 local PEs and under `mpirun -np 2` and `-np 4`).

use rhizome::conveyor::{CREDITS, Conveyor};
use rhizome::rng::XorShift64;
use rhizome::{AggContext, Ctx};

/// Lane sizes from one item (a batch per push: refusals and flushes all the time) to the
/// default.
const CAPACITIES: [Option<usize>; 5] = [Some(1), Some(2), Some(3), Some(61), None];

fn conveyor<'c>(ctx: &'c Ctx, capacity: Option<usize>) -> Conveyor<'c, [u64; 2]> {
    match capacity {
        Some(c) => Conveyor::with_capacity(ctx, c),
        None => Conveyor::new(ctx),
    }
}

/// Runs one round in which this PE pushes `count(dest)` items `[me, seq]` to each `dest`
/// (in turn, `seq` counting per destination) and checks what it receives: from each
/// source exactly `count_from(src)` items, in the order they were pushed.
fn round(
    c: &mut Conveyor<'_, [u64; 2]>,
    ctx: &Ctx,
    count: impl Fn(usize) -> u64,
    count_from: impl Fn(usize) -> u64,
) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let mut sent = vec![0u64; pes];
    let mut received = vec![0u64; pes];
    let mut dest = 0;
    let mut finished = (0..pes).filter(|&d| count(d) == 0).count();
    while c.advance(finished == pes) {
        while finished < pes {
            if sent[dest] < count(dest) {
                if !c.push([me as u64, sent[dest]], dest) {
                    break;
                }
                sent[dest] += 1;
                finished += (sent[dest] == count(dest)) as usize;
            }
            dest = (dest + 1) % pes;
        }
        let mut predicted = None;
        while let Some(([src, seq], from)) = c.pull() {
            assert_eq!(src as usize, from, "pull names the pushing PE");
            assert_eq!(seq, received[from], "items from PE {from} out of order");
            received[from] += 1;
            if let Some(p) = predicted.take() {
                assert_eq!(
                    p,
                    [src, seq],
                    "`ahead` showed another item than the pull gave"
                );
            }
            // `ahead` shows what the next pulls return: this batch's next items, in order.
            for (k, &[s, q]) in c.ahead().iter().take(3).enumerate() {
                assert_eq!((s, q), (src, seq + 1 + k as u64), "`ahead` out of order");
            }
            predicted = c.ahead().first().copied();
        }
    }
    for (src, &n) in received.iter().enumerate() {
        assert_eq!(n, count_from(src), "PE {me}: items from PE {src}");
    }
    assert!(!c.advance(true), "a complete conveyor stays complete");
}

pub fn conveyor_all_to_all(ctx: &Ctx) {
    // Different amounts per pair, to self included.
    let n = |src: usize, dst: usize| (100 + 37 * src + 11 * dst) as u64;
    for cap in CAPACITIES {
        let mut c = conveyor(ctx, cap);
        round(&mut c, ctx, |d| n(ctx.my_pe(), d), |s| n(s, ctx.my_pe()));
    }
}

pub fn conveyor_silent_and_self(ctx: &Ctx) {
    let me = ctx.my_pe();
    for cap in CAPACITIES {
        // PE 0 pushes nothing at all.
        let mut c = conveyor(ctx, cap);
        let n = |src: usize| if src == 0 { 0 } else { 50 + src as u64 };
        round(&mut c, ctx, |_| n(me), n);
        // Every PE pushes to itself only.
        let mut c = conveyor(ctx, cap);
        round(
            &mut c,
            ctx,
            |d| if d == me { 500 } else { 0 },
            |s| if s == me { 500 } else { 0 },
        );
        // Nobody pushes anything.
        let mut c = conveyor(ctx, cap);
        round(&mut c, ctx, |_| 0, |_| 0);
    }
}

pub fn conveyor_reset_rounds(ctx: &Ctx) {
    let me = ctx.my_pe();
    let mut c = conveyor(ctx, Some(5));
    for r in 0..4u64 {
        let n = |src: usize, dst: usize| r * 13 + (src * 7 + dst) as u64;
        round(&mut c, ctx, |d| n(me, d), |s| n(s, me));
        c.reset();
    }
}

pub fn conveyor_refuses_when_full(ctx: &Ctx) {
    // Without advance no credit comes back: a lane takes its own batch plus the ones in
    // flight, then refuses, and memory stays bounded.
    let target = (ctx.my_pe() + 1) % ctx.num_pes();
    for cap in [1usize, 3, 8] {
        let mut c = Conveyor::<u64>::with_capacity(ctx, cap);
        let mut accepted = 0;
        while c.push(accepted, target) {
            accepted += 1;
            assert!(accepted <= 1000, "pushes never refused");
        }
        assert_eq!(accepted as usize, (CREDITS + 1) * cap);
        let (total, mut next, mut got) = (3 * accepted, accepted, Vec::new());
        while c.advance(next == total) {
            while next < total && c.push(next, target) {
                next += 1;
            }
            while let Some((v, _)) = c.pull() {
                got.push(v);
            }
        }
        // Everything the previous PE pushed arrived, in order.
        assert_eq!(got, (0..total).collect::<Vec<_>>());
    }
}

/// Random operations issued through a context into `a` and directly into `b`.
pub fn aggregate_matches_direct(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let m = 64; // slots of each source PE on every PE
    for cap in [Some(1), Some(7), None] {
        let a = ctx.alloc::<u64>(pes * m + 8);
        let b = ctx.alloc::<u64>(pes * m + 8);
        let flags = ctx.alloc::<u32>(pes * m);
        let agg = match cap {
            Some(c) => AggContext::with_capacity(ctx, c),
            None => AggContext::new(ctx),
        };
        let mut rng = XorShift64::for_stream(me as u64 + 17);
        for slot in 0..m {
            // A put of each slot of this PE's region, on a random PE, and adds anywhere.
            let pe = rng.below(pes);
            let v = rng.next_u64();
            agg.put(a.ptr(pe, me * m + slot), v);
            ctx.put(b.ptr(pe, me * m + slot), v);
            agg.put(flags.ptr(pe, me * m + slot), v as u32);
            for _ in 0..3 {
                let (pe, i, d) = (rng.below(pes), pes * m + rng.below(8), rng.next_u64());
                agg.add(a.ptr(pe, i), d);
                ctx.fetch_add(b.ptr(pe, i), d);
                agg.inc(a.ptr(pe, i));
                ctx.fetch_add(b.ptr(pe, i), 1);
            }
        }
        agg.quiet();
        ctx.barrier();
        let mine = |arr: rhizome::GlobalArray<u64>| ctx.get_slice(arr.ptr(me, 0), pes * m + 8);
        assert_eq!(mine(a), mine(b), "PE {me}, capacity {cap:?}");
        let f = ctx.get_slice(flags.ptr(me, 0), pes * m);
        let low: Vec<u32> = mine(b)[..pes * m].iter().map(|&v| v as u32).collect();
        assert_eq!(f, low, "4-byte puts");
        // Reads of random words anywhere, into this PE's copy of `a`'s region.
        let into = ctx.alloc::<u64>(m);
        let mut want = Vec::new();
        for j in 0..m {
            let (pe, i) = (rng.below(pes), rng.below(pes * m + 8));
            agg.get_into(b.ptr(pe, i), into.ptr(me, j));
            want.push(ctx.get(b.ptr(pe, i)));
        }
        agg.quiet();
        assert_eq!(ctx.get_slice(into.ptr(me, 0), m), want, "PE {me} reads");
    }
}

pub fn aggregate_scopes_repeated(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let bins = ctx.alloc::<u64>(4);
    for round in 1..=3u64 {
        ctx.aggregate(|agg| {
            for i in 0..(100 * round) as usize {
                agg.inc(bins.ptr(i % pes, i % 4));
            }
        });
        // The scope's end waited for every PE's increments: no barrier needed here.
        let mut want = [0u64; 4];
        for r in 1..=round as usize {
            for i in (0..100 * r).filter(|i| i % pes == me) {
                want[i % 4] += pes as u64;
            }
        }
        assert_eq!(ctx.get_slice(bins.ptr(me, 0), 4), want, "round {round}");
    }
}
