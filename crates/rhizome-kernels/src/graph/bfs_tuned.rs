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

use super::NONE;
use super::timeline::Timeline;
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
    let mut unvisited_arcs = graph.local_arcs() as u64;
    let mut direction = Direction::new(graph.vertices());
    let mut timeline = Timeline::new("tuned");
    loop {
        timeline.level(frontier.len());
        let frontier_arcs: u64 = frontier.iter().map(|&v| graph.degree(v) as u64).sum();
        unvisited_arcs -= frontier_arcs;
        let Some(bottom_up) =
            direction.next(ctx, frontier.len() as u64, frontier_arcs, unvisited_arcs)
        else {
            break;
        };
        timeline.phase("sums");
        timeline.direction(bottom_up);
        frontier = if bottom_up {
            bottom_up_step(ctx, graph, &frontier, &mut parents, words)
        } else {
            top_down_step(graph, &frontier, &mut parents, &mut conveyor)
        };
        timeline.phase("step");
    }
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    timeline.print(ctx.my_pe());
    Traversal {
        secs,
        labels: parents,
        stats: None,
        error: None,
    }
}

/// Beamer's switch between top-down and bottom-up levels, decided on every PE alike from
/// sums over all PEs (shared with the queue frontier, `bfs_queue`).
pub(super) struct Direction {
    vertices: u64,
    bottom_up: bool,
    last_size: u64,
}

impl Direction {
    /// Top-down first, in a graph of `vertices`.
    pub(super) fn new(vertices: u64) -> Self {
        Direction {
            vertices,
            bottom_up: false,
            last_size: 0,
        }
    }

    /// Collective: given this PE's part of the frontier (`size` vertices with `arcs` arcs
    /// out of them, all this PE's) and the arcs out of its unvisited vertices, whether the
    /// next level is bottom-up; `None` when the frontier is empty everywhere.
    pub(super) fn next(&mut self, ctx: &Ctx, size: u64, arcs: u64, unvisited: u64) -> Option<bool> {
        let mut sums = [size, arcs, unvisited];
        ctx.allreduce_u64(&mut sums, rhizome::ReduceOp::Sum);
        self.decide(sums)
    }

    /// [`next`](Self::next) given the sums over all PEs (frontier size, its arcs, the
    /// unvisited vertices' arcs), however they were summed.
    pub(super) fn decide(&mut self, [size, m_f, m_u]: [u64; 3]) -> Option<bool> {
        if size == 0 {
            return None;
        }
        if !self.bottom_up && m_f > m_u / ALPHA {
            self.bottom_up = true;
        } else if self.bottom_up && size < self.last_size && size < self.vertices / BETA {
            self.bottom_up = false;
        }
        self.last_size = size;
        Some(self.bottom_up)
    }
}

/// Collective: one top-down level from this PE's part of the frontier (its own
/// vertices); the local vertices it visited.
pub(super) fn top_down_step(
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

/// Collective: one bottom-up level from this PE's part of the frontier (vertices of any
/// PE; the parts of all PEs make the whole); the local vertices it visited.
pub(super) fn bottom_up_step(
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
