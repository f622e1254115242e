//! Symbolic reachability: the strategies, deadlock detection and traces, and the report.
//!
//! [`reach`] is the driver: it runs one strategy (`bfs.rs` for bfs and par,
//! `chaining.rs`, `saturation.rs`), then deadlock detection (`deadlocks.rs`) and a trace
//! (`trace.rs`), checks the result against the reachable set the model file stores
//! (`check.rs`), and assembles the [`ReachReport`]; `progress.rs` records the levels and
//! feeds the progress callback, `image.rs` holds the images the strategies share. BDDs
//! held across operations are [`Root`]s, so an early return releases them.

mod bfs;
mod chaining;
mod check;
mod deadlocks;
mod image;
mod progress;
mod sat_half;
mod saturation;
mod slice_exchange;
mod slice_mail;
mod sliced;
mod sliced_sat;
mod split;
mod split_writers;
mod timeline;
mod trace;

pub use check::StoredCheck;
pub use deadlocks::Deadlocks;
pub use progress::{LevelRecord, Progress, Watch};
pub use sat_half::register_jobs;
pub use sliced::{
    DEFAULT_SAT_SPLIT_NODES, DEFAULT_SPLIT_NODES, SliceInfo, SliceOptions, SlicedError,
    SlicedOutcome, reach_sliced, sliced_unsupported,
};
pub use trace::TraceStep;

use crate::model::Model;
use num_bigint::BigUint;
use progress::Run;
use rhizome_bdd::{BddError, Manager, NodeStore, OpCache, Root};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

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
    /// The set of reachable states, rooted while the report (or a clone) lives; the
    /// visited states in a partial report.
    pub reachable: Root,
    /// How the run compares with [`Model::stored_reachable`], the reachable states the
    /// model file stores; `None` without them or in a partial report.
    pub stored_check: Option<StoredCheck>,
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

/// Computes the reachable states of `model` with `strategy`. `progress` is called with
/// the record of every level (level 0, the initial states, first; none for saturation).
/// If the node table fills up for good, the error comes with what was found so far.
pub fn reach<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    opts: &ReachOptions,
    progress: &mut dyn FnMut(&Manager<S, C>, &Progress<'_>),
) -> Result<ReachReport, Incomplete> {
    if matches!(strategy, Strategy::Sat | Strategy::Par) && !model.interleaved {
        // The fallback image (product, then rename) exists only as whole operations.
        return reach(m, model, Strategy::Bfs, opts, progress);
    }
    let mut run = Run::start(m, model, opts, progress);
    let explored = match strategy {
        Strategy::Bfs | Strategy::Par => {
            run.record(m, model, Some(model.initial), true);
            bfs::bfs_levels(m, model, strategy, &mut run)
        }
        Strategy::Chaining => {
            run.record(m, model, None, true);
            chaining::chaining_levels(m, model, &mut run)
        }
        Strategy::Sat => saturation::saturate(m, model, &mut run),
    };
    conclude(m, model, strategy, opts, run, explored)
}

/// What follows an exploration that ended (`explored` Ok) or stopped (its error): the
/// deadlocks, the check against the stored set and the report, from the visited states
/// of `run`. The sliced exploration (`sliced.rs`) ends here too, on PE 0, with the union
/// of the slices.
fn conclude<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    opts: &ReachOptions,
    run: Run<'_, S, C>,
    explored: Result<(), BddError>,
) -> Result<ReachReport, Incomplete> {
    // A level that failed found nothing that counts; deadlock detection failing after a
    // complete exploration leaves every level done.
    let levels_done = match explored {
        Ok(()) => run.levels,
        Err(_) => run.levels.saturating_sub(1),
    };
    let deadlocks = match explored {
        Ok(()) if opts.deadlocks => {
            deadlocks::find_deadlocks(m, model, run.visited.get(), opts.trace).map(Some)
        }
        Ok(()) => Ok(None),
        Err(e) => Err(e),
    };
    // The check is not exploration: it stays out of the time.
    let seconds = run.start.elapsed().as_secs_f64();
    let checked = deadlocks.and_then(|d| {
        let check = check::check_stored(m, model, run.visited.get())?;
        Ok((d, check))
    });
    let (deadlocks, stored_check) = match checked {
        Ok((d, check)) => (Ok(d), check),
        Err(e) => (Err(e), None),
    };
    let reachable = run.visited.get();
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
        reachable: run.visited,
        stored_check,
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
