//! The built-in philosophers model against an explicit-state search, for every strategy
//! and several worker counts.

use num_bigint::BigUint;
use rhizome_bdd::Manager;
use rhizome_mc::builtin;
use rhizome_mc::reach::{ReachOptions, Strategy, reach};
#[path = "support/philosophers.rs"]
mod philosophers;
#[path = "support/reach.rs"]
mod support;

use philosophers::explicit;
use support::{ALL_STRATEGIES, run};

fn manager(workers: usize) -> Manager {
    support::manager(workers, 1 << 12, 1 << 22)
}

#[test]
fn philosophers_match_explicit_search_for_all_strategies() {
    for n in 2..=7 {
        let (states, levels, dead) = explicit(n);
        for workers in [1, 2, 4] {
            let mut m = manager(workers);
            let model = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
            let mut reachable = None;
            for strategy in ALL_STRATEGIES {
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
    let expect = run(&mut big, &model, Strategy::Bfs).unwrap();
    let mut small = support::manager(2, 1 << 10, 1 << 20);
    let model = builtin::build(&mut small, &format!("philosophers:{n}")).unwrap();
    for strategy in ALL_STRATEGIES {
        let r = run(&mut small, &model, strategy).unwrap();
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
    let mut m = support::manager(2, 1 << 10, 1 << 11);
    // The table may already overflow while the model is built, or later while exploring.
    let err = match builtin::build(&mut m, "philosophers:40") {
        Err(e) => e.to_string(),
        Ok(model) => run(&mut m, &model, Strategy::Bfs).unwrap_err().to_string(),
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
