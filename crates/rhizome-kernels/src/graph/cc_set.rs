//! Connected components whose phase 1 inserts root pairs into a [`GlobalSet`], with
//! combining (`Mode::Distributed`) or without (`Mode::None`) (seed 003, section 5); the
//! two differ in nothing but the set's mode, and from the tuned version (`cc_tuned`) in
//! nothing but where the pairs go.
//!
//! Phase 1: each PE's traversals walk its own vertices (`cc_tuned::local_walks`); they
//! meet other PEs' traversals at the arcs between PEs, which go to the target's owner
//! through a conveyor (`cc_tuned::crossing_arcs`), where the two roots make a pair. As in
//! the paper, a pair is inserted into the global set as soon as it is found: one
//! cooperative task drives the conveyor and hands the pairs it receives to `tasks`
//! inserting tasks; a woken inserter takes every pair found so far and inserts them
//! together (`insert_all`, concurrent inserts), so the set's proxy takes everything
//! found while its last commit was in flight (its buffer is not bounded here) and
//! commits it to the owners of the keys, one batch per owner, in parallel. The
//! inserters wait for more until the conveyor has delivered everything (a conveyor
//! knows that on its own, so they end without a global check).
//! Traversals meet many times along their boundary, so the set sees many repeated
//! inserts, which a combining proxy sends once (the tuned version keeps a PE-local hash
//! set instead). The set's owners read out their pairs and phases 2 and 3 follow
//! (`components`).

use super::cc_tuned::{crossing_arcs, feed, local_walks, root_pair};
use super::{DistGraph, Traversal, components};
use rhizome::Ctx;
use rhizome::conveyor::Conveyor;
use rhizome::coop::{CondVar, Coop, yield_now};
use rhizome_collections::fc::{GlobalSet, Mode};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

/// Collective: each vertex's component (the smallest root of it), this PE's block,
/// with `tasks` inserting tasks per PE and the set in `mode`.
pub(super) fn components(ctx: &Ctx, graph: &Rc<DistGraph>, mode: Mode, tasks: usize) -> Traversal {
    let coop = Coop::new(ctx);
    let bits = 64 - (graph.vertices() - 1).leading_zeros().min(63);
    let set = GlobalSet::with_capacity(&coop, mode, usize::MAX);
    let conveyor = Conveyor::<[u64; 2]>::new(ctx);
    ctx.barrier();
    let start = Instant::now();
    let mut labels = local_walks(graph);
    // Root pairs found and not yet inserted, as set keys (`min << bits | max`).
    let found = RefCell::new(Vec::new());
    let more = CondVar::new();
    let delivered = Cell::new(false);
    coop.run(|s| {
        let (found, more, delivered, labels) = (&found, &more, &delivered, &labels);
        s.spawn(async move {
            let mut conveyor = conveyor;
            let mut crossing = crossing_arcs(graph, labels);
            let mut pending = crossing.next();
            while conveyor.advance(pending.is_none()) {
                feed(&mut conveyor, graph, &mut pending, &mut crossing);
                {
                    let mut found = found.borrow_mut();
                    while let Some((arc, _)) = conveyor.pull() {
                        found.extend(root_pair(graph, labels, arc).map(|(a, b)| a << bits | b));
                    }
                    if !found.is_empty() {
                        more.signal();
                    }
                }
                // The inserting tasks, and the commits' replies, in between.
                yield_now().await;
            }
            delivered.set(true);
            more.broadcast();
        });
        for _ in 0..tasks {
            let set = &set;
            s.spawn(async move {
                loop {
                    let keys = found.take();
                    if !keys.is_empty() {
                        set.insert_all(keys).await;
                        continue;
                    }
                    if delivered.get() {
                        break;
                    }
                    more.wait().await;
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
    components::finish(ctx, &mut labels, pairs);
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    Traversal {
        secs,
        labels,
        stats: Some(super::bfs_queue::sum_stats(ctx, set.stats())),
        error: None,
    }
}
