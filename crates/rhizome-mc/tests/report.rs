//! The report of a reachability run beyond its totals: the per-level records (against an
//! explicit-state search), the live counters, the partial report of a run whose table
//! fills up, and counterexample traces, replayed state by state on the model's BDDs.

#[path = "support/models.rs"]
mod models;
#[path = "support/philosophers.rs"]
mod philosophers;
#[path = "support/reach.rs"]
mod support;

use num_bigint::BigUint;
use rhizome_bdd::{Bdd, BddError, Manager};
use rhizome_mc::builtin;
use rhizome_mc::model::Model;
use rhizome_mc::model_file::read_model;
use rhizome_mc::reach::{LevelRecord, ReachOptions, Strategy, TraceStep, Watch, reach};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use support::ALL_STRATEGIES;

#[test]
fn per_level_records_follow_the_explicit_search() {
    let n = 6;
    let (per_level, _) = philosophers::explicit_levels(n);
    let (total, levels, _) = philosophers::explicit(n);
    assert_eq!(
        (per_level.len(), per_level.last()),
        (levels + 1, Some(&total))
    );
    for strategy in ALL_STRATEGIES {
        let mut m = Manager::new(2);
        let model = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
        let mut seen: Vec<LevelRecord> = Vec::new();
        let r = reach(
            &mut m,
            &model,
            strategy,
            &ReachOptions {
                count_nodes: strategy != Strategy::Par,
                ..Default::default()
            },
            &mut |m, p| {
                // The visited set handed to the callback is the record's.
                assert_eq!(m.satcount(p.visited, &model.state_vars), p.record.states);
                seen.push(p.record.clone())
            },
        )
        .unwrap();
        assert!(r.complete);
        // The callback saw exactly the records of the report, in order.
        let levels: Vec<usize> = r.per_level.iter().map(|l| l.level).collect();
        assert_eq!(
            levels,
            seen.iter().map(|l| l.level).collect::<Vec<_>>(),
            "{strategy}"
        );
        let states: Vec<BigUint> = r.per_level.iter().map(|l| l.states.clone()).collect();
        match strategy {
            Strategy::Sat => assert!(r.per_level.is_empty(), "saturation has no levels"),
            Strategy::Bfs | Strategy::Par => {
                // Level i holds the states within i steps, as the explicit search finds.
                let expect: Vec<BigUint> = per_level.iter().map(|&s| s.into()).collect();
                assert_eq!(states, expect, "{strategy}");
                assert_eq!(levels, (0..per_level.len()).collect::<Vec<_>>());
                assert_eq!(r.levels, Some(per_level.len() - 1));
                let last = r.per_level.last().unwrap();
                assert_eq!(last.frontier_nodes, Some(0), "the last level finds nothing");
                if strategy == Strategy::Par {
                    assert!(r.per_level.iter().all(|l| l.visited_nodes.is_none()));
                } else {
                    assert_eq!(last.visited_nodes, Some(r.nodes));
                }
                assert!(r.per_level.iter().all(|l| l.table_used <= l.table_size));
            }
            Strategy::Chaining => {
                // Chaining reaches at least as far per sweep, and ends at the total.
                assert_eq!(levels.len(), r.levels.unwrap() + 1);
                for (got, &bfs) in states.iter().zip(&per_level) {
                    assert!(*got >= BigUint::from(bfs), "{states:?}");
                }
                assert_eq!(states.last(), Some(&r.states));
                assert!(r.per_level.iter().all(|l| l.frontier_nodes.is_none()));
            }
        }
        let secs: Vec<f64> = r.per_level.iter().map(|l| l.seconds).collect();
        assert!(secs.windows(2).all(|w| w[0] <= w[1]), "{secs:?}");
    }
}

#[test]
fn the_watch_follows_levels_and_saturation() {
    for strategy in ALL_STRATEGIES {
        let mut m = Manager::new(2);
        let model = builtin::build(&mut m, "philosophers:8").unwrap();
        let watch = Arc::new(Watch::default());
        let opts = ReachOptions {
            watch: Some(watch.clone()),
            ..Default::default()
        };
        let r = reach(&mut m, &model, strategy, &opts, &mut |_, _| {}).unwrap();
        if strategy == Strategy::Sat {
            assert_eq!(watch.sat_groups.load(Ordering::Relaxed), model.groups.len());
            // Every group's fixpoint ran at least one round.
            assert!(watch.sat_rounds.load(Ordering::Relaxed) >= model.groups.len() as u64);
            assert!(watch.sat_group.load(Ordering::Relaxed) < model.groups.len());
        } else {
            assert_eq!(watch.level.load(Ordering::Relaxed), r.levels.unwrap());
        }
    }
}

#[test]
fn a_table_that_fills_up_gives_a_partial_report() {
    // (Chaining gets through philosophers:64 in three sweeps even in this table.)
    for strategy in [Strategy::Bfs, Strategy::Par] {
        // 16K nodes: philosophers:64 needs far more than that within a few levels.
        let mut m = support::manager(2, 1 << 10, 1 << 14);
        let model = builtin::philosophers(&mut m, 64).unwrap();
        let e = support::run(&mut m, &model, strategy)
            .expect_err("the table cannot hold philosophers:64");
        let BddError::OutOfNodes { live, capacity } = e.error;
        assert_eq!(capacity, 1 << 14);
        assert!(live <= capacity);
        let p = &e.partial;
        assert!(!p.complete);
        // Levels done before the one that failed, each recorded, the last one's states
        // being the report's.
        let done = p.levels.expect("a level strategy");
        assert_eq!(done + 1, e.level, "{strategy}");
        // (par takes a whole level as one operation: that may fail at the first.)
        assert!(
            done >= 1 || strategy == Strategy::Par,
            "{strategy}: the table held a level"
        );
        assert_eq!(p.per_level.len(), done + 1);
        assert_eq!(p.per_level.last().unwrap().states, p.states);
        assert!(p.states < BigUint::from(3_145_168_096_065_837_266_706_434u128));
        if done >= 1 {
            // The first level: any one philosopher takes a left fork.
            assert_eq!(p.per_level[1].states, BigUint::from(1u32 + 64));
        }
        // Every root the failed run took on its way out is released: only the partial
        // report's set and the model's BDDs remain, and nothing once they are dropped.
        let visited = e.partial.reachable.get();
        assert!(m.root_count() >= 1);
        drop(e);
        drop(model);
        assert_eq!(
            m.root_count(),
            0,
            "{strategy}: a root leaked (visited {visited:?})"
        );
    }
}

#[test]
fn every_strategy_releases_its_roots() {
    let opts = ReachOptions {
        deadlocks: true,
        trace: true,
        ..Default::default()
    };
    for strategy in ALL_STRATEGIES {
        let mut m = Manager::new(2);
        let model = builtin::philosophers(&mut m, 6).unwrap();
        let model_roots = m.root_count();
        assert!(model_roots > 0);
        let r = reach(&mut m, &model, strategy, &opts, &mut |_, _| {}).unwrap();
        assert_eq!(r.deadlocks.as_ref().unwrap().count, BigUint::from(1u32));
        // The report's set is the one root beyond the model's (it is not among them).
        assert_eq!(m.root_count(), model_roots + 1, "{strategy}");
        let copy = r.clone();
        drop(r);
        assert_eq!(
            m.root_count(),
            model_roots + 1,
            "{strategy}: the clone keeps it"
        );
        drop(copy);
        assert_eq!(m.root_count(), model_roots, "{strategy}");
        drop(model);
        assert_eq!(m.root_count(), 0, "{strategy}");
    }
}

// ----- traces -----

/// The value of every current-state variable in `state`.
fn assignment(model: &Model, state: &[u64]) -> HashMap<u32, bool> {
    assert_eq!(state.len(), model.state_bits.len());
    let mut out = HashMap::new();
    let mut bit = 0usize;
    for (&w, &x) in model.state_bits.iter().zip(state) {
        assert!(w == 64 || x >> w == 0, "{x} does not fit in {w} bits");
        for j in 0..w as usize {
            out.insert(
                model.state_vars[bit + j],
                (x >> (w as usize - 1 - j)) & 1 == 1,
            );
        }
        bit += w as usize;
    }
    out
}

fn contains(m: &Manager, model: &Model, set: Bdd, state: &[u64]) -> bool {
    let a = assignment(model, state);
    m.eval(set, |v| {
        *a.get(&v)
            .unwrap_or_else(|| panic!("variable {v} of a state set is no state variable"))
    })
}

/// Replays `trace`: the first state is initial, each step satisfies the named group's
/// relation and leaves every variable outside the group alone, the last is `deadlock`,
/// and no path is shorter (the deadlock is first reached at BFS level `len - 1`).
fn replay(m: &mut Manager, model: &Model, trace: &[TraceStep], deadlock: &[u64]) {
    assert!(!trace.is_empty());
    assert_eq!(trace[0].group, None);
    assert!(
        contains(m, model, model.initial, &trace[0].state),
        "not initial: {:?}",
        trace[0].state
    );
    for pair in trace.windows(2) {
        let (a, b) = (&pair[0].state, &pair[1].state);
        let gi = pair[1].group.expect("every later step names its group");
        let g = &model.groups[gi];
        let (before, after) = (assignment(model, a), assignment(model, b));
        let next_of: HashMap<u32, u32> = g
            .next_vars
            .iter()
            .copied()
            .zip(g.cur_vars.iter().copied())
            .collect();
        let holds = m.eval(g.relation, |v| match next_of.get(&v) {
            Some(cur) => after[cur],
            None => *before
                .get(&v)
                .unwrap_or_else(|| panic!("group {gi}: variable {v} unknown")),
        });
        assert!(holds, "{a:?} -> {b:?} is no transition of group {gi}");
        for (v, value) in &before {
            if !g.cur_vars.contains(v) {
                assert_eq!(
                    after[v], *value,
                    "group {gi} changed variable {v} outside it"
                );
            }
        }
    }
    assert_eq!(&trace.last().unwrap().state, deadlock);
    // Shortest: a BFS of our own finds the deadlock first at level len - 1 (with
    // relnext, so on interleaved models; the others' callers know the length).
    if !model.interleaved {
        return;
    }
    let mut visited = m.root(model.initial);
    let mut level = 0;
    while !contains(m, model, visited.get(), deadlock) {
        level += 1;
        let mut next = m.root(visited.get());
        for g in &model.groups {
            let img = m.relnext(visited.get(), g.relation, g.vars).unwrap();
            let n = next.get();
            let u = m.run(&[n, img], |c| c.or(n, img)).unwrap();
            next.set(u);
        }
        visited = next;
        assert!(
            level <= trace.len(),
            "the deadlock is not reached within the trace's length"
        );
    }
    assert_eq!(level, trace.len() - 1, "the trace is not a shortest path");
}

fn trace_of(m: &mut Manager, model: &Model, strategy: Strategy) -> (Vec<TraceStep>, Vec<u64>) {
    let opts = ReachOptions {
        deadlocks: true,
        trace: true,
        ..Default::default()
    };
    let r = reach(m, model, strategy, &opts, &mut |_, _| {}).unwrap();
    let d = r.deadlocks.expect("deadlocks were asked for");
    let example = d.example.expect("the model has deadlocks");
    (d.trace.expect("a trace was asked for"), example)
}

#[test]
fn traces_on_the_built_in_model_replay() {
    // The one deadlock of philosophers:N (every philosopher holds a left fork) is N steps
    // away.
    for n in [2, 5] {
        for strategy in ALL_STRATEGIES {
            let mut m = Manager::new(2);
            let model = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
            let (trace, example) = trace_of(&mut m, &model, strategy);
            assert_eq!(trace.len(), n + 1, "{strategy}");
            replay(&mut m, &model, &trace, &example);
        }
    }
}

#[test]
fn no_trace_without_deadlocks() {
    let mut m = Manager::new(1);
    let model = builtin::build(&mut m, "philosophers:4").unwrap();
    let opts = ReachOptions {
        deadlocks: true,
        ..Default::default()
    };
    let r = reach(&mut m, &model, Strategy::Bfs, &opts, &mut |_, _| {}).unwrap();
    assert!(r.deadlocks.unwrap().trace.is_none());
}

#[test]
fn traces_on_bakery_replay() {
    let Some(dir) = models::models_dir() else {
        eprintln!(
            "skipped: shared models not found (set RHIZOME_MODELS or put them at ../shared/models)"
        );
        return;
    };
    let stored = read_model(&dir.join("ltsmin-2017/bakery.4.bdd")).unwrap();
    for strategy in [Strategy::Bfs, Strategy::Sat] {
        let mut m = Manager::new(2);
        let model = Model::from_stored(&mut m, "bakery.4".into(), &stored).unwrap();
        let (trace, example) = trace_of(&mut m, &model, strategy);
        replay(&mut m, &model, &trace, &example);
    }
}

#[test]
fn traces_on_a_model_whose_next_variables_are_not_interleaved() {
    // philosophers:4 with the current variables first and the next ones after them, as
    // some format-A files have it: images and pre-images go through product and rename.
    let n = 4;
    let mut m = Manager::new(2);
    let base = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
    let bits = base.state_vars.len() as u32;
    let map: Vec<(u32, u32)> = (0..bits)
        .flat_map(|i| {
            [
                (base.state_vars[i as usize], i),
                (base.prime_vars[i as usize], bits + i),
            ]
        })
        .collect();
    let to = |v: u32| map.iter().find(|p| p.0 == v).unwrap().1;
    let initial = m.rename(base.initial, &map).unwrap();
    let mut renamed = vec![m.root(initial)];
    let mut groups = Vec::new();
    for g in &base.groups {
        let r = m.rename(g.relation, &map).unwrap();
        renamed.push(m.root(r));
        groups.push((
            r,
            g.cur_vars.iter().map(|&v| to(v)).collect(),
            g.next_vars.iter().map(|&v| to(v)).collect(),
        ));
    }
    let model = Model::new(
        &mut m,
        "philosophers, not interleaved".into(),
        base.state_bits.clone(),
        (0..bits).collect(),
        (bits..2 * bits).collect(),
        initial,
        groups,
    )
    .unwrap();
    assert!(!model.interleaved);
    for strategy in [Strategy::Bfs, Strategy::Chaining] {
        let (trace, example) = trace_of(&mut m, &model, strategy);
        assert_eq!(trace.len(), n + 1, "{strategy}");
        replay(&mut m, &model, &trace, &example);
    }
}
