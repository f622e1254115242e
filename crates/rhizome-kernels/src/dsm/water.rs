//! Water-nsquared-like: molecules interact pairwise over half of the others (the
//! SPLASH-2 half shell, so each pair is computed once), each thread for its block of
//! molecules. A thread sums its contributions privately, then adds them to each
//! molecule's shared force under that molecule's lock, once per molecule and step, as
//! Water-nsquared does. The threads start these updates at different blocks of
//! molecules (so they do not all queue for the same lock at once), and each thread's
//! starting block moves back by one each step: thread `t` starts step `s` at block
//! `t - s` (modulo the threads), the block whose locks it took last in step `s - 1` (each
//! thread goes round all blocks from its start), so with one thread per PE about half of
//! a PE's acquisitions find the token still cached there instead of chasing the other
//! PE's tokens, and the token of each lock moves once per step instead of twice. After a
//! barrier each thread moves its molecules and clears their forces.
//! Contributions are whole numbers of 2^-24 units (rounded per pair, exact in `f64`
//! below 2^53), so the sums do not depend on the order in which the locks are taken: any
//! split gives the sequential bits.

use super::{Kernel, Mem, Team};

pub(crate) struct Water {
    pub(crate) molecules: usize,
    pub(crate) steps: usize,
}

const DT: f64 = 1e-4;
const SOFTENING: f64 = 1e-2;
/// Forces are counted in units of 2^-24.
const UNIT: f64 = (1u64 << 24) as f64;

impl Water {
    fn mine(&self, id: usize, all: usize) -> std::ops::Range<usize> {
        id * self.molecules / all..(id + 1) * self.molecules / all
    }
    /// Where the three arrays start: positions, velocities, forces.
    fn pos(&self, i: usize) -> usize {
        3 * i
    }
    fn vel(&self, i: usize) -> usize {
        3 * (self.molecules + i)
    }
    fn force(&self, i: usize) -> usize {
        3 * (2 * self.molecules + i)
    }
    /// The partners of molecule `i`: the next half of the ring, each pair once.
    fn partners(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let n = self.molecules;
        (1..=n / 2)
            .filter(move |&d| !(n.is_multiple_of(2) && d == n / 2 && i >= n / 2))
            .map(move |d| (i + d) % n)
    }
}

impl Kernel for Water {
    fn words(&self, _all: usize) -> usize {
        9 * self.molecules
    }

    fn init(&self, m: Mem, id: usize, all: usize) {
        for i in self.mine(id, all) {
            let mut rng = rhizome::rng::XorShift64::for_stream(i as u64);
            for k in 0..3 {
                m.set(self.pos(i) + k, rng.next_f64());
                m.set(self.vel(i) + k, 0.0);
                m.set(self.force(i) + k, 0.0);
            }
        }
    }

    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team) {
        let n = self.molecules;
        let mut local = vec![[0.0f64; 3]; n];
        for step in 0..self.steps {
            for i in self.mine(id, all) {
                let p = |j: usize, k: usize| m.get(self.pos(j) + k);
                for j in self.partners(i) {
                    let d = [p(j, 0) - p(i, 0), p(j, 1) - p(i, 1), p(j, 2) - p(i, 2)];
                    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING;
                    let f = 1.0 / (r2 * r2.sqrt());
                    for (k, dk) in d.iter().enumerate() {
                        let q = (f * dk * UNIT).round();
                        local[i][k] += q;
                        local[j][k] -= q;
                    }
                }
            }
            // Each thread starts at a different block of molecules, so the threads take
            // different locks at the same time instead of queueing for the same one; and
            // the blocks move back by one each step, so that each thread starts on the
            // locks it released last in the step before, still cached on its PE.
            let first = self.mine((id + all - step % all) % all, all).start;
            for j in (first..n).chain(0..first) {
                let f = &mut local[j];
                if *f != [0.0; 3] {
                    team.lock(j);
                    for (k, fk) in f.iter().enumerate() {
                        m.set(self.force(j) + k, m.get(self.force(j) + k) + fk);
                    }
                    team.unlock(j);
                    *f = [0.0; 3];
                }
            }
            team.barrier();
            for i in self.mine(id, all) {
                for k in 0..3 {
                    let v = m.get(self.vel(i) + k) + m.get(self.force(i) + k) / UNIT * DT;
                    m.set(self.vel(i) + k, v);
                    m.set(self.pos(i) + k, m.get(self.pos(i) + k) + v * DT);
                    m.set(self.force(i) + k, 0.0);
                }
            }
            team.barrier();
        }
    }
}
