//! `sat`: saturation, as one parallel operation, or step by step when the table cannot
//! hold a whole saturation's intermediate nodes. On several PEs, the branches of the
//! parallel saturation are sendable halves (`sat_half.rs`): another PE may saturate one.

use super::image::image;
use super::progress::{Run, Watch};
use super::sat_half::{PlanData, SatHalf};
use crate::model::{Group, Model};
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, OpCtx};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// `sat`: saturation, first as one parallel operation (the branches of the set saturate
/// on different workers); if even the largest table cannot hold its intermediate nodes,
/// step by step with collections in between.
pub(super) fn saturate<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    run: &mut Run<'_, S, C>,
) -> Result<(), BddError> {
    let groups: Vec<&Group> = model.groups.iter().collect();
    let op = m.fresh_op_id();
    let r = saturate_set(m, &groups, run.visited.get(), run.watch.as_deref(), op)?;
    run.visited.set(r);
    Ok(())
}

/// The least fixpoint of `set` (rooted by the caller) under `groups`, as [`saturate`]
/// computes it; `op` is the cache key space of the results, so that a later call with
/// the same groups and the same `op` reuses what this one cached. The result is not
/// rooted.
pub(super) fn saturate_set<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    groups: &[&Group],
    set: Bdd,
    watch: Option<&Watch>,
    op: u64,
) -> Result<Bdd, BddError> {
    SatOrder::new(groups, op).saturate(m, set, 0, watch)
}

/// Groups in the order saturation applies them (by top variable), with the cache key
/// space of its results: one order serves many saturations whose results share the
/// cache, and a saturation may stop at a lower group ([`SatOrder::saturate`] from `k`)
/// and go on later from the same cached results (the sliced saturation sends the states
/// it has found so far between such steps, `sliced_sat.rs`).
pub(super) struct SatOrder<'g> {
    order: Vec<&'g Group>,
    tops: Vec<u32>,
    plan: Arc<PlanData>,
}

impl<'g> SatOrder<'g> {
    /// `groups` in saturation order, their results cached under `op`.
    pub(super) fn new(groups: &[&'g Group], op: u64) -> SatOrder<'g> {
        let mut order: Vec<&Group> = groups.to_vec();
        order.sort_by_key(|g| g.cur_vars.iter().min().copied().unwrap_or(u32::MAX));
        let tops: Vec<u32> = order
            .iter()
            .map(|g| g.cur_vars.iter().min().copied().unwrap_or(u32::MAX))
            .collect();
        let plan = Arc::new(PlanData::new(&order, &tops, op));
        SatOrder { order, tops, plan }
    }

    /// The number of groups.
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    /// The number of groups from the `k`-th on that share its top variable: those that a
    /// saturation from `k` chains in each round of its fixpoint.
    pub(super) fn level_len(&self, k: usize) -> usize {
        level_len(&self.tops, k)
    }

    /// Whether a saturation of `set` from the `k`-th group splits `set` at its top
    /// variable first (that variable lies above every group from `k` on).
    pub(super) fn branches<S: NodeStore, C: OpCache>(
        &self,
        m: &Manager<S, C>,
        set: Bdd,
        k: usize,
    ) -> bool {
        matches!(m.node(set), Some((v, _, _)) if v < self.tops[k])
    }

    /// `set` (rooted by the caller) with the images of the groups of the `k`-th one's
    /// level added, each group seeing what the ones before it added: one round of that
    /// level's fixpoint, after the saturation below it. Not rooted.
    pub(super) fn chain_level<S: NodeStore, C: OpCache>(
        &self,
        m: &mut Manager<S, C>,
        set: Bdd,
        k: usize,
    ) -> Result<Bdd, BddError> {
        let groups = &self.plan.groups[k..k + self.level_len(k)];
        m.run(&[set], |c| chain(c, groups, set))
    }

    /// The least fixpoint of `set` (rooted by the caller) under the groups from the
    /// `k`-th on, first as one parallel operation (the branches of the set saturate on
    /// different workers); if even the largest table cannot hold its intermediate nodes,
    /// step by step with collections in between. Not rooted.
    pub(super) fn saturate<S: NodeStore, C: OpCache>(
        &self,
        m: &mut Manager<S, C>,
        set: Bdd,
        k: usize,
        watch: Option<&Watch>,
    ) -> Result<Bdd, BddError> {
        if let Some(w) = watch {
            w.sat_groups.store(self.order.len(), Ordering::Relaxed);
        }
        let plan = SatPlan {
            plan: self.plan.clone(),
            watch,
        };
        match m.run(&[set], |c| plan.saturate(c, set, k)) {
            Ok(r) => Ok(r),
            Err(_) => {
                let mut sat = Saturation {
                    order: self.order.clone(),
                    tops: self.tops.clone(),
                    memo: HashMap::new(),
                    collections: m.stats().collections,
                    watch,
                };
                sat.saturate(m, set, k)
            }
        }
    }
}

/// Saturation as one pool operation: branches of the set above the groups' variables are
/// saturated in parallel, results are memoised in the operation cache.
pub(super) struct SatPlan<'a> {
    /// The groups, their top variables and the cache key space: what another PE needs to
    /// saturate a branch.
    pub(super) plan: Arc<PlanData>,
    pub(super) watch: Option<&'a Watch>,
}

impl SatPlan<'_> {
    /// The least fixpoint of `set` under the groups `order[k..]`, all of which leave the
    /// variables above `set`'s top alone.
    pub(super) fn saturate<S: NodeStore, C: OpCache>(
        &self,
        c: &OpCtx<'_, S, C>,
        set: Bdd,
        k: usize,
    ) -> Bdd {
        let plan = &*self.plan;
        if set == Bdd::FALSE || k == plan.tops.len() || c.aborted() {
            return set;
        }
        if let Some(r) = c.memo_get(plan.op, set, k as u64) {
            return r;
        }
        let r = match c.top(set) {
            Some((v, lo, hi)) if v < plan.tops[k] => {
                let (l, h) = c.join_sendable(
                    |c| self.saturate(c, lo, k),
                    |c| self.saturate(c, hi, k),
                    |home| SatHalf::new(&self.plan, hi, k, home),
                );
                c.make(v, l, h)
            }
            _ => {
                let count = level_len(&plan.tops, k);
                let mut r = set;
                loop {
                    note_round(self.watch, k);
                    let prev = r;
                    r = self.saturate(c, r, k + count);
                    r = chain(c, &plan.groups[k..k + count], r);
                    if c.aborted() {
                        return set;
                    }
                    if r == prev {
                        break;
                    }
                }
                r
            }
        };
        if c.aborted() {
            return set;
        }
        c.memo_put(plan.op, set, k as u64, r)
    }
}

/// Saturation, driven from the calling thread: every fixpoint step (one group's image
/// and its union) is one pool operation, so garbage can be collected between steps. (As
/// a single operation, saturation would have to keep every intermediate node until the
/// end, and restart from scratch whenever the table filled up.)
struct Saturation<'a> {
    /// Groups sorted by their top variable, and those variables.
    order: Vec<&'a Group>,
    tops: Vec<u32>,
    /// Results of `saturate(set, k)`; valid until the next collection.
    memo: HashMap<(Bdd, usize), Bdd>,
    collections: u64,
    watch: Option<&'a Watch>,
}

impl Saturation<'_> {
    /// The least fixpoint of `set` (rooted by the caller) under the groups
    /// `order[k..]`, all of which leave the variables above `set`'s top alone. The
    /// result is not rooted: the caller roots it before the next operation.
    fn saturate<S: NodeStore, C: OpCache>(
        &mut self,
        m: &mut Manager<S, C>,
        set: Bdd,
        k: usize,
    ) -> Result<Bdd, BddError> {
        if set == Bdd::FALSE || k == self.order.len() {
            return Ok(set);
        }
        if m.stats().collections != self.collections {
            self.memo.clear();
            self.collections = m.stats().collections;
        }
        if let Some(&r) = self.memo.get(&(set, k)) {
            return Ok(r);
        }
        let r = match m.node(set) {
            // The set branches above every variable these groups touch: saturate each
            // branch on its own (the children are kept alive by `set`).
            Some((v, lo, hi)) if v < self.tops[k] => {
                let l = self.saturate(m, lo, k)?;
                let l = m.root(l);
                let h = self.saturate(m, hi, k)?;
                let h = m.root(h);
                let (lb, hb) = (l.get(), h.get());
                m.run(&[lb, hb], |c| c.make(v, lb, hb))?
            }
            _ => {
                // Every group starting at this level is chained once per round; the
                // groups below are saturated first (as Sylvan's bddmc does).
                let count = level_len(&self.tops, k);
                let mut r = m.root(set);
                loop {
                    note_round(self.watch, k);
                    let prev = m.root(r.get());
                    let deeper = self.saturate(m, r.get(), k + count)?;
                    r.set(deeper);
                    for g in &self.order[k..k + count] {
                        let cur = r.get();
                        let next = m.run(&[cur], |c| {
                            let img = image(c, g, cur);
                            c.or(cur, img)
                        })?;
                        r.set(next);
                    }
                    if r.get() == prev.get() {
                        break;
                    }
                }
                r.get()
            }
        };
        if m.stats().collections != self.collections {
            self.memo.clear();
            self.collections = m.stats().collections;
        }
        self.memo.insert((set, k), r);
        Ok(r)
    }
}

/// The number of groups from the `k`-th on whose top variable (`tops`, ascending) is the
/// `k`-th's: the groups of one level, chained in each round of its fixpoint.
fn level_len(tops: &[u32], k: usize) -> usize {
    tops[k..].iter().take_while(|&&t| t == tops[k]).count()
}

/// `set` with the images of `groups` (`(relation, vars)` each) added one after another,
/// each seeing what the ones before it added: one round of a level's fixpoint.
#[inline]
fn chain<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, groups: &[(Bdd, Bdd)], set: Bdd) -> Bdd {
    groups.iter().fold(set, |r, &(relation, vars)| {
        let img = c.relnext(r, relation, vars);
        c.or(r, img)
    })
}

/// Tells the watch that the fixpoint of group `k` begins a round.
fn note_round(watch: Option<&Watch>, k: usize) {
    if let Some(w) = watch {
        w.sat_group.store(k, Ordering::Relaxed);
        w.sat_rounds.fetch_add(1, Ordering::Relaxed);
    }
}
