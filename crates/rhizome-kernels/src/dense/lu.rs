//! Tiled LU factorisation (no pivoting, diagonally dominant input), sequential and
//! distributed over PEs with tiles kept on their home PE.

use super::{Doubles, random_doubles};
use rhizome::tasks::{Future, Job, TaskCtx};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A `b x b` tile, row-major.
pub type Tile = Arc<Doubles>;

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
                    Arc::new(Doubles(tile))
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

/// A tile to write; copied first if it is shared (e.g. with the kept input).
fn tile_mut(t: &mut Tile) -> &mut [f64] {
    Arc::make_mut(t).as_mut_slice()
}

/// Tiled LU in place, sequentially, in the order of the distributed version.
pub fn lu(tiles: &mut [Vec<Tile>], b: usize) {
    let nt = tiles.len();
    for k in 0..nt {
        getrf(tile_mut(&mut tiles[k][k]), b);
        let (above, rest) = tiles.split_at_mut(k + 1);
        let row_k = &mut above[k];
        let diag = Arc::clone(&row_k[k]);
        for tile in &mut row_k[k + 1..] {
            trsm_lower(&diag, tile_mut(tile), b);
        }
        for row in rest {
            trsm_upper(&diag, tile_mut(&mut row[k]), b);
            let a = Arc::clone(&row[k]);
            for j in k + 1..nt {
                gemm_sub(tile_mut(&mut row[j]), &a, &row_k[j], b);
            }
        }
    }
}

// The distributed LU keeps every tile on its home PE for the whole factorisation (row i
// of tiles lives on PE i mod P) and moves only the factored row k of each step, once to
// each other PE. Letting idle PEs steal tile operations instead moves three tiles per
// multiply-subtract of one: on two ranks that was no faster than one (the futures
// thesis, which also shipped tiles with its jobs, got slowdowns).

/// Tiles resident on the PEs of this process during a distributed LU: `(PE, i, j)`.
static HOME: Mutex<BTreeMap<(usize, usize, usize), Tile>> = Mutex::new(BTreeMap::new());

fn home() -> std::sync::MutexGuard<'static, BTreeMap<(usize, usize, usize), Tile>> {
    HOME.lock().unwrap_or_else(|e| e.into_inner())
}

fn take_tile(pe: usize, i: usize, j: usize) -> Tile {
    home()
        .remove(&(pe, i, j))
        .unwrap_or_else(|| panic!("lu: tile ({i}, {j}) is not on PE {pe}"))
}

fn put_tile(pe: usize, i: usize, j: usize, t: Tile) {
    home().insert((pe, i, j), t);
}

/// The PE that holds row `i` of tiles.
fn home_pe(i: usize, pes: usize) -> usize {
    i % pes
}

/// Stores tiles `(i, j, tile)` on the PE it runs on.
#[derive(Serialize, Deserialize)]
pub struct LuPlace {
    pub tiles: Vec<(usize, usize, Tile)>,
}

impl Job for LuPlace {
    type Output = ();
    fn run(self, t: &TaskCtx) {
        let pe = t.my_pe();
        let mut h = home();
        for (i, j, tile) in self.tiles {
            h.insert((pe, i, j), tile);
        }
    }
}

/// Step `k`, on the home PE of row `k`: factors the diagonal tile, solves the rest of row
/// `k`, and has every PE update its rows below with the factored row.
#[derive(Serialize, Deserialize)]
pub struct LuStep {
    pub k: usize,
    pub nt: usize,
    pub b: usize,
}

impl Job for LuStep {
    type Output = ();
    fn run(self, t: &TaskCtx) {
        let LuStep { k, nt, b } = self;
        let pe = t.my_pe();
        let mut diag = take_tile(pe, k, k);
        getrf(tile_mut(&mut diag), b);
        put_tile(pe, k, k, Arc::clone(&diag));
        let solved: Vec<Future<Tile>> = (k + 1..nt)
            .map(|j| {
                let diag = Arc::clone(&diag);
                let mut a = take_tile(pe, k, j);
                t.spawn_local(move |_| {
                    trsm_lower(&diag, tile_mut(&mut a), b);
                    a
                })
            })
            .collect();
        let mut panel = vec![diag];
        for (j, f) in (k + 1..nt).zip(solved) {
            let tile = f.get();
            put_tile(pe, k, j, Arc::clone(&tile));
            panel.push(tile);
        }
        let update = LuUpdate { k, nt, b, panel };
        let others: Vec<Future<()>> = (0..t.num_pes())
            .filter(|&p| p != pe)
            .map(|p| {
                t.async_on(
                    p,
                    LuUpdate {
                        panel: update.panel.clone(),
                        ..update
                    },
                )
            })
            .collect();
        update.run(t);
        for f in others {
            f.get();
        }
    }
}

/// The update of step `k` on one PE: for each of its rows `i > k`, `A[i][k] := A[i][k]
/// U[k][k]^-1`, then `A[i][j] -= A[i][k] U[k][j]`; rows run as jobs of this PE.
/// `panel` is the factored row `k` from column `k` on.
#[derive(Serialize, Deserialize)]
pub struct LuUpdate {
    pub k: usize,
    pub nt: usize,
    pub b: usize,
    pub panel: Vec<Tile>,
}

impl Job for LuUpdate {
    type Output = ();
    fn run(self, t: &TaskCtx) {
        let LuUpdate { k, nt, b, panel } = self;
        let (pe, pes) = (t.my_pe(), t.num_pes());
        let panel = Arc::new(panel);
        let rows: Vec<Future<()>> = (k + 1..nt)
            .filter(|&i| home_pe(i, pes) == pe)
            .map(|i| {
                let panel = Arc::clone(&panel);
                let mut a = take_tile(pe, i, k);
                let mut row: Vec<Tile> = (k + 1..nt).map(|j| take_tile(pe, i, j)).collect();
                t.spawn_local(move |_| {
                    trsm_upper(&panel[0], tile_mut(&mut a), b);
                    for (c, u) in row.iter_mut().zip(&panel[1..]) {
                        gemm_sub(tile_mut(c), &a, u, b);
                    }
                    put_tile(pe, i, k, a);
                    for (j, c) in (k + 1..nt).zip(row) {
                        put_tile(pe, i, j, c);
                    }
                })
            })
            .collect();
        for f in rows {
            f.get();
        }
    }
}

/// Removes this PE's tiles and returns them as `(i, j, tile)`.
#[derive(Serialize, Deserialize)]
pub struct LuCollect;

impl Job for LuCollect {
    type Output = Vec<(usize, usize, Tile)>;
    fn run(self, t: &TaskCtx) -> Vec<(usize, usize, Tile)> {
        let pe = t.my_pe();
        let mut h = home();
        let keys: Vec<_> = h
            .range((pe, 0, 0)..(pe + 1, 0, 0))
            .map(|(k, _)| *k)
            .collect();
        keys.into_iter()
            .map(|key| (key.1, key.2, h.remove(&key).expect("key just listed")))
            .collect()
    }
}

/// Tiled LU in place on all PEs: sends every PE its rows of tiles, runs the steps, and
/// brings the tiles back (both transfers are part of the work).
pub fn lu_distributed(tiles: &mut [Vec<Tile>], b: usize, t: &TaskCtx) {
    let nt = tiles.len();
    let pes = t.num_pes();
    let placed: Vec<Future<()>> = (0..pes)
        .map(|p| {
            let mine = (0..nt)
                .filter(|&i| home_pe(i, pes) == p)
                .flat_map(|i| (0..nt).map(move |j| (i, j)))
                .map(|(i, j)| (i, j, Arc::clone(&tiles[i][j])))
                .collect();
            t.async_on(p, LuPlace { tiles: mine })
        })
        .collect();
    for f in placed {
        f.get();
    }
    for k in 0..nt {
        t.async_on(home_pe(k, pes), LuStep { k, nt, b }).get();
    }
    let back: Vec<_> = (0..pes).map(|p| t.async_on(p, LuCollect)).collect();
    for f in back {
        for (i, j, tile) in f.get() {
            tiles[i][j] = tile;
        }
    }
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
        lu(&mut f, 16);
        let r = lu_residual(&a, &f, 16);
        assert!(r < 1e-12, "residual {r}");
    }
}
