//! Symbolic reachability: the strategies, deadlock detection and traces, and the report.

use crate::model::{Group, Model};
use num_bigint::BigUint;
use rhizome_bdd::{Bdd, BddError, Ctx, Manager, NodeStore, OpCache};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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
    /// With `deadlocks`: also a shortest path from an initial state to the example.
    pub trace: bool,
    /// Count the nodes of the visited set after every level, for
    /// [`ReachReport::level_nodes`] and [`LevelRecord::visited_nodes`].
    pub count_nodes: bool,
    /// Counters another thread (a progress display) reads while `reach` runs: the only
    /// view into a saturation, which runs as one long operation without levels.
    pub watch: Option<Arc<Watch>>,
}

/// Live counters of a running exploration, written by [`reach`] and read by any thread.
#[derive(Debug, Default)]
pub struct Watch {
    /// The level being computed (level strategies), 1 for the first image.
    pub level: AtomicUsize,
    /// Saturation: the group (in saturation order, by top variable) whose fixpoint began
    /// a round most recently; with parallel branches, one of those being worked on.
    pub sat_group: AtomicUsize,
    /// Saturation: the number of groups.
    pub sat_groups: AtomicUsize,
    /// Saturation: fixpoint rounds begun so far, all groups together.
    pub sat_rounds: AtomicU64,
}

/// The state of the exploration after one level: what `--count-states`, `--count-nodes`,
/// `--count-table`, the progress display and the JSON series show.
#[derive(Debug, Clone)]
pub struct LevelRecord {
    /// Images taken so far (0: the initial states).
    pub level: usize,
    /// States visited so far (exact).
    pub states: BigUint,
    /// Nodes of the BDD of the visited states (with [`ReachOptions::count_nodes`]: a
    /// walk of the whole set at every level costs time).
    pub visited_nodes: Option<usize>,
    /// Nodes of the BDD of the states first found at this level (`None` for chaining,
    /// which has no separate frontier).
    pub frontier_nodes: Option<usize>,
    /// Node-table slots in use (including garbage not yet collected).
    pub table_used: usize,
    /// Node-table slots usable now.
    pub table_size: usize,
    /// Garbage collections so far.
    pub collections: u64,
    /// Seconds since the exploration started.
    pub seconds: f64,
}

/// What the progress callback of [`reach`] gets after every level.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The level's record.
    pub record: &'a LevelRecord,
    /// The visited states: valid during the callback only (a later collection may free
    /// them). A display may count their nodes when it is about to draw.
    pub visited: Bdd,
}

/// Deadlock states found.
#[derive(Debug, Clone)]
pub struct Deadlocks {
    /// How many reachable states enable no group.
    pub count: BigUint,
    /// One of them as a state vector (one integer per state variable).
    pub example: Option<Vec<u64>>,
    /// With [`ReachOptions::trace`]: a shortest path from an initial state to `example`.
    pub trace: Option<Vec<TraceStep>>,
    /// Seconds spent finding the trace (included in [`ReachReport::seconds`]).
    pub trace_seconds: f64,
}

/// One state of a counterexample trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceStep {
    /// The transition group (index into [`Model::groups`]) taken from the previous
    /// state; `None` for the first, initial state.
    pub group: Option<usize>,
    /// The full state vector.
    pub state: Vec<u64>,
}

/// The outcome of a reachability run.
#[derive(Debug, Clone)]
pub struct ReachReport {
    /// The strategy that ran: `bfs` when `sat` or `par` was asked for on a model whose
    /// next-state variables are not interleaved with the current ones (those two need the
    /// one-operation image that such models lack).
    pub strategy: Strategy,
    /// Number of reachable states (exact); in a partial report, the states visited.
    pub states: BigUint,
    /// Levels: image iterations until no new state appeared, the last, empty one
    /// included (`None` for saturation, which has no levels). In a partial report, the
    /// levels completed.
    pub levels: Option<usize>,
    /// Nodes of the final BDD of the reachable states.
    pub nodes: usize,
    /// Node counts of the visited set after each level that found states (with
    /// `count_nodes`).
    pub level_nodes: Vec<usize>,
    /// The state after every level: the initial states (level 0), each level, the last
    /// (empty) one included. Empty for saturation.
    pub per_level: Vec<LevelRecord>,
    /// Deadlocks (with `deadlocks`).
    pub deadlocks: Option<Deadlocks>,
    /// Seconds spent exploring (not loading).
    pub seconds: f64,
    /// Whether the exploration ran to its end (false in the report of an [`Incomplete`]).
    pub complete: bool,
    /// The set of reachable states (protected in the manager); the visited states in a
    /// partial report.
    pub reachable: Bdd,
}

/// An exploration that stopped before its end, with what it had found.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{error} at level {level}")]
pub struct Incomplete {
    /// Why it stopped.
    pub error: BddError,
    /// The level being computed when it stopped (0: before the first image, or in
    /// saturation; the last level when deadlock detection stopped it).
    pub level: usize,
    /// The states and levels so far, `complete` false.
    pub partial: Box<ReachReport>,
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

/// The predecessors of `s` (protected by the caller) under one group, as its own
/// operation: the inverse of [`image_op`].
fn preimage_op(m: &mut Manager, model: &Model, g: &Group, s: Bdd) -> Result<Bdd, BddError> {
    if model.interleaved {
        return m.relprev(s, g.relation, g.vars);
    }
    // Only the group's variables move to their next copies: the others are what the
    // relation leaves unchanged, and stay as current variables in the result.
    let map: Vec<(u32, u32)> = g
        .cur_vars
        .iter()
        .copied()
        .zip(g.next_vars.iter().copied())
        .collect();
    let primed = m.rename(s, &map)?;
    let primed = Rooted::new(m, primed);
    let next_cube = match m.cube(&g.next_vars) {
        Ok(c) => Rooted::new(m, c),
        Err(e) => {
            primed.release(m);
            return Err(e);
        }
    };
    let r = m.and_exists(primed.0, g.relation, next_cube.0);
    primed.release(m);
    next_cube.release(m);
    r
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

/// Union of the pre-images of `s` under `groups`, forked in halves.
fn par_preimage<S: NodeStore, C: OpCache>(c: &Ctx<'_, S, C>, groups: &[Group], s: Bdd) -> Bdd {
    match groups {
        [] => Bdd::FALSE,
        [g] => c.relprev(s, g.relation, g.vars),
        _ => {
            let (a, b) = groups.split_at(groups.len() / 2);
            let (x, y) = c.join(|c| par_preimage(c, a, s), |c| par_preimage(c, b, s));
            c.or(x, y)
        }
    }
}

/// What an exploration has found so far: enough for a partial report if it stops.
struct Run<'p> {
    start: Instant,
    /// The visited states.
    visited: Rooted,
    /// Images taken (the level being computed while one runs).
    levels: usize,
    per_level: Vec<LevelRecord>,
    level_nodes: Vec<usize>,
    count_nodes: bool,
    watch: Option<Arc<Watch>>,
    progress: &'p mut dyn FnMut(&Manager, &Progress<'_>),
}

impl Run<'_> {
    /// Starts the next level.
    fn next_level(&mut self) {
        self.levels += 1;
        if let Some(w) = &self.watch {
            w.level.store(self.levels, Ordering::Relaxed);
        }
    }

    /// Records the level just done; `frontier` holds the states it found, disjoint from
    /// those visited before (`None` where the strategy has no frontier), `grew` whether
    /// there were any.
    fn record(&mut self, m: &Manager, model: &Model, frontier: Option<Bdd>, grew: bool) {
        let visited = self.visited.0;
        // Exact counts, from one walk of the frontier where there is one: its states are
        // new, so they add to the last level's. A walk of a large BDD is mostly cache
        // misses (anderson.6.4: a walk of the visited set at each of its 181 levels
        // cost 15% of the run), so the visited set is walked only for `count_nodes`.
        let (states, frontier_nodes) = match (frontier, self.per_level.last()) {
            (Some(f), Some(last)) => {
                let (new, nodes) = m.satcount_and_nodes(f, &model.state_vars);
                (&last.states + new, Some(nodes))
            }
            (Some(f), None) => {
                let (all, nodes) = m.satcount_and_nodes(f, &model.state_vars);
                (all, Some(nodes))
            }
            (None, _) => (m.satcount(visited, &model.state_vars), None),
        };
        let visited_nodes = self.count_nodes.then(|| m.node_count(visited));
        if let Some(n) = visited_nodes
            && grew
            && self.levels > 0
        {
            self.level_nodes.push(n);
        }
        let rec = LevelRecord {
            level: self.levels,
            states,
            visited_nodes,
            frontier_nodes,
            table_used: m.table_used(),
            table_size: m.table_size(),
            collections: m.stats().collections,
            seconds: self.start.elapsed().as_secs_f64(),
        };
        (self.progress)(
            m,
            &Progress {
                record: &rec,
                visited,
            },
        );
        self.per_level.push(rec);
    }
}

/// Computes the reachable states of `model` with `strategy`. `progress` is called with
/// the record of every level (level 0, the initial states, first; none for saturation).
/// If the node table fills up for good, the error comes with what was found so far.
pub fn reach(
    m: &mut Manager,
    model: &Model,
    strategy: Strategy,
    opts: &ReachOptions,
    progress: &mut dyn FnMut(&Manager, &Progress<'_>),
) -> Result<ReachReport, Incomplete> {
    if matches!(strategy, Strategy::Sat | Strategy::Par) && !model.interleaved {
        // The fallback image (product, then rename) exists only as whole operations.
        return reach(m, model, Strategy::Bfs, opts, progress);
    }
    let mut run = Run {
        start: Instant::now(),
        visited: Rooted::new(m, model.initial),
        levels: 0,
        per_level: Vec::new(),
        level_nodes: Vec::new(),
        count_nodes: opts.count_nodes,
        watch: opts.watch.clone(),
        progress,
    };
    let explored = match strategy {
        Strategy::Bfs | Strategy::Par => {
            run.record(m, model, Some(model.initial), true);
            let mut front = Rooted::new(m, model.initial);
            let r = bfs_levels(m, model, strategy, &mut run, &mut front);
            front.release(m);
            r
        }
        Strategy::Chaining => {
            run.record(m, model, None, true);
            chaining_levels(m, model, &mut run)
        }
        Strategy::Sat => saturate(m, model, &mut run),
    };
    // A level that failed found nothing that counts; deadlock detection failing after a
    // complete exploration leaves every level done.
    let levels_done = match explored {
        Ok(()) => run.levels,
        Err(_) => run.levels.saturating_sub(1),
    };
    let deadlocks = match explored {
        Ok(()) if opts.deadlocks => find_deadlocks(m, model, run.visited.0, opts.trace).map(Some),
        Ok(()) => Ok(None),
        Err(e) => Err(e),
    };
    let seconds = run.start.elapsed().as_secs_f64();
    // `visited` stays protected (not released): the report hands out `reachable`.
    let reachable = run.visited.0;
    let report = ReachReport {
        strategy,
        states: m.satcount(reachable, &model.state_vars),
        levels: (strategy != Strategy::Sat).then_some(levels_done),
        nodes: m.node_count(reachable),
        level_nodes: run.level_nodes,
        per_level: run.per_level,
        deadlocks: deadlocks.as_ref().ok().cloned().flatten(),
        seconds,
        complete: deadlocks.is_ok(),
        reachable,
    };
    match deadlocks {
        Ok(_) => Ok(report),
        Err(error) => Err(Incomplete {
            error,
            level: run.levels,
            partial: Box::new(report),
        }),
    }
}

/// `bfs` and `par`: level by level until a level finds no new state.
fn bfs_levels(
    m: &mut Manager,
    model: &Model,
    strategy: Strategy,
    run: &mut Run<'_>,
    front: &mut Rooted,
) -> Result<(), BddError> {
    loop {
        run.next_level();
        // Images are taken of the frontier or of the whole visited set, whichever
        // BDD is smaller: both have the same successors outside `visited` (every
        // successor of an older state is visited already), so the levels and the
        // result are the thesis' (new = image(new) minus visited). Which is smaller
        // depends on the model: the visited set is often smoother (Sylvan images it
        // always), the frontier sometimes far smaller.
        let v = if m.fewer_nodes(front.0, run.visited.0) {
            front.0
        } else {
            run.visited.0
        };
        let new = if strategy == Strategy::Par {
            let groups = &model.groups;
            let seen = run.visited.0;
            m.run(&[v, seen], |c| {
                let succ = par_image(c, groups, v);
                c.diff(succ, seen)
            })?
        } else {
            let mut succ = Rooted::new(m, Bdd::FALSE);
            for g in &model.groups {
                let img = match image_op(m, model, g, v) {
                    Ok(img) => img,
                    Err(e) => {
                        succ.release(m);
                        return Err(e);
                    }
                };
                m.protect(img);
                let u = m.or(succ.0, img);
                m.unprotect(img);
                match u {
                    Ok(u) => succ.set(m, u),
                    Err(e) => {
                        succ.release(m);
                        return Err(e);
                    }
                }
            }
            let new = m.diff(succ.0, run.visited.0);
            succ.release(m);
            new?
        };
        if new == Bdd::FALSE {
            run.record(m, model, Some(Bdd::FALSE), false);
            return Ok(());
        }
        m.protect(new);
        let u = m.or(run.visited.0, new);
        m.unprotect(new);
        run.visited.set(m, u?);
        front.set(m, new);
        run.record(m, model, Some(new), true);
    }
}

/// `chaining`: every group's image is added at once, until a sweep adds nothing.
fn chaining_levels(m: &mut Manager, model: &Model, run: &mut Run<'_>) -> Result<(), BddError> {
    loop {
        run.next_level();
        let mut front = Rooted::new(m, run.visited.0);
        for g in &model.groups {
            let step = image_op(m, model, g, front.0).and_then(|img| {
                m.protect(img);
                let u = m.or(front.0, img);
                m.unprotect(img);
                u
            });
            match step {
                Ok(u) => front.set(m, u),
                Err(e) => {
                    front.release(m);
                    return Err(e);
                }
            }
        }
        let grown = front.0 != run.visited.0;
        run.visited.set(m, front.0);
        front.release(m);
        run.record(m, model, None, grown);
        if !grown {
            return Ok(());
        }
    }
}

/// `sat`: saturation, first as one parallel operation (the branches of the set saturate
/// on different workers); if even the largest table cannot hold its intermediate nodes,
/// step by step with collections in between.
fn saturate(m: &mut Manager, model: &Model, run: &mut Run<'_>) -> Result<(), BddError> {
    let mut order: Vec<&Group> = model.groups.iter().collect();
    order.sort_by_key(|g| g.cur_vars.iter().min().copied().unwrap_or(u32::MAX));
    let tops: Vec<u32> = order
        .iter()
        .map(|g| g.cur_vars.iter().min().copied().unwrap_or(u32::MAX))
        .collect();
    let watch = run.watch.as_deref();
    if let Some(w) = watch {
        w.sat_groups.store(order.len(), Ordering::Relaxed);
    }
    let start = run.visited.0;
    let op = m.fresh_op_id();
    let plan = SatPlan {
        order: &order,
        tops: &tops,
        op,
        watch,
    };
    let r = match m.run(&[start], |c| plan.saturate(c, start, 0)) {
        Ok(r) => r,
        Err(_) => {
            let mut sat = Saturation {
                order,
                tops,
                memo: HashMap::new(),
                collections: m.stats().collections,
                watch,
            };
            sat.saturate(m, start, 0)?
        }
    };
    run.visited.set(m, r);
    Ok(())
}

/// Saturation as one pool operation: branches of the set above the groups' variables are
/// saturated in parallel, results are memoised in the operation cache.
struct SatPlan<'a> {
    /// Groups sorted by their top variable, and those variables.
    order: &'a [&'a Group],
    tops: &'a [u32],
    /// Cache key space of this saturation.
    op: u64,
    watch: Option<&'a Watch>,
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
                    note_round(self.watch, k);
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
    watch: Option<&'a Watch>,
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
                    note_round(self.watch, k);
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

/// Tells the watch that the fixpoint of group `k` begins a round.
fn note_round(watch: Option<&Watch>, k: usize) {
    if let Some(w) = watch {
        w.sat_group.store(k, Ordering::Relaxed);
        w.sat_rounds.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reachable states in which no group is enabled; with `trace`, a shortest path to one.
fn find_deadlocks(
    m: &mut Manager,
    model: &Model,
    reachable: Bdd,
    trace: bool,
) -> Result<Deadlocks, BddError> {
    let mut enabled = Rooted::new(m, Bdd::FALSE);
    for g in &model.groups {
        let e = if model.interleaved {
            m.relprev(Bdd::TRUE, g.relation, g.vars)
        } else {
            m.cube(&g.next_vars).and_then(|next| {
                m.protect(next);
                let e = m.exists(g.relation, next);
                m.unprotect(next);
                e
            })
        };
        let u = e.and_then(|e| {
            m.protect(e);
            let u = m.or(enabled.0, e);
            m.unprotect(e);
            u
        });
        match u {
            Ok(u) => enabled.set(m, u),
            Err(e) => {
                enabled.release(m);
                return Err(e);
            }
        }
    }
    let dead = m.diff(reachable, enabled.0);
    enabled.release(m);
    let dead = dead?;
    let count = m.satcount(dead, &model.state_vars);
    let example = m.pick_one(dead).map(|a| model.state_vector(&a));
    let started = Instant::now();
    let trace = match (&example, trace) {
        (Some(target), true) => Some(shortest_trace(m, model, reachable, target)?),
        _ => None,
    };
    Ok(Deadlocks {
        count,
        example,
        trace,
        trace_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The BDD of the one state `vector`.
fn state_bdd(m: &mut Manager, model: &Model, vector: &[u64]) -> Result<Bdd, BddError> {
    let mut literals: Vec<(u32, bool)> = Vec::with_capacity(model.state_vars.len());
    let mut bit = 0usize;
    for (&w, &x) in model.state_bits.iter().zip(vector) {
        for j in 0..w as usize {
            // The first bit of an integer is its most significant (see `state_vector`).
            let value = (x >> (w as usize - 1 - j)) & 1 == 1;
            literals.push((model.state_vars[bit + j], value));
        }
        bit += w as usize;
    }
    // Built bottom-up: the deepest variable first.
    literals.sort_by_key(|&(v, _)| std::cmp::Reverse(v));
    m.run(&[], |c| {
        literals.iter().fold(Bdd::TRUE, |below, &(v, value)| {
            if value {
                c.make(v, Bdd::FALSE, below)
            } else {
                c.make(v, below, Bdd::FALSE)
            }
        })
    })
}

/// One state of a non-empty set of states, as a full vector. Variables the set leaves
/// free are 0: the vector is in the set all the same.
fn some_state(m: &Manager, model: &Model, set: Bdd) -> Option<Vec<u64>> {
    m.pick_one(set).map(|a| model.state_vector(&a))
}

/// A shortest path from an initial state to `target` (a reachable state).
///
/// Searched backwards, for every strategy alike: rings of the states at distance 0, 1,
/// 2, ... from `target` (predecessors within `reachable`, each ring without the earlier
/// ones) until a ring meets the initial states; then forwards from an initial state in
/// that ring, each step to a successor in the next ring closer to `target`. The rings
/// start from one state and stay small where the forward levels of a BFS would be the
/// whole frontier, and saturation, which has no levels, needs no second exploration.
fn shortest_trace(
    m: &mut Manager,
    model: &Model,
    reachable: Bdd,
    target: &[u64],
) -> Result<Vec<TraceStep>, BddError> {
    let mut pins: Vec<Bdd> = Vec::new();
    let r = trace_with(m, model, reachable, target, &mut pins);
    for p in pins {
        m.unprotect(p);
    }
    r
}

/// [`shortest_trace`], protecting what it keeps in `pins` (released by the caller,
/// also when an operation fails).
fn trace_with(
    m: &mut Manager,
    model: &Model,
    reachable: Bdd,
    target: &[u64],
    pins: &mut Vec<Bdd>,
) -> Result<Vec<TraceStep>, BddError> {
    // The value first: it is computed (borrowing `m` mutably) before `m` is lent again.
    let mut pin = |b: Bdd, m: &Manager| {
        m.protect(b);
        pins.push(b);
        b
    };
    let t = state_bdd(m, model, target)?;
    let mut rings = vec![pin(t, m)];
    let mut seen = t;
    let first = loop {
        let last = *rings.last().expect("the target's ring");
        let meet = m.and(last, model.initial)?;
        if meet != Bdd::FALSE {
            break pin(meet, m);
        }
        let ring = if model.interleaved {
            // One operation for the whole step: the groups' pre-images in parallel.
            let groups = &model.groups;
            m.run(&[last, reachable, seen], |c| {
                let pre = par_preimage(c, groups, last);
                let within = c.and(pre, reachable);
                c.diff(within, seen)
            })?
        } else {
            let mut pre = Bdd::FALSE;
            for g in &model.groups {
                let p = pin(preimage_op(m, model, g, last)?, m);
                pre = pin(m.or(pre, p)?, m);
            }
            let within = pin(m.and(pre, reachable)?, m);
            m.diff(within, seen)?
        };
        let ring = pin(ring, m);
        assert!(
            ring != Bdd::FALSE,
            "the deadlock example is reachable, so some ring meets the initial states"
        );
        seen = pin(m.or(seen, ring)?, m);
        rings.push(ring);
    };
    let start = some_state(m, model, first).expect("a non-empty set has a state");
    let mut cur = pin(state_bdd(m, model, &start)?, m);
    let mut steps = vec![TraceStep {
        group: None,
        state: start,
    }];
    for &ring in rings.iter().rev().skip(1) {
        let mut step = None;
        if model.interleaved {
            // One operation for every group's successors of the one state `cur`.
            let groups = &model.groups;
            let hits = m.run_many(&[cur, ring], |c| {
                groups
                    .iter()
                    .map(|g| {
                        let img = image(c, g, cur);
                        c.and(img, ring)
                    })
                    .collect()
            })?;
            step = hits
                .iter()
                .position(|&h| h != Bdd::FALSE)
                .map(|i| (i, some_state(m, model, hits[i]).expect("non-empty")));
        } else {
            for (i, g) in model.groups.iter().enumerate() {
                let img = pin(image_op(m, model, g, cur)?, m);
                let hit = m.and(img, ring)?;
                if hit != Bdd::FALSE {
                    step = Some((i, some_state(m, model, hit).expect("non-empty")));
                    break;
                }
            }
        }
        let (group, state) =
            step.expect("every state of a ring has a successor in the next ring to the target");
        cur = pin(state_bdd(m, model, &state)?, m);
        steps.push(TraceStep {
            group: Some(group),
            state,
        });
    }
    Ok(steps)
}
