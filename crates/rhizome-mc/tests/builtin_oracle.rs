//! The built-in philosophers model against an explicit-state search, for every strategy
//! and several worker counts.

use num_bigint::BigUint;
use rhizome_bdd::{Config, Manager};
use rhizome_mc::builtin;
use rhizome_mc::reach::{ReachOptions, Strategy, reach};
#[path = "support/philosophers.rs"]
mod philosophers;

use philosophers::explicit;

fn manager(workers: usize) -> Manager {
    Manager::with_config(Config {
        workers,
        initial_nodes: 1 << 12,
        max_nodes: 1 << 22,
        ..Config::default()
    })
}

#[test]
fn philosophers_match_explicit_search_for_all_strategies() {
    for n in 2..=7 {
        let (states, levels, dead) = explicit(n);
        for workers in [1, 2, 4] {
            let mut m = manager(workers);
            let model = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
            let mut reachable = None;
            for strategy in [
                Strategy::Bfs,
                Strategy::Chaining,
                Strategy::Sat,
                Strategy::Par,
            ] {
                let opts = ReachOptions {
                    deadlocks: true,
                    count_nodes: true,
                    ..Default::default()
                };
                let r = reach(&mut m, &model, strategy, &opts, &mut |_, _| {}).unwrap();
                assert_eq!(
                    r.states,
                    BigUint::from(states),
                    "n={n} {strategy} w={workers}"
                );
                let d = r.deadlocks.unwrap();
                assert_eq!(d.count, BigUint::from(dead), "deadlocks n={n} {strategy}");
                assert_eq!(
                    d.example,
                    Some(
                        vec![1; 2 * n]
                            .into_iter()
                            .enumerate()
                            .map(|(i, v)| if i % 2 == 0 { v } else { 1 })
                            .collect()
                    )
                );
                if matches!(strategy, Strategy::Bfs | Strategy::Par) {
                    assert_eq!(r.levels, Some(levels), "levels n={n} {strategy}");
                    assert_eq!(r.level_nodes.len(), levels - 1);
                }
                // Canonicity: every strategy builds the very same BDD.
                // (The first report's set stays rooted in `reachable`, so later runs
                // cannot collect it and rebuild it elsewhere.)
                match reachable.as_ref().map(|b: &rhizome_bdd::Root| b.get()) {
                    None => reachable = Some(r.reachable),
                    Some(b) => assert_eq!(b, r.reachable.get(), "n={n} {strategy}"),
                }
            }
        }
    }
}

#[test]
fn small_table_forces_collections_without_changing_results() {
    let n = 24;
    let mut big = manager(2);
    let model = builtin::build(&mut big, &format!("philosophers:{n}")).unwrap();
    let expect = reach(
        &mut big,
        &model,
        Strategy::Bfs,
        &ReachOptions::default(),
        &mut |_, _| {},
    )
    .unwrap();
    let mut small = Manager::with_config(Config {
        workers: 2,
        initial_nodes: 1 << 10,
        max_nodes: 1 << 20,
        ..Config::default()
    });
    let model = builtin::build(&mut small, &format!("philosophers:{n}")).unwrap();
    for strategy in [
        Strategy::Bfs,
        Strategy::Sat,
        Strategy::Par,
        Strategy::Chaining,
    ] {
        let r = reach(
            &mut small,
            &model,
            strategy,
            &ReachOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(r.states, expect.states, "{strategy}");
        assert_eq!(r.nodes, expect.nodes, "{strategy}");
    }
    assert!(
        small.stats().collections > 0,
        "the small table never collected"
    );
}

#[test]
fn too_small_a_table_is_a_clean_error() {
    let mut m = Manager::with_config(Config {
        workers: 2,
        initial_nodes: 1 << 10,
        max_nodes: 1 << 11,
        ..Config::default()
    });
    // The table may already overflow while the model is built, or later while exploring.
    let err = match builtin::build(&mut m, "philosophers:40") {
        Err(e) => e.to_string(),
        Ok(model) => reach(
            &mut m,
            &model,
            Strategy::Bfs,
            &ReachOptions::default(),
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string(),
    };
    assert!(err.to_string().contains("out of BDD nodes"), "{err}");
}

#[test]
fn builtin_specs_are_validated() {
    assert!(builtin::parse_spec("philosophers:1").is_err());
    assert!(builtin::parse_spec("philosophers:x").is_err());
    assert!(
        builtin::parse_spec("dragons:3")
            .unwrap_err()
            .contains("available")
    );
    assert_eq!(builtin::parse_spec("philosophers:5").unwrap().1, 5);
}
