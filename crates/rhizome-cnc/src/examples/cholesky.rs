//! Tiled Cholesky factorization, the classic CnC application: `A = L·Lᵀ` for a symmetric
//! positive definite matrix of `tiles × tiles` tiles of `b × b` doubles.
//!
//! Item `tile` at tag `(r, c, k)` is tile `(r, c)` (r ≥ c) after the updates of the first
//! `k` iterations; `L(r, c)` is the item at `(r, c, c + 1)`. Three step collections:
//! `potrf` (tag `k`: factor the diagonal tile, then prescribe the `trsm`s of column `k`),
//! `trsm` (tag `(k, j)`: `L(j, k) = A(j, k)·L(k, k)⁻ᵀ`, then prescribe the updates that
//! use it), `update` (tag `(k, j, i)`: `A(j, i) -= L(j, k)·L(i, k)ᵀ`). Every tile and
//! every step on it has its home on PE `c % pes` (column-cyclic: a `potrf` and the
//! `trsm`s below it share a PE, so the critical path `potrf → trsm → update → potrf`
//! crosses PEs once per column, not three times as with `(r + c) % pes`).
//!
//! The check is exact: the sequential factorization ([`sequential`]) applies the same
//! kernels to each tile in the same order (each tile's updates form a chain through its
//! `k`), so every bit must agree; and the residual `max |A - L·Lᵀ|` must be tiny.

use crate::Graph;
use rhizome::Ctx;
use std::time::Instant;

/// One tile, row-major, `b × b`.
pub type Tile = Vec<f64>;

/// Tag of a tile version: (row, column, updates applied).
type TileTag = (u32, u32, u32);

/// What a checked run gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Matrix order (`tiles · b`).
    pub n: usize,
    /// Seconds of the graph's run (the slowest PE), without input generation and check.
    pub seconds: f64,
    /// `max |A - L·Lᵀ|` over the lower triangle.
    pub residual: f64,
}

/// Entry `(i, j)` of the input: symmetric, diagonally dominant with a positive diagonal,
/// hence positive definite.
pub fn input_entry(n: usize, i: usize, j: usize) -> f64 {
    if i == j {
        return n as f64;
    }
    let (a, b) = (i.min(j) as u64, i.max(j) as u64);
    let h = rhizome::rng::XorShift64::new(a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b).next_u64();
    (h % 1000) as f64 / 1000.0 - 0.5
}

/// Tile `(r, c)` of the input.
pub fn input_tile(n: usize, b: usize, r: usize, c: usize) -> Tile {
    let mut t = vec![0.0; b * b];
    for i in 0..b {
        for j in 0..b {
            t[i * b + j] = input_entry(n, r * b + i, c * b + j);
        }
    }
    t
}

/// In place: the lower Cholesky factor of a diagonal tile (upper part zeroed).
pub fn potrf(a: &mut [f64], b: usize) {
    for j in 0..b {
        let mut d = a[j * b + j];
        for p in 0..j {
            d -= a[j * b + p] * a[j * b + p];
        }
        let d = d.sqrt();
        a[j * b + j] = d;
        for i in j + 1..b {
            let mut s = a[i * b + j];
            for p in 0..j {
                s -= a[i * b + p] * a[j * b + p];
            }
            a[i * b + j] = s / d;
        }
        for i in 0..j {
            a[i * b + j] = 0.0;
        }
    }
}

/// In place: `a = a·l⁻ᵀ` for a lower triangular `l` (row by row forward substitution).
pub fn trsm(a: &mut [f64], l: &[f64], b: usize) {
    for r in 0..b {
        let row = &mut a[r * b..(r + 1) * b];
        for j in 0..b {
            let mut s = row[j];
            for p in 0..j {
                s -= row[p] * l[j * b + p];
            }
            row[j] = s / l[j * b + j];
        }
    }
}

/// In place: `c -= x·yᵀ`.
pub fn update(c: &mut [f64], x: &[f64], y: &[f64], b: usize) {
    for r in 0..b {
        let xr = &x[r * b..(r + 1) * b];
        for s in 0..b {
            let ys = &y[s * b..(s + 1) * b];
            let dot: f64 = xr.iter().zip(ys).map(|(p, q)| p * q).sum();
            c[r * b + s] -= dot;
        }
    }
}

/// The sequential tiled factorization: the lower tiles `L(r, c)`, indexed `r·(r+1)/2 + c`.
pub fn sequential(tiles: usize, b: usize) -> Vec<Tile> {
    let n = tiles * b;
    let at = |r: usize, c: usize| r * (r + 1) / 2 + c;
    let mut t: Vec<Tile> = (0..tiles)
        .flat_map(|r| (0..=r).map(move |c| (r, c)))
        .map(|(r, c)| input_tile(n, b, r, c))
        .collect();
    for k in 0..tiles {
        potrf(&mut t[at(k, k)], b);
        let lkk = t[at(k, k)].clone();
        for j in k + 1..tiles {
            trsm(&mut t[at(j, k)], &lkk, b);
        }
        for j in k + 1..tiles {
            for i in k + 1..=j {
                let (x, y) = (t[at(j, k)].clone(), t[at(i, k)].clone());
                update(&mut t[at(j, i)], &x, &y, b);
            }
        }
    }
    t
}

/// Collective: factors the `tiles · b` input with a CnC graph on every PE and checks the
/// result on PE 0 against [`sequential`] (bit for bit) and by its residual. The outcome
/// (or the reason it is wrong) is the same on every PE.
pub fn run(ctx: &Ctx, tiles: usize, b: usize) -> Result<Outcome, super::ExampleError> {
    let (n, pes) = (tiles * b, ctx.num_pes());
    let home = move |&(_, c, _): &TileTag| c as usize % pes;
    let g = Graph::new(ctx);
    let tile = g.items::<TileTag, Tile>("tile", home);
    let (t1, t2, t3) = (tile.clone(), tile.clone(), tile.clone());
    let potrf_tags = g.tags::<u32>("potrf");
    let trsm_tags = g.tags::<(u32, u32)>("trsm");
    let update_tags = g.tags::<(u32, u32, u32)>("update");
    let (trsm_t, update_t) = (trsm_tags.clone(), update_tags.clone());
    let potrf_step = g.steps(
        "potrf",
        move |&k: &u32| home(&(k, k, 0)),
        move |s, &k| {
            let mut a = (*s.get(&t1, &(k, k, k))?).clone();
            potrf(&mut a, b);
            s.put(&t1, (k, k, k + 1), a);
            for j in k + 1..tiles as u32 {
                s.put_tag(&trsm_t, (k, j));
            }
            Ok(())
        },
    );
    let trsm_step = g.steps(
        "trsm",
        move |&(k, j): &(u32, u32)| home(&(j, k, 0)),
        move |s, &(k, j)| {
            let a = s.get(&t2, &(j, k, k))?;
            let l = s.get(&t2, &(k, k, k + 1))?;
            let mut a = (*a).clone();
            trsm(&mut a, &l, b);
            s.put(&t2, (j, k, k + 1), a);
            for i in k + 1..=j {
                s.put_tag(&update_t, (k, j, i));
            }
            Ok(())
        },
    );
    let update_step = g.steps(
        "update",
        move |&(_, j, i): &(u32, u32, u32)| home(&(j, i, 0)),
        move |s, &(k, j, i)| {
            let c = s.get(&t3, &(j, i, k))?;
            let x = s.get(&t3, &(j, k, k + 1))?;
            let y = s.get(&t3, &(i, k, k + 1))?;
            let mut c = (*c).clone();
            update(&mut c, &x, &y, b);
            s.put(&t3, (j, i, k + 1), c);
            Ok(())
        },
    );
    potrf_tags.prescribes(&potrf_step);
    trsm_tags.prescribes(&trsm_step);
    update_tags.prescribes(&update_step);
    let me = ctx.my_pe();
    // Each PE makes the input tiles it owns and starts the potrf instances it owns.
    let inputs: Vec<(TileTag, Tile)> = (0..tiles as u32)
        .flat_map(|r| (0..=r).map(move |c| (r, c, 0)))
        .filter(|t| home(t) == me)
        .map(|t| (t, input_tile(n, b, t.0 as usize, t.1 as usize)))
        .collect();
    ctx.barrier();
    let start = Instant::now();
    g.run(ctx, |env| {
        for (t, a) in inputs {
            env.put(&tile, t, a);
        }
        for k in (0..tiles as u32).filter(|&k| home(&(k, k, 0)) == me) {
            env.put_tag(&potrf_tags, k);
        }
    })
    .map_err(super::ExampleError::Cnc)?;
    let nanos = ctx.max_u64(start.elapsed().as_nanos() as u64);
    let mine: Vec<(u64, u64, Vec<f64>)> = tile
        .local_items()
        .into_iter()
        .filter(|&((r, c, k), _)| k == c + 1 && r >= c)
        .map(|((r, c, _), v)| (r as u64, c as u64, (*v).clone()))
        .collect();
    let verdict = ctx
        .gather(mine, 0)
        .map(|all| check(tiles, b, all.into_iter().flatten().collect()));
    let (residual, wrong) = super::share_verdict(ctx, verdict);
    if let Some(why) = wrong {
        return Err(super::ExampleError::Wrong(why));
    }
    Ok(Outcome {
        n,
        seconds: nanos as f64 * 1e-9,
        residual,
    })
}

/// Compares the factor's tiles with the sequential one and returns the residual.
fn check(tiles: usize, b: usize, got: Vec<(u64, u64, Vec<f64>)>) -> Result<f64, String> {
    let want = sequential(tiles, b);
    let at = |r: usize, c: usize| r * (r + 1) / 2 + c;
    if got.len() != want.len() {
        return Err(format!(
            "cholesky: {} factor tiles, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (r, c, t) in &got {
        let (r, c) = (*r as usize, *c as usize);
        if t.iter()
            .map(|x| x.to_bits())
            .ne(want[at(r, c)].iter().map(|x| x.to_bits()))
        {
            return Err(format!(
                "cholesky: tile ({r}, {c}) differs from the sequential factorization"
            ));
        }
    }
    // The factor as a dense lower triangular matrix, row-major.
    let n = tiles * b;
    let mut l = vec![0.0; n * n];
    for r in 0..tiles {
        for c in 0..=r {
            for i in 0..b {
                let row = (r * b + i) * n + c * b;
                l[row..row + b].copy_from_slice(&want[at(r, c)][i * b..(i + 1) * b]);
            }
        }
    }
    let mut worst = 0.0f64;
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = l[i * n..i * n + j + 1]
                .iter()
                .zip(&l[j * n..j * n + j + 1])
                .map(|(p, q)| p * q)
                .sum();
            worst = worst.max((s - input_entry(n, i, j)).abs());
        }
    }
    if worst > 1e-9 * n as f64 {
        return Err(format!("cholesky: residual {worst:e} is too large"));
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_factor_reproduces_the_input() {
        // 3 tiles of 4: the residual check inside `check` is what is tested here.
        let f = sequential(3, 4);
        let got = (0..3u64)
            .flat_map(|r| (0..=r).map(move |c| (r, c)))
            .zip(f)
            .map(|((r, c), t)| (r, c, t))
            .collect();
        let res = check(3, 4, got).unwrap();
        assert!(res < 1e-12, "{res}");
    }

    #[test]
    fn a_wrong_tile_is_caught() {
        let mut f = sequential(2, 3);
        f[1][0] += 1e-12;
        let got = [(0, 0), (1, 0), (1, 1)]
            .into_iter()
            .zip(f)
            .map(|((r, c), t)| (r, c, t))
            .collect();
        assert!(check(2, 3, got).unwrap_err().contains("(1, 0)"));
    }
}
