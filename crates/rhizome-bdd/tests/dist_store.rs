//! The distributed node store ([`DistNodeStore`]) on 2 and 4 PEs of the local transport:
//! the same formulas give the same satcounts and node counts as the shared-memory table
//! of one PE, nodes land in every PE's partition, and collections in the middle of
//! operations keep every result right and every node unique; all of it also with the
//! operations spread over the PEs (`Manager::spread_over`: the top of each recursion
//! runs as jobs that the other PEs steal and run on their own managers).

use num_bigint::BigUint;
use proptest::prelude::*;
use rhizome::tasks::Tasks;
use rhizome::{Ctx, World};
use rhizome_bdd::{
    Bdd, BddError, Config, DistNodeStore, DistOpCache, Manager, NodeStore, SharedOpCache,
};
use std::sync::Arc;

mod support;
use support::{all_vars, assert_nodes_unique, build_twice, reference, workload};

/// Slots per PE of a distributed table: at the start, and at most.
type Slots = (usize, usize);

/// The operation cache of the PEs' managers.
#[derive(Clone, Copy, Debug)]
enum Cache {
    /// Each PE its own.
    PerPe,
    /// Shared by the PEs, reached directly (the local transport's memory).
    Shared,
    /// Shared by the PEs, reached by one-sided gets and puts (checked entries), and the
    /// node store's partitions reached one-sided too (through the node cache).
    OneSided,
}

type Dist = Manager<DistNodeStore, DistOpCache>;

/// A manager on PE `ctx`'s pool over a distributed table of `slots` per PE, its cache
/// sized from the PE's share (collective: every PE must call it).
fn dist_manager(ctx: &Ctx, (initial, max): Slots, cache: Cache) -> Dist {
    let one_sided = matches!(cache, Cache::OneSided);
    let store = DistNodeStore::growing_with(ctx, initial, max, ctx.workers(), one_sided);
    let (entries, cap) = (store.slots_per_pe(), store.capacity_per_pe());
    let cache = match cache {
        Cache::PerPe => DistOpCache::per_pe(SharedOpCache::new(entries, cap)),
        Cache::Shared => DistOpCache::shared(ctx, entries, cap),
        Cache::OneSided => DistOpCache::shared_with(ctx, entries, cap, true),
    };
    Manager::from_parts_on_pool(store, cache, Config::default(), Arc::clone(ctx.pool()))
}

/// Runs `drive` on PE 0 of `pes` PEs, each with `workers` workers, over a distributed
/// table of `slots` slots per PE, while the other PEs wait in a barrier; its result.
fn on_pe0<R: Send>(
    pes: usize,
    workers: usize,
    slots: usize,
    drive: impl Fn(&mut Dist) -> R + Sync,
) -> R {
    on_pes(pes, workers, (slots, slots), None, Cache::Shared, drive).0
}

/// [`on_pe0`] with the operations spread over the PEs, forks less than `cutoff` deep
/// sendable halves: PE 0 drives inside the scheduler's run, the others serve it. Also
/// returns the parts of operations each PE ran for another PE.
fn spread_on_pe0<R: Send>(
    pes: usize,
    workers: usize,
    slots: usize,
    cutoff: u32,
    drive: impl Fn(&mut Dist) -> R + Sync,
) -> (R, Vec<u64>) {
    on_pes(
        pes,
        workers,
        (slots, slots),
        Some(cutoff),
        Cache::Shared,
        drive,
    )
}

fn on_pes<R: Send>(
    pes: usize,
    workers: usize,
    slots: Slots,
    spread: Option<u32>,
    cache: Cache,
    drive: impl Fn(&mut Dist) -> R + Sync,
) -> (R, Vec<u64>) {
    let mut results = World::builder()
        .pes(pes)
        .workers(workers)
        .run(|ctx| {
            let mut m = dist_manager(ctx, slots, cache);
            let r = match spread {
                None => (ctx.my_pe() == 0).then(|| drive(&mut m)),
                Some(cutoff) => {
                    let tasks = Tasks::new(ctx);
                    m.spread_over(ctx, &tasks, cutoff);
                    if ctx.my_pe() == 0 {
                        Some(tasks.run(ctx, |_| drive(&mut m)))
                    } else {
                        m.serve(ctx, &tasks);
                        None
                    }
                }
            };
            ctx.barrier();
            (r, m.spread_jobs().unwrap_or(0))
        })
        .expect("the world runs");
    let jobs = results.iter().map(|r| r.1).collect();
    (results.swap_remove(0).0.expect("PE 0 drove"), jobs)
}

/// Satcounts and node counts of the workload for `seeds`, kept alive together.
fn counts<S: rhizome_bdd::NodeStore, C: rhizome_bdd::OpCache>(
    m: &mut Manager<S, C>,
    seeds: &[u64],
) -> Vec<(BigUint, usize)> {
    let mut kept = Vec::new();
    let mut guards = Vec::new();
    for &s in seeds {
        let f = m.run(&[], |c| workload(c, s)).expect("fits");
        guards.push(m.root(f));
        kept.push(f);
    }
    assert_nodes_unique(m, &kept);
    kept.iter()
        .map(|&f| (m.satcount(f, &all_vars()), m.node_count(f)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn random_formulas_have_the_same_bdds_on_one_pe_and_on_several(
        seeds in proptest::collection::vec(1u64..1 << 40, 1..4),
        pes in prop_oneof![Just(2usize), Just(4)],
        workers in 1usize..=2,
    ) {
        let one = counts(&mut Manager::new(2), &seeds);
        let many = on_pe0(pes, workers, 1 << 18, |m| counts(m, &seeds));
        prop_assert_eq!(one, many);
    }

    #[test]
    fn random_formulas_have_the_same_bdds_on_one_pe_and_spread_over_several(
        seeds in proptest::collection::vec(1u64..1 << 40, 1..4),
        pes in prop_oneof![Just(2usize), Just(4)],
        workers in 1usize..=2,
        cutoff in 1u32..8,
    ) {
        let one = counts(&mut Manager::new(2), &seeds);
        // Whether another PE takes a half is up to the scheduling (and this workload's
        // top fork is a plain `join`, whose slot hides the halves above it from other
        // PEs while it waits there): the answers must be the same either way.
        let (many, _) = spread_on_pe0(pes, workers, 1 << 18, cutoff, |m| counts(m, &seeds));
        prop_assert_eq!(one, many);
    }
}

#[test]
fn nodes_are_spread_over_every_partition() {
    let slots = 1 << 16;
    let per_pe = on_pe0(4, 1, slots, |m| {
        let f = m.run(&[], |c| workload(c, 7)).unwrap();
        let _keep = m.root(f);
        m.collect_garbage(&[]);
        let mut per_pe = [0usize; 4];
        let mut stack = vec![f];
        let mut seen = std::collections::HashSet::new();
        while let Some(g) = stack.pop() {
            if g.is_const() || !seen.insert(g.index()) {
                continue;
            }
            per_pe[g.index() as usize / slots] += 1;
            let (_, lo, hi) = m.node(g).unwrap();
            stack.extend([lo, hi]);
        }
        assert_eq!(
            seen.len(),
            m.table_used(),
            "the collection kept exactly f's nodes"
        );
        per_pe
    });
    let total: usize = per_pe.iter().sum();
    for (pe, n) in per_pe.iter().enumerate() {
        // Homes are uniform over the slots: each PE holds about a quarter.
        assert!(
            *n * 8 > total,
            "PE {pe} holds {n} of {total} nodes: {per_pe:?}"
        );
    }
}

#[test]
fn operations_that_fill_the_partitions_resume_and_give_the_reference_results() {
    let seeds: Vec<u64> = (1..=8).collect();
    let expect = reference(&seeds);
    for (pes, workers) in [(2, 2), (4, 1)] {
        // 64K slots in all: room for the kept results, not for the operations' garbage.
        let slots = (1 << 16) / pes;
        let stats = on_pe0(pes, workers, slots, |m| {
            build_twice(m, &seeds, &expect, &format!("{pes} PEs"));
            m.stats()
        });
        assert!(
            stats.retries > 0,
            "no operation filled the table: {stats:?}"
        );
        assert_eq!(stats.table_size, 1 << 16, "the table does not grow");
    }
}

#[test]
fn spread_operations_that_fill_the_partitions_resume_and_give_the_reference_results() {
    // As above, with sub-operations running on every PE: a collection (on PE 0) follows
    // failures that happen on any PE, and each PE catches up with it before its next job.
    let seeds: Vec<u64> = (1..=8).collect();
    let expect = reference(&seeds);
    // Every kind of cache: the shared ones are collected on PE 0 for every PE.
    for (pes, workers, cache) in [
        (2, 1, Cache::Shared),
        (2, 2, Cache::PerPe),
        (2, 2, Cache::OneSided),
        (4, 1, Cache::Shared),
        (4, 1, Cache::OneSided),
    ] {
        let slots = (1 << 16) / pes;
        let what = format!("{pes} PEs, spread, {cache:?} cache");
        let (stats, _) = on_pes(pes, workers, (slots, slots), Some(6), cache, |m| {
            build_twice(m, &seeds, &expect, &what);
            m.stats()
        });
        assert!(
            stats.retries > 0,
            "no operation filled the table: {stats:?}"
        );
    }
}

#[test]
fn partitions_that_start_small_grow_together_and_give_the_reference_results() {
    // Each PE's partition starts at 1K slots and may grow to 32K: the table doubles at
    // collections (on PE 0), and with the work spread, every PE takes the new size (its
    // homes, its operation cache) before its next job.
    let seeds: Vec<u64> = (1..=8).collect();
    let expect = reference(&seeds);
    for (pes, workers, spread, cache) in [
        (2, 2, None, Cache::Shared),
        (4, 1, None, Cache::OneSided),
        (2, 1, Some(6), Cache::Shared),
        (2, 1, Some(6), Cache::PerPe),
        (4, 1, Some(6), Cache::OneSided),
    ] {
        let what = format!("{pes} PEs, spread {spread:?}, {cache:?} cache");
        let (stats, _) = on_pes(pes, workers, (1 << 10, 1 << 15), spread, cache, |m| {
            build_twice(m, &seeds, &expect, &what);
            m.stats()
        });
        assert!(
            stats.table_size > pes << 10,
            "{what}: the table did not grow: {stats:?}"
        );
        assert!(
            stats.table_size <= pes << 15,
            "{what}: grew past the partitions: {stats:?}"
        );
    }
}

#[test]
fn an_operation_larger_than_all_partitions_is_out_of_nodes() {
    let err = on_pe0(2, 1, 1 << 10, |m| {
        m.run(&[], |c| workload(c, 3)).unwrap_err()
    });
    let BddError::OutOfNodes { capacity, .. } = err;
    assert_eq!(capacity, 2 << 10);
}

/// `threads` threads on each PE of `inserting` (of 2 PEs) insert the same nodes, each
/// thread from a different start, so that they race for the same buckets in both
/// partitions; the PEs for which `one_sided` holds reach the partitions one-sided, the
/// others in place. Checks that every node got one index, the same on every thread.
fn concurrent_inserts(inserting: &[usize], one_sided: fn(usize) -> bool) {
    const THREADS: usize = 3;
    const NODES: u32 = 3000;
    let seen = World::builder()
        .pes(2)
        .workers(1)
        .run(|ctx| {
            let me = ctx.my_pe();
            let store = DistNodeStore::growing_with(ctx, 1 << 13, 1 << 13, THREADS, one_sided(me));
            ctx.barrier();
            let mut seen: Vec<Vec<u64>> = Vec::new();
            if inserting.contains(&me) {
                seen = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..THREADS)
                        .map(|slot| {
                            let store = &store;
                            s.spawn(move || {
                                let mut got = vec![0; NODES as usize];
                                for k in 0..NODES {
                                    let v = (k + (slot + THREADS * me) as u32 * 751) % NODES;
                                    got[v as usize] = store
                                        .find_or_put(slot, v, Bdd::FALSE, Bdd::TRUE)
                                        .expect("room for the nodes");
                                }
                                got
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                for (v, &i) in seen[0].iter().enumerate() {
                    assert_eq!(store.node(i), (v as u32, Bdd::FALSE, Bdd::TRUE));
                }
                let homes: std::collections::HashSet<_> = seen[0]
                    .iter()
                    .map(|&i| i as usize / store.slots_per_pe())
                    .collect();
                assert_eq!(homes.len(), 2, "the nodes live on both PEs");
            }
            // Keep the partitions until every PE is done with them.
            ctx.barrier();
            seen
        })
        .expect("the world runs");
    let all: Vec<&Vec<u64>> = seen.iter().flatten().collect();
    assert_eq!(all.len(), THREADS * inserting.len());
    for other in &all[1..] {
        assert_eq!(*other, all[0], "a node got two indices");
    }
    let distinct: std::collections::HashSet<_> = all[0].iter().collect();
    assert_eq!(distinct.len(), NODES as usize);
}

#[test]
fn concurrent_inserts_of_the_same_nodes_get_one_index_each() {
    // The store is shared by a PE's threads: its one-sided accesses go through `Memory`,
    // which must be shareable as well.
    fn sync<T: Sync>() {}
    sync::<rhizome::Memory>();
    concurrent_inserts(&[0], |_| false);
    concurrent_inserts(&[0], |_| true);
}

#[test]
fn pes_reaching_the_partitions_in_place_and_one_sided_agree_on_every_index() {
    // PE 0 probes in place while PE 1 probes the same buckets one-sided, both inserting.
    concurrent_inserts(&[0, 1], |pe| pe == 1);
}

/// The union of the images of `set` (state bits at the even variables) under every
/// "flip bit `i`" relation, forward and backward, with `m`'s `rel_image_union`; its
/// satcount and node count, and whether both ways gave the same BDD (flipping a bit is
/// its own inverse).
fn flip_images<S: NodeStore, C: rhizome_bdd::OpCache>(
    m: &mut Manager<S, C>,
    seed: u64,
) -> (BigUint, usize, bool) {
    let mut guards = Vec::new();
    let mut rels = Vec::new();
    for i in 0..support::VARS {
        let (x, y) = (m.ithvar(2 * i), m.ithvar(2 * i + 1));
        let r = m.run(&[x, y], |c| c.xor(x, y)).expect("fits");
        guards.push(m.root(r));
        let vars = m.cube(&[2 * i, 2 * i + 1]).expect("fits");
        guards.push(m.root(vars));
        rels.push((r, vars));
    }
    let clauses: Vec<_> = support::formula(seed, 40)
        .iter()
        .map(|cl| cl.map(|(v, n)| (2 * v, n)))
        .collect();
    let set = m.run(&[], |c| support::cnf(c, &clauses)).expect("fits");
    guards.push(m.root(set));
    let forward = m
        .run(&[], |c| c.rel_image_union(set, &rels, false))
        .expect("fits");
    guards.push(m.root(forward));
    let backward = m
        .run(&[], |c| c.rel_image_union(set, &rels, true))
        .expect("fits");
    let state_vars: Vec<u32> = (0..support::VARS).map(|v| 2 * v).collect();
    let counts = (m.satcount(forward, &state_vars), m.node_count(forward));
    (counts.0, counts.1, forward == backward)
}

#[test]
fn image_unions_dealt_to_the_pes_give_the_results_of_one_pe() {
    // Each image runs whole on one PE (`dist/deal.rs`); partitions that start at 1K slots
    // fill up in the middle of a deal, which is collected and rerun.
    for seed in [1, 2] {
        let expect = flip_images(&mut Manager::new(1), seed);
        assert!(expect.2, "forward and backward differ on one PE");
        for (pes, workers) in [(2, 1), (2, 2), (4, 1)] {
            let what = format!("seed {seed}, {pes} PEs of {workers} workers");
            let (got, jobs) = on_pes(
                pes,
                workers,
                (1 << 10, 1 << 18),
                Some(6),
                Cache::PerPe,
                |m| (flip_images(m, seed), m.stats()),
            );
            assert_eq!(got.0, expect, "{what}");
            assert!(got.1.retries > 0, "the table never filled: {what}");
            let others: u64 = jobs[1..].iter().sum();
            assert!(others > 0, "no other PE took part: {what}");
        }
    }
}
