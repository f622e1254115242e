//! The published state counts (and, for the thesis files, BFS levels and final node
//! counts) listed in `docs/model-files.md`, on the model files of the shared directory.
//! Only the oracles that finish within seconds run here; the rest are in
//! `scripts/bench-reach.sh`. The shared models are found at `$RHIZOME_MODELS`, else at
//! `../shared/models` beside the repository (by `build.rs`); when absent, the tests are
//! reported as ignored.

#[path = "support/models.rs"]
mod models;

use models::required_models_dir;
use num_bigint::BigUint;
use rhizome_bdd::{Config, Manager};
use rhizome_mc::model::Model;
use rhizome_mc::model_file::read_model;
use rhizome_mc::reach::{ReachOptions, Strategy, reach};

struct Oracle {
    file: &'static str,
    strategy: Strategy,
    states: u64,
    /// Levels and final nodes, checked with `bfs` (thesis figures).
    levels_nodes: Option<(usize, usize)>,
}

const FAST: &[Oracle] = &[
    Oracle {
        file: "ltsmin-2017/anderson.4.bdd",
        strategy: Strategy::Bfs,
        states: 29_641,
        levels_nodes: None,
    },
    Oracle {
        file: "ltsmin-2017/bakery.4.bdd",
        strategy: Strategy::Sat,
        states: 157_003,
        levels_nodes: None,
    },
    Oracle {
        file: "ltsmin-2017/schedule_world.2.bdd",
        strategy: Strategy::Sat,
        states: 1_570_340,
        levels_nodes: None,
    },
    Oracle {
        file: "ltsmin-2017/collision.4.bdd",
        strategy: Strategy::Sat,
        states: 41_465_543,
        levels_nodes: None,
    },
    Oracle {
        file: "thesis-2014/anderson.1.8-rgs.bdd",
        strategy: Strategy::Bfs,
        states: 352_664,
        levels_nodes: Some((1_293, 22_221)),
    },
    Oracle {
        file: "thesis-2014/schedule_world.2.8-rgs.bdd",
        strategy: Strategy::Sat,
        states: 1_570_340,
        levels_nodes: None,
    },
];

fn run(file: &str, strategy: Strategy, workers: usize) -> Option<(BigUint, Option<usize>, usize)> {
    let dir = required_models_dir();
    let path = dir.join(file);
    let stored = read_model(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut m = Manager::with_config(Config {
        workers,
        ..Config::default()
    });
    let model = Model::from_stored(&mut m, file.to_string(), &stored).unwrap();
    let r = reach(
        &mut m,
        &model,
        strategy,
        &ReachOptions::default(),
        &mut |_, _| {},
    )
    .unwrap();
    Some((r.states, r.levels, r.nodes))
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn published_state_counts() {
    for o in FAST {
        let Some((states, levels, nodes)) = run(o.file, o.strategy, 2) else {
            return;
        };
        assert_eq!(
            states,
            BigUint::from(o.states),
            "{} ({})",
            o.file,
            o.strategy
        );
        if let Some((l, n)) = o.levels_nodes {
            assert_eq!(levels, Some(l), "{} levels", o.file);
            assert_eq!(nodes, n, "{} final nodes", o.file);
        }
    }
}

/// All strategies and worker counts agree on a model with a published count, including
/// the node count of the final BDD (canonical form: same function, same BDD).
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn strategies_and_workers_agree() {
    let file = "ltsmin-2017/anderson.4.bdd";
    let mut seen = None;
    for strategy in [
        Strategy::Bfs,
        Strategy::Chaining,
        Strategy::Sat,
        Strategy::Par,
    ] {
        for workers in [1, 2, 3] {
            let Some((states, _, nodes)) = run(file, strategy, workers) else {
                return;
            };
            assert_eq!(states, BigUint::from(29_641u32), "{strategy} w={workers}");
            match seen {
                None => seen = Some(nodes),
                Some(n) => assert_eq!(n, nodes, "{strategy} w={workers}"),
            }
        }
    }
}
