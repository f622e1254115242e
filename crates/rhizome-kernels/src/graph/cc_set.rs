//! Connected components whose phase 1 inserts root pairs into a [`GlobalSet`], with
//! combining (`Mode::Distributed`) or without (`Mode::None`) (seed 003, section 5); the
//! two differ in nothing but the set's mode.
//!
//! Phase 1, traversals: each PE's cooperative tasks take its vertices in turn as
//! candidate roots. A traversal from root `r` runs where its vertices live: reaching a
//! local vertex, it claims it (labels it `r` if it has no label) and walks on from it
//! depth-first through local vertices; reaching a remote vertex, it goes on at the
//! vertex's owner, in a one-way message (aggregated with the others to that PE) whose
//! handler does the same there. A vertex reached that another traversal (root `s`)
//! labelled means the two met: the pair `(min, max)` of `r` and `s` is kept on the PE
//! that saw it. Every arc is followed once, when its source is claimed, and compared at
//! its target, so every pair of roots joined by an edge is kept somewhere.
//!
//! Then each PE's tasks insert the pairs it kept into the global set. Traversals meet
//! many times along their boundary, so the set sees many repeated inserts, which a
//! combining proxy sends once. The set's owners read out their pairs and phases 2 and 3
//! follow (`components`).

use super::NONE;
use super::{DistGraph, Traversal, components};
use rhizome::coop::{Coop, yield_now};
use rhizome::{Am, Ctx};
use rhizome_collections::fc::{GlobalSet, Mode};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

/// The message that carries a traversal to a vertex's owner: (vertex, root).
type Reach = Am<(u64, u64)>;

/// This PE's side of the traversals: its vertices' roots and the root pairs seen here.
struct Walks {
    graph: Rc<DistGraph>,
    labels: RefCell<Vec<u64>>,
    /// Root pairs as set keys (`min << bits | max`), repeats included.
    pairs: RefCell<Vec<u64>>,
    bits: u32,
}

impl Walks {
    /// Claims local `v` for `root`: true if it had no label; otherwise keeps the pair
    /// of `root` and `v`'s root if they differ.
    fn claim(&self, v: u64, root: u64) -> bool {
        let mut labels = self.labels.borrow_mut();
        let label = &mut labels[self.graph.index(v)];
        if *label == NONE {
            *label = root;
            return true;
        }
        if *label != root {
            let (a, b) = (root.min(*label), root.max(*label));
            self.pairs.borrow_mut().push(a << self.bits | b);
        }
        false
    }

    /// `root`'s traversal reaches local `v`: claims it and, if that labelled it, walks on
    /// from it, handing remote vertices to their owners through `reach`.
    fn reach(&self, ctx: &Ctx, reach: Reach, v: u64, root: u64) {
        if !self.claim(v, root) {
            return;
        }
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            for &w in self.graph.neighbors(u) {
                if !self.graph.is_local(w) {
                    ctx.send(self.graph.owner(w), reach, &(w, root));
                } else if self.claim(w, root) {
                    stack.push(w);
                }
            }
        }
    }
}

/// Collective: each vertex's component (the smallest root of it), this PE's block,
/// with `tasks` tasks per PE and the set in `mode`.
pub(super) fn components(ctx: &Ctx, graph: &Rc<DistGraph>, mode: Mode, tasks: usize) -> Traversal {
    let coop = Coop::new(ctx);
    let bits = 64 - (graph.vertices() - 1).leading_zeros().min(63);
    let walks = Rc::new(Walks {
        graph: graph.clone(),
        labels: RefCell::new(vec![NONE; graph.local().count()]),
        pairs: RefCell::default(),
        bits,
    });
    // The handler sends messages of its own kind: it learns its id once registered.
    let own_id: Rc<Cell<Option<Reach>>> = Rc::default();
    let (w, id) = (walks.clone(), own_id.clone());
    let reach = ctx.register(move |ctx, (v, root): (u64, u64)| {
        let this = id.get().expect("set before any traversal");
        w.reach(ctx, this, v, root)
    });
    own_id.set(Some(reach));
    let set = GlobalSet::with_capacity(&coop, mode, tasks);
    let local: Vec<u64> = graph.local().collect();
    ctx.barrier();
    let start = Instant::now();
    coop.run(|s| {
        for t in 0..tasks {
            let (walks, local) = (&walks, &local);
            s.spawn(async move {
                for &r in local.iter().skip(t).step_by(tasks) {
                    walks.reach(ctx, reach, r, r);
                    // The other tasks' roots, and the traversals arriving, in between.
                    yield_now().await;
                }
            });
        }
    });
    coop.run(|s| {
        for _ in 0..tasks {
            let (walks, set) = (&walks, &set);
            s.spawn(async move {
                while let Some(key) = super::bfs_queue::pop_from(&walks.pairs) {
                    set.insert(key).await;
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
    let mut labels = walks.labels.take();
    components::finish(ctx, &mut labels, pairs);
    let secs = ctx.max_u64(start.elapsed().as_nanos() as u64) as f64 / 1e9;
    Traversal {
        secs,
        labels,
        stats: Some(super::bfs_queue::sum_stats(ctx, set.stats())),
    }
}
