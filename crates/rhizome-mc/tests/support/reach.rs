//! Running reachability in the tests: every strategy, a manager with a node table of a
//! given size, a run with default options and no progress display, and a stored model
//! file read from the models directory and run. Included by path by the tests of
//! `rhizome-mc` that run `reach`.

#![allow(dead_code)] // not every including test file needs every helper

use rhizome_bdd::{Config, Manager, NodeStore, OpCache};
use rhizome_mc::model::Model;
use rhizome_mc::model_file::read_model;
use rhizome_mc::reach::{Incomplete, ReachOptions, ReachReport, Strategy, reach};
use std::path::Path;

/// Every strategy, in the order of the command's help.
pub const ALL_STRATEGIES: [Strategy; 4] = [
    Strategy::Bfs,
    Strategy::Chaining,
    Strategy::Sat,
    Strategy::Par,
];

/// A manager of `workers` workers whose node table starts at `initial_nodes` and may
/// grow to `max_nodes`.
pub fn manager(workers: usize, initial_nodes: usize, max_nodes: usize) -> Manager {
    Manager::with_config(Config {
        workers,
        initial_nodes,
        max_nodes,
        ..Config::default()
    })
}

/// `reach` with the default options and no progress display.
pub fn run<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
) -> Result<ReachReport, Incomplete> {
    reach(m, model, strategy, &ReachOptions::default(), &mut |_, _| {})
}

/// Reads the model file `dir/file`, builds it in a default manager of `workers` workers
/// and runs `strategy` on it; panics with the reader's or the run's error.
pub fn run_file(dir: &Path, file: &str, strategy: Strategy, workers: usize) -> ReachReport {
    let mut m = Manager::with_config(Config {
        workers,
        ..Config::default()
    });
    explore_file(&mut m, dir, file, strategy, &ReachOptions::default())
}

/// Reads the model file `dir/file`, builds it in `m` and runs `strategy` with `opts` on
/// it; panics with the reader's or the run's error.
pub fn explore_file<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    dir: &Path,
    file: &str,
    strategy: Strategy,
    opts: &ReachOptions,
) -> ReachReport {
    let stored = read_model(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
    let model = Model::from_stored(m, file.to_string(), &stored).unwrap();
    reach(m, &model, strategy, opts, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{file} ({strategy}): {e}"))
}
