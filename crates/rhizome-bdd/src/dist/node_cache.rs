//! A lossy, per-PE cache of nodes read from the distributed table.
//!
//! Nodes never change between collections, so a cached copy is exact until the next
//! collection, which empties the cache. Each entry is three words: a key word (the node's
//! global index in bits 0..40, a version in bits 40..63, a lock bit) and the node's two
//! words. It is a seqlock, as the operation cache's entries (`op_cache.rs`): a writer
//! locks the key word with a compare-and-swap, writes the node and publishes the index
//! with a new version; a writer that cannot lock an entry at once drops its copy (a later
//! read only costs another get). A reader takes the words only if the key word, index and
//! version, is the same before and after it reads them. The version is what makes that
//! check sound: without it a reader of node `a` could read one word of `a` and one of a
//! node `b` that a writer was filling, and then see `a` again because a third writer
//! refilled it (seen in CI under load).

use crate::edge::INDEX_MASK;
use crate::sync::{AtomicU64, Ordering, Table, fence, table};

/// The lock bit of a key word: some writer is filling the entry.
const LOCK: u64 = 1 << 63;
const VERSION_SHIFT: u32 = 40;
/// Bits 40..63: how many times the entry was written (mod 2^23). A reader is fooled
/// only if exactly a multiple of 2^23 writes to this entry fall inside its three loads.
const VERSION_MASK: u64 = ((1 << 23) - 1) << VERSION_SHIFT;

/// Direct-mapped: the low bits of a node's index pick its entry.
pub(super) struct NodeCache {
    /// Zero pages until first used: a cache larger than the nodes a PE reads costs only
    /// the entries it fills.
    entries: Table<[AtomicU64; 3]>,
    mask: usize,
}

impl NodeCache {
    /// A cache of `entries` entries (rounded up to a power of two, at least 1).
    pub(super) fn new(entries: usize) -> NodeCache {
        let n = entries.max(1).next_power_of_two();
        NodeCache {
            entries: table(n),
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
        debug_assert_eq!(index & !INDEX_MASK, 0);
        let e = self.entry(index);
        let key = e[0].load(Ordering::Acquire);
        // Another index, or locked: a miss.
        if key & (INDEX_MASK | LOCK) != index {
            return None;
        }
        let (w0, w1) = (e[1].load(Ordering::Relaxed), e[2].load(Ordering::Relaxed));
        // The words must have been read before the key is checked again.
        fence(Ordering::Acquire);
        (e[0].load(Ordering::Relaxed) == key).then_some((w0, w1))
    }

    /// Remembers node `index`; may drop it.
    #[inline]
    pub(super) fn put(&self, index: u64, w0: u64, w1: u64) {
        debug_assert_eq!(index & !INDEX_MASK, 0);
        let e = self.entry(index);
        let old = e[0].load(Ordering::Relaxed);
        if old & LOCK != 0
            || e[0]
                .compare_exchange(old, old | LOCK, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        // Orders the lock before the word stores for a reader, whose acquire fence pairs
        // with this one (as in `op_cache::write_entry`, where loom found the need).
        fence(Ordering::Release);
        e[1].store(w0, Ordering::Relaxed);
        e[2].store(w1, Ordering::Relaxed);
        let version = (old & VERSION_MASK).wrapping_add(1 << VERSION_SHIFT) & VERSION_MASK;
        e[0].store(index | version, Ordering::Release);
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

#[cfg(all(test, not(loom)))]
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
                    for k in 0..200_000u64 {
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

/// The seqlock under loom's model of the memory orderings: a reader racing with a writer
/// of another node and a writer refilling its own never returns a mix of two nodes.
/// Run: `RUSTFLAGS="--cfg loom" cargo test --release -p rhizome-bdd --lib node_cache::loom_model`.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use ::loom::sync::Arc;
    use ::loom::thread;

    #[test]
    fn a_reader_racing_a_replacement_and_a_refill_sees_a_whole_node_or_a_miss() {
        ::loom::model(|| {
            let cache = Arc::new(NodeCache::new(1));
            cache.put(1, 1, !1);
            let writers: Vec<_> = [7u64, 1]
                .into_iter()
                .map(|i| {
                    let c = Arc::clone(&cache);
                    thread::spawn(move || c.put(i, i, !i))
                })
                .collect();
            if let Some(w) = cache.get(1) {
                assert_eq!(w, (1, !1), "a mix of two nodes");
            }
            for w in writers {
                w.join().unwrap();
            }
            for i in [1u64, 7] {
                if let Some(w) = cache.get(i) {
                    assert_eq!(w, (i, !i));
                }
            }
        });
    }

    #[test]
    fn a_node_written_before_a_join_is_found() {
        ::loom::model(|| {
            let cache = Arc::new(NodeCache::new(2));
            let c = Arc::clone(&cache);
            thread::spawn(move || c.put(5, 10, 11)).join().unwrap();
            assert_eq!(cache.get(5), Some((10, 11)));
        });
    }
}
