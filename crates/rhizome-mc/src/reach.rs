//! Symbolic reachability: the strategies, deadlock detection, and the report.

use crate::model::{Group, Model};
use num_bigint::BigUint;
use rhizome_bdd::{Bdd, BddError, Ctx, Manager, NodeStore, OpCache};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

/// How the reachable states are explored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Level by level, group by group: `new = ∪_g image_g(new) \ visited` (the thesis'
    /// algorithm; its level count is the reference).
    Bfs,
    /// Each group's image is added at once, so later groups of the same sweep already see
    /// the states found by earlier ones.
    Chaining,
    /// Saturation: groups ordered by their top variable, each applied to a fixpoint below
    /// the variables it cannot change, recursively.
    Sat,
    /// Like `bfs`, with the images of all groups computed in parallel.
    Par,
}

impl Strategy {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Bfs => "bfs",
            Strategy::Chaining => "chaining",
            Strategy::Sat => "sat",
            Strategy::Par => "par",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Strategy, String> {
        match s {
            "bfs" => Ok(Strategy::Bfs),
            "chaining" => Ok(Strategy::Chaining),
            "sat" => Ok(Strategy::Sat),
            "par" => Ok(Strategy::Par),
            _ => Err(format!(
                "unknown strategy `{s}` (expected bfs, chaining, sat or par)"
            )),
        }
    }
}

/// What to compute besides the reachable states.
#[derive(Debug, Clone, Default)]
pub struct ReachOptions {
    /// Count deadlock states (no group enabled) and give one example.
    pub deadlocks: bool,
    /// Record the node count of the visited set after every level.
    pub count_nodes: bool,
}

/// Progress of a running exploration, for displays.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Levels (iterations) done.
    pub level: usize,
    /// The visited set so far (valid during the callback only).
    pub visited: Bdd,
    /// Node-table slots in use (including garbage) and usable.
    pub table_used: usize,
    /// Node-table slots usable now.
    pub table_size: usize,
    /// Seconds since the start.
    pub elapsed: f64,
}

/// Deadlock states found.
#[derive(Debug, Clone)]
pub struct Deadlocks {
    /// How many reachable states enable no group.
    pub count: BigUint,
    /// One of them as a state vector (one integer per state variable).
    pub example: Option<Vec<u64>>,
}

/// The outcome of a reachability run.
#[derive(Debug, Clone)]
pub struct ReachReport {
    /// The strategy that ran: `bfs` when `sat` or `par` was asked for on a model whose
    /// next-state variables are not interleaved with the current ones (those two need the
    /// one-operation image that such models lack).
    pub strategy: Strategy,
    /// Number of reachable states (exact).
    pub states: BigUint,
    /// Levels: image iterations until no new state appeared, the last, empty one
    /// included (`None` for saturation, which has no levels).
    pub levels: Option<usize>,
    /// Nodes of the final BDD of the reachable states.
    pub nodes: usize,
    /// Node counts of the visited set after each level (with `count_nodes`).
    pub level_nodes: Vec<usize>,
    /// Deadlocks (with `deadlocks`).
    pub deadlocks: Option<Deadlocks>,
    /// Seconds spent exploring (not loading).
    pub seconds: f64,
    /// The set of reachable states (protected in the manager).
    pub reachable: Bdd,
}

/// A BDD variable that keeps its value protected from garbage collection.
struct Rooted(Bdd);

impl Rooted {
    fn new(m: &Manager, b: Bdd) -> Rooted {
        m.protect(b);
        Rooted(b)
    }
    fn set(&mut self, m: &Manager, b: Bdd) {
        m.protect(b);
        m.unprotect(self.0);
        self.0 = b;
    }
    fn release(self, m: &Manager) {
        m.unprotect(self.0);
    }
}

/// The image of `s` under one group, inside an operation.
fn image<S: NodeStore, C: OpCache>(c: &Ctx<'_, S, C>, g: &Group, s: Bdd) -> Bdd {
    c.relnext(s, g.relation, g.vars)
}

/// The image of `s` under one group, as its own operation (with the fallback for
/// models whose next variables are not interleaved with the current ones).
fn image_op(m: &mut Manager, model: &Model, g: &Group, s: Bdd) -> Result<Bdd, BddError> {
    if model.interleaved {
        m.relnext(s, g.relation, g.vars)
    } else {
        let t = m.and_exists(s, g.relation, g.cur_cube)?;
        let map: Vec<(u32, u32)> = g
            .next_vars
            .iter()
            .copied()
            .zip(g.cur_vars.iter().copied())
            .collect();
        m.protect(t);
        let r = m.rename(t, &map);
        m.unprotect(t);
        r
    }
}

/// Union of the images of `s` under `groups`, forked in halves.
fn par_image<S: NodeStore, C: OpCache>(c: &Ctx<'_, S, C>, groups: &[Group], s: Bdd) -> Bdd {
    match groups {
        [] => Bdd::FALSE,
        [g] => image(c, g, s),
        _ => {
            let (a, b) = groups.split_at(groups.len() / 2);
            let (x, y) = c.join(|c| par_image(c, a, s), |c| par_image(c, b, s));
            c.or(x, y)
        }
    }
}

/// Computes the reachable states of `model` with `strategy`. `progress` is called after
/// every level (and at the end).
pub fn reach(
    m: &mut Manager,
    model: &Model,
    strategy: Strategy,
    opts: &ReachOptions,
    progress: &mut dyn FnMut(&Manager, &Progress),
) -> Result<ReachReport, BddError> {
    if matches!(strategy, Strategy::Sat | Strategy::Par) && !model.interleaved {
        // The fallback image (product, then rename) exists only as whole operations.
        return reach(m, model, Strategy::Bfs, opts, progress);
    }
    let start = Instant::now();
    let mut visited = Rooted::new(m, model.initial);
    let mut level_nodes = Vec::new();
    let mut levels = 0usize;
    let mut report_level =
        |m: &Manager, levels: usize, visited: Bdd, level_nodes: &mut Vec<usize>| {
            if opts.count_nodes {
                level_nodes.push(m.node_count(visited));
            }
            progress(
                m,
                &Progress {
                    level: levels,
                    visited,
                    table_used: m.table_used(),
                    table_size: m.table_size(),
                    elapsed: start.elapsed().as_secs_f64(),
                },
            );
        };
    let mut front = Rooted::new(m, model.initial);
    match strategy {
        Strategy::Bfs | Strategy::Par => loop {
            levels += 1;
            // Images are taken of the frontier or of the whole visited set, whichever
            // BDD is smaller: both have the same successors outside `visited` (every
            // successor of an older state is visited already), so the levels and the
            // result are the thesis' (new = image(new) minus visited). Which is smaller
            // depends on the model: the visited set is often smoother (Sylvan images it
            // always), the frontier sometimes far smaller.
            let v = if m.fewer_nodes(front.0, visited.0) {
                front.0
            } else {
                visited.0
            };
            let new = if strategy == Strategy::Par {
                let groups = &model.groups;
                let seen = visited.0;
                m.run(&[v, seen], |c| {
                    let succ = par_image(c, groups, v);
                    c.diff(succ, seen)
                })?
            } else {
                let mut succ = Rooted::new(m, Bdd::FALSE);
                for g in &model.groups {
                    let img = image_op(m, model, g, v)?;
                    m.protect(img);
                    let u = m.or(succ.0, img);
                    m.unprotect(img);
                    succ.set(m, u?);
                }
                let new = m.diff(succ.0, visited.0);
                succ.release(m);
                new?
            };
            if new == Bdd::FALSE {
                break;
            }
            m.protect(new);
            let u = m.or(visited.0, new);
            m.unprotect(new);
            visited.set(m, u?);
            front.set(m, new);
            report_level(m, levels, visited.0, &mut level_nodes);
        },
        Strategy::Chaining => loop {
            levels += 1;
            let mut front = Rooted::new(m, visited.0);
            for g in &model.groups {
                let img = image_op(m, model, g, front.0)?;
                m.protect(img);
                let u = m.or(front.0, img);
                m.unprotect(img);
                front.set(m, u?);
            }
            let grown = front.0 != visited.0;
            visited.set(m, front.0);
            front.release(m);
            if !grown {
                break;
            }
            report_level(m, levels, visited.0, &mut level_nodes);
        },
        Strategy::Sat => {
            let mut order: Vec<&Group> = model.groups.iter().collect();
            order.sort_by_key(|g| g.cur_vars.iter().min().copied().unwrap_or(u32::MAX));
            let tops: Vec<u32> = order
                .iter()
                .map(|g| g.cur_vars.iter().min().copied().unwrap_or(u32::MAX))
                .collect();
            // First as one parallel operation (the branches of the set saturate on
            // different workers); if even the largest table cannot hold its
            // intermediate nodes, step by step with collections in between.
            let start = visited.0;
            let op = m.fresh_op_id();
            let plan = SatPlan {
                order: &order,
                tops: &tops,
                op,
            };
            let r = match m.run(&[start], |c| plan.saturate(c, start, 0)) {
                Ok(r) => r,
                Err(_) => {
                    let mut sat = Saturation {
                        order,
                        tops,
                        memo: HashMap::new(),
                        collections: m.stats().collections,
                    };
                    sat.saturate(m, start, 0)?
                }
            };
            visited.set(m, r);
        }
    }
    front.release(m);
    let reachable = visited.0;
    let deadlocks = if opts.deadlocks {
        Some(find_deadlocks(m, model, reachable)?)
    } else {
        None
    };
    let seconds = start.elapsed().as_secs_f64();
    report_level(m, levels, reachable, &mut Vec::new());
    let states = m.satcount(reachable, &model.state_vars);
    let nodes = m.node_count(reachable);
    // `visited` stays protected (not released): the report hands out `reachable`.
    let _ = visited;
    Ok(ReachReport {
        strategy,
        states,
        levels: (strategy != Strategy::Sat).then_some(levels),
        nodes,
        level_nodes,
        deadlocks,
        seconds,
        reachable,
    })
}

/// Saturation as one pool operation: branches of the set above the groups' variables are
/// saturated in parallel, results are memoised in the operation cache.
struct SatPlan<'a> {
    /// Groups sorted by their top variable, and those variables.
    order: &'a [&'a Group],
    tops: &'a [u32],
    /// Cache key space of this saturation.
    op: u64,
}

impl SatPlan<'_> {
    /// The least fixpoint of `set` under the groups `order[k..]`, all of which leave the
    /// variables above `set`'s top alone.
    fn saturate<S: NodeStore, C: OpCache>(&self, c: &Ctx<'_, S, C>, set: Bdd, k: usize) -> Bdd {
        if set == Bdd::FALSE || k == self.order.len() || c.aborted() {
            return set;
        }
        if let Some(r) = c.memo_get(self.op, set, k as u64) {
            return r;
        }
        let r = match c.top(set) {
            Some((v, lo, hi)) if v < self.tops[k] => {
                let (l, h) = c.join(|c| self.saturate(c, lo, k), |c| self.saturate(c, hi, k));
                c.make(v, l, h)
            }
            _ => {
                let count = self.tops[k..]
                    .iter()
                    .take_while(|&&t| t == self.tops[k])
                    .count();
                let mut r = set;
                loop {
                    let prev = r;
                    r = self.saturate(c, r, k + count);
                    for g in &self.order[k..k + count] {
                        let img = image(c, g, r);
                        r = c.or(r, img);
                    }
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
        c.memo_put(self.op, set, k as u64, r)
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
}

impl Saturation<'_> {
    /// The least fixpoint of `set` (protected by the caller) under the groups
    /// `order[k..]`, all of which leave the variables above `set`'s top alone. The
    /// result is not protected: the caller protects it before the next operation.
    fn saturate(&mut self, m: &mut Manager, set: Bdd, k: usize) -> Result<Bdd, BddError> {
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
                let l = Rooted::new(m, l);
                let h = match self.saturate(m, hi, k) {
                    Ok(h) => Rooted::new(m, h),
                    Err(e) => {
                        l.release(m);
                        return Err(e);
                    }
                };
                let (lb, hb) = (l.0, h.0);
                let r = m.run(&[lb, hb], |c| c.make(v, lb, hb));
                l.release(m);
                h.release(m);
                r?
            }
            _ => {
                // Every group starting at this level is chained once per round; the
                // groups below are saturated first (as Sylvan's bddmc does).
                let count = self.tops[k..]
                    .iter()
                    .take_while(|&&t| t == self.tops[k])
                    .count();
                let mut r = Rooted::new(m, set);
                loop {
                    let prev = Rooted::new(m, r.0);
                    let deeper = self.saturate(m, r.0, k + count)?;
                    r.set(m, deeper);
                    for g in &self.order[k..k + count] {
                        let cur = r.0;
                        let next = m.run(&[cur], |c| {
                            let img = image(c, g, cur);
                            c.or(cur, img)
                        })?;
                        r.set(m, next);
                    }
                    let done = r.0 == prev.0;
                    prev.release(m);
                    if done {
                        break;
                    }
                }
                let out = r.0;
                r.release(m);
                out
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

/// Reachable states in which no group is enabled.
fn find_deadlocks(m: &mut Manager, model: &Model, reachable: Bdd) -> Result<Deadlocks, BddError> {
    let mut enabled = Rooted::new(m, Bdd::FALSE);
    for g in &model.groups {
        let e = if model.interleaved {
            m.relprev(Bdd::TRUE, g.relation, g.vars)?
        } else {
            let next = m.cube(&g.next_vars)?;
            m.exists(g.relation, next)?
        };
        m.protect(e);
        let u = m.or(enabled.0, e);
        m.unprotect(e);
        enabled.set(m, u?);
    }
    let dead = m.diff(reachable, enabled.0)?;
    enabled.release(m);
    let count = m.satcount(dead, &model.state_vars);
    let example = m.pick_one(dead).map(|a| model.state_vector(&a));
    Ok(Deadlocks { count, example })
}
