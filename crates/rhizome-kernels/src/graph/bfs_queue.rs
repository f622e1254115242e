//! BFS whose frontier is a [`GlobalQueue`] of vertices: with combining
//! (`Mode::Distributed`, the paper's flat-combining queue) or without (`Mode::None`);
//! the two differ in nothing but the queue's mode.
//!
//! As in seed 003 (section 5), the search is direction-optimizing (Beamer's switch, the
//! same heuristic as the tuned frontier's, [`Direction`]) and the queue is write-only in
//! one phase and read-only in the next. A vertex is claimed (given its parent) by its
//! owner, so the PE that pushes a vertex into the queue is its owner. Each level:
//! 1. **Through the queue**: each PE's tasks push the vertices it claimed in the last
//!    level and pop as many ([`GlobalQueue::push_all_then_pop`], each task its share).
//!    The queue is empty when the level starts, and every PE pops what it pushes, so the
//!    queue is empty again afterwards, none of these pops finds it empty, and the count
//!    needs no agreement among the PEs first. Combining, a PE's tasks make one commit
//!    (the buffer is not bounded here) whose pops the master serves from the run it has
//!    just appended: each PE gets back its own vertices, read in place, in one round
//!    trip to PE 0 (without combining, each operation takes the lock and a pop may take
//!    another PE's value, fetched from there).
//! 2. **The sums**: the frontier's size, its arcs, the unvisited arcs and the popped
//!    vertices that are not the popping PE's, summed over all PEs by a collective over
//!    messages (not the transport's allreduce: PE 0 answers the commits or lock requests
//!    of PEs still in step 1 meanwhile). The search ends when the frontier is empty,
//!    else Beamer's switch picks the direction. (Carrying the sums on the commits
//!    instead, the master answering with the totals, measured no faster: the round's
//!    cost is the wait for the slower PE either way.)
//! 3. **Top-down**: popped vertices of other PEs, if any PE has some, are handed to their
//!    owners first (a conveyor exchange); then each PE expands its vertices, claiming
//!    each neighbour for them: in place if it is local, else through the conveyor to
//!    its owner (the tuned frontier's exchange, `top_down_step`).
//!    **Bottom-up**: the popped vertices are this PE's part of the frontier bitmap;
//!    each PE scans its unvisited vertices for a parent in it (`bottom_up_step`).
//!
//! No termination scope: the queue's operations are requests their tasks await, and the
//! exchanges end collectively. After the search one pop checks that the queue was
//! drained.

use super::NONE;
use super::bfs_tuned::{Direction, bottom_up_step, top_down_step};
use super::timeline::Timeline;
use super::{DistGraph, Traversal};
use rhizome::Ctx;
use rhizome::conveyor::Conveyor;
use rhizome::coop::Coop;
use rhizome_collections::fc::{GlobalQueue, Mode, Stats};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

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
    let mut parents = vec![NONE; graph.local().count()];
    // No bound on the combining buffer: a level's operations of a PE are one commit.
    let queue = GlobalQueue::<u64>::with_capacity(&coop, mode, usize::MAX);
    let mut claims = Conveyor::<[u64; 2]>::new(ctx);
    let mut handovers = Conveyor::<u64>::new(ctx);
    let words = graph.vertices().div_ceil(64) as usize;
    ctx.barrier();
    let start = Instant::now();
    let mut claimed = Vec::new();
    if graph.is_local(root) {
        parents[graph.index(root)] = root;
        claimed.push(root);
    }
    let mut unvisited_arcs = graph.local_arcs() as u64;
    let mut direction = Direction::new(graph.vertices());
    let mut timeline = Timeline::new(mode.name());
    loop {
        timeline.level(claimed.len());
        let frontier_arcs: u64 = claimed.iter().map(|&v| graph.degree(v) as u64).sum();
        unvisited_arcs -= frontier_arcs;
        let size = claimed.len() as u64;
        let popped = through_queue(&coop, &queue, claimed, tasks);
        timeline.phase("queue");
        let foreign = popped.iter().filter(|&&v| !graph.is_local(v)).count() as u64;
        let sums = ctx.allreduce([size, frontier_arcs, unvisited_arcs, foreign], |a, b| {
            std::array::from_fn(|i| a[i] + b[i])
        });
        timeline.phase("sums");
        let Some(bottom_up) = direction.decide([sums[0], sums[1], sums[2]]) else {
            break;
        };
        timeline.direction(bottom_up);
        claimed = if bottom_up {
            bottom_up_step(ctx, graph, &popped, &mut parents, words)
        } else {
            let frontier = if sums[3] > 0 {
                hand_over(graph, popped, &mut handovers)
            } else {
                popped
            };
            top_down_step(graph, &frontier, &mut parents, &mut claims)
        };
        timeline.phase("step");
    }
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    timeline.print(ctx.my_pe());
    // The drain check: every level popped what it pushed.
    let left = RefCell::new(None);
    coop.run_local(|s| {
        if ctx.my_pe() == 0 {
            let (queue, left) = (&queue, &left);
            s.spawn(async move { *left.borrow_mut() = queue.pop().await });
        }
    });
    let left = ctx.max_u64(left.into_inner().map_or(0, |v| v + 1));
    let stats = sum_stats(ctx, queue.stats());
    Traversal {
        secs,
        labels: parents,
        stats: Some(stats),
        error: (left > 0).then(|| {
            format!(
                "the frontier queue still held vertex {} after the search",
                left - 1
            )
        }),
    }
}

/// Pushes `claimed` into `queue` and pops as many, split among up to `tasks` tasks; the
/// values popped (see the module docs for why they are as many).
pub(super) fn through_queue(
    coop: &Coop<'_>,
    queue: &GlobalQueue<'_, u64>,
    claimed: Vec<u64>,
    tasks: usize,
) -> Vec<u64> {
    let popped = RefCell::new(Vec::with_capacity(claimed.len()));
    let share = claimed.len().div_ceil(tasks).max(1);
    coop.run_local(|s| {
        for part in claimed.chunks(share) {
            let (queue, popped) = (queue, &popped);
            s.spawn(async move {
                let got = queue.push_all_then_pop(part.to_vec(), part.len()).await;
                popped.borrow_mut().extend(got);
            });
        }
    });
    popped.into_inner()
}

/// Collective: hands each vertex of `popped` that is not this PE's to its owner; this
/// PE's part of the frontier (its own popped vertices and those handed to it).
fn hand_over(graph: &DistGraph, popped: Vec<u64>, conveyor: &mut Conveyor<'_, u64>) -> Vec<u64> {
    let (mut mine, theirs): (Vec<u64>, Vec<u64>) =
        popped.into_iter().partition(|&v| graph.is_local(v));
    let mut theirs = theirs.into_iter().peekable();
    while conveyor.advance(theirs.peek().is_none()) {
        while let Some(&v) = theirs.peek() {
            if !conveyor.push(v, graph.owner(v)) {
                break;
            }
            theirs.next();
        }
        while let Some((v, _)) = conveyor.pull() {
            mine.push(v);
        }
    }
    conveyor.reset();
    mine
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
