//! The sizes of a PE that does a share of the work (`Config::for_share`) and the memory
//! breakdown (`Manager::memory_use`): a share manager's table stays within one PE's, never
//! below its live nodes, and every result is the reference's (every node findable after
//! each collection: a rebuilt result is the same edge).

use rhizome_bdd::{Config, Manager};

mod support;
use support::{all_vars, build_twice, reference, workload};

/// One PE's sizes for the tests: a small table that grows at every full collection up to
/// 64K slots, then only for live data, a failing operation or thrashing.
fn one_pe() -> Config {
    Config {
        workers: 2,
        initial_nodes: 1 << 12,
        max_nodes: 1 << 20,
        grow_on_full_below: 1 << 16,
        ..Config::default()
    }
}

#[test]
fn a_share_of_the_budgets_keeps_the_table_within_one_pes_and_the_results_exact() {
    let seeds: Vec<u64> = (1..=12).collect();
    let expect = reference(&seeds);
    let mut whole = Manager::with_config(one_pe());
    build_twice(&mut whole, &seeds, &expect, "one PE");
    for pes in [2, 4] {
        let config = one_pe().for_share(pes);
        assert_eq!(config.grow_on_full_below, (1 << 16) / pes);
        assert_eq!(config.thrashing_collections, 4 * pes as u32);
        assert_eq!(
            config.grow_threshold,
            (one_pe().grow_threshold * pes as f64).min(0.5)
        );
        assert_eq!(config.max_nodes, 1 << 20, "the memory limit is per PE");
        let mut m = Manager::with_config(config);
        build_twice(&mut m, &seeds, &expect, &format!("share of {pes}"));
        let st = m.stats();
        assert!(st.collections > 0, "never collected: {st:?}");
        assert!(
            st.table_size <= whole.stats().table_size,
            "share of {pes}: {st:?}, one PE: {:?}",
            whole.stats()
        );
        // Never smaller than what it holds: the live nodes fit, below the load limit.
        m.collect_garbage(&[]);
        assert!(m.table_used() * 5 <= m.table_size() * 4, "{:?}", m.stats());
    }
}

#[test]
fn fewer_thrashing_collections_grow_the_table_sooner() {
    let seeds: Vec<u64> = (1..=16).collect();
    let expect = reference(&seeds);
    let sizes: Vec<usize> = [1, u32::MAX]
        .into_iter()
        .map(|thrashing_collections| {
            let mut m = Manager::with_config(Config {
                grow_on_full_below: 0,
                thrashing_collections,
                ..one_pe()
            });
            build_twice(
                &mut m,
                &seeds,
                &expect,
                &format!("thrashing {thrashing_collections}"),
            );
            m.table_size()
        })
        .collect();
    assert!(sizes[0] > sizes[1], "{sizes:?}");
}

#[test]
fn memory_use_reports_the_tables_as_they_fill() {
    let mut m = Manager::with_config(Config {
        initial_nodes: 1 << 18,
        max_nodes: 1 << 18,
        ..one_pe()
    });
    let before = m.memory_use();
    let mut kept = Vec::new();
    for s in 1..=6 {
        let f = m.run(&[], |c| workload(c, s)).unwrap();
        kept.push(m.root(f));
        assert!(m.satcount(f, &all_vars()) > 0u32.into() || f.is_const());
    }
    let after = m.memory_use();
    assert_eq!(after.table_slots, 1 << 18);
    let (t0, t1) = (before.table.unwrap(), after.table.unwrap());
    let (c0, c1) = (before.cache.unwrap(), after.cache.unwrap());
    // The nodes made are 16 bytes each, in memory; nothing beyond the reserved size is.
    assert!(after.claimed > before.claimed, "{before:?} -> {after:?}");
    assert!(
        t1.nodes >= t0.nodes && t1.nodes >= after.claimed * 16 / 2,
        "{after:?}"
    );
    assert!(t1.nodes <= (1 << 18) * 16 + (2 << 20), "{after:?}");
    assert!(
        t1.buckets > 0 && t1.buckets <= (1 << 18) * 8 + (2 << 20),
        "{after:?}"
    );
    assert!(t1.bitmap > 0, "{after:?}");
    assert_eq!(c1.entries, 1 << 18);
    assert!(
        c1.bytes > c0.bytes || c0.bytes > 0,
        "{before:?} -> {after:?}"
    );
    assert!(c1.bytes <= (1 << 18) * 32 + (4 << 20), "{after:?}");
}
