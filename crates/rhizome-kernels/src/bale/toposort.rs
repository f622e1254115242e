//! Toposort: given a random unit upper-triangular matrix (`-n` rows per PE, `-z`
//! nonzeros per row) with its rows and columns randomly permuted, finds row and column
//! permutations that make it upper-triangular again, as Bale's `toposort`. A row with one
//! nonzero left is a pivot: it and its column take the last free diagonal place, and the
//! column is crossed out of every row holding it (found through the transpose). Each row
//! keeps the count and the sum of its remaining columns, so the sum is the pivot column
//! once the count is 1.
//!
//! - AGP: level by level, each PE takes its pivot rows, claims a place with a
//!   fetch-and-add on PE 0, reads the column's rows from the transpose and crosses the
//!   column out with atomics; a row whose count drops to 1 is queued at its owner.
//! - Conveyor: one conveyor carries both hops (pivot to the column's owner, cross-outs to
//!   the rows' owners) and each row records its level; places are then given by level.
//! - Selector: the same two hops as two mailboxes, pivots and cross-outs, whose handlers
//!   send each other's messages: a pivot's handler sends the column's cross-outs, and a
//!   cross-out that leaves a row one column sends that row's pivot.
//!
//! No aggregation-context version: the claimed place, the column read and the count left
//! decide the next operations, and a context's operations return nothing.
//!
//! Checked: both results are permutations and every nonzero `(r, c)` has
//! `rperm[r] <= cperm[c]`, so the permuted matrix is upper-triangular.

use super::spmat::{self, Matrix};
use super::{Impl, Options, actors, place, timed, transpose};
use rhizome::Ctx;
use std::rc::Rc;

/// Runs `imp`; (seconds, rows, what is wrong with the order, if anything).
pub(super) fn run(ctx: &Ctx, imp: Impl, opts: &Options) -> (f64, u64, Option<String>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let n = opts.updates * pes;
    let m = input(opts, me, pes, n);
    // The columns' rows: set up, as in Bale, before the clock starts.
    let t = Rc::new(transpose::conveyed(ctx, opts, Impl::Conveyor, &m));
    let mut order = (Vec::new(), Vec::new());
    let seconds = timed(ctx, || {
        order = match imp {
            Impl::Agp => one_sided(ctx, &m, &t),
            Impl::Selector => by_actors(ctx, opts, &m, Rc::clone(&t)),
            _ => conveyed(ctx, opts, &m, &t),
        };
    });
    (seconds, n as u64, check(ctx, &m, &order.0, &order.1))
}

/// This PE's rows of the input: `U[i][j]` (unit upper-triangular, Erdős–Rényi above the
/// diagonal, `opts.nonzeros` per row on average with the diagonal) at `[p[i]][q[j]]` for random permutations `p` and `q`.
fn input(opts: &Options, me: usize, pes: usize, n: usize) -> Matrix {
    let p = spmat::permutation(opts.seed, 3, n);
    let q = spmat::permutation(opts.seed, 4, n);
    let pinv = spmat::inverse(&p);
    // As in Bale, `-z` counts the diagonal: row `i` has `n - 1 - i` places above it, on
    // average `(n - 1) / 2`, for `z - 1` nonzeros on average.
    let density = spmat::density(2 * opts.nonzeros.saturating_sub(1), n.max(2) - 1);
    Matrix::from_rows(
        n,
        (me..n).step_by(pes).map(|t| {
            let i = pinv[t] as usize;
            let mut row = vec![q[i]];
            row.extend(
                spmat::erdos_renyi_row(opts.seed, i, i + 1, n, density)
                    .into_iter()
                    .map(|j| q[j as usize]),
            );
            row.sort_unstable();
            row
        }),
    )
}

/// The count and the sum of the columns of every local row, and the rows with one.
fn counts_and_sums(m: &Matrix) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let counts: Vec<u64> = (0..m.rows()).map(|i| m.row(i).len() as u64).collect();
    let sums = (0..m.rows()).map(|i| m.row(i).iter().sum()).collect();
    let ones = (0..m.rows() as u64)
        .filter(|&i| counts[i as usize] == 1)
        .collect();
    (counts, sums, ones)
}

/// Bale's AGP toposort. (rperm, cperm) of this PE's rows and columns.
fn one_sided(ctx: &Ctx, m: &Matrix, t: &Matrix) -> (Vec<u64>, Vec<u64>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let (n, rows) = (m.n, m.rows());
    let (c, s, ones) = counts_and_sums(m);
    let (count, sum, queue) = (ctx.alloc(rows), ctx.alloc(rows), ctx.alloc::<u64>(rows));
    let (queued, pivots) = (ctx.alloc::<u64>(1), ctx.alloc::<u64>(1));
    let (rperm, cperm) = (ctx.alloc::<u64>(rows), ctx.alloc::<u64>(rows));
    let toffsets = ctx.alloc::<u64>(rows + 1);
    let tcols = ctx.alloc::<u64>(ctx.max_u64(t.nnz() as u64).max(1) as usize);
    let local: Vec<u64> = t.offsets.iter().map(|&o| o as u64).collect();
    ctx.put_slice(toffsets.ptr(me, 0), &local);
    if t.nnz() > 0 {
        ctx.put_slice(tcols.ptr(me, 0), &t.cols);
    }
    ctx.put_slice(count.ptr(me, 0), &c);
    ctx.put_slice(sum.ptr(me, 0), &s);
    if !ones.is_empty() {
        ctx.put_slice(queue.ptr(me, 0), &ones);
    }
    ctx.put(queued.ptr(me, 0), ones.len() as u64);
    ctx.barrier();
    let (mut start, mut end) = (0, ones.len());
    let (mut bounds, mut column) = ([0u64; 2], Vec::new());
    while ctx.sum_u64((end - start) as u64) > 0 {
        for k in start..end {
            let row = ctx.get(queue.ptr(me, k)) as usize;
            let col = ctx.load(sum.ptr(me, row)) as usize;
            let at = n as u64 - 1 - ctx.fetch_add(pivots.ptr(0, 0), 1);
            ctx.put(rperm.ptr(me, row), at);
            let (cpe, coff) = place(col, pes);
            ctx.put(cperm.ptr(cpe, coff), at);
            ctx.get_into(toffsets.ptr(cpe, coff), &mut bounds);
            column.resize((bounds[1] - bounds[0]) as usize, 0);
            if !column.is_empty() {
                ctx.get_into(tcols.ptr(cpe, bounds[0] as usize), &mut column);
            }
            for &r in &column {
                let (rpe, roff) = place(r as usize, pes);
                let before = ctx.fetch_add(count.ptr(rpe, roff), u64::MAX);
                ctx.fetch_add(sum.ptr(rpe, roff), (col as u64).wrapping_neg());
                if before == 2 {
                    let slot = ctx.fetch_add(queued.ptr(rpe, 0), 1) as usize;
                    ctx.put(queue.ptr(rpe, slot), roff as u64);
                }
            }
        }
        ctx.barrier();
        start = end;
        end = ctx.load(queued.ptr(me, 0)) as usize;
    }
    (
        ctx.get_slice(rperm.ptr(me, 0), rows),
        ctx.get_slice(cperm.ptr(me, 0), rows),
    )
}

/// Marks a conveyor item as a pivot (to the column's owner) rather than a cross-out.
const PIVOT: u64 = 1 << 63;

/// Bale's conveyor toposort: `[PIVOT | row, column, level]` to the column's owner, which
/// answers `[local row, column, level]` to the owner of every row holding the column.
/// (rperm, cperm) of this PE's rows and columns.
fn conveyed(ctx: &Ctx, opts: &Options, m: &Matrix, t: &Matrix) -> (Vec<u64>, Vec<u64>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let rows = m.rows();
    let (mut count, mut sum, mut queue) = counts_and_sums(m);
    let mut level = vec![0u64; rows];
    let mut matched = vec![0u64; rows];
    let (mut next_row, mut columns) = (0, Vec::<(usize, u64)>::new());
    let (mut next_col, mut in_col) = (0, 0);
    let mut finished = 0;
    let mut c = super::conveyor::<[u64; 3]>(ctx, opts);
    while c.advance(finished == rows + t.rows()) {
        // Pivot rows to their columns' owners.
        while let Some(&row) = queue.get(next_row) {
            let row = row as usize;
            let col = sum[row];
            if !c.push([PIVOT | row as u64, col, level[row]], col as usize % pes) {
                break;
            }
            matched[row] = col;
            next_row += 1;
            finished += 1;
        }
        // Cross-outs of the pivot columns from their rows.
        while let Some(&(col, lvl)) = columns.get(next_col) {
            let holders = t.row(col);
            if let Some(&r) = holders.get(in_col) {
                let (pe, off) = place(r as usize, pes);
                if !c.push([off as u64, (col * pes + me) as u64, lvl], pe) {
                    break;
                }
                in_col += 1;
            }
            if in_col == holders.len() {
                (next_col, in_col, finished) = (next_col + 1, 0, finished + 1);
            }
        }
        while let Some(([row, col, lvl], _)) = c.pull() {
            if row & PIVOT != 0 {
                columns.push((col as usize / pes, lvl));
                continue;
            }
            let row = row as usize;
            // A row with one column left is the pivot of this column: its level is fixed.
            if count[row] > 1 {
                level[row] = level[row].max(lvl + 1);
            }
            sum[row] -= col;
            count[row] -= 1;
            if count[row] == 1 {
                queue.push(row as u64);
            }
        }
    }
    places(ctx, opts, Impl::Conveyor, m.n, &level, &matched)
}

/// Collective: (rperm, cperm) of this PE's rows and columns from each local row's
/// `level` and `matched` pivot column: places by level, level 0 last; within a level, by
/// PE then local row. The columns' places go to their owners on a conveyor or, for
/// `imp` [`Impl::Selector`], to a mailbox.
fn places(
    ctx: &Ctx,
    opts: &Options,
    imp: Impl,
    n: usize,
    level: &[u64],
    matched: &[u64],
) -> (Vec<u64>, Vec<u64>) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let rows = level.len();
    let levels = ctx.max_u64(level.iter().copied().max().unwrap_or(0)) as usize + 1;
    let mut sizes = vec![0u64; levels];
    for &l in level {
        sizes[l as usize] += 1;
    }
    let all = ctx.allgather(sizes.clone());
    let mut next = vec![0u64; levels];
    let mut before = 0u64;
    for l in 0..levels {
        let earlier: u64 = all[..me].iter().map(|s| s[l]).sum();
        next[l] = before + earlier;
        before += all.iter().map(|s| s[l]).sum::<u64>();
    }
    let n = n as u64;
    let rperm: Vec<u64> = level
        .iter()
        .map(|&l| {
            next[l as usize] += 1;
            n - next[l as usize]
        })
        .collect();
    let places = (0..rows).map(|i| {
        let (pe, off) = place(matched[i] as usize, pes);
        ([off as u64, rperm[i]], pe)
    });
    let zero = vec![0u64; rows];
    let cperm = actors::scatter_by(ctx, opts, imp, zero, places, |c, [o, at], _| {
        c[o as usize] = at
    });
    (rperm, cperm)
}

/// HClib-Actor's toposort: `[local column, level]` to the pivot mailbox of the column's
/// owner, whose handler sends `[local row, column, level]` to the cross-out mailbox of
/// the owner of every row holding the column, whose handler crosses it out and, when the
/// row has one column left, sends that row's pivot. (rperm, cperm) of this PE's rows and
/// columns.
fn by_actors(ctx: &Ctx, opts: &Options, m: &Matrix, t: Rc<Matrix>) -> (Vec<u64>, Vec<u64>) {
    struct Rows {
        /// The rows holding each local column.
        t: Rc<Matrix>,
        count: Vec<u64>,
        sum: Vec<u64>,
        level: Vec<u64>,
        matched: Vec<u64>,
    }
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let (count, sum, ones) = counts_and_sums(m);
    let rows = Rows {
        t,
        level: vec![0; m.rows()],
        matched: sum.clone(),
        count,
        sum,
    };
    let mut sel = super::selector(ctx, opts, rows);
    let pivot = sel.mailbox::<[u64; 2]>();
    let cross_out = sel.mailbox::<[u64; 3]>();
    sel.process(pivot, move |s, [col, lvl], _, mail| {
        let global = col * pes as u64 + me as u64;
        for &r in s.t.row(col as usize) {
            let (pe, off) = place(r as usize, pes);
            mail.send(cross_out, [off as u64, global, lvl], pe);
        }
    });
    sel.process(cross_out, move |s, [row, col, lvl], _, mail| {
        let row = row as usize;
        // A row with one column left is the pivot of this column: its level is fixed.
        if s.count[row] > 1 {
            s.level[row] = s.level[row].max(lvl + 1);
        }
        s.sum[row] -= col;
        s.count[row] -= 1;
        if s.count[row] == 1 {
            let col = s.sum[row];
            s.matched[row] = col;
            let (pe, off) = place(col as usize, pes);
            mail.send(pivot, [off as u64, s.level[row]], pe);
        }
    });
    sel.superstep(|mail| {
        for &row in &ones {
            // Level 0: a row with one column from the start.
            let col = m.row(row as usize)[0];
            let (pe, off) = place(col as usize, pes);
            mail.send(pivot, [off as u64, 0], pe);
        }
        mail.done(pivot);
        mail.done(cross_out);
    });
    let s = sel.into_state();
    places(ctx, opts, Impl::Selector, m.n, &s.level, &s.matched)
}

/// Collective: what is wrong with (rperm, cperm) of this PE as a triangular order of `m`.
fn check(ctx: &Ctx, m: &Matrix, rperm: &[u64], cperm: &[u64]) -> Option<String> {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    let n = m.n;
    let spread = |part: &[u64]| -> Vec<u64> {
        let parts = ctx.allgather(part.to_vec());
        let mut whole = vec![u64::MAX; n];
        for (pe, p) in parts.iter().enumerate() {
            for (i, &v) in p.iter().enumerate() {
                whole[i * pes + pe] = v;
            }
        }
        whole
    };
    let (rows, cols) = (spread(rperm), spread(cperm));
    for (what, p) in [("rperm", &rows), ("cperm", &cols)] {
        let mut sorted = p.clone();
        sorted.sort_unstable();
        if let Some(i) = (0..n).find(|&i| sorted[i] != i as u64) {
            return Some(format!(
                "{what} is not a permutation (sorted, place {i} holds {})",
                sorted[i]
            ));
        }
    }
    (0..m.rows()).find_map(|i| {
        let r = i * pes + me;
        let c = *m.row(i).iter().find(|&&c| rows[r] > cols[c as usize])?;
        Some(format!(
            "nonzero ({r}, {c}) lands below the diagonal: row place {}, column place {}",
            rows[r], cols[c as usize]
        ))
    })
}
