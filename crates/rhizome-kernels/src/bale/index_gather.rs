//! Index-gather: every PE reads `-n` random entries of a distributed table of `-T`
//! entries per PE into a local array. Checked: every value read against the table's
//! defining function.

use super::{Impl, Options, actors, exchange, indices, place, timed};
use rhizome::Ctx;

/// The value of global entry `g` (distinct per entry, not its index).
fn value(g: usize) -> u64 {
    (g as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA5A5_A5A5
}

/// Runs `imp`; (seconds, what is wrong with this PE's reads, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options, global: usize) -> (f64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let table = ctx.alloc::<u64>(opts.table);
    let part: Vec<u64> = (0..opts.table).map(|off| value(off * pes + me)).collect();
    ctx.put_slice(table.ptr(me, 0), &part);
    let wanted: Vec<usize> = indices(opts, me, global).collect();
    let requests: Vec<(usize, usize)> = wanted.iter().map(|&g| place(g, pes)).collect();
    // The same requests as (offset, PE), as conveyors and selectors send them.
    let asks: Vec<(u64, usize)> = requests.iter().map(|&(pe, off)| (off as u64, pe)).collect();
    let (seconds, got) = match imp {
        Impl::Agp => {
            let mut got = vec![0u64; requests.len()];
            let seconds = timed(ctx, || {
                for (t, &(pe, off)) in got.iter_mut().zip(&requests) {
                    *t = ctx.get(table.ptr(pe, off));
                }
            });
            (seconds, got)
        }
        Impl::Context => {
            let target = ctx.alloc::<u64>(requests.len());
            let agg = super::context(ctx, opts);
            let seconds = timed(ctx, || {
                for (i, &(pe, off)) in requests.iter().enumerate() {
                    agg.get_into(table.ptr(pe, off), target.ptr(me, i));
                }
                agg.quiet();
            });
            (seconds, ctx.get_slice(target.ptr(me, 0), requests.len()))
        }
        Impl::Conveyor => {
            let mut got = vec![0u64; requests.len()];
            let seconds = timed(ctx, || exchange::gather(ctx, opts, &asks, &part, &mut got));
            (seconds, got)
        }
        Impl::Selector => {
            let mut got = Vec::new();
            let seconds = timed(ctx, || got = actors::gather(ctx, opts, part.clone(), &asks));
            (seconds, got)
        }
    };
    let bad = (0..wanted.len()).find(|&i| got[i] != value(wanted[i]));
    (
        seconds,
        bad.map(|i| format!("read {i} (entry {}) gave {}", wanted[i], got[i])),
    )
}
