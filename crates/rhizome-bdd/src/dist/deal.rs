//! Whole operations dealt to the PEs: the union of several independent parts (the images
//! of a level under each transition group, say), each part computed on one PE from start
//! to end.
//!
//! Spreading ([`spread`](super::spread)) cuts one operation into sub-calls near the top of
//! its recursion: fine for one large operation, but a level of `bfs` is many
//! operations (one image per group), each cut into up to thousands of small jobs whose
//! spawns, steals and result messages cost more than they save, and whose results land
//! in the operation cache of whichever PE ran them. Dealing hands out whole parts
//! instead: PE 0 sends one [`DealJob`] to every other PE and takes a share itself; every
//! PE's job draws parts from shared counters until none is left, computes each on its own
//! workers (forks stay on the PE's pool) and ORs them into one result, and PE 0 ORs the
//! PEs' results. A part costs one remote fetch-and-add to draw, and nothing else crosses
//! PEs but node reads and creations.
//!
//! The parts are dealt in queues, one per PE (part `i` in queue `i mod N`, the counter in
//! the `DEAL` word of that PE's header): a PE drains its own queue first, then helps with
//! the others. So, level after level, a part tends to run on the same PE and find the
//! sub-results of its last run in that PE's operation cache, while a PE that finishes
//! early still takes work from a slow one.

use super::spread::{OpHome, Stamp};
use super::{DEAL, DistNodeStore};
use crate::dist::SubOp;
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;
use crate::ops::OpCtx;
use rhizome::tasks::{Future, Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};

/// Makes the dealt jobs known to `tasks` (with the other job types of a spread manager).
pub(super) fn register(tasks: &Tasks) {
    tasks.register::<DealJob>();
}

/// One PE's share of a dealt union: all the parts (the PE draws which ones it computes)
/// and where they belong. Its output is the union of the parts it computed (an edge).
#[derive(Serialize, Deserialize)]
struct DealJob {
    parts: Vec<SubOp>,
    stamp: Stamp,
}

impl Job for DealJob {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        // Bound, entered and counted as a sendable half is.
        OpHome(self.stamp).run(t, |c| draw_parts(c, c.store, &self.parts, t.my_pe()))
    }
}

impl DistNodeStore {
    /// Empties the deal queues: every PE's next part is its first. Only between deals
    /// (no job of the last one runs: each was waited for).
    fn deal_reset(&self) {
        for pe in 0..self.pes {
            self.mem.store(self.header.ptr(pe, DEAL), 0);
        }
    }

    /// The next part of queue `queue` (the `k`-th draw gives part `queue + k * N`).
    fn deal_next(&self, queue: usize) -> usize {
        let k = self.mem.fetch_add(self.header.ptr(queue, DEAL), 1) as usize;
        queue + k * self.pes
    }
}

/// Draws parts, this PE's queue first, until every queue is empty, and returns the union
/// of the ones it computed ([`Bdd::INVALID`] if the table filled up).
fn draw_parts<S: NodeStore, C: OpCache>(
    c: &OpCtx<'_, S, C>,
    queues: &DistNodeStore,
    parts: &[SubOp],
    me: usize,
) -> Bdd {
    let mut acc = Bdd::FALSE;
    for k in 0..queues.pes {
        let queue = (me + k) % queues.pes;
        loop {
            let i = queues.deal_next(queue);
            let Some(&part) = parts.get(i) else { break };
            // Messages (the other PEs' results, their requests) wait for this between
            // parts, on the PE's main thread.
            TaskCtx::with_current(|t| t.poll());
            let r = part.apply(c);
            if r == Bdd::INVALID {
                return r;
            }
            acc = c.or(acc, r);
            if acc == Bdd::INVALID {
                return acc;
            }
        }
    }
    acc
}

impl<S: NodeStore, C: OpCache> OpCtx<'_, S, C> {
    /// The union of `parts`, dealt to the PEs (see the [module docs](self)) when the
    /// operation is spread and this call is above the cutoff; `None` otherwise (then the
    /// caller computes it here).
    pub(crate) fn deal(&self, parts: &[SubOp]) -> Option<Bdd> {
        if !S::SPREADS {
            return None;
        }
        let d = self.dist.filter(|d| self.depth < d.cutoff())?;
        TaskCtx::with_current(|t| {
            let (queues, _) = d.bound();
            queues.deal_reset();
            // The parts run whole: their forks stay on the PE's pool.
            let stamp = Stamp {
                session: d.session(),
                generation: d.generation(),
                depth: d.cutoff(),
            };
            // Sent, not left to be stolen: this PE computes parts now and answers steal
            // requests only between them.
            let futures: Vec<Future<u64>> = (0..queues.pes)
                .filter(|&pe| pe != t.my_pe())
                .map(|pe| {
                    let parts = parts.to_vec();
                    t.async_on(pe, DealJob { parts, stamp })
                })
                .collect();
            let here = OpCtx {
                store: self.store,
                cache: self.cache,
                w: self.w,
                depth: stamp.depth,
                dist: self.dist,
            };
            let mut acc = draw_parts(&here, queues, parts, t.my_pe());
            // Every share is waited for, also after a failure: nothing of the operation
            // may still run when it returns (a collection may follow).
            for f in &futures {
                let r = Bdd(f.get());
                if r == Bdd::INVALID {
                    self.store.abort();
                }
                if acc != Bdd::INVALID && r != Bdd::INVALID {
                    acc = here.or(acc, r);
                } else {
                    acc = Bdd::INVALID;
                }
            }
            acc
        })
    }
}
