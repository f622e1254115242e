//! Triangles: counts the triangles of an R-MAT graph (2^`scale` vertices, edge factor
//! [`EDGE_FACTOR`], A = 0.57, B = C = 0.19, D = 0.05), or of Bale's Kronecker product of
//! stars ([`KroneckerStars`], Bale's `-K`) when the options name one, held as its
//! lower-triangular adjacency `L`, as Bale's `triangle` (`L & L * L`): for every nonzero `(i, j)` of `L`,
//! the columns `k < j` of row `i` that are also in row `j` close a triangle `k < j < i`.
//!
//! - AGP: each PE reads row `j` from its owner and intersects it with row `i`.
//! - Conveyor: each PE pushes `(j, k)` to the owner of row `j`, which looks `k` up
//!   (Bale's push variant).
//! - Selector: the same pairs sent to a mailbox of the owner of row `j`, whose handler
//!   looks `k` up: the one-hop baseline of the FA-BSP chapter of seed 002 (HClib-Actor's
//!   triangle counting), which sends the conveyor's messages.
//!
//! No aggregation-context version: the row read from another PE is needed at once, to
//! intersect it, and a context's reads land only at its `quiet`.
//!
//! Checked: the count against a sequential count of the same graph, and a Kronecker
//! graph's also against its closed form.

use super::kronecker::KroneckerStars;
use super::spmat::{self, Matrix};
use super::{Impl, Options, actors, place, timed};
use rhizome::Ctx;
use std::rc::Rc;

/// Generated edges per vertex.
pub const EDGE_FACTOR: usize = 16;

/// Runs `imp`; (seconds, nonzeros of `L`, what is wrong with the count, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options) -> (f64, u64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let whole = match &opts.kronecker {
        Some(g) => kronecker_lower(g),
        None => {
            let edges = spmat::rmat_lower_edges(opts.seed, opts.scale, EDGE_FACTOR);
            spmat::csr_of_edges(1 << opts.scale, &edges)
        }
    };
    let n = whole.rows();
    let l = Matrix::from_rows(n, (me..n).step_by(pes).map(|r| whole.row(r).to_vec()));
    let l = Rc::new(l);
    let mut count = 0;
    let seconds = timed(ctx, || {
        let here = if imp == Impl::Agp {
            one_sided(ctx, &l)
        } else {
            conveyed(ctx, opts, imp, Rc::clone(&l))
        };
        count = ctx.sum_u64(here);
    });
    let want = sequential(&whole);
    let mut wrong = (count != want).then(|| format!("{count} triangles, {want} expected"));
    if let Some(g) = opts
        .kronecker
        .as_ref()
        .filter(|g| g.triangles() != want as u128)
    {
        wrong = Some(format!(
            "{count} triangles counted, {want} sequentially, {} in closed form for {g}",
            g.triangles()
        ));
    }
    (seconds, whole.nnz() as u64, wrong)
}

/// The whole lower-triangular adjacency of a Kronecker graph.
fn kronecker_lower(g: &KroneckerStars) -> Matrix {
    let n = g.vertices();
    Matrix::from_rows(n, (0..n as u64).map(|r| g.lower_row(r)))
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

/// Bale's conveyor triangles (push; HClib-Actor's with `imp` [`Impl::Selector`]): for
/// every `k < j` of row `i`, the pair (local row of `j`, `k`) to the owner of row `j`,
/// which counts the `k` it has. Two departures from Bale, both to send less: a pair
/// whose row `j` is this PE's is looked up here instead of sent to itself, and a pair
/// travels as one word (row and column below 2^32 each; a graph has at most 2^28
/// vertices), so a buffer holds twice as many. This PE's count.
fn conveyed(ctx: &Ctx, opts: &Options, imp: Impl, l: Rc<Matrix>) -> u64 {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let here = std::cell::Cell::new(0u64);
    let has = |l: &Matrix, off: u64, k: u64| l.row(off as usize).binary_search(&k).is_ok();
    let queries = (0..l.rows()).flat_map(|i| {
        let (l, here) = (&l, &here);
        let row = l.row(i);
        row.iter().flat_map(move |&j| {
            let (pe, off) = place(j as usize, pes);
            row.iter()
                .take_while(move |&&k| k < j)
                .filter_map(move |&k| {
                    if pe == me {
                        here.set(here.get() + u64::from(has(l, off as u64, k)));
                        None
                    } else {
                        Some(((off as u64) << 32 | k, pe))
                    }
                })
        })
    });
    // The handler's state shares the rows with the sending loop.
    let rows = (Rc::clone(&l), 0);
    let (_, count) =
        actors::scatter_by(ctx, opts, imp, rows, queries, move |(l, count), pair, _| {
            *count += u64::from(has(l, pair >> 32, pair & u64::from(u32::MAX)));
        });
    count + here.get()
}
