//! SPMD test bodies of the distributed hash table, shared by `cargo test` (local
//! transport, 1, 2 and 4 PEs: `tests/dht.rs`) and by `examples/collections_tests.rs` (any
//! transport, e.g. under `mpirun -np 4`: `tests/mpi.rs`).
//!
//! Each body runs on every PE and panics on failure, which fails the whole run.

use rhizome::Ctx;
use rhizome_collections::dht::{Access, Config, DistributedHashTable, Full, Index};

/// A test: it runs on every PE.
type Body = fn(&Ctx);

/// Every test, with its name, in the order the example runs them.
pub const TESTS: &[(&str, Body)] = &[
    ("same_keys_one_sided", |c| {
        same_keys(c, Access::OneSided, true)
    }),
    ("same_keys_owner_computes", |c| {
        same_keys(c, Access::OwnerComputes, true)
    }),
    ("same_keys_one_sided_no_direct", |c| {
        same_keys(c, Access::OneSided, false)
    }),
    ("same_keys_owner_computes_no_direct", |c| {
        same_keys(c, Access::OwnerComputes, false)
    }),
    ("full_one_sided", |c| full(c, Access::OneSided, true)),
    ("full_owner_computes", |c| {
        full(c, Access::OwnerComputes, true)
    }),
    ("full_one_sided_no_direct", |c| {
        full(c, Access::OneSided, false)
    }),
    ("wide_keys_and_zero_key", wide_keys_and_zero_key),
];

/// Worker threads per PE that insert beside the PE's main thread.
const WORKERS: usize = 2;

/// The `i`-th test key: 16 bytes, as a BDD node.
fn key(i: u64) -> [u64; 2] {
    [i, i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xABCD]
}

/// Keys `0..n` in the order of inserter `stream` (a PE's thread): the even ones all in
/// the same order, so that they race for the same key at the same moment (and the same
/// bucket's compare-and-swap); the odd ones each from a different start, so that some
/// find keys that others are still writing.
fn keys_in_order(n: u64, stream: u64) -> Vec<[u64; 2]> {
    let shift = if stream.is_multiple_of(2) {
        0
    } else {
        stream.wrapping_mul(7919) % n
    };
    (0..n).map(|i| key((i + shift) % n)).collect()
}

/// Every PE and every worker thread of it inserts the same keys at once; `access` is the
/// mode of the main thread's batches (the workers are one-sided, the only way from a
/// thread). Each key must get exactly one index, the same everywhere, and `get` must
/// return the key at it. `direct`: partitions in this process's memory probed in place
/// (every one with the local transport), or everything through one-sided operations.
fn same_keys(ctx: &Ctx, access: Access, direct: bool) {
    const KEYS: u64 = 3000;
    let config = Config::new(4096 / ctx.num_pes() + 64)
        .chunk(8)
        .access(access)
        .batch(100)
        .direct(direct);
    let table = DistributedHashTable::<[u64; 2]>::new(ctx, config).unwrap();
    let me = ctx.my_pe() as u64;
    let streams = 1 + WORKERS as u64;
    let (main, workers) = std::thread::scope(|s| {
        let handles: Vec<_> = (1..streams)
            .map(|t| {
                let table = &table;
                s.spawn(move || {
                    keys_in_order(KEYS, me * streams + t)
                        .iter()
                        .map(|k| table.find_or_put(k).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mine = keys_in_order(KEYS, me * streams);
        // Inside `finish` so that this PE serves the others' batches until all are done.
        let main = ctx.finish(|| table.find_or_put_many(ctx, &mine).unwrap());
        let workers: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (main, workers)
    });
    // Back in the order of the keys, per inserter.
    let mut by_key = vec![Vec::new(); KEYS as usize];
    let mut inserted = 0u64;
    for (t, results) in std::iter::once(main).chain(workers).enumerate() {
        let order = keys_in_order(KEYS, me * streams + t as u64);
        for (k, (index, fresh)) in order.iter().zip(results) {
            by_key[k[0] as usize].push(index);
            inserted += fresh as u64;
        }
    }
    let mine: Vec<u64> = by_key
        .iter()
        .map(|ix| {
            assert!(
                ix.iter().all(|&i| i == ix[0]),
                "one key, several indices: {ix:?}"
            );
            ix[0].0
        })
        .collect();
    assert_eq!(
        ctx.sum_u64(inserted),
        KEYS,
        "each key inserted exactly once"
    );
    let everyone = ctx.allgather(mine.clone());
    assert!(
        everyone.iter().all(|v| *v == mine),
        "PEs disagree on indices"
    );
    let mut distinct = mine.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), KEYS as usize, "two keys share an index");
    for (i, &index) in mine.iter().enumerate() {
        assert_eq!(table.get(Index(index)), Some(key(i as u64)));
    }
    ctx.barrier();
}

/// A table too small for its keys reports [`Full`] (not a hang, not a panic), every key
/// inserted before that is still found, at its index, and `clear` empties the table.
fn full(ctx: &Ctx, access: Access, direct: bool) {
    let config = Config::new(16)
        .chunk(4)
        .max_chunks(2)
        .access(access)
        .direct(direct);
    let table = DistributedHashTable::<[u64; 2]>::new(ctx, config).unwrap();
    let me = ctx.my_pe() as u64;
    let keys: Vec<_> = (0..40).map(|i| key(1_000_000 * (me + 1) + i)).collect();
    let mut placed = Vec::new();
    let mut full = None;
    ctx.finish(|| {
        for k in &keys {
            match table.find_or_put_many(ctx, std::slice::from_ref(k)) {
                Ok(r) => placed.push((*k, r[0].0)),
                Err(e) => {
                    full = Some(e);
                    break;
                }
            }
        }
    });
    // 40 keys per PE into 16 buckets per PE: some partition fills up first.
    let saw_full = ctx.sum_u64(full.is_some() as u64);
    assert!(saw_full > 0, "no PE saw its table full");
    if let Some(Full { pe }) = full {
        assert!(pe < ctx.num_pes());
    }
    ctx.finish(|| {
        for (k, index) in &placed {
            assert_eq!(table.find_or_put(k), Ok((*index, false)));
            assert_eq!(table.get(*index), Some(*k));
        }
    });
    // Cleared, the table has room again and knows none of the keys.
    table.clear(ctx);
    for (_, index) in &placed {
        assert_eq!(table.get(*index), None);
    }
    ctx.barrier();
    // One key per PE: it fits whatever the order of the PEs' inserts.
    ctx.finish(|| {
        for (k, _) in placed.iter().take(1) {
            assert!(table.find_or_put_many(ctx, &[*k]).unwrap()[0].1);
        }
    });
    ctx.barrier();
}

/// 8- and 32-byte keys work; the all-zero key (whose stored words look like an empty
/// entry's) is found after it is inserted; a key of an unsupported size is refused.
fn wide_keys_and_zero_key(ctx: &Ctx) {
    let narrow = DistributedHashTable::<u64>::new(ctx, Config::new(64)).unwrap();
    let wide = DistributedHashTable::<[u64; 4]>::new(ctx, Config::new(64)).unwrap();
    let zero = DistributedHashTable::<[u64; 2]>::new(ctx, Config::new(64)).unwrap();
    if ctx.my_pe() == 0 {
        let (a, fresh) = narrow.find_or_put(&5).unwrap();
        assert!(fresh);
        assert_eq!(narrow.find_or_put(&5), Ok((a, false)));
        let (b, _) = wide.find_or_put(&[1, 2, 3, 4]).unwrap();
        assert_eq!(wide.get(b), Some([1, 2, 3, 4]));
        let (z, fresh) = zero.find_or_put(&[0, 0]).unwrap();
        assert!(fresh);
        assert_eq!(zero.find_or_put(&[0, 0]), Ok((z, false)));
        assert_eq!(zero.get(z), Some([0, 0]));
    }
    ctx.barrier();
    assert!(DistributedHashTable::<[u8; 12]>::new(ctx, Config::new(64)).is_err());
    assert!(DistributedHashTable::<u64>::new(ctx, Config::new(0)).is_err());
    ctx.barrier();
}
