//! The hand-tuned phase 1 of connected components: no global structure and no
//! fine-grained message.
//!
//! Each PE first walks its own vertices along the arcs between its own vertices only,
//! labelling each with the root of the walk that reached it (plain sequential code, no
//! claim, no task: [`local_walks`]). Then each edge `u - v` between two PEs goes once,
//! from one end's owner to the other's (the other direction gives the same pair), through
//! a conveyor as `(v, label of u)` ([`crossing_arcs`]); the owner forms the root
//! pair with `v`'s label ([`root_pair`]) and keeps it in a local hash set, which is the
//! deduplication the combining set does across tasks. Phases 2 and 3 are shared
//! (`components::finish`). The set versions (`cc_set`) differ only in where the pairs go.

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
    let mut labels = local_walks(graph);
    let mut pairs: HashSet<(u64, u64)> = HashSet::new();
    let mut conveyor = Conveyor::<[u64; 2]>::new(ctx);
    let mut crossing = crossing_arcs(graph, &labels);
    let mut pending = crossing.next();
    while conveyor.advance(pending.is_none()) {
        feed(&mut conveyor, graph, &mut pending, &mut crossing);
        while let Some((arc, _)) = conveyor.pull() {
            pairs.extend(root_pair(graph, &labels, arc));
        }
    }
    drop(crossing);
    components::finish(ctx, &mut labels, pairs.into_iter().collect());
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    Traversal {
        secs,
        labels,
        stats: None,
        error: None,
    }
}

/// This PE's vertices labelled by depth-first walks along arcs between local vertices:
/// each vertex gets the root of the walk that reached it (the smallest-numbered start
/// of its local component).
pub(super) fn local_walks(graph: &DistGraph) -> Vec<u64> {
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
    labels
}

/// The arcs where this PE's walks meet other PEs': `[v, label of u]` for each arc from a
/// local `u` to a remote `v` that [`sends`] picks (each edge between PEs once), to go
/// to `v`'s owner.
pub(super) fn crossing_arcs<'g>(
    graph: &'g DistGraph,
    labels: &'g [u64],
) -> impl Iterator<Item = [u64; 2]> + 'g {
    graph.local().flat_map(move |u| {
        let label = labels[graph.index(u)];
        graph
            .neighbors(u)
            .iter()
            .filter(move |&&v| sends(u, v) && !graph.is_local(v))
            .map(move |&v| [v, label])
    })
}

/// Whether the edge `u - v` (`u != v`) goes from `u`'s end: exactly one of `sends(u, v)`
/// and `sends(v, u)` holds. Not simply `u < v`, which would send every edge between two
/// PEs' blocks to the higher one, so that it alone would form (and, in `cc_set`, insert)
/// all their pairs: the direction flips with the parity of `u ^ v`, about half the
/// edges each way.
fn sends(u: u64, v: u64) -> bool {
    (u < v) != ((u ^ v) & 1 == 1)
}

/// Pushes `pending`, then the next of `arcs`, each to the owner of its first vertex,
/// until `conveyor` refuses one (left in `pending`) or they run out.
pub(super) fn feed(
    conveyor: &mut Conveyor<'_, [u64; 2]>,
    graph: &DistGraph,
    pending: &mut Option<[u64; 2]>,
    arcs: &mut impl Iterator<Item = [u64; 2]>,
) {
    while let Some(arc) = *pending {
        if !conveyor.push(arc, graph.owner(arc[0])) {
            break;
        }
        *pending = arcs.next();
    }
}

/// At `v`'s owner: the pair (smaller, larger) of `v`'s root and `other`, if they differ.
pub(super) fn root_pair(
    graph: &DistGraph,
    labels: &[u64],
    [v, other]: [u64; 2],
) -> Option<(u64, u64)> {
    let mine = labels[graph.index(v)];
    (mine != other).then(|| (mine.min(other), mine.max(other)))
}
