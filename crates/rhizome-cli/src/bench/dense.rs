//! Data-moving kernels of the unified-futures paper: quicksort, matrix multiplication and
//! tiled LU. Jobs carry their data (vectors, and `Arc`s that cost nothing on this PE and
//! are copied only when a job is stolen by another PE).

use rhizome::tasks::{Future, Job, TaskCtx};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A reproducible pseudo-random stream of doubles in [0, 1).
pub fn random_doubles(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

// ----- quicksort -----

/// Sorts `data`: partitions it in place around a median of three, gives the lower part
/// to a job and sorts the upper part itself; sorts sequentially below `cutoff` elements.
///
/// Each level copies only the upper part out (`split_off`) and back (`extend`): the lower
/// part keeps the job's vector, whose capacity takes the upper part back without a new
/// allocation when the lower job ran on this PE.
#[derive(Serialize, Deserialize)]
pub struct Sort {
    pub data: Vec<f64>,
    pub cutoff: usize,
}

impl Job for Sort {
    type Output = Vec<f64>;
    fn run(self, t: &TaskCtx) -> Vec<f64> {
        let Sort { mut data, cutoff } = self;
        if data.len() <= cutoff.max(16) {
            data.sort_unstable_by(f64::total_cmp);
            return data;
        }
        let split = partition(&mut data);
        if split == data.len() {
            // Every element equals the pivot: already sorted.
            return data;
        }
        let upper = data.split_off(split);
        let lower = t.spawn(Sort { data, cutoff });
        let upper = Sort {
            data: upper,
            cutoff,
        }
        .run(t);
        let mut out = lower.get();
        out.extend_from_slice(&upper);
        out
    }
}

/// Reorders `v` (at least 3 elements) so that `v[..k]` holds the elements below a median
/// of three and `v[k..]` the rest; returns `k`, which is at least 1. When the pivot is the
/// minimum, the pivot copies form the lower part instead (so both parts shrink), and `k`
/// is `v.len()` only if every element equals the pivot.
fn partition(v: &mut [f64]) -> usize {
    let n = v.len();
    let mut three = [v[0], v[n / 2], v[n - 1]];
    three.sort_unstable_by(f64::total_cmp);
    let pivot = three[1];
    // Branch-free Lomuto: the swap happens either way, only the boundary moves.
    let mut k = 0;
    for j in 0..n {
        let below = v[j].total_cmp(&pivot).is_lt();
        v.swap(k, j);
        k += below as usize;
    }
    if k == 0 {
        for j in 0..n {
            let equal = v[j].total_cmp(&pivot).is_eq();
            v.swap(k, j);
            k += equal as usize;
        }
    }
    k
}

// ----- matrix multiplication -----

/// `c[rows] = a[rows] * b` for `n x n` row-major matrices, rows `a_rows.len() / n`.
pub fn matmul_rows(a_rows: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let rows = a_rows.len() / n;
    let mut c = vec![0.0; rows * n];
    for i in 0..rows {
        let ci = &mut c[i * n..(i + 1) * n];
        for k in 0..n {
            let aik = a_rows[i * n + k];
            let bk = &b[k * n..(k + 1) * n];
            for (cij, bkj) in ci.iter_mut().zip(bk) {
                *cij += aik * bkj;
            }
        }
    }
    c
}

/// The rows of `C = A B` for the rows of A given; halves the rows until `cutoff`.
#[derive(Serialize, Deserialize)]
pub struct MatMul {
    pub a_rows: Vec<f64>,
    pub b: Arc<Vec<f64>>,
    pub n: usize,
    pub cutoff: usize,
}

impl Job for MatMul {
    type Output = Vec<f64>;
    fn run(self, t: &TaskCtx) -> Vec<f64> {
        let MatMul {
            mut a_rows,
            b,
            n,
            cutoff,
        } = self;
        let rows = a_rows.len() / n;
        if rows <= cutoff.max(1) {
            return matmul_rows(&a_rows, &b, n);
        }
        let lower = a_rows.split_off(rows / 2 * n);
        let top = t.spawn(MatMul {
            a_rows,
            b: Arc::clone(&b),
            n,
            cutoff,
        });
        let bottom = MatMul {
            a_rows: lower,
            b,
            n,
            cutoff,
        }
        .run(t);
        let mut c = top.get();
        c.extend_from_slice(&bottom);
        c
    }
}

// ----- tiled LU (no pivoting, diagonally dominant input) -----

/// A `b x b` tile, row-major.
pub type Tile = Arc<Vec<f64>>;

/// A diagonally dominant `n x n` matrix as `t x t` tiles of `b x b` (`n = t b`).
pub fn lu_input(t: usize, b: usize, seed: u64) -> Vec<Vec<Tile>> {
    let n = t * b;
    let r = random_doubles(n * n, seed);
    (0..t)
        .map(|ti| {
            (0..t)
                .map(|tj| {
                    let mut tile = vec![0.0; b * b];
                    for i in 0..b {
                        for j in 0..b {
                            let (gi, gj) = (ti * b + i, tj * b + j);
                            tile[i * b + j] =
                                r[gi * n + gj] + if gi == gj { n as f64 } else { 0.0 };
                        }
                    }
                    Arc::new(tile)
                })
                .collect()
        })
        .collect()
}

/// In-place LU of a tile: unit lower L below the diagonal, U on and above.
pub fn getrf(a: &mut [f64], b: usize) {
    for k in 0..b {
        let akk = a[k * b + k];
        for i in k + 1..b {
            a[i * b + k] /= akk;
            let lik = a[i * b + k];
            for j in k + 1..b {
                a[i * b + j] -= lik * a[k * b + j];
            }
        }
    }
}

/// `a := L^-1 a` with L the unit lower triangle of `diag` (tiles right of the diagonal).
pub fn trsm_lower(diag: &[f64], a: &mut [f64], b: usize) {
    for i in 0..b {
        for k in 0..i {
            let l = diag[i * b + k];
            for j in 0..b {
                a[i * b + j] -= l * a[k * b + j];
            }
        }
    }
}

/// `a := a U^-1` with U the upper triangle of `diag` (tiles below the diagonal).
pub fn trsm_upper(diag: &[f64], a: &mut [f64], b: usize) {
    for i in 0..b {
        for j in 0..b {
            let mut s = a[i * b + j];
            for k in 0..j {
                s -= a[i * b + k] * diag[k * b + j];
            }
            a[i * b + j] = s / diag[j * b + j];
        }
    }
}

/// `c := c - a b` on tiles.
pub fn gemm_sub(c: &mut [f64], a: &[f64], bm: &[f64], b: usize) {
    for i in 0..b {
        for k in 0..b {
            let aik = a[i * b + k];
            for j in 0..b {
                c[i * b + j] -= aik * bm[k * b + j];
            }
        }
    }
}

/// One tile operation of the tiled LU.
#[derive(Serialize, Deserialize)]
pub enum LuOp {
    Getrf(Tile),
    TrsmLower { diag: Tile, a: Tile },
    TrsmUpper { diag: Tile, a: Tile },
    Gemm { c: Tile, a: Tile, b: Tile },
}

#[derive(Serialize, Deserialize)]
pub struct LuJob {
    pub op: LuOp,
    pub b: usize,
}

impl Job for LuJob {
    type Output = Tile;
    fn run(self, _t: &TaskCtx) -> Tile {
        seq_op(self.op, self.b)
    }
}

/// Tiled LU in place. With `t = Some(..)` every tile operation of a step is a job and the
/// steps are separated by waiting for all of them (so jobs never wait for each other);
/// with `None` the same operations run sequentially in the same order.
pub fn lu(tiles: &mut [Vec<Tile>], b: usize, t: Option<&TaskCtx>) {
    let nt = tiles.len();
    let run = |op: LuOp| -> Future<Tile> {
        match t {
            Some(t) => t.spawn(LuJob { op, b }),
            None => rhizome::tasks::make_future(seq_op(op, b)),
        }
    };
    for k in 0..nt {
        let d = run(LuOp::Getrf(Arc::clone(&tiles[k][k])));
        tiles[k][k] = d.get();
        let diag = Arc::clone(&tiles[k][k]);
        let right: Vec<Future<Tile>> = (k + 1..nt)
            .map(|j| {
                run(LuOp::TrsmLower {
                    diag: Arc::clone(&diag),
                    a: Arc::clone(&tiles[k][j]),
                })
            })
            .collect();
        let below: Vec<Future<Tile>> = (k + 1..nt)
            .map(|i| {
                run(LuOp::TrsmUpper {
                    diag: Arc::clone(&diag),
                    a: Arc::clone(&tiles[i][k]),
                })
            })
            .collect();
        for (j, f) in (k + 1..nt).zip(right) {
            tiles[k][j] = f.get();
        }
        for (i, f) in (k + 1..nt).zip(below) {
            tiles[i][k] = f.get();
        }
        let mut updates = Vec::new();
        for i in k + 1..nt {
            for j in k + 1..nt {
                updates.push((
                    i,
                    j,
                    run(LuOp::Gemm {
                        c: std::mem::take(&mut tiles[i][j]),
                        a: Arc::clone(&tiles[i][k]),
                        b: Arc::clone(&tiles[k][j]),
                    }),
                ));
            }
        }
        for (i, j, f) in updates {
            tiles[i][j] = f.get();
        }
    }
}

fn seq_op(op: LuOp, b: usize) -> Tile {
    let own = |t: Tile| Arc::try_unwrap(t).unwrap_or_else(|t| (*t).clone());
    Arc::new(match op {
        LuOp::Getrf(a) => {
            let mut a = own(a);
            getrf(&mut a, b);
            a
        }
        LuOp::TrsmLower { diag, a } => {
            let mut a = own(a);
            trsm_lower(&diag, &mut a, b);
            a
        }
        LuOp::TrsmUpper { diag, a } => {
            let mut a = own(a);
            trsm_upper(&diag, &mut a, b);
            a
        }
        LuOp::Gemm { c, a, b: bm } => {
            let mut c = own(c);
            gemm_sub(&mut c, &a, &bm, b);
            c
        }
    })
}

/// `||A x - L (U x)|| / (||A||_F ||x||)` for a random `x`: the relative residual of the
/// factorisation (`lu` holds L and U as produced by [`lu`]).
pub fn lu_residual(a: &[Vec<Tile>], lu: &[Vec<Tile>], b: usize) -> f64 {
    let nt = a.len();
    let n = nt * b;
    let x = random_doubles(n, 99);
    let at = |m: &[Vec<Tile>], i: usize, j: usize| m[i / b][j / b][(i % b) * b + j % b];
    // y = U x, z = L y (L unit lower), r = A x - z.
    let y: Vec<f64> = (0..n)
        .map(|i| (i..n).map(|j| at(lu, i, j) * x[j]).sum())
        .collect();
    let mut norm_a = 0.0;
    let mut norm_r = 0.0;
    for i in 0..n {
        let z: f64 = y[i] + (0..i).map(|j| at(lu, i, j) * y[j]).sum::<f64>();
        let ax: f64 = (0..n)
            .map(|j| {
                let v = at(a, i, j);
                norm_a += v * v;
                v * x[j]
            })
            .sum();
        norm_r += (ax - z) * (ax - z);
    }
    let norm_x = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    norm_r.sqrt() / (norm_a.sqrt() * norm_x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_tiled_lu_has_a_small_residual() {
        let a = lu_input(4, 16, 5);
        let mut f = a.clone();
        lu(&mut f, 16, None);
        let r = lu_residual(&a, &f, 16);
        assert!(r < 1e-12, "residual {r}");
    }

    #[test]
    fn partition_splits_around_the_pivot_and_always_makes_progress() {
        let cases: Vec<Vec<f64>> = vec![
            random_doubles(1000, 3),
            vec![2.0; 50],
            (0..100).map(|i| (i % 3) as f64).collect(),
            (0..100).map(|i| -(i as f64)).collect(),
            vec![1.0, 0.0, 0.0, 0.0, 0.0],
        ];
        for mut v in cases {
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let k = partition(&mut v);
            assert!(k >= 1 && k <= v.len());
            let max_lo = v[..k].iter().copied().fold(f64::MIN, f64::max);
            assert!(v[k..].iter().all(|&x| x >= max_lo), "{v:?} at {k}");
            if k == v.len() {
                assert!(v.iter().all(|&x| x == v[0]), "k = len only when all equal");
            }
            v.sort_unstable_by(f64::total_cmp);
            assert_eq!(v, sorted, "partition lost or changed elements");
        }
    }

    #[test]
    fn matmul_rows_matches_definition() {
        let n = 7;
        let a = random_doubles(n * n, 1);
        let b = random_doubles(n * n, 2);
        let c = matmul_rows(&a, &b, n);
        for i in 0..n {
            for j in 0..n {
                let s: f64 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                assert!((c[i * n + j] - s).abs() < 1e-12);
            }
        }
    }
}
