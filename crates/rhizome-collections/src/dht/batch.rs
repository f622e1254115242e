//! Pipelined one-sided find-or-put of many keys
//! ([`find_or_put_pipelined`](super::DistributedHashTable::find_or_put_pipelined), and
//! [`find_or_put_many`](super::DistributedHashTable::find_or_put_many) in one-sided mode):
//! the thesis' per-thread pipelining. For a window of keys, the first chunks of those in
//! remote partitions are requested together and completed with one `quiet`, so the window
//! waits about one round trip for them instead of one per key, and the home buckets of
//! those probed in place are prefetched into the cache, so their misses overlap instead of
//! following one another (a probe in place is one cache miss, most of its time). Then each
//! key's probe runs from its first chunk; most end there (a find that hits, or an insert
//! whose claim is one more round trip).

use super::layout::{Home, KeyWords};
use super::probe::Partitions;
use super::{DistributedHashTable, Full, Index, Stats};
use rhizome::hint::prefetch;
use rhizome::{Memory, Pod};

/// Keys whose first chunks are in flight at once.
const WINDOW: usize = 64;

/// Quiets the PE when dropped, so that no get still lands in a buffer being freed (also
/// when a probe unwinds).
struct QuietOnDrop<'a>(&'a Memory);

impl Drop for QuietOnDrop<'_> {
    fn drop(&mut self) {
        self.0.quiet();
    }
}

/// [`DistributedHashTable::find_or_put_pipelined`].
pub(super) fn find_or_put_many<K: Pod + Eq>(
    table: &DistributedHashTable<K>,
    keys: &[K],
    stats: &mut Stats,
) -> Result<Vec<(Index, bool)>, Full> {
    let parts: &Partitions = &table.parts;
    let cw = parts.chunk_words();
    let mut results = Vec::with_capacity(keys.len());
    let mut firsts = vec![0u64; WINDOW * cw];
    let mut window: Vec<(KeyWords, Home, bool)> = Vec::with_capacity(WINDOW);
    parts.with_scratch(|scratch| {
        if scratch.len() < cw {
            scratch.resize(cw, 0);
        }
        for group in keys.chunks(WINDOW) {
            window.clear();
            let mut requested = false;
            {
                // Declared after `firsts`' borrow starts and dropped before it ends: every
                // get into it is complete once this scope is left, by either path.
                let _complete = QuietOnDrop(&parts.mem);
                for (k, key) in group.iter().enumerate() {
                    let words = KeyWords::of(key);
                    let home = parts.geo.home(&words);
                    let direct = parts.direct_words(home.pe);
                    let remote = direct.is_none();
                    if let Some(words) = direct {
                        prefetch(&words[home.slot * parts.geo.entry_words()]);
                    } else {
                        // SAFETY: `firsts` is neither touched nor freed before the quiet
                        // of `_complete`, which runs before it is read below.
                        unsafe {
                            parts.request_first(home, &mut firsts[k * cw..(k + 1) * cw], stats)
                        };
                        requested = true;
                    }
                    window.push((words, home, remote));
                }
                if !requested {
                    std::mem::forget(_complete);
                }
            }
            for (k, (words, home, remote)) in window.iter().enumerate() {
                let (slot, inserted) = if *remote {
                    scratch[..cw].copy_from_slice(&firsts[k * cw..(k + 1) * cw]);
                    parts.probe(*home, words, stats, scratch, true)?
                } else {
                    let direct = parts.direct_words(home.pe).expect("in this process");
                    parts.probe_direct(direct, *home, words, stats)?
                };
                results.push((table.index(home.pe, slot), inserted));
            }
        }
        Ok(results)
    })
}
