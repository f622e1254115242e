//! The memo cache shared by the PEs ([`DistOpCache::shared`]) under stress: every PE's
//! threads store and look up the same keys at once in a cache far too small for them,
//! so entries are overwritten while others read them. A lookup may miss, never return
//! a result stored under another key, nor a torn one. Both ways of reaching the shared
//! entries: directly (seqlock) and one-sided (checked entries).

use rhizome::World;
use rhizome_bdd::{Bdd, DistOpCache, OpCache};

/// The result stored for key `i`: an edge (spare bits clear) that names `i`.
fn result_of(i: u64) -> Bdd {
    Bdd::from_raw((i * 7 + 1) & ((1 << 40) - 1) | (i & 1) << 63)
}

/// Key `i`: an operation id in the first word, so no key is zero.
fn key(i: u64) -> (u64, u64, u64) {
    (1 << 40 | i, i * 3 + 1, i % 5)
}

fn stress(pes: usize, threads: usize, one_sided: bool) {
    const KEYS: u64 = 3000;
    const ROUNDS: u64 = 4;
    let hits = World::builder()
        .pes(pes)
        .workers(1)
        .run(|ctx| {
            // 1024 entries a PE; one-sided, a local cache in front.
            let cache = DistOpCache::shared_with(ctx, 1024, 1024, one_sided);
            assert_eq!(cache.shared_is_direct(), Some(!one_sided));
            // (Each part has at least 1024 entries.)
            let front = if one_sided { 1024 } else { 0 };
            assert_eq!(cache.entries(), (front, 1024));
            ctx.barrier();
            let hits: u64 = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let cache = &cache;
                        let me = (ctx.my_pe() * threads + t) as u64;
                        s.spawn(move || {
                            let mut hits = 0;
                            for r in 0..ROUNDS * KEYS {
                                // Each thread walks the keys from its own start.
                                let i = (r + me * 997) % KEYS;
                                let (a, b, c) = key(i);
                                if let Some(got) = cache.get(a, b, c) {
                                    assert_eq!(got, result_of(i), "key {i}: a wrong result");
                                    hits += 1;
                                }
                                cache.put(a, b, c, result_of(i));
                                // A key of another thread's stride, read back at once.
                                let j = (i * 31 + me) % KEYS;
                                let (a, b, c) = key(j);
                                if let Some(got) = cache.get(a, b, c) {
                                    assert_eq!(got, result_of(j), "key {j}: a wrong result");
                                    hits += 1;
                                }
                            }
                            hits
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).sum()
            });
            ctx.barrier();
            // Quiet now: a key stored last by this PE is found by every PE (unless a
            // later store of another PE took its entry, which the barrier rules out for
            // the key stored after it).
            if ctx.my_pe() == 0 {
                let (a, b, c) = key(KEYS + 1);
                cache.put(a, b, c, result_of(KEYS + 1));
            }
            ctx.barrier();
            let (a, b, c) = key(KEYS + 1);
            let found = cache.get(a, b, c);
            ctx.barrier();
            (hits, found)
        })
        .expect("the world runs");
    for (pe, (hits, found)) in hits.iter().enumerate() {
        assert!(*hits > 0, "PE {pe}: no lookup ever hit");
        assert_eq!(
            *found,
            Some(result_of(3001)),
            "PE {pe} misses PE 0's last store"
        );
    }
}

#[test]
fn concurrent_stores_and_lookups_from_every_pe_never_give_a_wrong_result_directly() {
    stress(2, 2, false);
    stress(4, 1, false);
}

#[test]
fn concurrent_stores_and_lookups_from_every_pe_never_give_a_wrong_result_one_sided() {
    stress(2, 2, true);
    stress(4, 1, true);
}

#[test]
fn a_shared_cache_reached_in_place_answers_from_the_shared_entries_alone() {
    World::builder()
        .pes(2)
        .run(|ctx| {
            let cache = DistOpCache::shared(ctx, 1 << 12, 1 << 12);
            // The local transport maps every PE's partition here: no cache in front.
            assert_eq!(cache.shared_is_direct(), Some(true));
            assert_eq!(cache.entries(), (0, 1 << 11));
            if ctx.my_pe() == 0 {
                cache.put(1 << 40, 2, 0, Bdd::TRUE);
            }
            ctx.barrier();
            // Both PEs find it, PE 0 too in the shared entries (nothing local to hit).
            assert_eq!(cache.get(1 << 40, 2, 0), Some(Bdd::TRUE));
            assert_eq!(cache.get(1 << 40, 3, 0), None);
            let stats = cache.stats().expect("counted");
            assert_eq!(
                (stats.lookups, stats.local_hits, stats.shared_hits),
                (2, 0, 1)
            );
            ctx.barrier();
        })
        .unwrap();
}

#[test]
fn a_per_pe_cache_keeps_results_to_its_pe() {
    World::builder()
        .pes(2)
        .run(|ctx| {
            let cache = DistOpCache::per_pe(rhizome_bdd::SharedOpCache::new(1024, 1024));
            assert!(!cache.is_shared());
            if ctx.my_pe() == 0 {
                cache.put(1 << 40, 2, 0, Bdd::TRUE);
            }
            ctx.barrier();
            let expect = (ctx.my_pe() == 0).then_some(Bdd::TRUE);
            assert_eq!(cache.get(1 << 40, 2, 0), expect);
            let stats = cache.stats().expect("counted");
            assert_eq!(stats.lookups, 1);
            assert_eq!(stats.shared_hits, 0);
        })
        .unwrap();
}
