//! The memo cache shared by all PEs: [`GlobalMemo`], a lossy table of operation results
//! in global memory (the thesis' shared memoization cache, its section 5.4.2).
//!
//! Every PE holds one partition of `4 * entries` words (and three of slack, so that
//! entries reached in place start on 32-byte boundaries, two to a cache line, as the
//! per-PE cache's do); a key's hash picks the partition (its high bits) and the entry in
//! it (its low bits), so the entries spread uniformly and a result computed on one PE is
//! found by every other. Collisions are not resolved: a new result overwrites the entry,
//! as in the thesis, because a probe would cost more round trips than recomputing.
//!
//! Two ways to reach an entry, chosen once for the whole table:
//! - **direct**, when every PE's partition is memory this process may access
//!   ([`rhizome::Memory::direct_words`]: the local transport, or `mpi` with the ranks'
//!   shared windows on one node): the per-PE cache's seqlock, with native atomics on the
//!   partition's words (a lock bit and a version in the spare bits of the third key
//!   word), so a torn entry is always a miss;
//! - **one-sided** elsewhere: a lookup is one get of the entry, a store one put, with no
//!   lock (the thesis' design takes a compare-and-swap first, and a reader's single get
//!   can still see half of a write). Instead the spare bits of the third key word and of
//!   the result (bits 40..62 of each, 46 in all) hold a check of the whole entry: a get
//!   that saw parts of two writes, or of a write and the old entry, fails the check and
//!   is a miss. A torn entry passes only if 46 bits of a hash agree by chance (about
//!   one in 7 * 10^13 torn reads, and a torn read needs a write to the same entry during
//!   the get).
//!
//! A collection (on the driving PE, with no operation running, see `dist::spread`)
//! drops the entries that name a dead node and rehashes the others into the new size,
//! which it publishes in PE 0's header; the other PEs take it when they catch up with the
//! collection ([`GlobalMemo::catch_up`]).

use super::in_place::Words;
use crate::edge::Bdd;
use crate::op_cache::{MIN_ENTRIES, STATUS, grown_size, hash, read_entry, survives, write_entry};
use rhizome::{Ctx, GlobalArray, Memory};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Entries a collection reads or writes with one get or put.
const BATCH: usize = 1024;
/// The bits of a word the one-sided check takes: the spare bits of an edge.
const CHECK_BITS: u64 = (1 << 23) - 1;
const CHECK_SHIFT: u32 = 40;

/// A lossy memo table partitioned over the PEs' global memory; see the [module
/// docs](self).
pub(crate) struct GlobalMemo {
    mem: Memory,
    pes: usize,
    /// Four words an entry, `cap` entries reserved on every PE (committed as touched).
    words: GlobalArray<u64>,
    /// On PE 0: the entries of every partition in use now.
    header: GlobalArray<u64>,
    cap: usize,
    /// Entries of each partition in use minus one (a power of two minus one).
    mask: AtomicUsize,
    /// Every partition is directly accessible (seqlock entries), else one-sided (checked
    /// entries).
    direct: bool,
    /// Where `direct`: each PE's partition in place, from its first 32-byte boundary on
    /// (an entry is half a cache line: on such a boundary a lookup costs one miss, off it
    /// every other entry spans two lines, and a segment's block is only 8-byte aligned).
    parts: Box<[Words]>,
}

/// The check of an entry's words (the spare bits of the third and fourth word clear).
#[inline]
fn check(k0: u64, k1: u64, k2: u64, r: u64) -> u64 {
    let h = (hash(k0, k1, k2) ^ r).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29)
}

/// The four words a one-sided put stores for `(k0, k1, k2) -> r`.
#[inline]
fn checked_words(k0: u64, k1: u64, k2: u64, r: u64) -> [u64; 4] {
    let c = check(k0, k1, k2, r);
    [
        k0,
        k1,
        k2 | (c & CHECK_BITS) << CHECK_SHIFT,
        r | (c >> 23 & CHECK_BITS) << CHECK_SHIFT,
    ]
}

/// The entry `w` read with one get, as `[k0, k1, k2, r]` with the check bits removed,
/// if it is whole (its check holds).
#[inline]
fn unchecked(w: [u64; 4]) -> Option<[u64; 4]> {
    let (k2, r) = (w[2] & !STATUS, w[3] & !STATUS);
    (w[0] != 0 && checked_words(w[0], w[1], k2, r) == w).then_some([w[0], w[1], k2, r])
}

impl GlobalMemo {
    /// Collective: a table of `entries` entries a PE that may grow to `capacity` a PE
    /// (powers of two, at least 1024). `one_sided` forces the one-sided entries where
    /// the direct ones would do (for tests); every PE must pass the same arguments.
    pub(crate) fn new(ctx: &Ctx, entries: usize, capacity: usize, one_sided: bool) -> Self {
        let cap = capacity.max(MIN_ENTRIES).next_power_of_two();
        let n = entries.max(MIN_ENTRIES).next_power_of_two().min(cap);
        // Three words of slack, so an entry in place can start on a 32-byte boundary (see
        // `parts`).
        let words = ctx.alloc(4 * cap + 3);
        let mem = ctx.memory().clone();
        let here: Option<Box<[Words]>> = (cfg!(not(loom)) && !one_sided)
            .then(|| {
                (0..ctx.num_pes())
                    .map(|pe| Words::of(&mem, words, pe).map(|w| w.aligned(32)))
                    .collect()
            })
            .flatten();
        // Every PE must use the same kind of entries.
        let direct = ctx.allreduce(here.is_some(), |a, b| a && b);
        let parts = here.filter(|_| direct).unwrap_or_default();
        let memo = GlobalMemo {
            mem,
            pes: ctx.num_pes(),
            words,
            header: ctx.alloc(1),
            cap,
            mask: AtomicUsize::new(n - 1),
            direct,
            parts,
        };
        if ctx.my_pe() == 0 {
            memo.mem.store(memo.header.ptr(0, 0), n as u64);
        }
        ctx.barrier();
        memo
    }

    /// Entries of each partition in use now.
    pub(crate) fn len(&self) -> usize {
        self.mask.load(Ordering::Relaxed) + 1
    }

    /// Whether entries are reached directly (seqlock) rather than one-sided (checked).
    pub(crate) fn is_direct(&self) -> bool {
        self.direct
    }

    /// The partition and entry of a key's hash.
    #[inline(always)]
    fn place(&self, h: u64) -> (usize, usize) {
        let pe = ((h >> 32) * self.pes as u64) >> 32;
        (pe as usize, h as usize & self.mask.load(Ordering::Relaxed))
    }

    /// The entry `slot` of `pe` as directly accessible words.
    #[cfg(not(loom))]
    #[inline(always)]
    fn direct_entry(&self, pe: usize, slot: usize) -> &[std::sync::atomic::AtomicU64] {
        self.direct_entries(pe, slot, 1)
    }

    /// Entries `from..from + n` of `pe` in place, as their words.
    #[cfg(not(loom))]
    #[inline(always)]
    fn direct_entries(&self, pe: usize, from: usize, n: usize) -> &[std::sync::atomic::AtomicU64] {
        // SAFETY: `self.mem` keeps the transport alive.
        let part = unsafe { self.parts[pe].as_slice() };
        &part[4 * from..4 * (from + n)]
    }

    /// The cached result for `(k0, k1, k2)`, if present.
    #[inline(always)]
    pub(crate) fn get(&self, k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
        let (pe, slot) = self.place(hash(k0, k1, k2));
        #[cfg(not(loom))]
        if self.direct {
            return read_entry(self.direct_entry(pe, slot), k0, k1, k2);
        }
        let mut w = [0u64; 4];
        self.mem.get_into(self.words.ptr(pe, 4 * slot), &mut w);
        unchecked(w)
            .filter(|e| e[..3] == [k0, k1, k2])
            .map(|e| Bdd(e[3]))
    }

    /// Records a result; may drop it (another writer holds the entry).
    #[inline(always)]
    pub(crate) fn put(&self, k0: u64, k1: u64, k2: u64, r: Bdd) {
        debug_assert_eq!((k2 | r.0) & STATUS, 0);
        let (pe, slot) = self.place(hash(k0, k1, k2));
        #[cfg(not(loom))]
        if self.direct {
            return write_entry(self.direct_entry(pe, slot), k0, k1, k2, r);
        }
        let w = checked_words(k0, k1, k2, r.0);
        self.mem.put_slice(self.words.ptr(pe, 4 * slot), &w);
    }

    /// Reads entries `from..from + out.len() / 4` of `pe`.
    fn read(&self, pe: usize, from: usize, out: &mut [u64]) {
        #[cfg(not(loom))]
        if self.direct {
            let words = self.direct_entries(pe, from, out.len() / 4);
            for (o, w) in out.iter_mut().zip(words) {
                *o = w.load(Ordering::Relaxed);
            }
            return;
        }
        self.mem.get_into(self.words.ptr(pe, 4 * from), out);
    }

    /// Writes `src` over entries `from..` of `pe`.
    fn write(&self, pe: usize, from: usize, src: &[u64]) {
        #[cfg(not(loom))]
        if self.direct {
            let words = self.direct_entries(pe, from, src.len() / 4);
            for (w, &v) in words.iter().zip(src) {
                w.store(v, Ordering::Relaxed);
            }
            return;
        }
        self.mem.put_slice(self.words.ptr(pe, 4 * from), src);
    }

    /// On the driving PE, at a collection with no operation running anywhere: drops
    /// every entry that names a node `is_live` denies (or is torn), rehashes the others
    /// into `entries` entries a PE (a power of two within the capacity, never fewer than
    /// now), and publishes the new size for [`catch_up`](Self::catch_up).
    pub(crate) fn collect(&mut self, entries: usize, is_live: &dyn Fn(u64) -> bool) {
        let old = self.len();
        let n = grown_size(entries, self.cap, old);
        let batch = BATCH.min(old);
        let mut src = vec![0u64; 4 * batch];
        // Growing keeps an entry at its position modulo the old size: a batch's entries
        // go to the same batch of each of the `n / old` copies of the old range, of
        // which only the first was ever used.
        let mut dst: Vec<Option<Vec<u64>>> = vec![None; n / old];
        for pe in 0..self.pes {
            for from in (0..old).step_by(batch) {
                self.read(pe, from, &mut src);
                if src.iter().all(|&w| w == 0) {
                    continue;
                }
                dst[0] = Some(vec![0; 4 * batch]);
                for (i, e) in src.chunks_exact(4).enumerate() {
                    let w = [e[0], e[1], e[2], e[3]];
                    let kept = if self.direct {
                        survives(w, is_live)
                    } else {
                        unchecked(w).and_then(|u| survives(u, is_live))
                    };
                    if let Some(h) = kept {
                        // An entry sits at its hash modulo the old size, `from + i`.
                        let copy = (h as usize & (n - 1)) / old;
                        let d = dst[copy].get_or_insert_with(|| vec![0; 4 * batch]);
                        d[4 * i..4 * i + 4].copy_from_slice(&w);
                    }
                }
                for (copy, d) in dst.iter_mut().enumerate() {
                    if let Some(d) = d.take() {
                        self.write(pe, copy * old + from, &d);
                    }
                }
            }
        }
        self.mask.store(n - 1, Ordering::Relaxed);
        self.mem.store(self.header.ptr(0, 0), n as u64);
    }

    /// On a PE other than the driving one, before its first job after a collection: takes
    /// the size the collection published. No other thread of the PE may use the table
    /// meanwhile.
    pub(crate) fn catch_up(&self) {
        let n = self.mem.load(self.header.ptr(0, 0)) as usize;
        self.mask.store(n - 1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_entry_reads_back_and_any_mix_of_two_is_torn() {
        let a = checked_words(1 << 40 | 5, 7, 9, 11);
        let b = checked_words(2 << 40 | 6, 8, 10, 12);
        assert_eq!(unchecked(a), Some([1 << 40 | 5, 7, 9, 11]));
        for mix in 1..15u32 {
            let w: [u64; 4] = std::array::from_fn(|i| if mix >> i & 1 == 1 { b[i] } else { a[i] });
            assert_eq!(unchecked(w), None, "mix {mix:04b}");
        }
        assert_eq!(unchecked([0; 4]), None, "an empty entry");
    }

    // Entries in place are not built under loom (its models use the one-sided entries).
    #[cfg(not(loom))]
    #[test]
    fn entries_in_place_start_on_32_byte_boundaries_whatever_the_segments_alignment() {
        rhizome::World::builder()
            .pes(2)
            .run(|ctx| {
                // The local transport's blocks are the allocator's, 8-byte aligned (a
                // large one starts 16 bytes into its own mapping).
                let memo = GlobalMemo::new(ctx, 1 << 12, 1 << 16, false);
                assert!(memo.is_direct());
                for pe in 0..2 {
                    let raw = memo.mem.direct_words(memo.words, pe).unwrap();
                    let first = memo.direct_entries(pe, 0, 1);
                    assert_eq!(first.as_ptr() as usize % 32, 0, "PE {pe}'s entries");
                    // At most three words skipped, and every entry still inside the block.
                    let skipped = (first.as_ptr() as usize - raw.as_ptr() as usize) / 8;
                    assert!(skipped < 4);
                    assert_eq!(memo.direct_entries(pe, memo.cap - 1, 1).len(), 4);
                }
                ctx.barrier();
            })
            .unwrap();
    }
}
