//! Reachability in a node table far too small for the run: the table fills in the middle
//! of images, collects, grows, and the counts stay the closed form's.

use num_bigint::BigUint;
use rhizome_bdd::{Config, Manager};
use rhizome_mc::builtin;
use rhizome_mc::reach::Strategy;
#[path = "support/philosophers.rs"]
mod philosophers;
#[path = "support/reach.rs"]
mod support;

use philosophers::explicit;
use support::{ALL_STRATEGIES, run};

/// Reachable states of `philosophers:n`: the trace of the cube of the transfer matrix of
/// one philosopher and fork (checked against explicit search below).
fn closed_form(n: usize) -> BigUint {
    let m = [[1u32, 1, 1], [1, 1, 1], [1, 0, 0]].map(|r| r.map(BigUint::from));
    let mut p: [[BigUint; 3]; 3] =
        std::array::from_fn(|i| std::array::from_fn(|j| BigUint::from(u32::from(i == j))));
    for _ in 0..n {
        p = std::array::from_fn(|i| {
            std::array::from_fn(|j| (0..3).map(|k| &p[i][k] * &m[k][j]).sum())
        });
    }
    (0..3).map(|i| p[i][i].clone()).sum()
}

fn small_manager(workers: usize, grow_on_full: bool) -> Manager {
    Manager::with_config(Config {
        workers,
        initial_nodes: 1 << 10,
        max_nodes: 1 << 22,
        grow_on_full_below: if grow_on_full { usize::MAX } else { 0 },
        ..Config::default()
    })
}

#[test]
fn closed_form_matches_explicit_search() {
    for n in 2..=7 {
        assert_eq!(closed_form(n), BigUint::from(explicit(n).0), "n={n}");
    }
}

#[test]
fn bfs_in_a_small_table_collects_grows_and_counts_right() {
    let n = 32;
    for workers in [1, 2, 4] {
        for grow_on_full in [true, false] {
            let mut m = small_manager(workers, grow_on_full);
            let model = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
            for strategy in ALL_STRATEGIES {
                let r = run(&mut m, &model, strategy).unwrap();
                let what = format!("{strategy}, {workers} workers, grow {grow_on_full}");
                assert_eq!(r.states, closed_form(n), "{what}");
                if matches!(strategy, Strategy::Bfs | Strategy::Par) {
                    assert_eq!(r.levels, Some(n + 1), "{what}");
                }
            }
            let st = m.stats();
            assert!(st.collections > 0, "never collected: {st:?}");
            assert!(st.retries > 0, "no image filled the table: {st:?}");
            assert!(st.table_size > 1 << 10, "the table never grew: {st:?}");
        }
    }
}

#[test]
fn growth_at_every_collection_needs_fewer_collections() {
    // The point of growing at every collection: a run whose working set (the garbage
    // between collections, found again through the unique table and the cache) exceeds
    // the table collects a few times, not once per table-full of garbage.
    let n = 64;
    let collections = |grow_on_full| {
        let mut m = small_manager(2, grow_on_full);
        let model = builtin::build(&mut m, &format!("philosophers:{n}")).unwrap();
        let r = run(&mut m, &model, Strategy::Bfs).unwrap();
        assert_eq!(r.states, closed_form(n));
        m.stats().collections
    };
    let (aggressive, lazy) = (collections(true), collections(false));
    assert!(
        aggressive < lazy,
        "{aggressive} collections growing, {lazy} not"
    );
}
