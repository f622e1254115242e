//! Garbage collection of the distributed node table, run by the driving PE.
//!
//! Nothing runs while it does (the manager collects between operations), so the driver
//! has the whole table to itself: it marks the nodes reachable from the roots, reading
//! remote children through its node cache and gets, then rewrites each partition in
//! blocks: the bitmap of live slots, the data of dead slots zeroed (so a slot's data is
//! non-zero exactly while it may hold a node, which is how the partial results of an
//! interrupted operation are found again), and the buckets rebuilt from the live nodes.
//! Live nodes never move, so no edge is rewritten. The node cache is emptied, since dead
//! slots are reused. When the nodes reachable from the roots fill much of the table, every
//! partition's size doubles (as the shared-memory table grows) before the buckets are
//! rebuilt, and PE 0's header records the new size for the other PEs.
//!
//! Done centrally with bulk transfers rather than by every PE at once because the other
//! PEs only run sub-operations of the driver's operations and so cannot know when a
//! collection is due; the cost is one pass over every partition's data and buckets per
//! collection, through the driver. The other PEs drop their own cached view of the table
//! when their next job shows them the new generation (`spread.rs`).

use super::{COMMITTED, Cursor, DistNodeStore, NEXT_REGION, REGION_SLOTS, SIZE};
use crate::edge::{Bdd, INDEX_MASK};
use crate::node_table::{CollectPlan, hash};
use rhizome::GlobalArray;
use std::sync::atomic::{AtomicU64, Ordering};

/// Slots moved per get or put while a partition is rewritten.
const BLOCK: usize = 1 << 14;

/// See the module docs; returns whether the partitions grew.
pub(super) fn collect(
    s: &mut DistNodeStore,
    roots: &mut dyn Iterator<Item = Bdd>,
    plan: CollectPlan,
) -> bool {
    let old = s.slots_per_pe();
    let mut live = vec![vec![0u64; old / 64]; s.pes];
    live[0][0] = 1;
    mark(s, &mut live, roots.map(|b| b.index()).collect());
    let root_live: u64 = live.iter().flatten().map(|w| w.count_ones() as u64).sum();
    if let Some(mark_at) = plan.keep_since {
        let marks = std::mem::take(s.marks.get_mut().unwrap_or_else(|e| e.into_inner()));
        let partial = partial_results(s, &marks[mark_at]);
        mark(s, &mut live, partial);
    }
    let mut new = old;
    if plan.force_grow && new < s.cap {
        new *= 2;
    }
    while root_live as f64 > (s.pes * new) as f64 * plan.grow_threshold && new < s.cap {
        new *= 2;
    }
    s.slots.store(new, Ordering::Relaxed);
    for (pe, bits) in live.iter_mut().enumerate() {
        bits.resize(new / 64, 0);
        rewrite(s, pe, bits, old);
    }
    s.mem.store(s.header.ptr(0, SIZE), new as u64);
    s.live = live;
    for set in s.cursors.iter_mut() {
        set.get_mut().fill(Cursor::EMPTY);
    }
    s.nodes.clear();
    s.marks.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
    s.full.store(false, Ordering::Relaxed);
    new > old
}

/// The nodes in the regions handed out since `since` (each PE's next region then): the
/// partial results of an operation that ran out of room, kept so that it can resume.
fn partial_results(s: &DistNodeStore, since: &[u64]) -> Vec<u64> {
    let regions = s.slots_per_pe() / REGION_SLOTS;
    let mut found = Vec::new();
    let mut data = vec![0u64; 2 * REGION_SLOTS];
    for (pe, &first) in since.iter().enumerate() {
        let end = (s.mem.load(s.header.ptr(pe, NEXT_REGION)) as usize).min(regions);
        for region in (first as usize).min(end)..end {
            let base = region * REGION_SLOTS;
            s.mem.get_into(s.data.ptr(pe, 2 * base), &mut data);
            for (k, w) in data.chunks_exact(2).enumerate() {
                if w[0] | w[1] != 0 {
                    found.push((pe * s.cap + base + k) as u64);
                }
            }
        }
    }
    found
}

/// Marks in `live` (a bitmap per partition) the slots reachable from `stack`.
fn mark(s: &DistNodeStore, live: &mut [Vec<u64>], mut stack: Vec<u64>) {
    while let Some(i) = stack.pop() {
        let (pe, slot) = s.place(i);
        let (word, bit) = (&mut live[pe][slot / 64], 1u64 << (slot % 64));
        if *word & bit != 0 {
            continue;
        }
        *word |= bit;
        let (w0, w1) = s.words(i);
        stack.push(w0 & INDEX_MASK);
        stack.push(w1 & INDEX_MASK);
    }
}

/// Writes partition `pe` anew from its live bitmap (of the new size; nodes only in its
/// first `old` slots): bitmap, zeroed dead data, buckets of the new size, header.
fn rewrite(s: &DistNodeStore, pe: usize, live: &[u64], old: usize) {
    put_blocks(s, s.used, pe, live);
    let slots = s.slots_per_pe();
    // A partition reached in place gets its buckets rebuilt where they are; another is
    // built here and put: the driver then holds a copy of one partition's buckets (a
    // word a slot) while it rewrites it, which it need not where it can write in place.
    let mut buckets = match s.in_place.buckets(pe) {
        Some(b) => {
            let b = &b[..slots];
            b.iter().for_each(|x| x.store(0, Ordering::Relaxed));
            Buckets::InPlace(b)
        }
        None => Buckets::Built(vec![0u64; slots]),
    };
    let mask = slots - 1;
    let mut data = vec![0u64; 2 * BLOCK];
    for base in (0..old).step_by(BLOCK) {
        let n = BLOCK.min(old - base);
        let block = &mut data[..2 * n];
        s.mem.get_into(s.data.ptr(pe, 2 * base), block);
        let mut dirty = false;
        for (k, w) in block.chunks_exact_mut(2).enumerate() {
            let slot = base + k;
            if live[slot / 64] & (1 << (slot % 64)) == 0 {
                if w[0] | w[1] != 0 {
                    w.fill(0);
                    dirty = true;
                }
                continue;
            }
            if pe == 0 && slot == 0 {
                continue;
            }
            let h = hash(w[0], w[1]);
            let (home, at) = s.home(h);
            debug_assert_eq!(home, pe, "a node lives in its home partition");
            buckets.insert(at, mask, (h & !INDEX_MASK) | (pe * s.cap + slot) as u64);
        }
        if dirty {
            s.mem.put_slice(s.data.ptr(pe, 2 * base), block);
        }
    }
    match buckets {
        // The other PEs read the buckets in place or one-sided after the collection's
        // next message: make the stores visible before it.
        Buckets::InPlace(_) => std::sync::atomic::fence(Ordering::SeqCst),
        Buckets::Built(words) => put_blocks(s, s.buckets, pe, &words),
    }
    let in_use: u64 = live.iter().map(|w| w.count_ones() as u64).sum();
    s.mem.store(s.header.ptr(pe, NEXT_REGION), 0);
    s.mem.store(s.header.ptr(pe, COMMITTED), in_use);
}

/// The buckets of a partition being rebuilt: its own words in place, or a copy to put.
enum Buckets<'a> {
    InPlace(&'a [AtomicU64]),
    Built(Vec<u64>),
}

impl Buckets<'_> {
    /// Stores `word` in the first empty bucket from `at` on (linear probing, `mask` the
    /// partition's slots minus one). Nothing else writes the buckets meanwhile.
    fn insert(&mut self, mut at: usize, mask: usize, word: u64) {
        match self {
            Buckets::InPlace(b) => {
                while b[at].load(Ordering::Relaxed) != 0 {
                    at = (at + 1) & mask;
                }
                b[at].store(word, Ordering::Relaxed);
            }
            Buckets::Built(b) => {
                while b[at] != 0 {
                    at = (at + 1) & mask;
                }
                b[at] = word;
            }
        }
    }
}

/// Writes `words` to the start of `array` on `pe`, a block at a time (a transport may
/// limit the size of one put).
fn put_blocks(s: &DistNodeStore, array: GlobalArray<u64>, pe: usize, words: &[u64]) {
    for (k, block) in words.chunks(BLOCK).enumerate() {
        s.mem.put_slice(array.ptr(pe, k * BLOCK), block);
    }
}

impl DistNodeStore {
    /// Per PE, the slots the last collection left live, as it wrote them into the
    /// partitions' bitmaps (nothing else writes them): what a PE other than the
    /// collecting one reads to keep its cached results that name only surviving nodes.
    pub(super) fn live_bitmaps(&self) -> Vec<Vec<u64>> {
        (0..self.pes)
            .map(|pe| {
                let mut bits = vec![0u64; self.slots_per_pe() / 64];
                for (k, block) in bits.chunks_mut(BLOCK).enumerate() {
                    self.mem.get_into(self.used.ptr(pe, k * BLOCK), block);
                }
                bits
            })
            .collect()
    }

    /// Whether node `index` is live in `bitmaps` (per PE, as [`live_bitmaps`](Self::live_bitmaps)
    /// gives them); the `false` terminal always is.
    pub(super) fn is_live_in(&self, bitmaps: &[Vec<u64>], index: u64) -> bool {
        if index == 0 {
            return true;
        }
        let (pe, slot) = self.place(index);
        bitmaps
            .get(pe)
            .and_then(|bits| bits.get(slot / 64))
            .is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }
}
