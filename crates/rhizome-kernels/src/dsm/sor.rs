//! Red-black successive over-relaxation (the paper's SOR): an `n` x `n` grid inside a
//! fixed boundary, rows split into contiguous blocks, one per thread. Each iteration
//! updates the red points (`i + j` even) from their black neighbours, then the black ones
//! from the red: within a colour no point reads another being written, so any split
//! gives the sequential bits.

use super::{Kernel, Mem, Team};

pub(crate) struct Sor {
    pub(crate) n: usize,
    pub(crate) iters: usize,
}

impl Sor {
    fn width(&self) -> usize {
        self.n + 2
    }
    /// Rows `1..=n` of thread `id` of `all`.
    fn rows(&self, id: usize, all: usize) -> std::ops::Range<usize> {
        1 + id * self.n / all..1 + (id + 1) * self.n / all
    }
}

impl Kernel for Sor {
    fn words(&self, _all: usize) -> usize {
        self.width() * self.width()
    }

    fn init(&self, m: Mem, id: usize, all: usize) {
        let w = self.width();
        let mut rows = self.rows(id, all);
        // The first and last threads also own the top and bottom boundary rows.
        if id == 0 {
            rows.start = 0;
        }
        if id + 1 == all {
            rows.end = w;
        }
        for i in rows {
            for j in 0..w {
                let edge = i == 0 || j == 0 || i == w - 1 || j == w - 1;
                let v = if edge {
                    1.0
                } else {
                    ((i * 31 + j * 17) % 100) as f64 / 100.0
                };
                m.set(i * w + j, v);
            }
        }
    }

    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team) {
        let w = self.width();
        for _ in 0..self.iters {
            for colour in 0..2 {
                for i in self.rows(id, all) {
                    let first = 1 + (i + colour + 1) % 2;
                    for j in (first..=self.n).step_by(2) {
                        let at = i * w + j;
                        let v =
                            (m.get(at - w) + m.get(at + w) + m.get(at - 1) + m.get(at + 1)) * 0.25;
                        m.set(at, v);
                    }
                }
                team.barrier();
            }
        }
    }
}
