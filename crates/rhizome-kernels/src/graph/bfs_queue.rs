//! BFS whose frontier is a [`GlobalQueue`] of vertices: with combining
//! (`Mode::Distributed`, the paper's flat-combining queue) or without (`Mode::None`);
//! the two differ in nothing but the queue's mode.
//!
//! As in seed 003 (section 5), the search is direction-optimizing (Beamer's switch, the
//! same heuristic as the tuned frontier's, [`Direction`]) and the queue is write-only in
//! one phase and read-only in the next. A vertex is claimed (given its parent) by its
//! owner, so the PE that pushes a vertex into the queue is its owner. Each level:
//! 1. **Through the queue**: each PE's tasks push the vertices it claimed in the last
//!    level and pop as many ([`GlobalQueue::push_all_then_pop`], each task its share;
//!    a task per [`VALUES_PER_TASK`] values, up to the task count asked for).
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

/// Values a task of [`through_queue`] moves at least: a level's frontier is split over
/// as many tasks as it has blocks of this many values, up to the task count asked for.
/// Below that a task's own cost (its future, its part's vector, a wake-up) outweighs
/// what it moves, and one task's values go through the queue with no copy at all.
pub(super) const VALUES_PER_TASK: usize = 4096;

/// The tasks [`through_queue`] splits `values` values over, given at most `tasks`.
pub(super) fn tasks_for(values: usize, tasks: usize) -> usize {
    values.div_ceil(VALUES_PER_TASK).clamp(1, tasks.max(1))
}

/// Pushes `claimed` into `queue` and pops as many, split among up to `tasks` tasks (by
/// [`tasks_for`]); the values popped (see the module docs for why they are as many).
/// The parts are moved, not copied, into the tasks: with combining, a PE popping back
/// the chunk it pushed gets the same vector back (so one task's frontier is not copied).
pub(super) fn through_queue(
    coop: &Coop<'_>,
    queue: &GlobalQueue<'_, u64>,
    mut claimed: Vec<u64>,
    tasks: usize,
) -> Vec<u64> {
    let share = claimed
        .len()
        .div_ceil(tasks_for(claimed.len(), tasks))
        .max(1);
    let mut parts = Vec::new();
    while claimed.len() > share {
        parts.push(claimed.split_off(claimed.len() - share));
    }
    if !claimed.is_empty() {
        parts.push(claimed);
    }
    let popped = RefCell::new(Vec::new());
    coop.run_local(|s| {
        for part in parts {
            let (queue, popped) = (queue, &popped);
            s.spawn(async move {
                let n = part.len();
                let got = queue.push_all_then_pop(part, n).await;
                let mut popped = popped.borrow_mut();
                if popped.is_empty() {
                    *popped = got;
                } else {
                    popped.extend(got);
                }
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

#[cfg(test)]
mod tests {
    use super::{VALUES_PER_TASK, tasks_for, through_queue};
    use rhizome::World;
    use rhizome::coop::Coop;
    use rhizome_collections::fc::{GlobalQueue, Mode};

    /// A task per block of [`VALUES_PER_TASK`] values, at least one, at most as asked.
    #[test]
    fn tasks_follow_the_frontier_size() {
        assert_eq!(tasks_for(0, 1024), 1);
        assert_eq!(tasks_for(VALUES_PER_TASK, 1024), 1);
        assert_eq!(tasks_for(VALUES_PER_TASK + 1, 1024), 2);
        assert_eq!(tasks_for(66 * VALUES_PER_TASK + 1, 1024), 67);
        assert_eq!(tasks_for(usize::MAX / 2, 1024), 1024);
        assert_eq!(tasks_for(10 * VALUES_PER_TASK, 3), 3);
        assert_eq!(tasks_for(10, 0), 1);
    }

    /// In both modes, on 2 PEs, levels of 0, 1, one task's and (combining) several
    /// tasks' worth of values: each PE pops back exactly the values it pushed (with
    /// combining; without, the PEs' pops together take every value pushed once; its
    /// levels stay small, as each of its operations takes the queue's lock).
    #[test]
    fn each_level_comes_back_through_the_queue() {
        for mode in [Mode::Distributed, Mode::None] {
            let sizes = match mode {
                Mode::Distributed => vec![0, 1, VALUES_PER_TASK, 2 * VALUES_PER_TASK + 7],
                _ => vec![0, 1, 100],
            };
            let runs = World::builder()
                .pes(2)
                .run(|ctx| {
                    let coop = Coop::new(ctx);
                    let queue = GlobalQueue::<u64>::with_capacity(&coop, mode, usize::MAX);
                    ctx.barrier();
                    let me = ctx.my_pe() as u64;
                    let mut levels = Vec::new();
                    for (k, &n) in sizes.iter().enumerate() {
                        let pushed: Vec<u64> = (0..n as u64)
                            .map(|i| me << 40 | (k as u64) << 32 | i)
                            .collect();
                        let mut got = through_queue(&coop, &queue, pushed.clone(), 3);
                        // The level is over on every PE before the next begins.
                        ctx.allreduce(0u64, |a, b| a + b);
                        got.sort_unstable();
                        levels.push((pushed, got));
                    }
                    levels
                })
                .unwrap();
            for k in 0..sizes.len() {
                let mut pushed: Vec<u64> = runs.iter().flat_map(|r| r[k].0.clone()).collect();
                let mut popped: Vec<u64> = runs.iter().flat_map(|r| r[k].1.clone()).collect();
                pushed.sort_unstable();
                popped.sort_unstable();
                assert_eq!(
                    popped, pushed,
                    "{mode:?}, level {k}: values lost or repeated"
                );
                if mode == Mode::Distributed {
                    for r in &runs {
                        assert_eq!(r[k].1, r[k].0, "level {k}: a PE got others' values");
                    }
                }
            }
        }
    }
}
