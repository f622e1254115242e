//! Permute: the rows and columns of an Erdős–Rényi matrix (`-n` rows per PE, `-z`
//! nonzeros per row) moved by two random permutations, `B[rperm[i]][cperm[j]] = A[i][j]`,
//! as Bale's `permute_matrix`. Three steps, each one-sided, conveyed, sent to selector
//! mailboxes or in an aggregation context: the row lengths go to the new rows' owners, the nonzeros follow to their place
//! in the new rows, then each new row's columns are looked up in `cperm` (an index-gather).
//! Checked: every row of `B` against the row of `A` it came from, regenerated from the seed
//! and mapped through the permutations sequentially.

use super::spmat::{self, Matrix};
use super::{Impl, Options, actors, place, timed};
use rhizome::{AggContext, Ctx, GlobalArray};

/// Runs `imp`; (seconds, nonzeros moved, what is wrong with this PE's rows, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options) -> (f64, u64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let n = opts.updates * pes;
    let a = spmat::input(opts, me, pes);
    let rperm = spmat::permutation(opts.seed, 1, n);
    let cperm = spmat::permutation(opts.seed, 2, n);
    let rp: Vec<u64> = (me..n).step_by(pes).map(|r| rperm[r]).collect();
    let cp: Vec<u64> = (me..n).step_by(pes).map(|c| cperm[c]).collect();
    let mut b = Matrix::default();
    let seconds = timed(ctx, || {
        b = match imp {
            Impl::Agp | Impl::Context => one_sided(ctx, opts, imp == Impl::Context, &a, &rp, &cp),
            Impl::Conveyor | Impl::Selector => conveyed(ctx, opts, imp, &a, &rp, &cp),
        };
    });
    let moved = ctx.sum_u64(a.nnz() as u64);
    let rinv = spmat::inverse(&rperm);
    let wrong = b.first_difference(me, pes, |t| {
        let mut want: Vec<u64> = spmat::input_row(opts, rinv[t] as usize, n)
            .iter()
            .map(|&c| cperm[c as usize])
            .collect();
        want.sort_unstable();
        want
    });
    (seconds, moved, wrong)
}

/// Bale's AGP permute (`aggregate`: the same operations in an aggregation context).
fn one_sided(
    ctx: &Ctx,
    opts: &Options,
    aggregate: bool,
    a: &Matrix,
    rp: &[u64],
    cp: &[u64],
) -> Matrix {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let rows = a.rows();
    let agg = aggregate.then(|| super::context(ctx, opts));
    // Row lengths to the new rows.
    let counts = ctx.alloc::<u64>(rows.max(1));
    for (i, &t) in rp.iter().enumerate() {
        let (pe, off) = place(t as usize, pes);
        let len = a.row(i).len() as u64;
        match &agg {
            Some(agg) => agg.put(counts.ptr(pe, off), len),
            None => ctx.put(counts.ptr(pe, off), len),
        }
    }
    quiet_all(ctx, agg.as_ref());
    let counts_here = ctx.get_slice(counts.ptr(me, 0), rows);
    let offsets = spmat::prefix_sums(&counts_here);
    let starts = ctx.alloc::<u64>(rows.max(1));
    let starts_here: Vec<u64> = offsets[..rows].iter().map(|&o| o as u64).collect();
    ctx.put_slice(starts.ptr(me, 0), &starts_here);
    ctx.barrier();
    let nnz = offsets[rows];
    let most = ctx.max_u64(nnz as u64) as usize;
    let nonzeros = ctx.alloc::<u64>(most.max(1));
    // Each row's nonzeros to their place in the new row.
    match &agg {
        Some(agg) => {
            let dest = read_in_context(ctx, agg, starts, rp, rows);
            for (i, &t) in rp.iter().enumerate() {
                let pe = t as usize % pes;
                for (k, &c) in a.row(i).iter().enumerate() {
                    agg.put(nonzeros.ptr(pe, dest[i] as usize + k), c);
                }
            }
            agg.quiet();
        }
        None => {
            for (i, &t) in rp.iter().enumerate() {
                let (pe, off) = place(t as usize, pes);
                let start = ctx.get(starts.ptr(pe, off)) as usize;
                if !a.row(i).is_empty() {
                    ctx.put_slice(nonzeros.ptr(pe, start), a.row(i));
                }
            }
            ctx.barrier();
        }
    }
    // The new columns: cperm of the old ones.
    let old = ctx.get_slice(nonzeros.ptr(me, 0), nnz);
    let cperm = ctx.alloc::<u64>(cp.len().max(1));
    ctx.put_slice(cperm.ptr(me, 0), cp);
    ctx.barrier();
    let new = match &agg {
        Some(agg) => read_in_context(ctx, agg, cperm, &old, most),
        None => old
            .iter()
            .map(|&c| {
                let (pe, off) = place(c as usize, pes);
                ctx.get(cperm.ptr(pe, off))
            })
            .collect(),
    };
    let mut b = Matrix::from_counts(a.n, &counts_here, new);
    b.sort_rows();
    b
}

/// Collective: `array`'s entries at the global (cyclic) indices `wanted`, read in the
/// context `agg`; `capacity` is the most entries any PE wants.
fn read_in_context(
    ctx: &Ctx,
    agg: &AggContext<'_>,
    array: GlobalArray<u64>,
    wanted: &[u64],
    capacity: usize,
) -> Vec<u64> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let got = ctx.alloc::<u64>(capacity.max(1));
    for (k, &g) in wanted.iter().enumerate() {
        let (pe, off) = place(g as usize, pes);
        agg.get_into(array.ptr(pe, off), got.ptr(me, k));
    }
    agg.quiet();
    ctx.get_slice(got.ptr(me, 0), wanted.len())
}

/// Waits for every one-sided operation so far (of the context, if there is one).
fn quiet_all(ctx: &Ctx, agg: Option<&AggContext<'_>>) {
    match agg {
        Some(agg) => agg.quiet(),
        None => ctx.barrier(),
    }
}

/// Bale's conveyor permute (HClib-Actor's with `imp` [`Impl::Selector`]: a mailbox per
/// step): row lengths `[new local row, length]`, then nonzeros `[new local row, position
/// in it, column]`, then the column lookup as a gather.
fn conveyed(ctx: &Ctx, opts: &Options, imp: Impl, a: &Matrix, rp: &[u64], cp: &[u64]) -> Matrix {
    let pes = ctx.num_pes();
    let lengths = (0..a.rows()).map(|i| {
        let (pe, off) = place(rp[i] as usize, pes);
        ([off as u64, a.row(i).len() as u64], pe)
    });
    let counts = actors::scatter_by(
        ctx,
        opts,
        imp,
        vec![0u64; a.rows()],
        lengths,
        |counts, [off, len], _| counts[off as usize] = len,
    );
    let offsets = spmat::prefix_sums(&counts);
    let old = vec![0u64; offsets[a.rows()]];
    let items = (0..a.rows()).flat_map(|i| {
        let (pe, off) = place(rp[i] as usize, pes);
        a.row(i)
            .iter()
            .enumerate()
            .map(move |(k, &c)| ([off as u64, k as u64, c], pe))
    });
    let old = actors::scatter_by(ctx, opts, imp, old, items, move |old, [off, k, c], _| {
        old[offsets[off as usize] + k as usize] = c;
    });
    let requests: Vec<(u64, usize)> = old
        .iter()
        .map(|&c| {
            let (pe, off) = place(c as usize, pes);
            (off as u64, pe)
        })
        .collect();
    let new = actors::gather_by(ctx, opts, imp, cp, &requests);
    let mut b = Matrix::from_counts(a.n, &counts, new);
    b.sort_rows();
    b
}
