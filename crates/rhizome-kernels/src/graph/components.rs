//! Phases 2 and 3 of three-phase connected components (seed 003's reference [3]),
//! shared by every implementation of phase 1, and the sequential union-find that checks
//! them.
//!
//! Phase 1 (in `cc_set`, `cc_tuned`) labels every vertex with the root of the traversal
//! that claimed it and collects the pairs of roots whose traversals met. Phase 2 runs
//! Shiloach-Vishkin on that reduced graph (one vertex per root, one edge per pair): it is
//! small (a few pairs per root), so every PE gathers it and runs the rounds of hooking
//! and pointer jumping itself, rather than spreading a tiny graph over the PEs. Phase 3
//! relabels each PE's vertices with their root's component, without communication.

use rhizome::Ctx;
use std::collections::HashMap;

/// Collective: phases 2 and 3. `labels` are this PE's vertices' roots; `pairs` the root
/// pairs this PE holds (every pair held by some PE; repeats allowed). Each label becomes
/// the smallest root of its component.
pub(super) fn finish(ctx: &Ctx, labels: &mut [u64], pairs: Vec<(u64, u64)>) {
    let pairs: Vec<(u64, u64)> = ctx.allgather(pairs).concat();
    // Number the roots that appear in pairs; the others are components already.
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut roots = Vec::new();
    let edges: Vec<(usize, usize)> = pairs
        .iter()
        .map(|&(a, b)| {
            let mut id = |r: u64| {
                *index.entry(r).or_insert_with(|| {
                    roots.push(r);
                    roots.len() - 1
                })
            };
            (id(a), id(b))
        })
        .collect();
    // Ids ordered as the roots, so that the smallest id of a component is its smallest root.
    let mut order: Vec<usize> = (0..roots.len()).collect();
    order.sort_unstable_by_key(|&i| roots[i]);
    let mut rank = vec![0; roots.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    let edges: Vec<(usize, usize)> = edges.iter().map(|&(a, b)| (rank[a], rank[b])).collect();
    let sorted_roots: Vec<u64> = order.iter().map(|&i| roots[i]).collect();
    let component = shiloach_vishkin(sorted_roots.len(), &edges);
    for l in labels.iter_mut() {
        if let Some(&i) = index.get(l) {
            *l = sorted_roots[component[rank[i]]];
        }
    }
}

/// Shiloach-Vishkin on a graph of `n` vertices: each vertex's component as its smallest
/// vertex. Rounds of hooking (the larger of two tree roots joined by an edge points at
/// the smaller one's tree) and pointer jumping (every vertex points at its root), until a
/// round changes nothing.
pub fn shiloach_vishkin(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..n).collect();
    loop {
        let mut changed = false;
        for &(a, b) in edges {
            let (pa, pb) = (parent[a], parent[b]);
            if pa == pb {
                continue;
            }
            let (high, low) = (pa.max(pb), pa.min(pb));
            // Only a root is hooked, so trees stay trees; roots only decrease.
            if parent[high] == high {
                parent[high] = low;
                changed = true;
            }
        }
        for v in 0..n {
            while parent[v] != parent[parent[v]] {
                parent[v] = parent[parent[v]];
            }
        }
        if !changed {
            return parent;
        }
    }
}

/// A sequential union-find (union by size, path halving): the reference answer.
pub struct UnionFind {
    parent: Vec<usize>,
    size: Vec<usize>,
    sets: usize,
}

impl UnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
            size: vec![1; n],
            sets: n,
        }
    }

    /// The representative of `v`'s set.
    pub fn find(&mut self, mut v: usize) -> usize {
        while self.parent[v] != v {
            self.parent[v] = self.parent[self.parent[v]];
            v = self.parent[v];
        }
        v
    }

    /// Joins the sets of `a` and `b`.
    pub fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a;
        self.size[a] += self.size[b];
        self.sets -= 1;
    }

    /// Sets.
    pub fn count(&self) -> u64 {
        self.sets as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shiloach_vishkin_matches_union_find() {
        let mut rng = rhizome::rng::XorShift64::for_stream(5);
        for _ in 0..50 {
            let n = 1 + rng.below(60);
            let edges: Vec<(usize, usize)> = (0..rng.below(80))
                .map(|_| (rng.below(n), rng.below(n)))
                .collect();
            let sv = shiloach_vishkin(n, &edges);
            let mut uf = UnionFind::new(n);
            edges.iter().for_each(|&(a, b)| uf.union(a, b));
            for (v, &component) in sv.iter().enumerate() {
                // The smallest vertex of the component.
                let smallest = (0..n).find(|&w| uf.find(w) == uf.find(v)).unwrap();
                assert_eq!(component, smallest, "{edges:?}");
            }
        }
    }
}
