//! The published state counts (and, for the thesis files, BFS levels and final node
//! counts) listed in `docs/model-files.md`, on the model files of the shared directory.
//! Only the oracles that finish within seconds run here; the rest are in
//! `scripts/bench-reach.sh`. The shared models are found at `$RHIZOME_MODELS`, else at
//! `../shared/models` beside the repository (by `build.rs`); when absent, the tests are
//! reported as ignored.

#[path = "support/models.rs"]
mod models;
#[path = "support/reach.rs"]
mod support;

use models::required_models_dir;
use num_bigint::BigUint;
use rhizome_mc::reach::Strategy;
use support::{ALL_STRATEGIES, run_file};

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

fn run(file: &str, strategy: Strategy, workers: usize) -> (BigUint, Option<usize>, usize) {
    let r = run_file(&required_models_dir(), file, strategy, workers);
    (r.states, r.levels, r.nodes)
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn published_state_counts() {
    for o in FAST {
        let (states, levels, nodes) = run(o.file, o.strategy, 2);
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
    for strategy in ALL_STRATEGIES {
        for workers in [1, 2, 3] {
            let (states, _, nodes) = run(file, strategy, workers);
            assert_eq!(states, BigUint::from(29_641u32), "{strategy} w={workers}");
            match seen {
                None => seen = Some(nodes),
                Some(n) => assert_eq!(n, nodes, "{strategy} w={workers}"),
            }
        }
    }
}
