//! Randperm: a uniform random permutation of `0..N` (`-n` entries per PE, `N = n * PEs`)
//! by Bale's dart throwing. Each PE throws its values at random slots of a distributed
//! board twice as large as `N`; a value that lands in a taken slot is thrown again. The
//! board's values, read in slot order, are the permutation: each PE packs its slots, and
//! the values go to their positions of the cyclically spread result.
//!
//! No aggregation-context version: a dart's compare-and-swap answer decides whether it is
//! thrown again, and a context's operations return nothing.
//!
//! Checked: every value of `0..N` appears exactly once in the result (counted at its owner
//! in a separate aggregated pass).

use super::{Impl, Options, actors, place, timed};
use rhizome::Ctx;
use rhizome::rng::XorShift64;

/// Runs `imp`; (seconds, entries placed, what is wrong with the permutation, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options) -> (f64, u64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let n = opts.updates;
    let values: Vec<u64> = (0..n).map(|i| (i * pes + me) as u64).collect();
    let mut rng = XorShift64::for_stream(opts.seed.wrapping_mul(1 << 20) ^ (me as u64 + 7919));
    let mut perm = Vec::new();
    let seconds = timed(ctx, || {
        let landed = match imp {
            Impl::Agp => darts_one_sided(ctx, &values, &mut rng),
            Impl::Selector => darts_actors(ctx, opts, &values, &mut rng),
            _ => darts_conveyed(ctx, opts, &values, &mut rng),
        };
        perm = spread(ctx, opts, imp, &landed, n);
    });
    let total = (n * pes) as u64;
    (seconds, total, check(ctx, opts, &perm, n))
}

/// Bale's AGP darts: compare-and-swap of each value (plus one, 0 is empty) into a random
/// free slot of the board. This PE's occupied slots, in slot order.
fn darts_one_sided(ctx: &Ctx, values: &[u64], rng: &mut XorShift64) -> Vec<u64> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let slots = 2 * values.len();
    let board = ctx.alloc::<u64>(slots.max(1));
    for &v in values {
        loop {
            let (pe, off) = place(rng.below(slots * pes), pes);
            if ctx.compare_exchange(board.ptr(pe, off), 0, v + 1).is_ok() {
                break;
            }
        }
    }
    ctx.barrier();
    let here = ctx.get_slice(board.ptr(me, 0), slots);
    here.into_iter()
        .filter(|&s| s != 0)
        .map(|s| s - 1)
        .collect()
}

/// Bale's conveyor darts: `[slot, value]` to the slot's owner, which answers the value
/// (landed) or its complement (taken: throw again).
fn darts_conveyed(ctx: &Ctx, opts: &Options, values: &[u64], rng: &mut XorShift64) -> Vec<u64> {
    let pes = ctx.num_pes();
    let slots = 2 * values.len();
    let mut board = vec![0u64; slots];
    let mut throws = super::conveyor::<[u64; 2]>(ctx, opts);
    let mut replies = super::conveyor::<u64>(ctx, opts);
    // `to_throw[thrown..]` are the values to throw (again); the ones before are in flight
    // or landed.
    let mut to_throw = values.to_vec();
    let mut thrown = 0;
    let mut hits = 0;
    loop {
        let more = throws.advance(hits == values.len());
        if !(replies.advance(!more) || more) {
            break;
        }
        while thrown < to_throw.len() {
            let (pe, off) = place(rng.below(slots * pes), pes);
            if !throws.push([off as u64, to_throw[thrown]], pe) {
                break;
            }
            thrown += 1;
        }
        while let Some(([off, v], from)) = throws.pull() {
            let free = board[off as usize] == 0;
            if !replies.push(if free { v } else { !v }, from) {
                throws.unpull();
                break;
            }
            if free {
                board[off as usize] = v + 1;
            }
        }
        while let Some((r, _)) = replies.pull() {
            if r >> 63 == 1 {
                // Missed: back to the unthrown part (whose front has been thrown).
                thrown -= 1;
                to_throw[thrown] = !r;
            } else {
                hits += 1;
            }
        }
    }
    board
        .into_iter()
        .filter(|&s| s != 0)
        .map(|s| s - 1)
        .collect()
}

/// HClib-Actor's darts: `[slot, value]` to the throw mailbox of the slot's owner, whose
/// handler takes the slot if it is free and else sends the value back to the miss
/// mailbox of its thrower, whose handler throws it again at a new random slot: darts
/// bounce between handlers until they land, and the superstep ends when all have.
fn darts_actors(ctx: &Ctx, opts: &Options, values: &[u64], rng: &mut XorShift64) -> Vec<u64> {
    struct Board {
        slots: Vec<u64>,
        /// The rethrows' generator (the body throws with its own).
        rng: XorShift64,
    }
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let slots = 2 * values.len();
    let board = Board {
        slots: vec![0; slots],
        rng: XorShift64::for_stream(opts.seed.wrapping_mul(1 << 21) ^ (me as u64 + 104_729)),
    };
    let mut sel = super::selector(ctx, opts, board);
    let throw = sel.mailbox::<[u64; 2]>();
    let miss = sel.mailbox::<u64>();
    sel.process(throw, move |b, [off, v], from, mail| {
        let slot = &mut b.slots[off as usize];
        if *slot == 0 {
            *slot = v + 1;
        } else {
            mail.send(miss, v, from);
        }
    });
    sel.process(miss, move |b, v, _, mail| {
        let (pe, off) = place(b.rng.below(slots * pes), pes);
        mail.send(throw, [off as u64, v], pe);
    });
    sel.superstep(|mail| {
        for &v in values {
            let (pe, off) = place(rng.below(slots * pes), pes);
            mail.send(throw, [off as u64, v], pe);
        }
        mail.done(throw);
        mail.done(miss);
    });
    sel.into_state()
        .slots
        .into_iter()
        .filter(|&s| s != 0)
        .map(|s| s - 1)
        .collect()
}

/// Collective: the values `landed` on the PEs' boards, in PE then slot order, to their
/// positions in the result (`n` per PE, cyclic); this PE's part.
fn spread(ctx: &Ctx, opts: &Options, imp: Impl, landed: &[u64], n: usize) -> Vec<u64> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let counts = ctx.allgather(landed.len() as u64);
    let start: u64 = counts[..me].iter().sum();
    let at = |k: usize| place(start as usize + k, pes);
    if imp == Impl::Agp {
        let perm = ctx.alloc::<u64>(n.max(1));
        for (k, &v) in landed.iter().enumerate() {
            let (pe, off) = at(k);
            ctx.put(perm.ptr(pe, off), v);
        }
        ctx.barrier();
        ctx.get_slice(perm.ptr(me, 0), n)
    } else {
        let items = landed.iter().enumerate().map(|(k, &v)| {
            let (pe, off) = at(k);
            ([off as u64, v], pe)
        });
        actors::scatter_by(ctx, opts, imp, vec![0u64; n], items, |perm, [off, v], _| {
            perm[off as usize] = v
        })
    }
}

/// Collective: counts each value of every PE's `perm` at its owner (an aggregated pass
/// apart from the kernel); wrong unless this PE's values each appear exactly once.
fn check(ctx: &Ctx, opts: &Options, perm: &[u64], n: usize) -> Option<String> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    if perm.len() != n {
        return Some(format!("{} entries here, {n} expected", perm.len()));
    }
    let total = (n * pes) as u64;
    if let Some(&v) = perm.iter().find(|&&v| v >= total) {
        return Some(format!("value {v} is not below {total}"));
    }
    let seen = ctx.alloc::<u64>(n.max(1));
    let agg = super::context(ctx, opts);
    for &v in perm {
        let (pe, off) = place(v as usize, pes);
        agg.inc(seen.ptr(pe, off));
    }
    agg.quiet();
    let seen = ctx.get_slice(seen.ptr(me, 0), n);
    let bad = (0..n).find(|&i| seen[i] != 1)?;
    Some(format!(
        "value {} appears {} times",
        bad * pes + me,
        seen[bad]
    ))
}
