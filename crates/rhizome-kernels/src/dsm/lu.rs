//! Blocked LU (the SPLASH-2 kernel, contiguous blocks): an `n` x `n` diagonally dominant
//! matrix, so no pivoting, stored block by block (each `block` x `block` block contiguous,
//! so that a block's pages have one writer), blocks dealt to the threads cyclically in
//! row-major order. Step `k` factors the diagonal block, then (after a barrier) the
//! blocks of row `k` and column `k` against it, then (after another) updates the
//! trailing blocks, and waits again. Every element sees the same operations in the same
//! order whoever owns its block, so any split gives the sequential bits; the kernel also
//! checks `L * U = A` on a sample of elements.

use super::{Kernel, Mem, Team};

pub(crate) struct Lu {
    pub(crate) n: usize,
    pub(crate) block: usize,
}

impl Lu {
    /// Blocks per side.
    fn blocks(&self) -> usize {
        self.n / self.block
    }
    /// Where block `(bi, bj)` starts.
    fn at(&self, bi: usize, bj: usize) -> usize {
        (bi * self.blocks() + bj) * self.block * self.block
    }
    /// Where element `(i, j)` of the matrix is.
    fn element(&self, i: usize, j: usize) -> usize {
        let b = self.block;
        self.at(i / b, j / b) + (i % b) * b + j % b
    }
    fn owner(&self, bi: usize, bj: usize, all: usize) -> usize {
        (bi * self.blocks() + bj) % all
    }
    /// The input: `[0, 1)` off the diagonal, `n` more on it.
    fn input(&self, i: usize, j: usize) -> f64 {
        let v = rhizome::rng::XorShift64::for_stream((i * self.n + j) as u64).next_f64();
        if i == j { v + self.n as f64 } else { v }
    }

    /// Row `x` minus `f` times row `y`, over columns `cols` (rows start at `x` and `y`).
    fn subtract_row(m: Mem, x: usize, f: f64, y: usize, cols: std::ops::Range<usize>) {
        for c in cols {
            m.set(x + c, m.get(x + c) - f * m.get(y + c));
        }
    }

    /// In place: the diagonal block into unit-lower L and upper U.
    fn factor(&self, m: Mem, d: usize) {
        let b = self.block;
        for p in 0..b {
            let pivot = m.get(d + p * b + p);
            for r in p + 1..b {
                let l = m.get(d + r * b + p) / pivot;
                m.set(d + r * b + p, l);
                Lu::subtract_row(m, d + r * b, l, d + p * b, p + 1..b);
            }
        }
    }
    /// Block `x` of row `k` becomes `L^-1 x` (L of diagonal block `d`).
    fn solve_row(&self, m: Mem, d: usize, x: usize) {
        let b = self.block;
        for p in 0..b {
            for r in p + 1..b {
                Lu::subtract_row(m, x + r * b, m.get(d + r * b + p), x + p * b, 0..b);
            }
        }
    }
    /// Block `x` of column `k` becomes `x U^-1` (U of diagonal block `d`).
    fn solve_column(&self, m: Mem, d: usize, x: usize) {
        let b = self.block;
        for r in 0..b {
            for p in 0..b {
                let v = m.get(x + r * b + p) / m.get(d + p * b + p);
                m.set(x + r * b + p, v);
                Lu::subtract_row(m, x + r * b, v, d + p * b, p + 1..b);
            }
        }
    }
    /// Block `x` minus the product of blocks `l` and `u`.
    fn update(&self, m: Mem, l: usize, u: usize, x: usize) {
        let b = self.block;
        for r in 0..b {
            for p in 0..b {
                Lu::subtract_row(m, x + r * b, m.get(l + r * b + p), u + p * b, 0..b);
            }
        }
    }
}

impl Kernel for Lu {
    fn words(&self, _all: usize) -> usize {
        self.n * self.n
    }

    fn init(&self, m: Mem, id: usize, all: usize) {
        let nb = self.blocks();
        for (bi, bj) in (0..nb).flat_map(|bi| (0..nb).map(move |bj| (bi, bj))) {
            if self.owner(bi, bj, all) == id {
                for i in bi * self.block..(bi + 1) * self.block {
                    for j in bj * self.block..(bj + 1) * self.block {
                        m.set(self.element(i, j), self.input(i, j));
                    }
                }
            }
        }
    }

    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team) {
        let nb = self.blocks();
        let mine = |bi, bj| self.owner(bi, bj, all) == id;
        for k in 0..nb {
            if mine(k, k) {
                self.factor(m, self.at(k, k));
            }
            team.barrier();
            for j in k + 1..nb {
                if mine(k, j) {
                    self.solve_row(m, self.at(k, k), self.at(k, j));
                }
                if mine(j, k) {
                    self.solve_column(m, self.at(k, k), self.at(j, k));
                }
            }
            team.barrier();
            for i in k + 1..nb {
                for j in (k + 1..nb).filter(|&j| mine(i, j)) {
                    self.update(m, self.at(i, k), self.at(k, j), self.at(i, j));
                }
            }
            team.barrier();
        }
    }

    /// `(L U)(i, j) = A(i, j)` to within rounding on a diagonal of samples.
    fn check(&self, m: Mem) -> bool {
        let n = self.n;
        (0..n.min(16)).all(|s| {
            let (i, j) = (s * n / 16, (s * 7 + 3) * n / 16 % n);
            let lu: f64 = (0..=i.min(j))
                .map(|k| {
                    let l = if k == i {
                        1.0
                    } else {
                        m.get(self.element(i, k))
                    };
                    l * m.get(self.element(k, j))
                })
                .sum();
            (lu - self.input(i, j)).abs() <= 1e-9 * n as f64
        })
    }
}
