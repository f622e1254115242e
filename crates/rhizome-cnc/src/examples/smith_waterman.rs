//! The Smith-Waterman local alignment score as a CnC wavefront: the score matrix
//! `H[i][j] = max(0, H[i-1][j-1] + s(a_i, b_j), H[i-1][j] - GAP, H[i][j-1] - GAP)` cut
//! into tiles; the step of tile `(ti, tj)` needs the bottom row of its north neighbour,
//! the right column of its west neighbour and the corner of its north-west neighbour,
//! and puts its own edges. All tags are put at once, in reverse order, so almost every
//! instance first suspends and is resumed by the puts of its neighbours: the graph, not
//! the order of the environment's puts, decides the schedule. Tiles live on PE
//! `tj % pes` (column stripes), so every wavefront crosses the PEs.
//!
//! The check compares every tile's edges and best score with the full matrix of the
//! sequential dynamic program ([`sequential`]).

use crate::Graph;
use rhizome::Ctx;
use rhizome::rng::XorShift64;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// Score of a match.
pub const MATCH: i32 = 2;
/// Score of a mismatch.
pub const MISMATCH: i32 = -1;
/// Cost of a gap (linear).
pub const GAP: i32 = 1;

/// What a tile passes on to its neighbours, and its best score.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Edges {
    /// `H` along the tile's last row (one entry per column of the tile).
    pub bottom: Vec<i32>,
    /// `H` along the tile's last column (one entry per row of the tile).
    pub right: Vec<i32>,
    /// The largest `H` inside the tile.
    pub best: i32,
}

/// What a checked run gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The best local alignment score.
    pub best: i32,
    /// Seconds of the graph's run (the slowest PE).
    pub seconds: f64,
}

/// A random DNA sequence of `len` letters, the same for the same seed.
pub fn sequence(len: usize, seed: u64) -> Vec<u8> {
    let mut r = XorShift64::for_stream(seed);
    (0..len).map(|_| b"ACGT"[r.below(4)]).collect()
}

fn score(x: u8, y: u8) -> i32 {
    if x == y { MATCH } else { MISMATCH }
}

/// The full matrix `H`, `(a.len() + 1) × (b.len() + 1)`, row-major, of the sequential
/// dynamic program.
pub fn sequential(a: &[u8], b: &[u8]) -> Vec<i32> {
    let w = b.len() + 1;
    let mut h = vec![0i32; (a.len() + 1) * w];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let v = (h[(i - 1) * w + j - 1] + score(a[i - 1], b[j - 1]))
                .max(h[(i - 1) * w + j] - GAP)
                .max(h[i * w + j - 1] - GAP)
                .max(0);
            h[i * w + j] = v;
        }
    }
    h
}

/// Computes one tile from its neighbours' edges: `a` and `b` are the tile's letters,
/// `north` the row above it, `west` the column left of it, `corner` the entry above-left.
pub fn tile(a: &[u8], b: &[u8], north: &[i32], west: &[i32], corner: i32) -> Edges {
    let (rows, cols) = (a.len(), b.len());
    let mut prev = north.to_vec();
    let mut cur = vec![0i32; cols];
    let mut right = Vec::with_capacity(rows);
    let mut best = 0;
    for i in 0..rows {
        let mut diag = if i == 0 { corner } else { west[i - 1] };
        let mut left = west[i];
        for j in 0..cols {
            let v = (diag + score(a[i], b[j]))
                .max(prev[j] - GAP)
                .max(left - GAP)
                .max(0);
            diag = prev[j];
            cur[j] = v;
            left = v;
            best = best.max(v);
        }
        right.push(cur[cols - 1]);
        std::mem::swap(&mut prev, &mut cur);
    }
    Edges {
        bottom: prev,
        right,
        best,
    }
}

/// Collective: aligns random sequences of `rows` and `cols` letters in tiles of at most
/// `t × t` with a CnC graph on every PE and checks every tile on PE 0 against
/// [`sequential`]. The outcome (or the reason it is wrong) is the same on every PE.
pub fn run(ctx: &Ctx, rows: usize, cols: usize, t: usize) -> Result<Outcome, super::ExampleError> {
    assert!(
        rows > 0 && cols > 0 && t > 0,
        "empty Smith-Waterman problem"
    );
    let (a, b) = (Arc::new(sequence(rows, 1)), Arc::new(sequence(cols, 2)));
    let (nti, ntj) = (rows.div_ceil(t) as u32, cols.div_ceil(t) as u32);
    let pes = ctx.num_pes();
    let home = move |&(_, tj): &(u32, u32)| tj as usize % pes;
    let g = Graph::new(ctx);
    let edges = g.items::<(u32, u32), Edges>("edges", home);
    let e = edges.clone();
    let (sa, sb) = (Arc::clone(&a), Arc::clone(&b));
    let step = g.steps("tile", home, move |s, &(ti, tj)| {
        let (r0, c0) = (ti as usize * t, tj as usize * t);
        let (r1, c1) = ((r0 + t).min(rows), (c0 + t).min(cols));
        let north = if ti > 0 {
            s.get(&e, &(ti - 1, tj))?.bottom.clone()
        } else {
            vec![0; c1 - c0]
        };
        let west = if tj > 0 {
            s.get(&e, &(ti, tj - 1))?.right.clone()
        } else {
            vec![0; r1 - r0]
        };
        let corner = if ti > 0 && tj > 0 {
            *s.get(&e, &(ti - 1, tj - 1))?
                .bottom
                .last()
                .expect("tiles are not empty")
        } else {
            0
        };
        let out = tile(&sa[r0..r1], &sb[c0..c1], &north, &west, corner);
        s.put(&e, (ti, tj), out);
        Ok(())
    });
    let tags = g.tags::<(u32, u32)>("tiles");
    tags.prescribes(&step);
    let me = ctx.my_pe();
    ctx.barrier();
    let start = Instant::now();
    g.run(ctx, |env| {
        for ti in (0..nti).rev() {
            for tj in (0..ntj).rev().filter(|tj| home(&(ti, *tj)) == me) {
                env.put_tag(&tags, (ti, tj));
            }
        }
    })
    .map_err(super::ExampleError::Cnc)?;
    let nanos = ctx.max_u64(start.elapsed().as_nanos() as u64);
    // Per tile: (ti, tj, bottom row, right column with the tile's best appended).
    let mine: Vec<(u64, u64, Vec<i32>, Vec<i32>)> = edges
        .local_items()
        .into_iter()
        .map(|((ti, tj), v)| {
            let mut right = v.right.clone();
            right.push(v.best);
            (ti as u64, tj as u64, v.bottom.clone(), right)
        })
        .collect();
    let verdict = ctx
        .gather(mine, 0)
        .map(|all| check(&a, &b, t, all.into_iter().flatten().collect()).map(|best| best as f64));
    let (best, wrong) = super::share_verdict(ctx, verdict);
    if let Some(why) = wrong {
        return Err(super::ExampleError::Wrong(why));
    }
    Ok(Outcome {
        best: best as i32,
        seconds: nanos as f64 * 1e-9,
    })
}

/// Compares every tile (bottom row, right column with the tile's best appended) with the
/// sequential matrix; returns the best score.
fn check(
    a: &[u8],
    b: &[u8],
    t: usize,
    got: Vec<(u64, u64, Vec<i32>, Vec<i32>)>,
) -> Result<i32, String> {
    let h = sequential(a, b);
    let w = b.len() + 1;
    let tiles = a.len().div_ceil(t) * b.len().div_ceil(t);
    if got.len() != tiles {
        return Err(format!(
            "smith-waterman: {} tiles, expected {tiles}",
            got.len()
        ));
    }
    let mut best = 0;
    for (ti, tj, bottom, mut right) in got {
        let (r0, c0) = (ti as usize * t, tj as usize * t);
        let (r1, c1) = ((r0 + t).min(a.len()), (c0 + t).min(b.len()));
        let tile_best = right.pop().unwrap_or(-1);
        let want_bottom: Vec<i32> = (c0..c1).map(|j| h[r1 * w + j + 1]).collect();
        let want_right: Vec<i32> = (r0..r1).map(|i| h[(i + 1) * w + c1]).collect();
        let want_best = (r0..r1)
            .flat_map(|i| (c0..c1).map(move |j| (i, j)))
            .map(|(i, j)| h[(i + 1) * w + j + 1])
            .max()
            .unwrap_or(0);
        if bottom != want_bottom || right != want_right || tile_best != want_best {
            return Err(format!(
                "smith-waterman: tile ({ti}, {tj}) differs from the sequential matrix"
            ));
        }
        best = best.max(tile_best);
    }
    let want = h.iter().copied().max().unwrap_or(0);
    if best != want {
        return Err(format!("smith-waterman: best {best}, sequential {want}"));
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_in_order_give_the_sequential_matrix() {
        // Ragged tiles (7 and 5 letters, tiles of 3), computed in row order by hand.
        let (a, b) = (sequence(7, 5), sequence(5, 6));
        let t = 3;
        let mut done = std::collections::HashMap::<(u64, u64), Edges>::new();
        for ti in 0..3u64 {
            for tj in 0..2u64 {
                let (r0, c0) = (ti as usize * t, tj as usize * t);
                let (r1, c1) = ((r0 + t).min(7), (c0 + t).min(5));
                let north = match ti {
                    0 => vec![0; c1 - c0],
                    _ => done[&(ti - 1, tj)].bottom.clone(),
                };
                let west = match tj {
                    0 => vec![0; r1 - r0],
                    _ => done[&(ti, tj - 1)].right.clone(),
                };
                let corner = match (ti, tj) {
                    (0, _) | (_, 0) => 0,
                    _ => *done[&(ti - 1, tj - 1)].bottom.last().unwrap(),
                };
                let e = tile(&a[r0..r1], &b[c0..c1], &north, &west, corner);
                done.insert((ti, tj), e);
            }
        }
        let got: Vec<_> = done
            .into_iter()
            .map(|((ti, tj), e)| {
                let mut right = e.right;
                right.push(e.best);
                (ti, tj, e.bottom, right)
            })
            .collect();
        assert!(check(&a, &b, t, got.clone()).is_ok());
        let mut bad = got;
        bad[0].2[0] += 1;
        assert!(check(&a, &b, t, bad).is_err());
    }
}
