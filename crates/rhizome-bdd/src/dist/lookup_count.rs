//! Lookup and hit counts of a [`DistOpCache`](super::DistOpCache) without a locked
//! read-modify-write per lookup: [`LookupCount`].
//!
//! The counts go into the per-PE reports, and a lookup is the hottest path of every
//! operation: an atomic add (`lock xadd`) per lookup and another per hit cost the
//! collision.5 `sat` run on the driving PE some 20 cycles each, and a counter shared by a
//! PE's workers would move its cache line between them on every lookup. So each thread
//! counts into its own shard (one cache line), with a plain load and store: a thread
//! takes a shard the first time it counts (round robin over [`SHARDS`] of them), and the
//! report sums the shards. The sums are exact while no two threads that count into one
//! cache at the same time share a shard; beyond that a few counts may be lost, never
//! invented.

use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Shards of a count (a power of two).
const SHARDS: usize = 64;

/// The counters of one shard: lookups, local hits, shared hits.
type Shard = [AtomicU64; 3];

/// The shard the next thread to count takes.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's shard, `usize::MAX` before it first counts.
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's shard number.
#[inline]
fn my_shard() -> usize {
    MY_SHARD.with(|s| {
        let mine = s.get();
        if mine != usize::MAX {
            return mine;
        }
        let mine = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
        s.set(mine);
        mine
    })
}

/// Lookups, local hits and shared hits, counted per thread; see the [module docs](self).
pub(super) struct LookupCount {
    shards: Box<[CachePadded<Shard>; SHARDS]>,
}

impl LookupCount {
    /// The counter of lookups.
    pub(super) const LOOKUPS: usize = 0;
    /// The counter of hits in the local cache.
    pub(super) const LOCAL_HITS: usize = 1;
    /// The counter of hits in the shared cache.
    pub(super) const SHARED_HITS: usize = 2;

    /// All counts zero.
    pub(super) fn new() -> LookupCount {
        LookupCount {
            shards: Box::new(std::array::from_fn(|_| CachePadded::new(Shard::default()))),
        }
    }

    /// The calling thread's shard, for [`bump`](Self::bump).
    #[inline]
    pub(super) fn shard(&self) -> &Shard {
        &self.shards[my_shard() & (SHARDS - 1)]
    }

    /// Counts one in counter `which` of `shard` (the calling thread's).
    #[inline]
    pub(super) fn bump(shard: &Shard, which: usize) {
        // A load and a store, not an atomic add: only this thread writes its shard.
        let c = &shard[which];
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// Counts one in counter `which` of the calling thread's shard.
    #[inline]
    pub(super) fn add(&self, which: usize) {
        LookupCount::bump(self.shard(), which);
    }

    /// The three counts, summed over the shards.
    pub(super) fn sums(&self) -> [u64; 3] {
        let mut sums = [0u64; 3];
        for shard in self.shards.iter() {
            for (s, c) in sums.iter_mut().zip(shard.iter()) {
                *s += c.load(Ordering::Relaxed);
            }
        }
        sums
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_counting_at_once_lose_no_count() {
        let counts = LookupCount::new();
        let threads = 8;
        let each = 100_000u64;
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for i in 0..each {
                        counts.add(LookupCount::LOOKUPS);
                        if i % 4 == 0 {
                            counts.add(LookupCount::LOCAL_HITS);
                        }
                    }
                });
            }
        });
        // Shards are handed out round robin: the 8 threads take 8 distinct ones unless
        // 56 other threads of this test process start counting meanwhile (none do).
        let [lookups, hits, shared] = counts.sums();
        assert_eq!(lookups, threads * each);
        assert_eq!(hits, threads * each / 4);
        assert_eq!(shared, 0);
    }
}
