//! BFS whose frontier is a [`GlobalQueue`]: with combining (`Mode::Distributed`, the
//! paper's flat-combining queue) or without (`Mode::None`).
//!
//! Level-synchronous and top-down only (the direction-optimizing switch is the tuned
//! frontier's, `bfs_tuned`; a bottom-up step scans unvisited vertices, not a queue). Two
//! queues alternate: in a level, the current one is only popped and the next one only
//! pushed (the paper's write-only then read-only frontier). Each PE runs many cooperative
//! tasks; a task pops a vertex (from any PE), fetches its neighbours from their owner,
//! claims them all at once (a claim sets the parent if the vertex has none, at its
//! owner), and pushes the vertices it claimed, all pushes together. A pop that finds the queue empty ends the
//! task: nothing is pushed to the current queue during its level. The level ends when
//! every PE's tasks have ended and every message has been handled; the search ends after
//! a level that claimed nothing.

use super::remote::{NONE, Remote};
use super::{DistGraph, Traversal};
use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome::coop::join_all;
use rhizome_collections::fc::{GlobalQueue, Mode, Stats};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// Collective: the BFS tree from `root` (parents of this PE's vertices), with `tasks`
/// cooperative tasks per PE and the frontier queues in `mode`.
pub(super) fn bfs(
    ctx: &Ctx,
    graph: &Rc<DistGraph>,
    root: u64,
    mode: Mode,
    tasks: usize,
) -> Traversal {
    let coop = Coop::new(ctx);
    let remote = Remote::new(&coop, graph);
    let queues = [
        GlobalQueue::<u64>::new(&coop, mode),
        GlobalQueue::<u64>::new(&coop, mode),
    ];
    ctx.barrier();
    let start = Instant::now();
    let mine = graph.is_local(root);
    if mine {
        remote.set_local(root, root);
    }
    coop.run(|s| {
        if mine {
            let q = &queues[0];
            s.spawn(async move { q.push(root).await });
        }
    });
    for level in 0.. {
        let (current, next) = (&queues[level % 2], &queues[(level + 1) % 2]);
        let claimed = Cell::new(0u64);
        coop.run(|s| {
            for _ in 0..tasks {
                let (remote, claimed) = (&remote, &claimed);
                s.spawn(async move {
                    while let Some(u) = current.pop().await {
                        let neighbors = remote.neighbors(u).await;
                        let previous = remote.claim_all(&neighbors, u).await;
                        let won = neighbors.iter().zip(previous).filter(|&(_, p)| p == NONE);
                        let won: Vec<u64> = won.map(|(&v, _)| v).collect();
                        claimed.set(claimed.get() + won.len() as u64);
                        // All pushes in one combining round, not one commit each.
                        join_all(won.into_iter().map(|v| next.push(v))).await;
                    }
                });
            }
        });
        if ctx.sum_u64(claimed.get()) == 0 {
            break;
        }
    }
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    let stats = queues.iter().map(|q| q.stats()).fold(Stats::default(), add);
    Traversal {
        secs,
        labels: remote.take_labels(),
        stats: Some(sum_stats(ctx, stats)),
    }
}

fn add(a: Stats, b: Stats) -> Stats {
    Stats {
        ops: a.ops + b.ops,
        messages: a.messages + b.messages,
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
