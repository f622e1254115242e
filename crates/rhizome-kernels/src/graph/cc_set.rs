//! Connected components whose phase 1 inserts root pairs into a [`GlobalSet`], with
//! combining (`Mode::Distributed`) or without (`Mode::None`) (seed 003, section 5).
//!
//! Phase 1: each PE's cooperative tasks take its vertices in turn as candidate roots; a
//! task that claims an unlabelled vertex `r` (labels it `r`) walks from it depth-first,
//! fetching each vertex's neighbours from their owner and claiming them all at once. A
//! neighbour already labelled by another root `s` means the two traversals met: the task
//! inserts the pair `(min, max)` of `r` and `s` into the global set. Traversals meet many
//! times along their boundary, so the set sees many repeated inserts, which a combining
//! proxy sends once. Every edge is scanned from both ends, the later scan sees both
//! labels, so every pair of roots joined by an edge is inserted. Then the set's owners
//! read out their pairs and phases 2 and 3 follow (`components`).

use super::remote::{NONE, Remote};
use super::{DistGraph, Traversal, components};
use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome::coop::join_all;
use rhizome_collections::fc::{GlobalSet, Mode};
use std::rc::Rc;
use std::time::Instant;

/// Collective: each vertex's component (the smallest root of it), this PE's block,
/// with `tasks` tasks per PE and the set in `mode`.
pub(super) fn components(ctx: &Ctx, graph: &Rc<DistGraph>, mode: Mode, tasks: usize) -> Traversal {
    let coop = Coop::new(ctx);
    let remote = Remote::new(&coop, graph);
    let set = GlobalSet::new(&coop, mode);
    let bits = 64 - (graph.vertices() - 1).leading_zeros().min(63);
    let local: Vec<u64> = graph.local().collect();
    ctx.barrier();
    let start = Instant::now();
    coop.run(|s| {
        for t in 0..tasks {
            let (remote, set, local) = (&remote, &set, &local);
            s.spawn(async move {
                for &r in local.iter().skip(t).step_by(tasks) {
                    if remote.claim(r, r).previous().await != NONE {
                        continue;
                    }
                    let mut stack = vec![r];
                    while let Some(u) = stack.pop() {
                        let neighbors = remote.neighbors(u).await;
                        let previous = remote.claim_all(&neighbors, r).await;
                        let mut met = Vec::new();
                        for (&v, s) in neighbors.iter().zip(previous) {
                            if s == NONE {
                                stack.push(v);
                            } else if s != r && !met.contains(&s) {
                                met.push(s);
                            }
                        }
                        // All inserts in one combining round, not one commit each.
                        join_all(
                            met.into_iter()
                                .map(|s| set.insert(r.min(s) << bits | r.max(s))),
                        )
                        .await;
                    }
                }
            });
        }
    });
    let mask = (1u64 << bits) - 1;
    let pairs: Vec<(u64, u64)> = set
        .owned_keys()
        .into_iter()
        .map(|k| (k >> bits, k & mask))
        .collect();
    let mut labels = remote.take_labels();
    components::finish(ctx, &mut labels, pairs);
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    Traversal {
        secs,
        labels,
        stats: Some(super::bfs_queue::sum_stats(ctx, set.stats())),
    }
}
