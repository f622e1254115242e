//! Triangles: counts the triangles of an R-MAT graph (2^`scale` vertices, edge factor
//! [`EDGE_FACTOR`], A = 0.57, B = C = 0.19, D = 0.05) held as its lower-triangular
//! adjacency `L`, as Bale's `triangle` (`L & L * L`): for every nonzero `(i, j)` of `L`,
//! the columns `k < j` of row `i` that are also in row `j` close a triangle `k < j < i`.
//!
//! - AGP: each PE reads row `j` from its owner and intersects it with row `i`.
//! - Conveyor: each PE pushes `(j, k)` to the owner of row `j`, which looks `k` up
//!   (Bale's push variant).
//! - Selector: each PE asks the owner of row `j` for it, whose handler sends each `k` of
//!   row `j` back to a second mailbox, whose handler looks `k` up in row `i` (Bale's pull
//!   variant: two hops, the second sent by a handler).
//!
//! No aggregation-context version: the row read from another PE is needed at once, to
//! intersect it, and a context's reads land only at its `quiet`.
//!
//! Checked: the count against a sequential count of the same graph.

use super::spmat::{self, Matrix};
use super::{Impl, Options, exchange, place, timed};
use rhizome::Ctx;
use std::rc::Rc;

/// Generated edges per vertex.
pub const EDGE_FACTOR: usize = 16;

/// Runs `imp`; (seconds, nonzeros of `L`, what is wrong with the count, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options) -> (f64, u64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let n = 1usize << opts.scale;
    let edges = spmat::rmat_lower_edges(opts.seed, opts.scale, EDGE_FACTOR);
    let whole = spmat::csr_of_edges(n, &edges);
    let l = Rc::new(Matrix::from_rows(
        n,
        (me..n).step_by(pes).map(|r| whole.row(r).to_vec()),
    ));
    let mut count = 0;
    let seconds = timed(ctx, || {
        let here = match imp {
            Impl::Agp => one_sided(ctx, &l),
            Impl::Selector => pulled(ctx, opts, Rc::clone(&l)),
            _ => conveyed(ctx, opts, &l),
        };
        count = ctx.sum_u64(here);
    });
    let want = sequential(&whole);
    let wrong = (count != want).then(|| format!("{count} triangles, {want} expected"));
    (seconds, edges.len() as u64, wrong)
}

/// Elements common to two ascending lists.
fn common(a: &[u64], b: &[u64]) -> u64 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The triangles of the whole lower-triangular matrix `l`, on one PE.
pub(super) fn sequential(l: &Matrix) -> u64 {
    (0..l.rows())
        .map(|i| {
            let row = l.row(i);
            row.iter()
                .map(|&j| common(row, l.row(j as usize)))
                .sum::<u64>()
        })
        .sum()
}

/// Bale's AGP triangles: row `j` fetched with gets of its bounds and its columns. This
/// PE's count.
fn one_sided(ctx: &Ctx, l: &Matrix) -> u64 {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let rows = l.rows();
    let offsets = ctx.alloc::<u64>(ctx.max_u64(rows as u64 + 1) as usize);
    let local: Vec<u64> = l.offsets.iter().map(|&o| o as u64).collect();
    ctx.put_slice(offsets.ptr(me, 0), &local);
    let cols = ctx.alloc::<u64>(ctx.max_u64(l.nnz() as u64).max(1) as usize);
    if l.nnz() > 0 {
        ctx.put_slice(cols.ptr(me, 0), &l.cols);
    }
    ctx.barrier();
    let mut count = 0;
    let mut other = Vec::new();
    let mut bounds = [0u64; 2];
    for i in 0..rows {
        let row = l.row(i);
        for &j in row {
            let (pe, off) = place(j as usize, pes);
            ctx.get_into(offsets.ptr(pe, off), &mut bounds);
            let [start, end] = bounds;
            other.resize((end - start) as usize, 0);
            if end > start {
                ctx.get_into(cols.ptr(pe, start as usize), &mut other);
            }
            count += common(row, &other);
        }
    }
    count
}

/// Bale's conveyor triangles (push): `[local row of j, k]` for every `k < j` of row `i`
/// to the owner of row `j`, which counts the `k` it has. This PE's count.
fn conveyed(ctx: &Ctx, opts: &Options, l: &Matrix) -> u64 {
    let pes = ctx.num_pes();
    let mut count = 0;
    let queries = (0..l.rows()).flat_map(|i| {
        let row = l.row(i);
        row.iter().flat_map(move |&j| {
            let (pe, off) = place(j as usize, pes);
            row.iter()
                .take_while(move |&&k| k < j)
                .map(move |&k| ([off as u64, k], pe))
        })
    });
    exchange::scatter(ctx, opts, queries, |[off, k], _| {
        if l.row(off as usize).binary_search(&k).is_ok() {
            count += 1;
        }
    });
    count
}

/// HClib-Actor's triangles, pulled: `[local row of i, local row of j]` for every nonzero
/// `(i, j)` to the request mailbox of the owner of row `j`, whose handler sends `[local
/// row of i, k]` for every `k` of row `j` (all below `j`) to the column mailbox of the
/// owner of row `i`, whose handler counts the `k` row `i` has. This PE's count.
fn pulled(ctx: &Ctx, opts: &Options, l: Rc<Matrix>) -> u64 {
    struct Rows {
        l: Rc<Matrix>,
        count: u64,
    }
    let pes = ctx.num_pes();
    let rows = Rows {
        l: Rc::clone(&l),
        count: 0,
    };
    let mut sel = super::selector(ctx, opts, rows);
    let request = sel.mailbox::<[u64; 2]>();
    let column = sel.mailbox::<[u64; 2]>();
    sel.process(request, move |s, [i, j], from, mail| {
        for &k in s.l.row(j as usize) {
            mail.send(column, [i, k], from);
        }
    });
    sel.process(column, |s, [i, k], _, _| {
        if s.l.row(i as usize).binary_search(&k).is_ok() {
            s.count += 1;
        }
    });
    sel.superstep(|mail| {
        for i in 0..l.rows() {
            for &j in l.row(i) {
                let (pe, off) = place(j as usize, pes);
                mail.send(request, [i as u64, off as u64], pe);
            }
        }
        mail.done(request);
        mail.done(column);
    });
    sel.into_state().count
}
