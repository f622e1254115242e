//! Garbage collection of the distributed node table, run by the driving PE.
//!
//! Nothing runs while it does (the manager collects between operations), so the driver
//! has the whole table to itself: it marks the nodes reachable from the roots, reading
//! remote children through its node cache and gets, then rewrites each partition in
//! blocks: the bitmap of live slots, the data of dead slots zeroed (so a slot's data is
//! non-zero exactly while it may hold a node, which is how the partial results of an
//! interrupted operation are found again), and the buckets rebuilt from the live nodes.
//! Live nodes never move, so no edge is rewritten. The node cache is emptied, since dead
//! slots are reused.
//!
//! Done centrally with bulk transfers rather than by every PE at once because the other
//! PEs only run sub-operations of the driver's operations and so cannot know when a
//! collection is due; the cost is one pass over every partition's data and buckets per
//! collection, through the driver. The other PEs drop their own cached view of the table
//! when their next job shows them the new generation (`spread.rs`).

use super::{COMMITTED, Cursor, DistNodeStore, NEXT_REGION, REGION_SLOTS};
use crate::edge::{Bdd, INDEX_MASK};
use crate::node_table::hash;
use rhizome::GlobalArray;

/// Slots moved per get or put while a partition is rewritten.
const BLOCK: usize = 1 << 14;

/// See the module docs; `keep_since` is an allocation mark of the store.
pub(super) fn collect(
    s: &mut DistNodeStore,
    roots: &mut dyn Iterator<Item = Bdd>,
    keep_since: Option<usize>,
) {
    let mut stack: Vec<u64> = roots.map(|b| b.index()).collect();
    if let Some(mark) = keep_since {
        let marks = std::mem::take(s.marks.get_mut().unwrap_or_else(|e| e.into_inner()));
        stack.extend(partial_results(s, &marks[mark]));
    }
    let live = mark(s, stack);
    for (pe, bits) in live.iter().enumerate() {
        rewrite(s, pe, bits);
    }
    s.live = live;
    for set in s.cursors.iter_mut() {
        set.get_mut().fill(Cursor::EMPTY);
    }
    s.nodes.clear();
    s.marks.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
    s.full.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// The nodes in the regions handed out since `since` (each PE's next region then): the
/// partial results of an operation that ran out of room, kept so that it can resume.
fn partial_results(s: &DistNodeStore, since: &[u64]) -> Vec<u64> {
    let regions = s.slots / REGION_SLOTS;
    let mut found = Vec::new();
    let mut data = vec![0u64; 2 * REGION_SLOTS];
    for (pe, &first) in since.iter().enumerate() {
        let end = (s.mem.load(s.header.ptr(pe, NEXT_REGION)) as usize).min(regions);
        for region in (first as usize).min(end)..end {
            let base = region * REGION_SLOTS;
            s.mem.get_into(s.data.ptr(pe, 2 * base), &mut data);
            for (k, w) in data.chunks_exact(2).enumerate() {
                if w[0] | w[1] != 0 {
                    found.push((pe * s.slots + base + k) as u64);
                }
            }
        }
    }
    found
}

/// The live slots of every partition: those reachable from `stack`, and the terminal.
fn mark(s: &DistNodeStore, mut stack: Vec<u64>) -> Vec<Vec<u64>> {
    let mut live = vec![vec![0u64; s.slots / 64]; s.pes];
    live[0][0] = 1;
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
    live
}

/// Writes partition `pe` anew from its live bitmap: bitmap, zeroed dead data, buckets,
/// header.
fn rewrite(s: &DistNodeStore, pe: usize, live: &[u64]) {
    put_blocks(s, s.used, pe, live);
    let mut buckets = vec![0u64; s.slots];
    let mask = s.slots - 1;
    let mut data = vec![0u64; 2 * BLOCK];
    for base in (0..s.slots).step_by(BLOCK) {
        let n = BLOCK.min(s.slots - base);
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
            let (home, mut at) = s.home(h);
            debug_assert_eq!(home, pe, "a node lives in its home partition");
            while buckets[at] != 0 {
                at = (at + 1) & mask;
            }
            buckets[at] = (h & !INDEX_MASK) | (pe * s.slots + slot) as u64;
        }
        if dirty {
            s.mem.put_slice(s.data.ptr(pe, 2 * base), block);
        }
    }
    put_blocks(s, s.buckets, pe, &buckets);
    let in_use: u64 = live.iter().map(|w| w.count_ones() as u64).sum();
    s.mem.store(s.header.ptr(pe, NEXT_REGION), 0);
    s.mem.store(s.header.ptr(pe, COMMITTED), in_use);
}

/// Writes `words` to the start of `array` on `pe`, a block at a time (a transport may
/// limit the size of one put).
fn put_blocks(s: &DistNodeStore, array: GlobalArray<u64>, pe: usize, words: &[u64]) {
    for (k, block) in words.chunks(BLOCK).enumerate() {
        s.mem.put_slice(array.ptr(pe, k * BLOCK), block);
    }
}
