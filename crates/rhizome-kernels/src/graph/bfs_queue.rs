//! BFS whose frontier is a [`GlobalQueue`] of vertices: with combining
//! (`Mode::Distributed`, the paper's flat-combining queue) or without (`Mode::None`);
//! the two differ in nothing but the queue's mode.
//!
//! As in seed 003 (section 5), the search is direction-optimizing (Beamer's switch, the
//! same heuristic as the tuned frontier's, [`Direction`]) and the queue is write-only in
//! one phase and read-only in the next. Each level:
//! 1. **Push**: each PE's cooperative tasks push the vertices it claimed in the last level
//!    (its own vertices) into the queue, each task its share of them as concurrent
//!    pushes (`push_all`); they combine into one commit per PE (the queue's buffer is
//!    not bounded here), whose values stay on the PE (the queue's storage is spread).
//! 2. **Pop**: the frontier's size summed over the PEs, `n`, each PE's tasks pop
//!    `ceil(n / PEs)` values together (`pop_all`): one commit per PE again, and as the
//!    PEs ask for at least `n` in all while nothing is pushed, the queue is empty after
//!    it. A PE pops vertices of any PE (those of its own chunks are read in place).
//!    - Top-down, a popped vertex's work runs where its adjacency lives: a local vertex
//!      is expanded in place, a remote one is handed to its owner in a one-way message
//!      (aggregated with the others to that PE), whose handler expands it. Expanding
//!      `u` claims each neighbour `v` for parent `u` (set the parent if it has none):
//!      in place if `v` is local, else by a one-way claim message to `v`'s owner. A
//!      claim that sets a parent adds `v` to its owner's claimed vertices. No task
//!      waits for anything but its pops.
//!    - Bottom-up, the popped vertices are this PE's part of the frontier bitmap; then
//!      each PE scans its unvisited vertices for a parent in it (`bottom_up_step`).
//!
//! The top-down pop phase ends when every PE's pops are answered and every message has
//! been handled ([`Coop::run`] is a finish scope); the search ends when no PE claimed a
//! vertex in a level.

use super::NONE;
use super::bfs_tuned::{Direction, bottom_up_step};
use super::{DistGraph, Traversal};
use rhizome::coop::{Coop, Scope};
use rhizome::{Am, Ctx};
use rhizome_collections::fc::{GlobalQueue, Mode, Stats};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

/// This PE's side of the search: its vertices' parents, and those it claimed in the
/// current level (the next frontier's part here).
struct Owned {
    graph: Rc<DistGraph>,
    parents: RefCell<Vec<u64>>,
    claimed: RefCell<Vec<u64>>,
}

impl Owned {
    /// Sets local `v`'s parent to `parent` if it has none (atomic: only this PE's code,
    /// one task or handler at a time, touches `v`).
    fn claim(&self, v: u64, parent: u64) {
        let i = self.graph.index(v);
        let mut parents = self.parents.borrow_mut();
        if parents[i] == NONE {
            parents[i] = parent;
            self.claimed.borrow_mut().push(v);
        }
    }

    /// Claims every neighbour of local `u` for it: local ones here, the others by a
    /// `claim` message to their owners.
    fn expand(&self, ctx: &Ctx, claim: Am<(u64, u64)>, u: u64) {
        for &v in self.graph.neighbors(u) {
            if self.graph.is_local(v) {
                self.claim(v, u);
            } else {
                ctx.send(self.graph.owner(v), claim, &(v, u));
            }
        }
    }
}

/// Collective: the BFS tree from `root` (parents of this PE's vertices), with `tasks`
/// cooperative tasks per PE and the frontier queue in `mode`.
pub(super) fn bfs(
    ctx: &Ctx,
    graph: &Rc<DistGraph>,
    root: u64,
    mode: Mode,
    tasks: usize,
) -> Traversal {
    let coop = Coop::new(ctx);
    let owned = Rc::new(Owned {
        graph: graph.clone(),
        parents: RefCell::new(vec![NONE; graph.local().count()]),
        claimed: RefCell::default(),
    });
    let o = owned.clone();
    let claim = ctx.register(move |_, (v, parent): (u64, u64)| o.claim(v, parent));
    let o = owned.clone();
    let expand = ctx.register(move |ctx, u: u64| o.expand(ctx, claim, u));
    // No bound on the combining buffer: a level's operations of a PE are one commit.
    let queue = GlobalQueue::<u64>::with_capacity(&coop, mode, usize::MAX);
    let words = graph.vertices().div_ceil(64) as usize;
    ctx.barrier();
    let start = Instant::now();
    if graph.is_local(root) {
        owned.claim(root, root);
    }
    let mut unvisited_arcs = graph.local_arcs() as u64;
    let mut direction = Direction::new(graph.vertices());
    loop {
        // Push: the vertices this PE claimed in the last level. The commits are requests
        // the tasks await, so no termination scope: the allreduce of `direction.next` is
        // the barrier after which every PE's pushes have taken effect.
        let frontier = owned.claimed.take();
        let frontier_arcs: u64 = frontier.iter().map(|&v| graph.degree(v) as u64).sum();
        unvisited_arcs -= frontier_arcs;
        let size = frontier.len() as u64;
        let share = frontier.len().div_ceil(tasks).max(1);
        coop.run_local(|s| {
            for part in frontier.chunks(share) {
                let queue = &queue;
                s.spawn(async move { queue.push_all(part.to_vec()).await });
            }
        });
        // Summed over messages (not the transport's allreduce), so that this PE answers
        // the commits of PEs still pushing while it waits.
        let sums = ctx.allreduce([size, frontier_arcs, unvisited_arcs], |a, b| {
            [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
        });
        let Some(bottom_up) = direction.decide(sums) else {
            break;
        };
        // Pop: this PE's share of the level, which empties the queue (see the module
        // docs).
        let share = sums[0].div_ceil(ctx.num_pes() as u64) as usize;
        let popped = RefCell::new(Vec::new());
        let take = |u: u64| {
            if bottom_up {
                popped.borrow_mut().push(u);
            } else if graph.is_local(u) {
                owned.expand(ctx, claim, u);
            } else {
                ctx.send(graph.owner(u), expand, &u);
            }
        };
        if bottom_up {
            // Only awaited commits: the bitmap's allreduce is the barrier.
            coop.run_local(|s| pop_share(s, share, tasks, &queue, &take));
            let mut parents = owned.parents.borrow_mut();
            let next = bottom_up_step(ctx, graph, &popped.take(), &mut parents, words);
            *owned.claimed.borrow_mut() = next;
        } else {
            // Expansions and claims are one-way messages: a termination scope.
            coop.run(|s| pop_share(s, share, tasks, &queue, &take));
        }
    }
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    let labels = owned.parents.take();
    Traversal {
        secs,
        labels,
        stats: Some(sum_stats(ctx, queue.stats())),
    }
}

/// Spawns up to `tasks` tasks that pop `share` values of `queue` in all, each its part
/// together, each value to `take`.
fn pop_share<'a>(
    s: &Scope<'a>,
    share: usize,
    tasks: usize,
    queue: &'a GlobalQueue<'_, u64>,
    take: &'a (impl Fn(u64) + 'a),
) {
    let part = share.div_ceil(tasks).max(1);
    let mut left = share;
    while left > 0 {
        let n = part.min(left);
        left -= n;
        s.spawn(async move {
            for u in queue.pop_all(n).await.into_iter().flatten() {
                take(u);
            }
        });
    }
}

/// Collective: `s` summed over all PEs.
pub(super) fn sum_stats(ctx: &Ctx, s: Stats) -> Stats {
    let mut v = [s.ops, s.messages];
    ctx.allreduce_u64(&mut v, rhizome::ReduceOp::Sum);
    Stats {
        ops: v[0],
        messages: v[1],
    }
}
