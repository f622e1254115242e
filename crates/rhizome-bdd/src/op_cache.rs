//! The operation cache: a lossy, lock-free memo table shared by all workers.
//!
//! An entry is 32 bytes (half a cache line, so a lookup costs one miss): two key words,
//! a third key word whose spare bits (40..62) double as a seqlock (version and lock
//! bit), and the result. A writer that cannot take the lock at once simply drops its
//! entry; a reader that sees the lock word change while reading reports a miss. A lost
//! or missed entry only costs recomputation, never a wrong answer. Keys embed the
//! operation id in bits 40..62 of the first word (edges leave those bits free), so all
//! operations share one table.

use crate::edge::{Bdd, INDEX_MASK};
use crate::sizing::CacheBytes;
use crate::sync::{AtomicU64, AtomicUsize, Ordering, Table, fence, resident_bytes, table};

/// A memo table of operation results, keyed by three words.
///
/// Generic seam for a distributed cache (the thesis' shared memo cache); the manager's
/// operations are monomorphised over it. The third key word must leave bits 40..62
/// clear (edges and small integers do).
pub trait OpCache: Sync + Send + 'static {
    /// Called at garbage collection, with no operation running: forgets every entry that
    /// names a node `is_live` denies (its slot may be reused for another node), keeps the
    /// others, and resizes to about `entries` entries (never fewer than now).
    ///
    /// Every key word and the result are checked as edges, whatever they mean to their
    /// operation: an integer key that happens to name a dead node only costs the entry.
    fn collect(&mut self, entries: usize, is_live: &dyn Fn(u64) -> bool);
    /// The cached result for `(k0, k1, k2)`, if present.
    fn get(&self, k0: u64, k1: u64, k2: u64) -> Option<Bdd>;
    /// Records a result; may silently drop it.
    fn put(&self, k0: u64, k1: u64, k2: u64, result: Bdd);
    /// Lookups and hits so far, for caches that count them (the per-PE shared-memory
    /// cache does not: a count would cost its hot path a shared write).
    fn stats(&self) -> Option<CacheStats> {
        None
    }
    /// Entries in use now and the bytes of this PE's cache in memory (`None` where the
    /// cache cannot tell): a diagnostic for [`Manager::memory_use`](crate::Manager::memory_use).
    fn resident(&self) -> Option<CacheBytes> {
        None
    }
}

/// Lookups and hits of an operation cache since it was made (see [`OpCache::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups.
    pub lookups: u64,
    /// Lookups answered by the cache itself (a PE's own, in a distributed manager).
    pub local_hits: u64,
    /// Lookups answered by a cache behind it, shared by the PEs (after a miss in front).
    pub shared_hits: u64,
}

/// Fewest entries a cache has (a handful under loom, whose models must stay small).
#[cfg(not(loom))]
pub(crate) const MIN_ENTRIES: usize = 1024;
#[cfg(loom)]
pub(crate) const MIN_ENTRIES: usize = 2;

const LOCK: u64 = 1 << 62;
const VERSION_SHIFT: u32 = 40;
const VERSION_MASK: u64 = ((1 << 22) - 1) << VERSION_SHIFT;
/// The spare bits (40..62) of the third key word, where an entry keeps its lock and
/// version; also clear in every result (an edge).
pub(crate) const STATUS: u64 = LOCK | VERSION_MASK;

/// The shared-memory operation cache of one PE.
pub struct SharedOpCache {
    /// Four words per entry, starting at `base`, which is 32-byte aligned. (An array of
    /// 32-byte-aligned structs would be zero-filled eagerly by the allocator, touching
    /// the whole reserved capacity; plain words come from lazily mapped zero pages.)
    words: Table<AtomicU64>,
    base: usize,
    capacity: usize,
    /// Entries in use minus one: a prefix of the reserved array, so the cache can grow
    /// with the node table without reallocating.
    mask: AtomicUsize,
}

/// The entries a cache of `now` entries and capacity `capacity` takes when asked for
/// `entries`: a power of two, at least [`MIN_ENTRIES`], within the capacity, never
/// fewer than now.
pub(crate) fn grown_size(entries: usize, capacity: usize, now: usize) -> usize {
    entries
        .max(MIN_ENTRIES)
        .next_power_of_two()
        .min(capacity)
        .max(now)
}

/// The hash of a key, which picks its entry.
#[inline]
pub(crate) fn hash(k0: u64, k1: u64, k2: u64) -> u64 {
    let mut h = k0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h = (h ^ k1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h = (h ^ k2).wrapping_mul(0x1656_67B1_9E37_79F9);
    h ^ (h >> 31)
}

impl SharedOpCache {
    /// A cache of `entries` entries that may grow to `capacity` (both rounded up to
    /// powers of two, at least [`MIN_ENTRIES`]).
    pub fn new(entries: usize, capacity: usize) -> SharedOpCache {
        let cap = capacity.max(MIN_ENTRIES).next_power_of_two();
        let n = entries.max(MIN_ENTRIES).next_power_of_two().min(cap);
        let words = table(4 * cap + 4);
        let base = (words.as_ptr() as usize).next_multiple_of(32) - words.as_ptr() as usize;
        SharedOpCache {
            words,
            base: base / 8,
            capacity: cap,
            mask: AtomicUsize::new(n - 1),
        }
    }

    #[inline]
    fn entry(&self, h: u64) -> &[AtomicU64] {
        let i = self.base + 4 * (h as usize & self.mask.load(Ordering::Relaxed));
        &self.words[i..i + 4]
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.mask.load(Ordering::Relaxed) + 1
    }

    /// Always false: a cache has at least [`MIN_ENTRIES`] entries.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Forgets every entry, through a shared reference: for a PE whose nodes another PE
    /// collected (see `dist::spread`). No other thread may use the cache meanwhile.
    pub(crate) fn clear(&self) {
        for p in 0..self.len() {
            let i = self.base + 4 * p;
            for w in &self.words[i..i + 4] {
                w.store(0, Ordering::Relaxed);
            }
        }
    }

    /// [`clear`](Self::clear), then uses `entries` entries (rounded up to a power of two,
    /// within the capacity, never fewer than now): for a PE whose share of the node table
    /// grew at another PE's collection. The entries beyond the old size were never used,
    /// so they are still zero. No other thread may use the cache meanwhile.
    pub(crate) fn clear_to(&self, entries: usize) {
        self.clear();
        let n = grown_size(entries, self.capacity, self.len());
        self.mask.store(n - 1, Ordering::Relaxed);
    }

    /// [`OpCache::collect`] through a shared reference: drops the entries that name a
    /// node `is_live` denies and rehashes the others into `entries` entries (rounded as in
    /// [`clear_to`](Self::clear_to)). For a PE whose nodes another PE collected and which
    /// knows which survived (see `dist::spread`), and for `collect` itself. No other
    /// thread may use the cache meanwhile (relaxed loads and stores suffice then).
    pub(crate) fn collect_shared(&self, entries: usize, is_live: &dyn Fn(u64) -> bool) {
        let old = self.len();
        let n = grown_size(entries, self.capacity, old);
        for p in 0..old {
            let i = self.base + 4 * p;
            let e = &self.words[i..i + 4];
            let w = [0, 1, 2, 3].map(|k| e[k].load(Ordering::Relaxed));
            if w[0] == 0 {
                continue;
            }
            let to = survives(w, is_live).map(|h| h as usize & (n - 1));
            // Whole entries are cleared: a zero lock word alone would let stale keys match.
            for x in e {
                x.store(0, Ordering::Relaxed);
            }
            if let Some(to) = to {
                // Growing keeps an entry at its position modulo the old size, so distinct
                // old entries land on distinct new positions, and positions beyond the old
                // size were never used: nothing is overwritten.
                let j = self.base + 4 * to;
                for (x, v) in self.words[j..j + 4].iter().zip(w) {
                    x.store(v, Ordering::Relaxed);
                }
            }
        }
        self.mask.store(n - 1, Ordering::Relaxed);
    }
}

impl OpCache for SharedOpCache {
    fn collect(&mut self, entries: usize, is_live: &dyn Fn(u64) -> bool) {
        self.collect_shared(entries, is_live);
    }

    fn resident(&self) -> Option<CacheBytes> {
        Some(CacheBytes {
            entries: self.len(),
            bytes: resident_bytes(&self.words),
        })
    }

    #[inline]
    fn get(&self, k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
        read_entry(self.entry(hash(k0, k1, k2)), k0, k1, k2)
    }

    #[inline]
    fn put(&self, k0: u64, k1: u64, k2: u64, result: Bdd) {
        write_entry(self.entry(hash(k0, k1, k2)), k0, k1, k2, result);
    }
}

/// The seqlock read of the entry `e` (four words: keys, status, result) for the key
/// `(k0, k1, k2)`: its result, or `None` when it holds another key or a writer is
/// changing it.
// Always inlined, as `OpCtx::cached` is (see there); the memo cache calls it too.
#[inline(always)]
pub(crate) fn read_entry(e: &[AtomicU64], k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
    debug_assert_eq!(k2 & STATUS, 0);
    let s1 = e[2].load(Ordering::Acquire);
    if s1 & !STATUS != k2 || s1 & LOCK != 0 {
        return None;
    }
    let (a, b, r) = (
        e[0].load(Ordering::Relaxed),
        e[1].load(Ordering::Relaxed),
        e[3].load(Ordering::Relaxed),
    );
    fence(Ordering::Acquire);
    if e[2].load(Ordering::Relaxed) != s1 {
        return None;
    }
    (a == k0 && b == k1).then_some(Bdd(r))
}

/// The seqlock write of `result` for `(k0, k1, k2)` into the entry `e`; dropped when
/// another writer holds the entry.
#[inline(always)]
pub(crate) fn write_entry(e: &[AtomicU64], k0: u64, k1: u64, k2: u64, result: Bdd) {
    debug_assert_eq!(k2 & STATUS, 0);
    let s = e[2].load(Ordering::Relaxed);
    if s & LOCK != 0
        || e[2]
            .compare_exchange(s, s | LOCK, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    // Orders the lock before the data stores for a reader (whose acquire fence pairs
    // with this): without it a reader may see the new keys with the old result and
    // the old status word, and return a result under the wrong key. (Loom found this;
    // on x86 the fence costs no instruction.)
    fence(Ordering::Release);
    e[0].store(k0, Ordering::Relaxed);
    e[1].store(k1, Ordering::Relaxed);
    e[3].store(result.0, Ordering::Relaxed);
    // A new version, so a reader that started before this write sees a change.
    let version = (s & VERSION_MASK).wrapping_add(1 << VERSION_SHIFT) & VERSION_MASK;
    e[2].store(k2 | version, Ordering::Release);
}

/// Whether a collection keeps the entry `[k0, k1, status, result]` (read with no writer
/// running): it is in use, not locked, and names only live nodes (every word checked
/// as an edge). Its key's hash, if so.
pub(crate) fn survives(w: [u64; 4], is_live: &dyn Fn(u64) -> bool) -> Option<u64> {
    let [k0, k1, s, r] = w;
    let live = |w: u64| is_live(w & INDEX_MASK);
    // Empty: every key has an operation id in k0.
    let keep = k0 != 0 && s & LOCK == 0 && live(k0) && live(k1) && live(s) && live(r);
    keep.then(|| hash(k0, k1, s & !STATUS))
}

/// The seqlock under loom's model of the memory orderings: a reader racing with writers
/// of the same entry never returns a result stored under another key, nor a torn one.
/// Run: `RUSTFLAGS="--cfg loom" cargo test --release -p rhizome-bdd --lib op_cache::loom_model`.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use ::loom::sync::Arc;
    use ::loom::thread;

    /// Two keys whose entries coincide in a cache of two entries.
    fn colliding_keys() -> ((u64, u64), (u64, u64)) {
        let slot = |k: (u64, u64)| hash(k.0, k.1, 0) & 1;
        let a = (1 << 40, 2);
        let b = (1..)
            .map(|i| (2 << 40, 2 + i))
            .find(|&k| slot(k) == slot(a))
            .expect("a colliding key");
        (a, b)
    }

    #[test]
    fn a_reader_racing_two_writers_sees_a_whole_entry_or_a_miss() {
        let (a, b) = colliding_keys();
        ::loom::model(move || {
            let cache = Arc::new(SharedOpCache::new(2, 2));
            let writers: Vec<_> = [(a, 10u64), (b, 20)]
                .into_iter()
                .map(|(k, r)| {
                    let cache = Arc::clone(&cache);
                    thread::spawn(move || cache.put(k.0, k.1, 0, Bdd(r)))
                })
                .collect();
            for (k, r) in [(a, 10), (b, 20)] {
                if let Some(got) = cache.get(k.0, k.1, 0) {
                    assert_eq!(got, Bdd(r), "a result under the wrong key");
                }
            }
            for w in writers {
                w.join().unwrap();
            }
            // With the writers done, the entry holds one of them, whole.
            let hits = [(a, 10), (b, 20)]
                .iter()
                .filter(|(k, r)| cache.get(k.0, k.1, 0) == Some(Bdd(*r)))
                .count();
            assert!(hits <= 1);
        });
    }

    #[test]
    fn a_result_written_before_a_join_is_found() {
        ::loom::model(|| {
            let cache = Arc::new(SharedOpCache::new(2, 2));
            let c = Arc::clone(&cache);
            thread::spawn(move || c.put(1 << 40, 7, 0, Bdd(99)))
                .join()
                .unwrap();
            assert_eq!(cache.get(1 << 40, 7, 0), Some(Bdd(99)));
        });
    }
}
