//! A lossy, per-PE cache of nodes read from the distributed table.
//!
//! Nodes never change between collections, so a cached copy is exact until the next
//! collection, which empties the cache. Each entry is three words: the node's global
//! index (or [`LOCKED`] while a writer fills it) and the node's two words. A writer that
//! cannot lock an entry at once drops its copy (a later read only costs another get); a
//! reader that sees the key change while it reads reports a miss. Re-filling an entry
//! with the same index writes the same words, so a reader racing with it cannot see a
//! mix of two nodes.

use crate::zeroed::{Zeroed, zeroed};
use std::sync::atomic::{AtomicU64, Ordering, fence};

/// The key of an entry some writer is filling.
const LOCKED: u64 = u64::MAX;

/// Direct-mapped: the low bits of a node's index pick its entry.
pub(super) struct NodeCache {
    /// Zero pages until first used: a cache larger than the nodes a PE reads costs only
    /// the entries it fills.
    entries: Zeroed<[AtomicU64; 3]>,
    mask: usize,
}

impl NodeCache {
    /// A cache of `entries` entries (rounded up to a power of two, at least 1).
    pub(super) fn new(entries: usize) -> NodeCache {
        let n = entries.max(1).next_power_of_two();
        NodeCache {
            entries: zeroed(n),
            mask: n - 1,
        }
    }

    #[inline]
    fn entry(&self, index: u64) -> &[AtomicU64; 3] {
        &self.entries[index as usize & self.mask]
    }

    /// The two words of node `index` (never 0), if cached.
    #[inline]
    pub(super) fn get(&self, index: u64) -> Option<(u64, u64)> {
        let e = self.entry(index);
        if e[0].load(Ordering::Acquire) != index {
            return None;
        }
        let (w0, w1) = (e[1].load(Ordering::Relaxed), e[2].load(Ordering::Relaxed));
        // The words must have been read before the key is checked again (seqlock).
        fence(Ordering::Acquire);
        (e[0].load(Ordering::Relaxed) == index).then_some((w0, w1))
    }

    /// Remembers node `index`; may drop it.
    #[inline]
    pub(super) fn put(&self, index: u64, w0: u64, w1: u64) {
        let e = self.entry(index);
        let old = e[0].load(Ordering::Relaxed);
        if old == LOCKED
            || e[0]
                .compare_exchange(old, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        e[1].store(w0, Ordering::Relaxed);
        e[2].store(w1, Ordering::Relaxed);
        e[0].store(index, Ordering::Release);
    }

    /// Forgets every entry (at a collection: slots of dead nodes are reused).
    /// Takes `&self` for a PE that catches up with another PE's collection, when no
    /// other thread of the PE reads the cache.
    pub(super) fn clear(&self) {
        for e in self.entries.iter() {
            // Entries never filled stay zero pages: a load does not commit them as a
            // store would.
            if e[0].load(Ordering::Relaxed) != 0 {
                e[0].store(0, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_answers_only_for_its_own_index_and_clear_forgets_it() {
        let c = NodeCache::new(4);
        c.put(5, 10, 11);
        assert_eq!(c.get(5), Some((10, 11)));
        assert_eq!(c.get(9), None, "same entry, other index");
        c.put(9, 20, 21);
        assert_eq!(c.get(5), None);
        assert_eq!(c.get(9), Some((20, 21)));
        c.clear();
        assert_eq!(c.get(9), None);
    }

    #[test]
    fn concurrent_writers_of_one_entry_never_mix_two_nodes() {
        // Node i has words (i, !i): a reader that ever sees another pair has read a mix.
        let c = NodeCache::new(1);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let c = &c;
                s.spawn(move || {
                    for k in 0..20_000u64 {
                        let i = 1 + (k * 4 + t) % 7;
                        c.put(i, i, !i);
                        if let Some((w0, w1)) = c.get(i) {
                            assert_eq!((w0, w1), (i, !i));
                        }
                    }
                });
            }
        });
    }
}
