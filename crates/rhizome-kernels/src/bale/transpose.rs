//! Transpose: `B = Aᵀ` for an Erdős–Rényi matrix `A` (`-n` rows per PE, `-z` nonzeros per
//! row), as Bale's `transpose_matrix`: the column counts go to the owners of the columns
//! (`B`'s rows), which lay out their rows; then every nonzero `(r, c)` puts `r` at the
//! next free place of row `c`.
//!
//! No aggregation-context version: the free place of a nonzero is the answer of a
//! fetch-and-add, and a context's operations return nothing.
//!
//! Checked: on inputs of at most [`EXACT_LIMIT`] nonzeros, every row of `B` against the
//! column of `A` regenerated from the seed; above, the number of nonzeros and a sum of a
//! hash of every `(row, column)` against the same of `A`'s transposed nonzeros.

use super::spmat::{self, Matrix};
use super::{Impl, Options, actors, place, timed};
use rhizome::Ctx;

/// Inputs with at most this many nonzeros (expected) are checked row by row.
pub const EXACT_LIMIT: usize = 1 << 22;

/// Runs `imp`; (seconds, nonzeros, what is wrong with this PE's rows of `B`, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options) -> (f64, u64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let a = spmat::input(opts, me, pes);
    let mut b = Matrix::default();
    let seconds = timed(ctx, || {
        b = if imp == Impl::Agp {
            one_sided(ctx, &a)
        } else {
            conveyed(ctx, opts, imp, &a)
        };
    });
    let nnz = ctx.sum_u64(a.nnz() as u64);
    (seconds, nnz, check(ctx, opts, &a, &b))
}

/// The global rows of this PE's local rows, with their columns.
fn nonzeros<'m>(a: &'m Matrix, me: usize, pes: usize) -> impl Iterator<Item = (u64, u64)> + 'm {
    (0..a.rows()).flat_map(move |i| a.row(i).iter().map(move |&c| ((i * pes + me) as u64, c)))
}

/// Bale's AGP transpose: atomic increments of the column counts, then a fetch-and-add
/// for the place of each nonzero and a put of its row there.
fn one_sided(ctx: &Ctx, a: &Matrix) -> Matrix {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let rows = spmat::local_len(a.n, pes, me);
    // Every PE has the same number of rows (`-n` per PE).
    let counts = ctx.alloc::<u64>(rows.max(1));
    for &c in &a.cols {
        let (pe, off) = place(c as usize, pes);
        ctx.fetch_add(counts.ptr(pe, off), 1);
    }
    ctx.barrier();
    let counts_here = ctx.get_slice(counts.ptr(me, 0), rows);
    let offsets = spmat::prefix_sums(&counts_here);
    let next = ctx.alloc::<u64>(rows.max(1));
    let starts: Vec<u64> = offsets[..rows].iter().map(|&o| o as u64).collect();
    ctx.put_slice(next.ptr(me, 0), &starts);
    let most = ctx.max_u64(offsets[rows] as u64) as usize;
    let cols = ctx.alloc::<u64>(most.max(1));
    ctx.barrier();
    for (r, c) in nonzeros(a, me, pes) {
        let (pe, off) = place(c as usize, pes);
        let at = ctx.fetch_add(next.ptr(pe, off), 1) as usize;
        ctx.put(cols.ptr(pe, at), r);
    }
    ctx.barrier();
    let mut b = Matrix::from_counts(
        a.n,
        &counts_here,
        ctx.get_slice(cols.ptr(me, 0), offsets[rows]),
    );
    b.sort_rows();
    b
}

/// Bale's conveyor transpose (HClib-Actor's with `imp` [`Impl::Selector`]: a mailbox per
/// step): `[local row of B]` to count, then `[local row of B, row of A]` to place at the
/// receiver's next free place of that row.
pub(super) fn conveyed(ctx: &Ctx, opts: &Options, imp: Impl, a: &Matrix) -> Matrix {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let rows = spmat::local_len(a.n, pes, me);
    let columns = a.cols.iter().map(|&c| {
        let (pe, off) = place(c as usize, pes);
        (off as u64, pe)
    });
    let zero = vec![0u64; rows];
    let counts = actors::scatter_by(ctx, opts, imp, zero, columns, |c, off, _| {
        c[off as usize] += 1
    });
    let next = spmat::prefix_sums(&counts);
    let cols = vec![0u64; next[rows]];
    let items = nonzeros(a, me, pes).map(|(r, c)| {
        let (pe, off) = place(c as usize, pes);
        ([off as u64, r], pe)
    });
    let (_, cols) = actors::scatter_by(
        ctx,
        opts,
        imp,
        (next, cols),
        items,
        |(next, cols), [off, r], _| {
            cols[next[off as usize]] = r;
            next[off as usize] += 1;
        },
    );
    let mut b = Matrix::from_counts(a.n, &counts, cols);
    b.sort_rows();
    b
}

/// A 32-bit hash of a nonzero, for the checksum of large inputs.
fn hash(r: u64, c: u64) -> u64 {
    let x = (r.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ c).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x ^ (x >> 31)) >> 32
}

/// Collective: what is wrong with this PE's rows of `b` as the transpose of `A`.
fn check(ctx: &Ctx, opts: &Options, a: &Matrix, b: &Matrix) -> Option<String> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let n = a.n;
    if n.saturating_mul(opts.nonzeros) <= EXACT_LIMIT {
        let mut want = vec![Vec::new(); spmat::local_len(n, pes, me)];
        for r in 0..n {
            for c in spmat::input_row(opts, r, n) {
                if c as usize % pes == me {
                    want[c as usize / pes].push(r as u64);
                }
            }
        }
        return b.first_difference(me, pes, |c| std::mem::take(&mut want[c / pes]));
    }
    // Sums of 32-bit hashes of at most 2^32 nonzeros cannot overflow.
    let got = ctx.sum_u64(
        (0..b.rows())
            .flat_map(|i| {
                b.row(i)
                    .iter()
                    .map(move |&r| hash((i * pes + me) as u64, r))
            })
            .sum(),
    );
    let want = ctx.sum_u64(nonzeros(a, me, pes).map(|(r, c)| hash(c, r)).sum());
    let (got_nnz, want_nnz) = (ctx.sum_u64(b.nnz() as u64), ctx.sum_u64(a.nnz() as u64));
    (got != want || got_nnz != want_nnz).then(|| {
        format!(
            "{got_nnz} nonzeros with checksum {got}, {want_nnz} with {want} expected (over all PEs)"
        )
    })
}
