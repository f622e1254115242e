//! TSP, the TreadMarks branch and bound: the shortest round trip from city 0 through
//! every city. A shared stack of partial tours and the shared best length sit under one
//! lock (lock 0). A thread takes the newest partial tour; one of fewer than `split`
//! cities it extends by each unvisited city and pushes back (inside the same critical
//! section, so an empty stack means no work is left anywhere); a longer one, with up to
//! three more such on the top of the stack (fewer visits to the lock), it searches
//! depth first on its own, pruning with its copy of the best length, which it refreshes
//! at every visit to the lock. A shorter complete tour is written under the lock. The
//! threads of one PE also share the best length they know in the PE's own memory (an
//! atomic word of this kernel instance, made once per PE: never seen by another PE), and
//! prune with it at every step of their search, so that a tour one thread finds prunes
//! its sibling's search at once, as TreadMarks' TSP lets every thread of a node read the
//! bound without the lock; another PE's tours arrive, as before, at a lock visit. A stale
//! copy of the bound only prunes less, never more, so every run ends with the optimum
//! length, though the optimal tour it keeps may be another of the same length.
//!
//! Distances are whole numbers (rounded Euclidean distances of cities on a 1000 x 1000
//! grid), so lengths are exact. The search starts from the nearest-neighbour tour.

use super::{Kernel, Mem, Team};
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct Tsp {
    pub(crate) cities: usize,
    pub(crate) split: usize,
    /// The shortest length this PE's threads know (found here, or read under the lock).
    known: AtomicU64,
}

/// The lock over the stack and the best tour.
const QUEUE_LOCK: usize = 0;
/// Partial tours a thread takes to search at one visit to the lock.
const TAKE: usize = 4;
/// Side of the square the cities lie in.
const GRID: usize = 1000;

impl Tsp {
    /// The kernel for `cities` cities, splitting tours of fewer than `split`.
    pub(crate) fn new(cities: usize, split: usize) -> Tsp {
        Tsp {
            cities,
            split,
            known: AtomicU64::new(u64::MAX),
        }
    }
    /// Tells this PE's threads of a length read under the lock: the shorter of the two.
    fn learn(&self, bound: u64) -> u64 {
        self.known.fetch_min(bound, Ordering::Relaxed).min(bound)
    }
    /// Where the distance matrix ends and the best length is.
    fn best(&self) -> usize {
        self.cities * self.cities
    }
    /// The best tour: `cities` cities from city 0.
    fn tour(&self) -> usize {
        self.best() + 1
    }
    /// The number of partial tours on the stack.
    fn top(&self) -> usize {
        self.tour() + self.cities
    }
    /// Partial tour `k` of the stack: length, cities, then the cities.
    fn entry(&self, k: usize) -> usize {
        self.top() + 1 + k * (self.cities + 2)
    }
    /// Stack entries ever needed: each extension replaces one tour of fewer than `split`
    /// cities by at most `cities - 1`, last in first out.
    fn capacity(&self) -> usize {
        1 + self.split * self.cities
    }

    /// The distance matrix, row by row.
    fn distances(&self) -> Vec<u64> {
        let n = self.cities;
        let at: Vec<(f64, f64)> = (0..n)
            .map(|c| {
                let mut rng = rhizome::rng::XorShift64::for_stream(c as u64);
                (rng.below(GRID) as f64, rng.below(GRID) as f64)
            })
            .collect();
        let mut d = vec![0; n * n];
        for a in 0..n {
            for b in 0..n {
                let (dx, dy) = (at[a].0 - at[b].0, at[a].1 - at[b].1);
                d[a * n + b] = (dx * dx + dy * dy).sqrt().round() as u64;
            }
        }
        d
    }

    /// The length of `tour` as a round trip.
    fn length(&self, d: &[u64], tour: &[usize]) -> u64 {
        let n = self.cities;
        (0..n).map(|i| d[tour[i] * n + tour[(i + 1) % n]]).sum()
    }

    /// Pushes a partial tour onto the stack (the lock held).
    fn push(&self, m: Mem, len: u64, path: &[usize]) {
        let top = m.get_u64(self.top()) as usize;
        assert!(top < self.capacity(), "TSP stack overflow");
        let e = self.entry(top);
        m.set_u64(e, len);
        m.set_u64(e + 1, path.len() as u64);
        for (i, &c) in path.iter().enumerate() {
            m.set_u64(e + 2 + i, c as u64);
        }
        m.set_u64(self.top(), top as u64 + 1);
    }

    /// Whether the newest partial tour on the stack is one to search, not to extend
    /// (the lock held).
    fn next_is_searched(&self, m: Mem) -> bool {
        let top = m.get_u64(self.top()) as usize;
        top > 0 && m.get_u64(self.entry(top - 1) + 1) as usize >= self.split.min(self.cities)
    }

    /// Pops the newest partial tour into `path` and returns its length (the lock held).
    fn pop(&self, m: Mem, path: &mut Vec<usize>) -> Option<u64> {
        let top = m.get_u64(self.top()) as usize;
        let e = self.entry(top.checked_sub(1)?);
        m.set_u64(self.top(), top as u64 - 1);
        path.clear();
        path.extend((0..m.get_u64(e + 1) as usize).map(|i| m.get_u64(e + 2 + i) as usize));
        Some(m.get_u64(e))
    }
}

/// One thread's depth-first search with its copy of the bound.
struct Search<'a> {
    tsp: &'a Tsp,
    m: Mem,
    team: &'a dyn Team,
    d: Vec<u64>,
    /// The shortest edge out of each city.
    min_out: Vec<u64>,
    bound: u64,
}

impl Search<'_> {
    /// A lower bound on a round trip that starts with `path` of length `len`: each city
    /// still to be left (the last of `path` and every unvisited one) adds at least its
    /// shortest edge.
    fn lower(&self, len: u64, path: &[usize], visited: u64) -> u64 {
        let n = self.tsp.cities;
        if path.len() == n {
            return len + self.d[path[n - 1] * n];
        }
        let rest: u64 = (0..n)
            .filter(|&c| visited & (1 << c) == 0)
            .map(|c| self.min_out[c])
            .sum();
        len + self.min_out[path[path.len() - 1]] + rest
    }

    /// Searches every completion of `path` shorter than the bound.
    fn search(&mut self, path: &mut Vec<usize>, len: u64, visited: u64) {
        let n = self.tsp.cities;
        // A shorter tour found since by a thread of this PE prunes at once.
        self.bound = self.bound.min(self.tsp.known.load(Ordering::Relaxed));
        if path.len() == n {
            let total = len + self.d[path[n - 1] * n];
            if total < self.bound {
                self.improve(total, path);
            }
            return;
        }
        let last = path[path.len() - 1];
        for c in 0..n {
            if visited & (1 << c) != 0 {
                continue;
            }
            let next = len + self.d[last * n + c];
            path.push(c);
            if self.lower(next, path, visited | 1 << c) < self.bound {
                self.search(path, next, visited | 1 << c);
            }
            path.pop();
        }
    }

    /// Records a complete tour of length `total` if it is still the shortest.
    fn improve(&mut self, total: u64, tour: &[usize]) {
        let (m, t) = (self.m, self.tsp);
        self.team.lock(QUEUE_LOCK);
        if total < m.get_u64(t.best()) {
            m.set_u64(t.best(), total);
            for (i, &c) in tour.iter().enumerate() {
                m.set_u64(t.tour() + i, c as u64);
            }
        }
        self.bound = t.learn(m.get_u64(t.best()));
        self.team.unlock(QUEUE_LOCK);
    }
}

fn visited_set(path: &[usize]) -> u64 {
    path.iter().fold(0, |v, &c| v | 1 << c)
}

impl Kernel for Tsp {
    fn words(&self, _all: usize) -> usize {
        self.entry(self.capacity())
    }

    fn init(&self, m: Mem, id: usize, _all: usize) {
        if id != 0 {
            return;
        }
        let n = self.cities;
        let d = self.distances();
        for (i, &x) in d.iter().enumerate() {
            m.set_u64(i, x);
        }
        // The nearest-neighbour tour is the first bound.
        let mut tour = vec![0];
        while tour.len() < n {
            let last = tour[tour.len() - 1];
            let seen = visited_set(&tour);
            let next = (0..n)
                .filter(|&c| seen & (1 << c) == 0)
                .min_by_key(|&c| d[last * n + c])
                .expect("an unvisited city");
            tour.push(next);
        }
        m.set_u64(self.best(), self.length(&d, &tour));
        for (i, &c) in tour.iter().enumerate() {
            m.set_u64(self.tour() + i, c as u64);
        }
        m.set_u64(self.top(), 0);
        self.push(m, 0, &[0]);
    }

    fn compute(&self, m: Mem, _id: usize, _all: usize, team: &dyn Team) {
        let n = self.cities;
        let d: Vec<u64> = (0..n * n).map(|i| m.get_u64(i)).collect();
        let min_out = (0..n)
            .map(|a| {
                (0..n)
                    .filter(|&b| b != a)
                    .map(|b| d[a * n + b])
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        let mut s = Search {
            tsp: self,
            m,
            team,
            d,
            min_out,
            bound: u64::MAX,
        };
        let mut path = Vec::with_capacity(n);
        loop {
            team.lock(QUEUE_LOCK);
            s.bound = self.learn(m.get_u64(self.best()));
            let Some(len) = self.pop(m, &mut path) else {
                team.unlock(QUEUE_LOCK);
                break;
            };
            let visited = visited_set(&path);
            if path.len() < self.split && path.len() < n {
                // Extend in reverse, so that the lowest city comes off the stack first.
                let last = path[path.len() - 1];
                for c in (0..n).rev().filter(|&c| visited & (1 << c) == 0) {
                    let next = len + s.d[last * n + c];
                    path.push(c);
                    if s.lower(next, &path, visited | 1 << c) < s.bound {
                        self.push(m, next, &path);
                    }
                    path.pop();
                }
                team.unlock(QUEUE_LOCK);
            } else {
                // Take a few more tours to search while the lock is held, so that a
                // thread visits the lock (a round trip or more) once per `TAKE` tours.
                let mut more = Vec::new();
                while more.len() + 1 < TAKE && self.next_is_searched(m) {
                    let mut p = Vec::with_capacity(n);
                    let l = self.pop(m, &mut p).expect("a tour on the stack");
                    more.push((l, p));
                }
                team.unlock(QUEUE_LOCK);
                for (len, mut path) in std::iter::once((len, path.clone())).chain(more) {
                    let visited = visited_set(&path);
                    if s.lower(len, &path, visited) < s.bound {
                        s.search(&mut path, len, visited);
                    }
                }
            }
        }
    }

    fn checksum(&self, m: Mem, _words: usize) -> u64 {
        m.get_u64(self.best())
    }

    /// The best tour visits every city once, from city 0, and has the best length.
    fn check(&self, m: Mem) -> bool {
        let n = self.cities;
        let tour: Vec<usize> = (0..n)
            .map(|i| m.get_u64(self.tour() + i) as usize)
            .collect();
        let mut seen = tour.clone();
        seen.sort_unstable();
        tour[0] == 0
            && seen.iter().copied().eq(0..n)
            && self.length(&self.distances(), &tour) == m.get_u64(self.best())
    }
}

#[cfg(test)]
mod tests {
    use super::Tsp;
    use crate::dsm::{App, run_sequential};

    /// Every tour from city 0, by brute force: the shortest length.
    fn brute_force(tsp: &Tsp) -> u64 {
        fn go(tsp: &Tsp, d: &[u64], tour: &mut Vec<usize>) -> u64 {
            if tour.len() == tsp.cities {
                return tsp.length(d, tour);
            }
            let mut best = u64::MAX;
            for c in 1..tsp.cities {
                if !tour.contains(&c) {
                    tour.push(c);
                    best = best.min(go(tsp, d, tour));
                    tour.pop();
                }
            }
            best
        }
        go(tsp, &tsp.distances(), &mut vec![0])
    }

    #[test]
    fn branch_and_bound_finds_the_brute_force_optimum() {
        for (cities, split) in [(1, 2), (2, 2), (5, 1), (8, 3)] {
            let out = run_sequential(&App::Tsp { cities, split });
            assert!(out.valid, "{cities} cities");
            assert_eq!(
                out.checksum,
                brute_force(&Tsp::new(cities, split)),
                "{cities} cities"
            );
        }
    }
}
