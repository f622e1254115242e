//! Water-nsquared-like: molecules of three sites (an oxygen and two hydrogens, as
//! SPLASH-2's Water) interact pairwise over half of the others (the SPLASH-2 half shell,
//! so each pair is computed once): every pair of molecules is nine site-site Coulomb
//! interactions, as Water-nsquared's `INTERF` computes nine site distances a pair. Each
//! thread computes the pairs of its block of molecules and sums its contributions to
//! every molecule's force privately over the step, then adds them to each molecule's
//! shared force under that molecule's lock, once per molecule and step, as
//! Water-nsquared does (one acquisition per molecule and thread a step, not one per
//! pair). The threads start these updates at different blocks of molecules (so they do
//! not all queue for the same lock at once), and each thread's starting block moves back
//! by one each step: thread `t` starts step `s` at block `t - s` (modulo the threads),
//! the block whose locks it took last in step `s - 1` (each thread goes round all blocks
//! from its start), so with one thread per PE about half of a PE's acquisitions find the
//! token still cached there instead of chasing the other PE's tokens, and the token of
//! each lock moves once per step instead of twice. The locks go in runs of 32, and a
//! thread asks for the next run's tokens while it takes this run's (`Team::prefetch`),
//! so the tokens it lacks travel together instead of one round trip after another (the
//! program still takes each lock as Water-nsquared does). After a barrier each thread
//! moves its molecules (adding the bonds' intramolecular forces, Water's `INTRAF`, which
//! need no lock) and clears their forces.
//!
//! Contributions are whole numbers of 2^-24 units (rounded per site pair, exact in `f64`
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
/// Sites a molecule (oxygen, two hydrogens) and words a molecule's vector (x, y, z each).
const SITES: usize = 3;
const WORDS: usize = 3 * SITES;
/// The sites' charges (TIP3P-like: the molecule is neutral).
const CHARGE: [f64; SITES] = [-0.8, 0.4, 0.4];
/// The O-H bond: rest length and stiffness.
const BOND: f64 = 0.01;
const STIFFNESS: f64 = 1e3;
/// Words of a 4 KiB page (x86-64 Linux's; on larger pages the layout is as correct,
/// only the homes follow the PEs' molecules less closely), and molecules a tile.
const PAGE_WORDS: usize = 512;
const TILE: usize = PAGE_WORDS / WORDS;
/// Locks a run of the force updates: the next run's tokens are asked for ahead.
const AHEAD: usize = 32;

impl Water {
    fn mine(&self, id: usize, all: usize) -> std::ops::Range<usize> {
        id * self.molecules / all..(id + 1) * self.molecules / all
    }
    /// Where molecule `i`'s position, velocity and force start (`WORDS` words each:
    /// site-major, then x, y, z). The molecules go in tiles of [`TILE`]; a tile holds
    /// its molecules' positions, then their velocities, then their forces, each padded
    /// to a page, so that block homes put the pages of a PE's molecules on that PE (its
    /// moves and its own force updates write home pages: no twin, no diff) and the
    /// positions every thread reads share no page with the forces that locks guard.
    fn at(&self, i: usize, array: usize) -> usize {
        (i / TILE) * 3 * PAGE_WORDS + array * PAGE_WORDS + (i % TILE) * WORDS
    }
    fn pos(&self, i: usize) -> usize {
        self.at(i, 0)
    }
    fn vel(&self, i: usize) -> usize {
        self.at(i, 1)
    }
    fn force(&self, i: usize) -> usize {
        self.at(i, 2)
    }
    /// The partners of molecule `i`: the next half of the ring, each pair once.
    fn partners(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let n = self.molecules;
        (1..=n / 2)
            .filter(move |&d| !(n.is_multiple_of(2) && d == n / 2 && i >= n / 2))
            .map(move |d| (i + d) % n)
    }
    fn read(&self, m: Mem, at: usize) -> [f64; WORDS] {
        std::array::from_fn(|w| m.get(at + w))
    }
    /// The nine site-site interactions of molecules at `a` and `b`, added (rounded to
    /// units) to `fa` and taken from `fb`.
    fn pair(a: &[f64; WORDS], b: &[f64; WORDS], fa: &mut [f64; WORDS], fb: &mut [f64; WORDS]) {
        for s in 0..SITES {
            for t in 0..SITES {
                let d = [
                    b[3 * t] - a[3 * s],
                    b[3 * t + 1] - a[3 * s + 1],
                    b[3 * t + 2] - a[3 * s + 2],
                ];
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING;
                // Like charges repel: the force on `a`'s site points away from `b`'s.
                let f = -CHARGE[s] * CHARGE[t] / (r2 * r2.sqrt());
                for (k, dk) in d.iter().enumerate() {
                    let q = (f * dk * UNIT).round();
                    fa[3 * s + k] += q;
                    fb[3 * t + k] -= q;
                }
            }
        }
    }
    /// The bonds' forces on the sites of a molecule at `x` (each hydrogen to its oxygen).
    fn bonds(x: &[f64; WORDS]) -> [f64; WORDS] {
        let mut f = [0.0; WORDS];
        for h in 1..SITES {
            let d: [f64; 3] = std::array::from_fn(|k| x[3 * h + k] - x[k]);
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let pull = -STIFFNESS * (r - BOND) / r;
            for k in 0..3 {
                f[3 * h + k] += pull * d[k];
                f[k] -= pull * d[k];
            }
        }
        f
    }
}

impl Kernel for Water {
    fn words(&self, _all: usize) -> usize {
        self.molecules.div_ceil(TILE) * 3 * PAGE_WORDS
    }

    fn init(&self, m: Mem, id: usize, all: usize) {
        for i in self.mine(id, all) {
            let mut rng = rhizome::rng::XorShift64::for_stream(i as u64);
            let o: [f64; 3] = std::array::from_fn(|_| rng.next_f64());
            for s in 0..SITES {
                for (k, ok) in o.iter().enumerate() {
                    let off = if s == 0 {
                        0.0
                    } else {
                        BOND * (rng.next_f64() - 0.5)
                    };
                    m.set(self.pos(i) + 3 * s + k, ok + off);
                    m.set(self.vel(i) + 3 * s + k, 0.0);
                    m.set(self.force(i) + 3 * s + k, 0.0);
                }
            }
        }
    }

    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team) {
        let n = self.molecules;
        let mut local = vec![[0.0f64; WORDS]; n];
        for step in 0..self.steps {
            for i in self.mine(id, all) {
                let a = self.read(m, self.pos(i));
                let mut fa = local[i];
                for j in self.partners(i) {
                    let b = self.read(m, self.pos(j));
                    Self::pair(&a, &b, &mut fa, &mut local[j]);
                }
                local[i] = fa;
            }
            // Each thread starts at a different block of molecules, so the threads take
            // different locks at the same time instead of queueing for the same one; and
            // the blocks move back by one each step, so that each thread starts on the
            // locks it released last in the step before, still cached on its PE.
            let first = self.mine((id + all - step % all) % all, all).start;
            // The locks go in runs of `AHEAD`; the tokens of the next run are asked for
            // while this one is summed, so their round trips overlap.
            let runs: Vec<_> = [first..n, 0..first]
                .into_iter()
                .flat_map(|r| {
                    let end = r.end;
                    r.step_by(AHEAD).map(move |a| a..(a + AHEAD).min(end))
                })
                .collect();
            if let Some(r) = runs.first() {
                team.prefetch(r.clone());
            }
            for (k, run) in runs.iter().enumerate() {
                if let Some(next) = runs.get(k + 1) {
                    team.prefetch(next.clone());
                }
                for j in run.clone() {
                    let f = &mut local[j];
                    if *f != [0.0; WORDS] {
                        team.lock(j);
                        for (w, fw) in f.iter().enumerate() {
                            m.set(self.force(j) + w, m.get(self.force(j) + w) + fw);
                        }
                        team.unlock(j);
                        *f = [0.0; WORDS];
                    }
                }
            }
            team.barrier();
            for i in self.mine(id, all) {
                let x = self.read(m, self.pos(i));
                let bond = Self::bonds(&x);
                for w in 0..WORDS {
                    let f = m.get(self.force(i) + w) / UNIT + bond[w];
                    let v = m.get(self.vel(i) + w) + f * DT;
                    m.set(self.vel(i) + w, v);
                    m.set(self.pos(i) + w, x[w] + v * DT);
                    m.set(self.force(i) + w, 0.0);
                }
            }
            team.barrier();
        }
    }
}
