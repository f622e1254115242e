//! The hand-tuned phase 1 of connected components: no global structure and no
//! fine-grained message.
//!
//! Each PE first walks its own vertices along the arcs between its own vertices only,
//! labelling each with the root of the walk that reached it (plain sequential code, no
//! claim, no task). Then each arc `u - v` from a local `u` to a remote `v` with `u < v`
//! (the other direction gives the same pair) goes to `v`'s owner through a conveyor as
//! `(v, label of u)`; the owner forms the root pair with `v`'s label and keeps it in a
//! local hash set, which is the deduplication the combining set does across tasks.
//! Phases 2 and 3 are shared (`components::finish`).

use super::NONE;
use super::{DistGraph, Traversal, components};
use rhizome::Ctx;
use rhizome::conveyor::Conveyor;
use std::collections::HashSet;
use std::time::Instant;

/// Collective: each vertex's component (its smallest root), this PE's block.
pub(super) fn components(ctx: &Ctx, graph: &DistGraph) -> Traversal {
    ctx.barrier();
    let start = Instant::now();
    let mut labels = vec![NONE; graph.local().count()];
    let mut stack = Vec::new();
    for r in graph.local() {
        if labels[graph.index(r)] != NONE {
            continue;
        }
        labels[graph.index(r)] = r;
        stack.push(r);
        while let Some(u) = stack.pop() {
            for &v in graph.neighbors(u) {
                if graph.is_local(v) && labels[graph.index(v)] == NONE {
                    labels[graph.index(v)] = r;
                    stack.push(v);
                }
            }
        }
    }
    let mut pairs: HashSet<(u64, u64)> = HashSet::new();
    let mut conveyor = Conveyor::<[u64; 2]>::new(ctx);
    let mut crossing = graph.local().flat_map(|u| {
        let label = labels[graph.index(u)];
        graph
            .neighbors(u)
            .iter()
            .filter(move |&&v| u < v && !graph.is_local(v))
            .map(move |&v| [v, label])
    });
    let mut pending = crossing.next();
    while conveyor.advance(pending.is_none()) {
        while let Some(arc) = pending {
            if !conveyor.push(arc, graph.owner(arc[0])) {
                break;
            }
            pending = crossing.next();
        }
        while let Some(([v, other], _)) = conveyor.pull() {
            let mine = labels[graph.index(v)];
            if mine != other {
                pairs.insert((mine.min(other), mine.max(other)));
            }
        }
    }
    drop(crossing);
    components::finish(ctx, &mut labels, pairs.into_iter().collect());
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    Traversal {
        secs,
        labels,
        stats: None,
    }
}
