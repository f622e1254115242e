//! The unique table: where BDD nodes live, and how equal nodes are found.
//!
//! Nodes are 16 bytes in one flat array (`data`); a separate open-addressing hash table
//! (`buckets`) maps a node's contents to its index, so `find_or_put` is lock-free: probe
//! buckets linearly (neighbouring buckets share a cache line), compare the 24-bit hash tag
//! stored beside the index before touching the node, and claim an empty bucket with one
//! compare-and-swap. The node is written into its data slot *before* the bucket is
//! published (release), so whoever finds the index sees the whole node. This is the design
//! of Sylvan's `llmsset`, reimplemented here because no crate offers a lock-free hash-consing
//! table with stop-the-world collection.
//!
//! Data slots are handed out in regions of 512 slots, one region at a time per worker, so
//! allocation needs no shared atomic on the fast path. Garbage collection (between
//! operations, nothing running) marks the live nodes in the `used` bitmap, clears the
//! buckets and reinserts the live nodes; node indices never move, so no edge is rewritten
//! (and an operation-cache entry whose nodes all survive stays valid).
//! The table can grow at a collection, up to the capacity reserved at creation; memory is
//! only touched as the table grows, so a small model costs little.

use crate::edge::{Bdd, COMPLEMENT, INDEX_MASK};
use crate::sizing::TableBytes;
use crate::sync::{
    AtomicBool, AtomicU64, AtomicUsize, Ordering, Table, read_mut, resident_bytes, table, write_mut,
};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::sync::Mutex;

/// Slots per allocation region (8 bitmap words; one under loom, whose models must stay
/// small).
#[cfg(not(loom))]
const REGION_SLOTS: usize = 512;
#[cfg(loom)]
const REGION_SLOTS: usize = 64;
/// Fewest slots a table has: under loom, enough for three threads' regions below
/// [`MAX_LOAD`].
#[cfg(not(loom))]
const MIN_SLOTS: usize = 1024;
#[cfg(loom)]
const MIN_SLOTS: usize = 256;
const REGION_WORDS: usize = REGION_SLOTS / 64;
/// Longest probe sequence before the table counts as full.
const MAX_PROBE: usize = 1 << 10;
/// The table counts as full once this share of its slots is in use: linear probing
/// slows down sharply at higher loads, and a collection is cheaper than long probes.
const MAX_LOAD: f64 = 0.8;

/// Where the nodes of a [`Manager`](crate::Manager) live: find-or-put and read access.
///
/// The manager's operations are generic over this trait (monomorphised, no dynamic
/// dispatch), so a store partitioned over several PEs can replace the shared-memory one
/// without touching the operations.
pub trait NodeStore: Sync + Send + 'static {
    /// Whether operations on this store may spread over several PEs (`dist::spread`).
    /// Known at compile time, so the operations on a store of one PE carry nothing of
    /// the spreading: no depth to count, no check per fork.
    const SPREADS: bool = false;
    /// The node at `index` (not 0): its variable, low edge (never complemented), high edge.
    fn node(&self, index: u64) -> (u32, Bdd, Bdd);
    /// The index of the node `(var, low, high)`, inserting it if absent; `None` when the
    /// table is full. `slot` identifies the calling thread's allocation cursor: the
    /// caller guarantees that no two threads use the same slot at the same time.
    fn find_or_put(&self, slot: usize, var: u32, low: Bdd, high: Bdd) -> Option<u64>;
    /// Whether an insertion failed for lack of room since the last collection.
    fn is_full(&self) -> bool;
    /// Slots usable now.
    fn size(&self) -> usize;
    /// Slots this PE holds of the table now: what its per-PE structures (the operation
    /// cache) are sized from. The whole table on one PE.
    fn local_size(&self) -> usize {
        self.size()
    }
    /// Nodes in use (exact right after a collection).
    fn used_count(&self) -> usize;
    /// Slots in use or handed out to allocation cursors since the last collection (an
    /// upper bound of the nodes in use, cheap to read at any time).
    fn claimed(&self) -> usize;
    /// The allocation slot for threads outside the pool; see `find_or_put`.
    fn with_outside_slot<R>(&self, f: impl FnOnce(usize) -> R) -> R;
    /// Where allocation stands now: nodes allocated after this point are kept by a
    /// [`collect`](NodeStore::collect) given the mark (it is invalidated by a collection).
    fn alloc_mark(&self) -> usize;
    /// Whether the node at `index` survived the last collection (0, the terminal, always
    /// does; an index beyond the table never does). Meaningful right after `collect`.
    fn is_live(&self, index: u64) -> bool;
    /// Keeps the nodes reachable from `roots`, and those `plan` asks to keep, frees the
    /// rest, and grows the table as `plan` says (see [`CollectPlan`]). Returns whether
    /// the table grew. Requires that no operation is running.
    fn collect(&mut self, roots: &mut dyn Iterator<Item = Bdd>, plan: CollectPlan) -> bool;
    /// Makes [`is_full`](NodeStore::is_full) hold until the next collection: a part of
    /// the running operation failed elsewhere (on another PE, whose store is its own
    /// view of the table), so the operation must fail here too. Stores that no other PE
    /// shares never need it (the default does nothing).
    fn abort(&self) {}
    /// The bytes of this PE's part of the table that are in memory now (`None` where the
    /// store cannot tell): a diagnostic for [`Manager::memory_use`](crate::Manager::memory_use).
    fn resident_bytes(&self) -> Option<TableBytes> {
        None
    }
}

/// What a [`NodeStore::collect`] keeps besides the roots, and when it grows the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollectPlan {
    /// Also keep every node allocated since this [`alloc_mark`](NodeStore::alloc_mark)
    /// (taken since the last collection): the partial results of an interrupted operation.
    pub keep_since: Option<usize>,
    /// Grow while the nodes reachable from the roots alone fill more than this share of
    /// the table.
    pub grow_threshold: f64,
    /// Grow by at least one doubling.
    pub force_grow: bool,
}

/// One worker's allocation state: where in its region it allocates next.
#[derive(Clone, Copy)]
pub(crate) struct Cursor {
    /// Bitmap word being allocated from, and the free bits left in it.
    pub(crate) word: usize,
    pub(crate) free: u64,
    /// Words left in the current region after `word`.
    pub(crate) words_left: usize,
    /// A slot allocated for an insertion that lost a race; reused next time.
    pub(crate) spare: u64,
}

impl Cursor {
    pub(crate) const EMPTY: Cursor = Cursor {
        word: 0,
        free: 0,
        words_left: 0,
        spare: 0,
    };
}

/// The shared-memory node table of one PE.
pub struct SharedNodeTable {
    data: Table<[AtomicU64; 2]>,
    buckets: Table<AtomicU64>,
    used: Table<AtomicU64>,
    /// Slots in use now (a power of two, at most `data.len()`).
    size: AtomicUsize,
    next_region: AtomicUsize,
    /// Slots in use at the last collection plus free slots handed out in regions since:
    /// an upper bound of the nodes in use.
    committed: AtomicUsize,
    cursors: Box<[CachePadded<UnsafeCell<Cursor>>]>,
    /// Serialises allocation by threads outside the pool (the last cursor).
    outside: Mutex<()>,
    full: AtomicBool,
}

// SAFETY: every field is Sync except the cursors; a cursor is only touched by the thread
// that owns its slot (the `find_or_put` contract) or under `outside`, or by `&mut self`.
unsafe impl Sync for SharedNodeTable {}

#[inline]
pub(crate) fn hash(w0: u64, w1: u64) -> u64 {
    // Two rounds of multiply-xorshift: cheap and mixes all input bits into the high bits,
    // which give both the bucket position and the tag.
    let mut h = w0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ w1;
    h = (h ^ (h >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    h ^ (h >> 29)
}

#[inline]
pub(crate) fn encode(var: u32, low: Bdd, high: Bdd) -> (u64, u64) {
    (low.0 | ((var as u64) << 40), high.0)
}

impl SharedNodeTable {
    /// A table of `initial` slots that may grow to `capacity` slots (both rounded up to
    /// powers of two, at least 1024) for `threads` pool workers.
    pub fn new(initial: usize, capacity: usize, threads: usize) -> SharedNodeTable {
        let capacity = capacity.max(MIN_SLOTS).next_power_of_two().min(1 << 39);
        let initial = initial.max(MIN_SLOTS).next_power_of_two().min(capacity);
        let table = SharedNodeTable {
            data: table(capacity),
            buckets: table(capacity),
            used: table(capacity / 64),
            size: AtomicUsize::new(initial),
            next_region: AtomicUsize::new(0),
            committed: AtomicUsize::new(1),
            cursors: (0..=threads)
                .map(|_| CachePadded::new(UnsafeCell::new(Cursor::EMPTY)))
                .collect(),
            outside: Mutex::new(()),
            full: AtomicBool::new(false),
        };
        // Index 0 is the `false` terminal: never allocated.
        table.used[0].store(1, Ordering::Relaxed);
        table
    }

    /// Slots reserved at creation: the most the table can grow to.
    pub fn capacity(&self) -> usize {
        self.data.len()
    }

    /// The allocation slot reserved for threads outside the pool.
    pub fn outside_slot(&self) -> usize {
        self.cursors.len() - 1
    }

    /// Fraction of the allocation regions already handed out (an upper bound of the fill).
    pub fn fill(&self) -> f64 {
        let regions = self.size() / REGION_SLOTS;
        self.next_region.load(Ordering::Relaxed).min(regions) as f64 / regions as f64
    }

    #[inline]
    fn alloc(&self, cursor: &mut Cursor) -> Option<u64> {
        if cursor.spare != 0 {
            return Some(std::mem::take(&mut cursor.spare));
        }
        loop {
            if cursor.free != 0 {
                let bit = cursor.free.trailing_zeros() as u64;
                cursor.free &= cursor.free - 1;
                // The region is this cursor's alone until the next collection; the atomic
                // or only keeps the bitmap readable by the collector.
                self.used[cursor.word].fetch_or(1 << bit, Ordering::Relaxed);
                return Some(cursor.word as u64 * 64 + bit);
            }
            if cursor.words_left > 0 {
                cursor.word += 1;
                cursor.words_left -= 1;
            } else {
                let region = self.next_region.fetch_add(1, Ordering::Relaxed);
                if region >= self.size() / REGION_SLOTS {
                    return None;
                }
                cursor.word = region * REGION_WORDS;
                cursor.words_left = REGION_WORDS - 1;
                let free: usize = self.used[cursor.word..cursor.word + REGION_WORDS]
                    .iter()
                    .map(|w| w.load(Ordering::Relaxed).count_zeros() as usize)
                    .sum();
                let committed = self.committed.fetch_add(free, Ordering::Relaxed) + free;
                if committed as f64 > MAX_LOAD * self.size() as f64 {
                    return None;
                }
            }
            cursor.free = !self.used[cursor.word].load(Ordering::Relaxed);
        }
    }
}

impl NodeStore for SharedNodeTable {
    #[inline]
    fn node(&self, index: u64) -> (u32, Bdd, Bdd) {
        let d = &self.data[index as usize];
        let w0 = d[0].load(Ordering::Relaxed);
        let w1 = d[1].load(Ordering::Relaxed);
        ((w0 >> 40) as u32, Bdd(w0 & INDEX_MASK), Bdd(w1))
    }

    fn size(&self) -> usize {
        self.size.load(Ordering::Relaxed)
    }

    fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    fn used_count(&self) -> usize {
        let words = self.size() / 64;
        self.used[..words]
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones() as usize)
            .sum::<usize>()
            - 1
    }

    fn claimed(&self) -> usize {
        self.committed.load(Ordering::Relaxed)
    }

    fn with_outside_slot<R>(&self, f: impl FnOnce(usize) -> R) -> R {
        let _guard = self.outside.lock().unwrap_or_else(|e| e.into_inner());
        f(self.outside_slot())
    }

    fn alloc_mark(&self) -> usize {
        self.next_region
            .load(Ordering::Relaxed)
            .min(self.size() / REGION_SLOTS)
    }

    fn is_live(&self, index: u64) -> bool {
        let i = index as usize;
        i < self.size() && self.used[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }

    fn collect(&mut self, roots: &mut dyn Iterator<Item = Bdd>, plan: CollectPlan) -> bool {
        let CollectPlan {
            keep_since,
            grow_threshold,
            force_grow,
        } = plan;
        let size = self.size();
        // A spare slot holds a node that lost an insertion race: a copy of a node in the
        // table, never published. It must not be kept below, or the table would hold the
        // same node twice; it is free again like any unmarked slot.
        for c in self.cursors.iter_mut() {
            let spare = std::mem::take(&mut c.get_mut().spare) as usize;
            if spare != 0 {
                let word = &mut self.used[spare / 64];
                let bits = read_mut(word);
                write_mut(word, bits & !(1 << (spare % 64)));
            }
        }
        let mut stack: Vec<u64> = roots.map(|b| b.index()).collect();
        let mut partial: Vec<u64> = Vec::new();
        if let Some(first) = keep_since {
            // The regions handed out since the mark hold the partial results of an
            // operation that ran out of room: keeping them (and their cache entries) lets
            // the operation resume instead of starting over. They may also hold nodes that
            // were live at the last collection and died since; those stay one more round.
            let end = self.alloc_mark();
            for w in first.min(end) * REGION_WORDS..end * REGION_WORDS {
                let mut bits = read_mut(&mut self.used[w]);
                while bits != 0 {
                    partial.push((w * 64) as u64 + bits.trailing_zeros() as u64);
                    bits &= bits - 1;
                }
            }
        }
        for w in &self.used[..size / 64] {
            w.store(0, Ordering::Relaxed);
        }
        self.used[0].store(1, Ordering::Relaxed);
        // The roots first: what they reach is the live data that sizes the table. The
        // partial results are kept for one rerun and die with it; counting them would grow
        // the table for a working set that is gone by the next collection (at.5.8 BFS grew
        // to 32M slots, twice the memory, on a partial-result peak).
        let mut live = 0usize;
        let mut root_live = 0usize;
        for phase in 0..2 {
            if phase == 1 {
                root_live = live;
                stack = std::mem::take(&mut partial);
            }
            while let Some(i) = stack.pop() {
                if i == 0 {
                    continue;
                }
                let (w, b) = ((i / 64) as usize, 1u64 << (i % 64));
                let word = &mut self.used[w];
                let bits = read_mut(word);
                if bits & b != 0 {
                    continue;
                }
                write_mut(word, bits | b);
                live += 1;
                let (_, low, high) = self.node(i);
                stack.push(low.index());
                stack.push(high.index());
            }
        }
        let mut new_size = size;
        if force_grow && new_size < self.capacity() {
            new_size *= 2;
        }
        while (root_live as f64) > new_size as f64 * grow_threshold && new_size < self.capacity() {
            new_size *= 2;
        }
        self.size.store(new_size, Ordering::Relaxed);
        // Buckets beyond the old size were never used (the table never shrinks): they are
        // still the zero pages of the allocation, and writing them would only fault them in.
        for b in &mut self.buckets[..size] {
            write_mut(b, 0);
        }
        let mask = new_size - 1;
        for w in 0..size / 64 {
            let mut bits = read_mut(&mut self.used[w]);
            while bits != 0 {
                let i = (w * 64) as u64 + bits.trailing_zeros() as u64;
                bits &= bits - 1;
                if i == 0 {
                    continue;
                }
                let d = &self.data[i as usize];
                let h = hash(d[0].load(Ordering::Relaxed), d[1].load(Ordering::Relaxed));
                let mut pos = (h as usize) & mask;
                loop {
                    let bucket = &mut self.buckets[pos];
                    if read_mut(bucket) == 0 {
                        write_mut(bucket, (h & !INDEX_MASK) | i);
                        break;
                    }
                    pos = (pos + 1) & mask;
                }
            }
        }
        self.next_region.store(0, Ordering::Relaxed);
        self.committed.store(live + 1, Ordering::Relaxed);
        for c in self.cursors.iter_mut() {
            *c.get_mut() = Cursor::EMPTY;
        }
        self.full.store(false, Ordering::Relaxed);
        new_size > size
    }

    fn resident_bytes(&self) -> Option<TableBytes> {
        Some(TableBytes {
            nodes: resident_bytes(&self.data),
            buckets: resident_bytes(&self.buckets),
            bitmap: resident_bytes(&self.used),
        })
    }

    fn find_or_put(&self, slot: usize, var: u32, low: Bdd, high: Bdd) -> Option<u64> {
        debug_assert!(low.0 & COMPLEMENT == 0);
        let (w0, w1) = encode(var, low, high);
        let h = hash(w0, w1);
        let tag = h & !INDEX_MASK;
        let mask = self.size() - 1;
        let mut pos = (h as usize) & mask;
        // SAFETY: the caller owns `slot` (trait contract), so no other thread touches this
        // cursor while we hold the reference; it is not kept past this call.
        let cursor = unsafe { &mut *self.cursors[slot].get() };
        let mut mine = 0u64;
        for _ in 0..MAX_PROBE {
            let bucket = &self.buckets[pos];
            let mut v = bucket.load(Ordering::Acquire);
            loop {
                if v == 0 {
                    if mine == 0 {
                        match self.alloc(cursor) {
                            Some(i) => mine = i,
                            None => {
                                self.full.store(true, Ordering::Relaxed);
                                return None;
                            }
                        }
                        let d = &self.data[mine as usize];
                        d[0].store(w0, Ordering::Relaxed);
                        d[1].store(w1, Ordering::Relaxed);
                    }
                    match bucket.compare_exchange(
                        0,
                        tag | mine,
                        Ordering::Release,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Some(mine),
                        Err(now) => v = now,
                    }
                    continue;
                }
                if v & !INDEX_MASK == tag {
                    let i = v & INDEX_MASK;
                    let d = &self.data[i as usize];
                    if d[0].load(Ordering::Relaxed) == w0 && d[1].load(Ordering::Relaxed) == w1 {
                        if mine != 0 {
                            cursor.spare = mine;
                        }
                        return Some(i);
                    }
                }
                break;
            }
            pos = (pos + 1) & mask;
        }
        if mine != 0 {
            cursor.spare = mine;
        }
        self.full.store(true, Ordering::Relaxed);
        None
    }
}

#[cfg(all(test, loom))]
mod loom_model;
