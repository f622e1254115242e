//! The paper's NBody and NBodyW microbenchmarks: bodies of 64 bytes (position, velocity,
//! mass and padding: eight `f64`), split into contiguous blocks of whole pages, one per
//! thread. Each step every thread computes the acceleration of its bodies from all positions, waits at
//! a barrier, then moves its bodies, and waits again: reads and writes never meet in one
//! phase, so any split gives the sequential bits. NBodyW adds the paper's sequential
//! phase: one thread then writes every body (it removes the mean velocity, summed in
//! body order), and the others wait at a third barrier.

use super::{Kernel, Mem, Team};

pub(crate) struct Nbody {
    pub(crate) bodies: usize,
    pub(crate) steps: usize,
    /// NBodyW: thread 0 writes every body after each step.
    pub(crate) sequential_phase: bool,
}

/// `f64`s per body: x y z, vx vy vz, mass, padding (64 bytes).
const BODY: usize = 8;
const DT: f64 = 1e-3;
const SOFTENING: f64 = 1e-3;

/// Bodies in a 4 KiB page, the unit of the split between threads.
const PAGE_BODIES: usize = 4096 / (BODY * 8);

impl Nbody {
    /// Thread `id`'s bodies: whole pages of them, so that a thread's bodies are homed on
    /// its PE (block homes give PE `q` of `n` the pages from `ceil(q * pages / n)`, and
    /// the threads of a PE have consecutive `id`s) and no page is written by two PEs.
    /// With more threads than pages, some get none.
    fn mine(&self, id: usize, all: usize) -> std::ops::Range<usize> {
        let pages = self.bodies.div_ceil(PAGE_BODIES);
        let bound = |i: usize| (i * pages).div_ceil(all) * PAGE_BODIES;
        bound(id).min(self.bodies)..bound(id + 1).min(self.bodies)
    }
    /// The sequential phase: every body's velocity minus the mean velocity.
    fn remove_mean_velocity(&self, m: Mem) {
        for k in 0..3 {
            let v = |b: usize| b * BODY + 3 + k;
            let mean = (0..self.bodies).map(|b| m.get(v(b))).sum::<f64>() / self.bodies as f64;
            for b in 0..self.bodies {
                m.set(v(b), m.get(v(b)) - mean);
            }
        }
    }
}

impl Kernel for Nbody {
    fn words(&self, _all: usize) -> usize {
        self.bodies * BODY
    }

    fn init(&self, m: Mem, id: usize, all: usize) {
        // One random stream per body, so that the split does not change the bodies.
        for b in self.mine(id, all) {
            let mut rng = rhizome::rng::XorShift64::for_stream(b as u64);
            for k in 0..3 {
                m.set(b * BODY + k, rng.next_f64());
                m.set(b * BODY + 3 + k, 0.0);
            }
            m.set(b * BODY + 6, 1.0 + rng.next_f64());
            m.set(b * BODY + 7, 0.0);
        }
    }

    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team) {
        let mine = self.mine(id, all);
        let mut acc = vec![[0.0f64; 3]; mine.len()];
        for _ in 0..self.steps {
            for (a, i) in acc.iter_mut().zip(mine.clone()) {
                let p = [m.get(i * BODY), m.get(i * BODY + 1), m.get(i * BODY + 2)];
                *a = [0.0; 3];
                for j in (0..self.bodies).filter(|&j| j != i) {
                    let d = [
                        m.get(j * BODY) - p[0],
                        m.get(j * BODY + 1) - p[1],
                        m.get(j * BODY + 2) - p[2],
                    ];
                    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING;
                    let f = m.get(j * BODY + 6) / (r2 * r2.sqrt());
                    for (ak, dk) in a.iter_mut().zip(d) {
                        *ak += f * dk;
                    }
                }
            }
            team.barrier();
            for (a, i) in acc.iter().zip(mine.clone()) {
                for (k, ak) in a.iter().enumerate() {
                    let v = m.get(i * BODY + 3 + k) + ak * DT;
                    m.set(i * BODY + 3 + k, v);
                    m.set(i * BODY + k, m.get(i * BODY + k) + v * DT);
                }
            }
            team.barrier();
            if self.sequential_phase {
                if id == 0 {
                    self.remove_mean_velocity(m);
                }
                team.barrier();
            }
        }
    }
}
