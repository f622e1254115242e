//! The SPIN 2017 model set (format C, `spin17-beem/`): every file explored and checked
//! against the reachable set it stores (the same BDD, not only the same count) and against
//! the state count Sylvan's `mc` printed in the paper's logs (`docs/model-files.md`).
//!
//! All 53 files run with saturation, the fastest strategy on every one of them. The
//! level-by-level strategies (bfs, par, chaining) and deadlock detection run on every file
//! except the few in [`LEVEL_STRATEGIES_SKIPPED`], whose thousands of levels would take
//! minutes on CI's two cores; saturation covers those. Without the shared model files the
//! tests are reported as ignored.

#[path = "support/models.rs"]
mod models;

use models::required_models_dir;
use num_bigint::BigUint;
use rhizome_bdd::{Config, Manager};
use rhizome_mc::model::Model;
use rhizome_mc::model_file::{Format, read_model};
use rhizome_mc::reach::{ReachOptions, ReachReport, StoredCheck, Strategy, reach};

/// Published state counts (Sylvan `mc`, SPIN 2017 logs), one entry per file of the set.
const STATES: &[(&str, u64)] = &[
    ("adding.1", 7_372),
    ("anderson.2", 1_459),
    ("at.1", 39_354),
    ("bakery.2", 1_146),
    ("blocks.2", 7_057),
    ("bopdp.1", 12_642),
    ("bridge.1", 3_186),
    ("brp.2", 29_188),
    ("brp2.3", 40_184),
    ("cambridge.1", 11_339),
    ("collision.2", 12_661),
    ("cyclic_scheduler.2", 3_302),
    ("driving_phils.1", 14_889),
    ("elevator.2", 2_825),
    ("elevator2.2", 179_200),
    ("elevator_planning.3", 52_496),
    ("exit.2", 33_670),
    ("extinction.1", 8_993),
    ("firewire_link.1", 1_724),
    ("firewire_tree.2", 2_441),
    ("fischer.1", 634),
    ("frogs.1", 5_094),
    ("gear.1", 2_689),
    ("iprotocol.1", 6_814),
    ("krebs.1", 6_027),
    ("lamport.1", 29_242),
    ("lamport_nonatomic.1", 20_434),
    ("lann.2", 12_784),
    ("leader_election.1", 14_252),
    ("leader_filters.2", 29_284),
    ("lifts.1", 2_661),
    ("loyd.1", 720),
    ("lup.1", 1_404),
    ("mcs.4", 16_384),
    ("msmie.1", 2_334),
    ("needham.1", 497),
    ("peterson.2", 124_704),
    ("pgm_protocol.1", 10_175),
    ("phils.1", 80),
    ("plc.1", 7_444),
    ("pouring.1", 503),
    ("production_cell.2", 9_003),
    ("protocols.1", 2_430),
    ("public_subscribe.1", 580),
    ("reader_writer.1", 2_666),
    ("resistance.1", 13_762_624),
    ("rether.1", 2_458),
    ("rushhour.1", 1_048),
    ("schedule_world.1", 23_061),
    ("sorter.2", 7_592),
    ("synapse.1", 46_756),
    ("szymanski.1", 20_264),
    ("telephony.1", 1_280),
];

/// Files left to saturation alone, with why: their BFS needs thousands of levels or
/// seconds per strategy even on an idle machine.
const LEVEL_STRATEGIES_SKIPPED: &[(&str, &str)] = &[
    (
        "resistance.1",
        "60,372 BFS levels (minutes per level strategy)",
    ),
    (
        "plc.1",
        "1,988 BFS levels (tens of seconds per level strategy)",
    ),
    (
        "pgm_protocol.1",
        "272 BFS levels over 86,000-node sets (seconds per strategy)",
    ),
    (
        "synapse.1",
        "a 100,000-node reachable set (seconds per strategy)",
    ),
    ("cambridge.1", "seconds per level strategy"),
    ("driving_phils.1", "seconds per level strategy"),
];

fn explore(name: &str, strategy: Strategy, deadlocks: bool) -> ReachReport {
    let path = required_models_dir()
        .join("spin17-beem")
        .join(format!("{name}.bdd"));
    let stored = read_model(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.format, Format::C, "{name}");
    let mut m = Manager::with_config(Config {
        workers: 2,
        initial_nodes: 1 << 18,
        ..Config::default()
    });
    let model = Model::from_stored(&mut m, name.to_string(), &stored).unwrap();
    assert!(
        model.stored_reachable.is_some(),
        "{name} stores its reachable set"
    );
    let opts = ReachOptions {
        deadlocks,
        ..ReachOptions::default()
    };
    reach(&mut m, &model, strategy, &opts, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{name} ({strategy}): {e}"))
}

/// Checks one run against the stored set and the published count.
fn assert_exact(name: &str, states: u64, r: &ReachReport) {
    assert_eq!(
        r.stored_check,
        Some(StoredCheck::Matches),
        "{name} ({})",
        r.strategy
    );
    assert_eq!(r.states, BigUint::from(states), "{name} ({})", r.strategy);
}

/// Every file of the directory is in [`STATES`], so none goes unchecked.
fn assert_the_table_lists_every_file() {
    let dir = required_models_dir().join("spin17-beem");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".bdd").map(str::to_string)
        })
        .collect();
    files.sort();
    let listed: Vec<&str> = STATES.iter().map(|(f, _)| *f).collect();
    assert_eq!(files, listed, "a file of the set would go unchecked");
    for (skipped, _) in LEVEL_STRATEGIES_SKIPPED {
        assert!(listed.contains(skipped), "{skipped}");
    }
}

/// Saturation on every file.
fn saturate_every_file() {
    for &(name, states) in STATES {
        let r = explore(name, Strategy::Sat, false);
        assert_exact(name, states, &r);
    }
}

/// bfs, par and chaining with deadlock detection on the files they finish quickly: exact,
/// and in agreement with each other.
fn level_strategies_agree() {
    for &(name, states) in STATES {
        if let Some((_, why)) = LEVEL_STRATEGIES_SKIPPED.iter().find(|(f, _)| *f == name) {
            println!("{name}: saturation only ({why})");
            continue;
        }
        let runs: Vec<ReachReport> = [Strategy::Bfs, Strategy::Par, Strategy::Chaining]
            .into_iter()
            .map(|s| explore(name, s, true))
            .collect();
        for r in &runs {
            assert_exact(name, states, r);
            // One set, one canonical BDD: the final node count cannot depend on the run.
            assert_eq!(r.nodes, runs[0].nodes, "{name} ({})", r.strategy);
            let (d, d0) = (r.deadlocks.as_ref(), runs[0].deadlocks.as_ref());
            assert_eq!(d.unwrap().count, d0.unwrap().count, "{name} deadlocks");
        }
        // bfs and par take the same images, level for level.
        assert_eq!(runs[0].levels, runs[1].levels, "{name} levels");
        assert!(runs[0].levels.is_some_and(|l| l > 0), "{name}");
    }
}

/// One test for the whole set, its two halves side by side (a panic in either fails it).
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn every_spin17_file_reaches_its_stored_set() {
    assert_the_table_lists_every_file();
    std::thread::scope(|scope| {
        scope.spawn(saturate_every_file);
        scope.spawn(level_strategies_agree);
    });
}
