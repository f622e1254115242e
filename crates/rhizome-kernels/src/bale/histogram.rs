//! Histogram: every PE adds 1 to `-n` random entries of a table of `-T` entries per PE.
//! Checked: each PE's entries against a sequential count of every PE's indices.

use super::{Impl, Options, indices, place, timed};
use rhizome::Ctx;

/// Runs `imp`; (seconds, what is wrong with this PE's part, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options, global: usize) -> (f64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let mine: Vec<(usize, usize)> = indices(opts, me, global).map(|g| place(g, pes)).collect();
    let (seconds, counts) = match imp {
        Impl::Agp | Impl::Context => {
            let table = ctx.alloc::<u64>(opts.table);
            let seconds = if imp == Impl::Agp {
                timed(ctx, || {
                    for &(pe, off) in &mine {
                        ctx.fetch_add(table.ptr(pe, off), 1);
                    }
                })
            } else {
                let agg = super::context(ctx, opts);
                timed(ctx, || {
                    for &(pe, off) in &mine {
                        agg.inc(table.ptr(pe, off));
                    }
                    agg.quiet();
                })
            };
            (seconds, ctx.get_slice(table.ptr(me, 0), opts.table))
        }
        Impl::Conveyor => {
            let mut c = super::conveyor::<u64>(ctx, opts);
            let mut counts = vec![0u64; opts.table];
            let seconds = timed(ctx, || {
                let mut next = mine.iter();
                let mut pending = next.next();
                while c.advance(pending.is_none()) {
                    while let Some(&(pe, off)) = pending {
                        if !c.push(off as u64, pe) {
                            break;
                        }
                        pending = next.next();
                    }
                    while let Some((off, _)) = c.pull() {
                        counts[off as usize] += 1;
                    }
                }
            });
            (seconds, counts)
        }
        Impl::Selector => {
            // The state is this PE's part of the table; the handler increments it.
            let mut sel = super::selector(ctx, opts, vec![0u64; opts.table]);
            let update = sel.mailbox::<u64>();
            sel.process(update, |counts, off, _, _| counts[off as usize] += 1);
            let seconds = timed(ctx, || {
                sel.superstep(|mail| {
                    for &(pe, off) in &mine {
                        mail.send(update, off as u64, pe);
                    }
                    mail.done(update);
                })
            });
            (seconds, sel.into_state())
        }
    };
    (seconds, check(ctx, opts, global, &counts))
}

/// Compares this PE's entries with a sequential count over every PE's indices.
fn check(ctx: &Ctx, opts: &Options, global: usize, counts: &[u64]) -> Option<String> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let mut want = vec![0u64; opts.table];
    for src in 0..pes {
        for (pe, off) in indices(opts, src, global).map(|g| place(g, pes)) {
            if pe == me {
                want[off] += 1;
            }
        }
    }
    let total: u64 = counts.iter().sum();
    let want_total: u64 = want.iter().sum();
    if total != want_total {
        return Some(format!("{total} updates arrived, {want_total} expected"));
    }
    let bad = (0..opts.table).find(|&i| counts[i] != want[i])?;
    Some(format!(
        "entry {bad} is {}, {} expected",
        counts[bad], want[bad]
    ))
}
