//! The hand-tuned BFS frontier: direction-optimizing (Beamer et al., seed 003's
//! reference [2]), level-synchronous, each PE keeping the frontier of its own vertices.
//!
//! - **Top-down** level: every PE sends `(neighbour, parent)` for each edge out of its
//!   frontier to the neighbour's owner through a conveyor (edges to local vertices are
//!   handled in place); an owner keeps the first parent offered to an unvisited vertex.
//! - **Bottom-up** level: the frontier becomes a bitmap of all vertices (an OR-allreduce
//!   of every PE's part); each PE scans its unvisited vertices and gives each the first
//!   neighbour found in the frontier as its parent, with no message at all.
//! - **The switch** (Beamer's heuristic, summed over all PEs): top-down to bottom-up when
//!   the frontier's edges `m_f` exceed the unvisited vertices' edges `m_u` over
//!   [`ALPHA`]; back to top-down when the frontier, shrinking, holds fewer than
//!   `n /` [`BETA`] vertices.

use super::remote::NONE;
use super::{DistGraph, Traversal};
use rhizome::Ctx;
use rhizome::conveyor::Conveyor;
use std::time::Instant;

/// Beamer's top-down to bottom-up threshold.
pub const ALPHA: u64 = 14;
/// Beamer's bottom-up to top-down threshold.
pub const BETA: u64 = 24;

/// Collective: the BFS tree from `root` (parents of this PE's vertices).
pub(super) fn bfs(ctx: &Ctx, graph: &DistGraph, root: u64) -> Traversal {
    let local = graph.local();
    let mut parents = vec![NONE; local.clone().count()];
    let mut conveyor = Conveyor::<[u64; 2]>::new(ctx);
    let words = graph.vertices().div_ceil(64) as usize;
    ctx.barrier();
    let start = Instant::now();
    let mut frontier = Vec::new();
    if graph.is_local(root) {
        parents[graph.index(root)] = root;
        frontier.push(root);
    }
    // Arcs out of unvisited local vertices.
    let mut unvisited_arcs =
        (graph.local_arcs() - frontier.iter().map(|&v| graph.degree(v)).sum::<usize>()) as u64;
    let (mut bottom_up, mut last_size) = (false, 0u64);
    loop {
        let frontier_arcs: u64 = frontier.iter().map(|&v| graph.degree(v) as u64).sum();
        let mut sums = [frontier.len() as u64, frontier_arcs, unvisited_arcs];
        ctx.allreduce_u64(&mut sums, rhizome::ReduceOp::Sum);
        let [size, m_f, m_u] = sums;
        if size == 0 {
            break;
        }
        if !bottom_up && m_f > m_u / ALPHA {
            bottom_up = true;
        } else if bottom_up && size < last_size && size < graph.vertices() / BETA {
            bottom_up = false;
        }
        last_size = size;
        let next = if bottom_up {
            bottom_up_step(ctx, graph, &frontier, &mut parents, words)
        } else {
            top_down_step(graph, &frontier, &mut parents, &mut conveyor)
        };
        unvisited_arcs -= next.iter().map(|&v| graph.degree(v) as u64).sum::<u64>();
        frontier = next;
    }
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    Traversal {
        secs,
        labels: parents,
        stats: None,
    }
}

/// Collective: one top-down level; the local vertices it visited.
fn top_down_step(
    graph: &DistGraph,
    frontier: &[u64],
    parents: &mut [u64],
    conveyor: &mut Conveyor<'_, [u64; 2]>,
) -> Vec<u64> {
    let mut next = Vec::new();
    let mut visit = |v: u64, parent: u64, next: &mut Vec<u64>| {
        let p = &mut parents[graph.index(v)];
        if *p == NONE {
            *p = parent;
            next.push(v);
        }
    };
    let mut arcs = frontier
        .iter()
        .flat_map(|&u| graph.neighbors(u).iter().map(move |&v| [v, u]));
    let mut pending = arcs.next();
    while conveyor.advance(pending.is_none()) {
        while let Some(arc) = pending {
            if graph.is_local(arc[0]) {
                visit(arc[0], arc[1], &mut next);
            } else if !conveyor.push(arc, graph.owner(arc[0])) {
                break;
            }
            pending = arcs.next();
        }
        while let Some((arc, _)) = conveyor.pull() {
            visit(arc[0], arc[1], &mut next);
        }
    }
    conveyor.reset();
    next
}

/// Collective: one bottom-up level; the local vertices it visited.
fn bottom_up_step(
    ctx: &Ctx,
    graph: &DistGraph,
    frontier: &[u64],
    parents: &mut [u64],
    words: usize,
) -> Vec<u64> {
    let mut bits = vec![0u64; words];
    for &v in frontier {
        bits[(v / 64) as usize] |= 1 << (v % 64);
    }
    let bits = ctx.allreduce(bits, |mut a, b| {
        a.iter_mut().zip(&b).for_each(|(x, y)| *x |= y);
        a
    });
    let in_frontier = |v: u64| bits[(v / 64) as usize] >> (v % 64) & 1 == 1;
    let mut next = Vec::new();
    for v in graph.local() {
        let p = &mut parents[graph.index(v)];
        if *p != NONE {
            continue;
        }
        if let Some(&u) = graph.neighbors(v).iter().find(|&&u| in_frontier(u)) {
            *p = u;
            next.push(v);
        }
    }
    next
}
