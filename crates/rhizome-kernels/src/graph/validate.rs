//! The checks of every run: a BFS tree validated as Graph500 does (specification,
//! section 6), connected components compared with a sequential union-find.
//!
//! Both gather the labels of all vertices on every PE (a word per vertex: fine at the
//! scales a test or this machine runs). Each PE checks its own vertices' arcs and its
//! share of the generated edges; the verdicts are then agreed on, so that all PEs return
//! `Err` together and none is left waiting in a later collective.

use super::NONE;
use super::{DistGraph, UnionFind};
use rhizome::Ctx;
use std::collections::HashMap;

/// Collective: `Ok` if no PE found a problem; else every PE gets the first PE's message.
fn agree(ctx: &Ctx, mine: Result<(), String>) -> Result<(), String> {
    let failed = ctx.allgather(mine.err());
    match failed.into_iter().flatten().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Collective: validates the BFS tree given by `parents` (this PE's vertices' parents,
/// [`NONE`] for unreached) from `root`. Graph500's rules: the root is its own parent;
/// the parent pointers form a tree (no cycle), each tree edge a graph edge, levels one
/// apart along it; every graph edge joins vertices both reached or both not, whose
/// levels differ by at most one (so the whole component of the root is reached).
/// Returns the input edges within the component (Graph500's TEPS count) and the
/// vertices reached.
pub(super) fn bfs_tree(
    ctx: &Ctx,
    graph: &DistGraph,
    root: u64,
    parents: &[u64],
) -> Result<(u64, u64), String> {
    let all: Vec<u64> = ctx.allgather(parents.to_vec()).concat();
    if all.len() as u64 != graph.vertices() {
        return Err(format!(
            "{} parents for {} vertices",
            all.len(),
            graph.vertices()
        ));
    }
    let levels = levels(&all, root);
    let checked = levels.as_ref().map_err(Clone::clone).and_then(|levels| {
        for v in graph.local() {
            check_vertex(graph, root, &all, levels, v)?;
        }
        Ok(())
    });
    agree(ctx, checked)?;
    let g = graph.generator();
    let mine = g
        .share(ctx.my_pe(), ctx.num_pes())
        .filter(|&i| all[g.edge(i).0 as usize] != NONE)
        .count() as u64;
    let reached = all.iter().filter(|&&p| p != NONE).count() as u64;
    Ok((ctx.sum_u64(mine), reached))
}

/// Each vertex's depth in the tree (`u64::MAX` if unreached), or what is wrong with the
/// parent pointers.
fn levels(parents: &[u64], root: u64) -> Result<Vec<u64>, String> {
    let n = parents.len();
    if parents.get(root as usize) != Some(&root) {
        return Err(format!("the root {root} is not its own parent"));
    }
    let mut level = vec![u64::MAX; n];
    level[root as usize] = 0;
    let mut chain = Vec::new();
    for v in 0..n {
        let mut u = v;
        // Up to a vertex whose level is known; a chain longer than n is a cycle.
        while level[u] == u64::MAX && parents[u] != NONE {
            if chain.len() > n {
                return Err(format!("the parents of vertex {v} form a cycle"));
            }
            chain.push(u);
            let p = parents[u];
            if p >= n as u64 {
                return Err(format!("vertex {u} has parent {p}, not a vertex"));
            }
            u = p as usize;
        }
        let mut depth = level[u];
        if depth == u64::MAX && !chain.is_empty() {
            return Err(format!(
                "vertex {v} has a parent but its chain does not reach the root"
            ));
        }
        while let Some(w) = chain.pop() {
            depth += 1;
            level[w] = depth;
        }
    }
    Ok(level)
}

/// Graph500's checks at local vertex `v`.
fn check_vertex(
    graph: &DistGraph,
    root: u64,
    parents: &[u64],
    levels: &[u64],
    v: u64,
) -> Result<(), String> {
    let p = parents[v as usize];
    let neighbors = graph.neighbors(v);
    if p != NONE && v != root && neighbors.binary_search(&p).is_err() {
        return Err(format!("tree edge {p}-{v} is not an edge of the graph"));
    }
    let lv = levels[v as usize];
    for &w in neighbors {
        let lw = levels[w as usize];
        match (lv == u64::MAX, lw == u64::MAX) {
            (true, true) => {}
            (false, false) if lv.abs_diff(lw) <= 1 => {}
            (false, false) => {
                return Err(format!("edge {v}-{w} joins levels {lv} and {lw}"));
            }
            _ => {
                return Err(format!(
                    "edge {v}-{w} joins a reached and an unreached vertex"
                ));
            }
        }
    }
    Ok(())
}

/// Collective: checks that `labels` (this PE's vertices' component labels) partition the
/// vertices as a sequential union-find of all generated edges does (run on PE 0): same
/// label exactly when same set. Returns the number of components.
pub(super) fn components(ctx: &Ctx, graph: &DistGraph, labels: &[u64]) -> Result<u64, String> {
    let all = ctx.gather(labels.to_vec(), 0).map(|l| l.concat());
    let verdict = all.map(|all| {
        let g = graph.generator();
        let mut uf = UnionFind::new(all.len());
        for i in 0..g.edges() {
            let (u, v) = g.edge(i);
            uf.union(u as usize, v as usize);
        }
        let checked = same_partition(&mut uf, &all);
        (uf.count(), checked.err())
    });
    match ctx.broadcast(verdict.unwrap_or((0, None)), 0) {
        (count, None) => Ok(count),
        (_, Some(e)) => Err(e),
    }
}

/// `Ok` if `labels[v] == labels[w]` exactly when `uf` has `v` and `w` in one set.
fn same_partition(uf: &mut UnionFind, labels: &[u64]) -> Result<(), String> {
    let mut label_of_set: HashMap<usize, u64> = HashMap::new();
    let mut set_of_label: HashMap<u64, usize> = HashMap::new();
    for (v, &l) in labels.iter().enumerate() {
        let set = uf.find(v);
        let (a, b) = (
            *label_of_set.entry(set).or_insert(l),
            *set_of_label.entry(l).or_insert(set),
        );
        if a != l {
            return Err(format!(
                "vertex {v} is labelled {l}, another vertex of its component {a}"
            ));
        }
        if b != set {
            return Err(format!(
                "label {l} is given to vertices of two different components (vertex {v})"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_parents_and_find_cycles() {
        // 0 root; 1 <- 0; 2 <- 1; 3 unreached.
        assert_eq!(
            levels(&[0, 0, 1, NONE], 0).unwrap(),
            vec![0, 1, 2, u64::MAX]
        );
        assert!(levels(&[0, 2, 1, NONE], 0).unwrap_err().contains("cycle"));
        assert!(
            levels(&[0, 3, 0, NONE], 0)
                .unwrap_err()
                .contains("reach the root")
        );
        assert!(levels(&[1, 0], 0).unwrap_err().contains("own parent"));
        assert!(levels(&[0, 7], 0).unwrap_err().contains("not a vertex"));
    }

    #[test]
    fn partitions_are_compared_both_ways() {
        let mut uf = UnionFind::new(4);
        uf.union(0, 1);
        assert!(same_partition(&mut uf, &[0, 0, 2, 3]).is_ok());
        // Split component.
        assert!(same_partition(&mut uf, &[0, 1, 2, 3]).is_err());
        // Merged components.
        assert!(same_partition(&mut uf, &[0, 0, 2, 2]).is_err());
    }
}
