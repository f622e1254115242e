//! The per-level records of an exploration, the progress callback and the live counters
//! a display reads.

use crate::model::Model;
use num_bigint::BigUint;
use rhizome_bdd::{Bdd, Manager, NodeStore, OpCache, Root};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Live counters of a running exploration, written by [`reach`](super::reach) and read by any thread.
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
    /// Nodes of the BDD of the visited states (with [`ReachOptions::count_nodes`](super::ReachOptions::count_nodes): a
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

/// What the progress callback of [`reach`](super::reach) gets after every level.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The level's record.
    pub record: &'a LevelRecord,
    /// The visited states: valid during the callback only (a later collection may free
    /// them). A display may count their nodes when it is about to draw.
    pub visited: Bdd,
}

/// What an exploration has found so far: enough for a partial report if it stops.
pub(super) struct Run<'p, S: NodeStore, C: OpCache> {
    pub(super) start: Instant,
    /// The visited states.
    pub(super) visited: Root,
    /// Images taken (the level being computed while one runs).
    pub(super) levels: usize,
    pub(super) per_level: Vec<LevelRecord>,
    pub(super) level_nodes: Vec<usize>,
    pub(super) count_nodes: bool,
    pub(super) watch: Option<Arc<Watch>>,
    pub(super) progress: &'p mut dyn FnMut(&Manager<S, C>, &Progress<'_>),
}

impl<'p, S: NodeStore, C: OpCache> Run<'p, S, C> {
    /// An exploration starting now from the initial states of `model`.
    pub(super) fn start(
        m: &Manager<S, C>,
        model: &Model,
        opts: &super::ReachOptions,
        progress: &'p mut dyn FnMut(&Manager<S, C>, &Progress<'_>),
    ) -> Self {
        Run {
            start: Instant::now(),
            visited: m.root(model.initial),
            levels: 0,
            per_level: Vec::new(),
            level_nodes: Vec::new(),
            count_nodes: opts.count_nodes,
            watch: opts.watch.clone(),
            progress,
        }
    }

    /// Starts the next level.
    pub(super) fn next_level(&mut self) {
        self.levels += 1;
        if let Some(w) = &self.watch {
            w.level.store(self.levels, Ordering::Relaxed);
        }
    }

    /// Records the level just done; `frontier` holds the states it found, disjoint from
    /// those visited before (`None` where the strategy has no frontier), `grew` whether
    /// there were any.
    pub(super) fn record(
        &mut self,
        m: &Manager<S, C>,
        model: &Model,
        frontier: Option<Bdd>,
        grew: bool,
    ) {
        let visited = self.visited.get();
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
        self.push(m, states, frontier_nodes, grew);
    }

    /// Records the level just done with its counts given: `states` visited in all,
    /// `frontier_nodes` of the states it found (see [`LevelRecord`]), `grew` whether it
    /// found any. The sliced exploration counts its levels over every rank's slice.
    pub(super) fn push(
        &mut self,
        m: &Manager<S, C>,
        states: BigUint,
        frontier_nodes: Option<usize>,
        grew: bool,
    ) {
        let visited = self.visited.get();
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
