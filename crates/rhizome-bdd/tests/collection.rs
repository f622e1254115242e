//! The collector under load: operations on several workers fill a small table again and
//! again, so collections happen in the middle of operations (the operation unwinds, the
//! collection keeps its partial results and the cache entries over surviving nodes, the
//! operation runs again). Every result is checked against a reference computed in a table
//! large enough never to collect, or against truth tables.

use proptest::prelude::*;
use rhizome_bdd::{Bdd, BddError, CollectPlan, Config, Manager, NodeStore, SharedNodeTable};

mod support;
use support::{all_vars, build_twice, reference, workload};

/// A manager of two workers whose node table starts at `initial_nodes` slots and may grow
/// to `max_nodes`.
fn two_worker_manager(initial_nodes: usize, max_nodes: usize) -> Manager {
    Manager::with_config(Config {
        workers: 2,
        initial_nodes,
        max_nodes,
        ..Config::default()
    })
}

#[test]
fn operations_that_fill_the_table_resume_and_give_the_reference_results() {
    let seeds: Vec<u64> = (1..=12).collect();
    let expect = reference(&seeds);
    for workers in [1, 2, 4] {
        for grow_on_full in [true, false] {
            let mut m = Manager::with_config(Config {
                workers,
                initial_nodes: 1 << 10,
                // Without growth at every collection the table grows only when live data
                // or a failing operation demands it: many more collections mid-operation.
                max_nodes: 1 << 20,
                grow_on_full_below: if grow_on_full { usize::MAX } else { 0 },
                ..Config::default()
            });
            let what = format!("{workers} workers, grow {grow_on_full}");
            build_twice(&mut m, &seeds, &expect, &what);
            let st = m.stats();
            assert!(st.retries > 0, "no operation filled the table: {st:?}");
            assert!(st.collections >= st.retries, "{st:?}");
            if grow_on_full {
                assert!(st.table_size > 1 << 10, "the table never grew: {st:?}");
            }
        }
    }
}

#[test]
fn growth_at_every_collection_stops_at_the_limit() {
    let seeds: Vec<u64> = (1..=24).collect();
    let expect = reference(&seeds);
    let mut m = Manager::with_config(Config {
        workers: 2,
        initial_nodes: 1 << 10,
        max_nodes: 1 << 14,
        grow_on_full_below: usize::MAX,
        ..Config::default()
    });
    let mut failed = 0;
    for (i, &s) in seeds.iter().enumerate() {
        // At the limit an operation may not fit; those that succeed must be right.
        match m.run(&[], |c| workload(c, s)) {
            Ok(f) => assert_eq!(m.satcount(f, &all_vars()), expect[i], "seed {s}"),
            Err(BddError::OutOfNodes { capacity, .. }) => {
                assert_eq!(capacity, 1 << 14);
                failed += 1;
            }
        }
        assert!(m.table_size() <= 1 << 14, "grew past max_nodes");
    }
    assert_eq!(m.table_size(), 1 << 14, "{:?}", m.stats());
    assert!(failed < seeds.len(), "nothing fit in 16K slots");
}

/// A collection keeping what was made since `keep_since`, growing while an eighth of the
/// table is live.
fn plan(keep_since: Option<usize>) -> CollectPlan {
    CollectPlan {
        keep_since,
        grow_threshold: 0.125,
        force_grow: false,
    }
}

/// `n` distinct nodes `(first + i, FALSE, TRUE)`, made through the outside slot.
fn distinct_nodes(t: &SharedNodeTable, first: u32, n: u32) -> Vec<u64> {
    (first..first + n)
        .map(|v| {
            t.with_outside_slot(|s| t.find_or_put(s, v, Bdd::FALSE, Bdd::TRUE))
                .expect("room for the test's nodes")
        })
        .collect()
}

#[test]
fn partial_results_are_kept_but_only_live_data_grows_the_table() {
    // 4096 slots, grown while more than 1/8 (512 nodes) is live. 100 nodes stay reachable
    // from a root; 1500 more were made by an operation that failed after the mark.
    let make = || {
        let mut t = SharedNodeTable::new(1 << 12, 1 << 16, 1);
        let live = distinct_nodes(&t, 0, 100);
        // A collection hands back the allocation cursors, so what is made after the mark
        // lies in regions handed out after it, as in an operation that starts afresh.
        let roots = live.iter().map(|&i| Bdd::from_raw(i));
        assert!(!t.collect(&mut roots.into_iter(), plan(None)));
        let mark = t.alloc_mark();
        let partial = distinct_nodes(&t, 100, 1500);
        (t, live, mark, partial)
    };
    let (mut t, live, mark, partial) = make();
    let roots = live.iter().map(|&i| Bdd::from_raw(i));
    let grew = t.collect(&mut roots.into_iter(), plan(Some(mark)));
    // The partial results survive (so the operation's rerun finds them), but they are
    // the rerun's working set, gone by the next collection: they must not size the table.
    assert!(!grew, "grew for partial results");
    assert_eq!(t.size(), 1 << 12);
    assert!(live.iter().chain(&partial).all(|&i| t.is_live(i)));
    assert_eq!(t.used_count(), 100 + 1500, "roots and partial results");

    // The same nodes reachable from roots are live data: the table grows to keep them
    // under 1/8 of it (1600 nodes: 16384 slots).
    let (mut t, live, _, partial) = make();
    let roots = live.iter().chain(&partial).map(|&i| Bdd::from_raw(i));
    assert!(t.collect(&mut roots.into_iter(), plan(None)));
    assert_eq!(t.size(), 1 << 14);
    assert_eq!(t.used_count(), 1600);
}

#[test]
fn an_operation_larger_than_the_limit_is_out_of_nodes() {
    let mut m = two_worker_manager(1 << 10, 1 << 10);
    let vars = all_vars();
    let r = m.run(&[], |c| workload(c, 7));
    match r {
        Err(BddError::OutOfNodes { capacity, .. }) => assert_eq!(capacity, 1 << 10),
        Ok(f) => panic!("fits in 1024 slots? {} nodes", m.node_count(f)),
    }
    // The manager stays usable: something small still works, and exactly.
    let x = m.ithvar(0);
    let y = m.ithvar(vars[1]);
    let f = m.and(x, y).unwrap();
    assert_eq!(m.satcount(f, &vars[..2]), 1u32.into());
}

/// One step of a random session: build from live functions, drop some, collect.
#[derive(Debug, Clone)]
enum Step {
    And(usize, usize),
    Xor(usize, usize),
    Ite(usize, usize, usize),
    Exists(usize, u32),
    Forget(usize),
    Collect,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..64usize, 0..64usize).prop_map(|(a, b)| Step::And(a, b)),
        3 => (0..64usize, 0..64usize).prop_map(|(a, b)| Step::Xor(a, b)),
        2 => (0..64usize, 0..64usize, 0..64usize).prop_map(|(a, b, c)| Step::Ite(a, b, c)),
        1 => (0..64usize, 0..8u32).prop_map(|(a, v)| Step::Exists(a, v)),
        2 => (0..64usize).prop_map(Step::Forget),
        1 => Just(Step::Collect),
    ]
}

const SMALL_VARS: u32 = 8;
type Table = [bool; 1 << SMALL_VARS];

fn truth(m: &Manager, f: Bdd) -> Table {
    let mut t = [false; 1 << SMALL_VARS];
    for (row, out) in t.iter_mut().enumerate() {
        *out = m.eval(f, |v| row >> v & 1 == 1);
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Functions die and are collected while the cache still holds results over them:
    /// whatever survives a collection must still be right when later operations find it
    /// (a freed slot is reused for another node, so a stale entry would show).
    #[test]
    fn cache_entries_kept_across_collections_stay_right(steps in prop::collection::vec(step(), 1..120)) {
        let mut m = two_worker_manager(1 << 10, 1 << 16);
        // Live functions with their truth tables; the literals are always there. `guards[i]`
        // keeps `live[i].0`.
        let mut guards = Vec::new();
        let mut live: Vec<(Bdd, Table)> = (0..SMALL_VARS)
            .map(|v| {
                let x = m.ithvar(v);
                guards.push(m.root(x));
                (x, truth(&m, x))
            })
            .collect();
        for s in steps {
            let pick = |i: usize| i % live.len();
            let made = match s {
                Step::And(a, b) => {
                    let ((f, tf), (g, tg)) = (live[pick(a)], live[pick(b)]);
                    Some((m.and(f, g).unwrap(), std::array::from_fn(|r| tf[r] && tg[r])))
                }
                Step::Xor(a, b) => {
                    let ((f, tf), (g, tg)) = (live[pick(a)], live[pick(b)]);
                    Some((m.xor(f, g).unwrap(), std::array::from_fn(|r| tf[r] != tg[r])))
                }
                Step::Ite(a, b, c) => {
                    let ((f, tf), (g, tg), (h, th)) = (live[pick(a)], live[pick(b)], live[pick(c)]);
                    Some((m.ite(f, g, h).unwrap(), std::array::from_fn(|r| if tf[r] { tg[r] } else { th[r] })))
                }
                Step::Exists(a, v) => {
                    let (f, tf) = live[pick(a)];
                    let cube = m.cube(&[v]).unwrap();
                    let bit = 1 << v;
                    Some((m.exists(f, cube).unwrap(), std::array::from_fn(|r| tf[r | bit] || tf[r & !bit])))
                }
                Step::Forget(a) => {
                    let i = pick(a);
                    if i >= SMALL_VARS as usize {
                        live.swap_remove(i);
                        guards.swap_remove(i);
                    }
                    None
                }
                Step::Collect => {
                    m.collect_garbage(&[]);
                    None
                }
            };
            if let Some((f, t)) = made {
                prop_assert_eq!(truth(&m, f), t);
                guards.push(m.root(f));
                live.push((f, t));
            }
            // Every live function still denotes what it did.
            for &(f, t) in &live {
                prop_assert_eq!(truth(&m, f), t);
            }
        }
    }
}
