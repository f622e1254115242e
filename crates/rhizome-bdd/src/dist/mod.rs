//! A node store spread over the PEs: [`DistNodeStore`].
//!
//! Every PE holds one partition of the unique table in its global memory: node data (two
//! words a slot), hash buckets (one word a slot) and a bitmap of the slots in use. A
//! node's index is `pe * capacity + slot`, the same on every PE, so an edge names the
//! same node everywhere and the BDD operations run unchanged on top of the store.
//!
//! Each partition is reserved for its largest size (`capacity` slots) and used up to its
//! current size, which starts at the PE's share of the table one PE would start with and
//! doubles at a collection that finds much of the table live, as the shared-memory
//! table grows. The transports commit global memory only as it is touched, so a PE holds
//! the buckets of its current size and the nodes it stores, not its whole reservation.
//!
//! A node lives in its *home* partition, chosen by its hash uniformly over all slots of
//! all PEs, so every PE holds its share of the table (the point: a table too large for
//! one PE's memory fits in N). [`find_or_put`](NodeStore::find_or_put) is one-sided, as
//! in the thesis' chapter 3: it fetches the home's buckets `CHUNK` at a time with one
//! get, claims an empty bucket with a compare-and-swap after writing the node into a slot
//! of the home partition, and gives up after `MAX_CHUNKS` chunks. Slots are handed out in
//! regions of 512, claimed with one remote fetch-and-add per region, so a new node costs
//! a put and a compare-and-swap, not an allocation round trip. Nodes are read through a
//! per-PE [cache](node_cache) in front of the gets: nodes never change between
//! collections, so the cache is exact.
//!
//! The table is laid out for BDD nodes rather than taken from
//! `rhizome_collections::dht`: that table keeps each key beside its bucket and never
//! removes one, while a collection here must drop dead nodes and rehash the live ones
//! without moving them (an index is baked into every edge), which needs the data apart
//! from the buckets, as in the shared-memory [`SharedNodeTable`](crate::SharedNodeTable).
//!
//! Every PE may hold a manager on the table (its own `DistNodeStore` value: its node cache,
//! allocation cursors and full flag, over the shared partitions). One PE drives: it runs
//! the operations, and with [`Manager::spread_over`](crate::Manager::spread_over) the
//! top of each operation's recursion runs as jobs that the other PEs steal and run on
//! their managers (`spread.rs`); without it the others only hold their partitions and
//! must stay alive (in a barrier, say) while it works. The collection
//! ([`NodeStore::collect`]) runs on the driving PE, between operations: it marks from the
//! roots and rewrites every partition's bitmap and buckets with bulk gets and puts (see
//! `collect.rs`); the other PEs forget their node caches and cursors before their next
//! job (`DistNodeStore::forget_local`). A slot written but not published (a cursor's
//! spare) has its data zeroed, so a collection never takes it for a node. The table
//! grows at collections (every partition at once, so the homes stay uniform), up to the
//! capacity given at creation.

mod collect;
mod deal;
mod dist_cache;
mod in_place;
mod lookup_count;
mod memo;
mod node_cache;
mod spread;

pub use dist_cache::DistOpCache;
pub(crate) use spread::SubOp;
pub use spread::{Distribution, OpHome};

use crate::edge::{Bdd, COMPLEMENT, INDEX_MASK};
use crate::node_table::{self, CollectPlan, NodeStore, encode, hash};
use crossbeam_utils::CachePadded;
use in_place::InPlace;
use node_cache::NodeCache;
use rhizome::{Ctx, GlobalArray, Memory};
use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Slots per allocation region, and the bitmap words that cover them.
const REGION_SLOTS: usize = 512;
const REGION_WORDS: usize = REGION_SLOTS / 64;
/// Buckets fetched with one get (`C` of the thesis: one cache line of bucket words).
const CHUNK: usize = 8;
/// Chunks probed before the home partition counts as full (`M`), as many buckets as
/// the shared-memory table probes.
const MAX_CHUNKS: usize = 128;
/// A partition counts as full once this share of its slots is in use, as in the
/// shared-memory table.
const MAX_LOAD: f64 = 0.8;
/// Fewest slots a partition has.
const MIN_SLOTS: usize = 1024;
/// Words of a partition's header: the next region to hand out, the slots in use plus
/// the free slots handed out since the last collection, and (on PE 0) the current size
/// of every partition and the next part of a dealt operation (`deal.rs`).
const NEXT_REGION: usize = 0;
const COMMITTED: usize = 1;
const SIZE: usize = 2;
const DEAL: usize = 3;
const HEADER_WORDS: usize = 4;
/// Node-cache entries: one per `CACHE_SHARE` slots of this PE's partition at the start,
/// at least `MIN_CACHE`, at most `MAX_CACHE` (24 MB): the cache only has to hold the
/// nodes the running operations revisit, and it is part of what a PE holds beside its
/// share of the table. Committed as entries are first used.
const CACHE_SHARE: usize = 8;
const MIN_CACHE: usize = 1 << 12;
const MAX_CACHE: usize = 1 << 20;

/// One worker's allocation state in one partition: the shared-memory table's cursor
/// (its `spare` a global index here), with the bitmap of the region it allocates from.
#[derive(Clone, Copy)]
struct Cursor {
    /// The region's bitmap at the time it was claimed (which slots were free then).
    region: [u64; REGION_WORDS],
    at: node_table::Cursor,
}

impl Cursor {
    const EMPTY: Cursor = Cursor {
        region: [0; REGION_WORDS],
        at: node_table::Cursor::EMPTY,
    };
}

/// The cursors of one allocation slot, one per partition.
type CursorSet = CachePadded<UnsafeCell<Box<[Cursor]>>>;

/// A BDD unique table partitioned over the PEs' global memory; see the [module
/// docs](self).
///
/// ```
/// use rhizome::World;
/// use rhizome_bdd::{Config, DistNodeStore, Manager, SharedOpCache};
/// use std::sync::Arc;
///
/// let counts = World::builder().pes(2).workers(1).run(|ctx| {
///     let store = DistNodeStore::new(ctx, 1 << 12, ctx.workers());
///     let mut count = None;
///     if ctx.my_pe() == 0 {
///         // PE 0 drives; the nodes land in both PEs' partitions.
///         let cache = SharedOpCache::new(1 << 12, 1 << 12);
///         let mut m = Manager::from_parts_on_pool(store, cache, Config::default(), Arc::clone(ctx.pool()));
///         let vars: Vec<u32> = (0..8).collect();
///         let f = m.run(&[], |c| {
///             (0..8).fold(rhizome_bdd::Bdd::FALSE, |f, v| c.xor(f, c.make(v, rhizome_bdd::Bdd::FALSE, rhizome_bdd::Bdd::TRUE)))
///         }).unwrap();
///         count = Some(m.satcount(f, &vars));
///     }
///     ctx.barrier();
///     count
/// }).unwrap();
/// assert_eq!(counts[0], Some(128u32.into()));
/// ```
pub struct DistNodeStore {
    mem: Memory,
    pes: usize,
    /// Slots reserved in each partition (a power of two): a node's index is
    /// `pe * cap + slot`.
    cap: usize,
    /// `cap` is `1 << cap_shift`.
    cap_shift: u32,
    /// Slots of each partition in use now (a power of two, at most `cap`): the buckets a
    /// probe covers and the slots handed out. Changed only by a collection (`&mut self`)
    /// or while the PE catches up with one (`forget_local`, with the store to itself).
    slots: AtomicUsize,
    data: GlobalArray<u64>,
    buckets: GlobalArray<u64>,
    used: GlobalArray<u64>,
    header: GlobalArray<u64>,
    /// Per allocation slot (pool workers, then one for outside threads): a cursor per PE.
    cursors: Box<[CursorSet]>,
    outside: Mutex<()>,
    full: AtomicBool,
    /// The partitions this process reaches in place; the node cache serves the others.
    in_place: InPlace,
    nodes: NodeCache,
    /// Allocation marks handed out since the last collection: each PE's next region.
    marks: Mutex<Vec<Vec<u64>>>,
    /// Per PE, the slots live after the last collection (for `is_live`).
    live: Vec<Vec<u64>>,
}

// SAFETY: every field is Sync except the cursors; a cursor set is only touched by the
// thread that owns its allocation slot (the `find_or_put` contract) or under `outside`,
// or through `&mut self`.
unsafe impl Sync for DistNodeStore {}

impl DistNodeStore {
    /// Collective: allocates this PE's partition of `slots_per_pe` slots (rounded up to a
    /// power of two, at least 1024) in global memory, for a PE whose pool has `threads`
    /// workers, all in use from the start (it never grows). Every PE must call it with the
    /// same sizes. Memory: about 24 bytes a slot in use, plus a node cache.
    pub fn new(ctx: &Ctx, slots_per_pe: usize, threads: usize) -> DistNodeStore {
        DistNodeStore::growing(ctx, slots_per_pe, slots_per_pe, threads)
    }

    /// Collective: like [`new`](Self::new), a partition that starts with `initial_per_pe`
    /// slots in use and grows at collections (every partition at once) up to
    /// `max_per_pe` (both rounded up to powers of two, at least 1024). Only what is used
    /// is committed: start from this PE's share of the table, not from the whole.
    pub fn growing(
        ctx: &Ctx,
        initial_per_pe: usize,
        max_per_pe: usize,
        threads: usize,
    ) -> DistNodeStore {
        DistNodeStore::growing_with(ctx, initial_per_pe, max_per_pe, threads, false)
    }

    /// [`growing`](Self::growing), with `one_sided` forcing every partition to be reached
    /// by one-sided gets and compare-and-swaps (through the node cache) even where the
    /// transport maps it into this process: for tests of that path. PEs may differ in it.
    pub fn growing_with(
        ctx: &Ctx,
        initial_per_pe: usize,
        max_per_pe: usize,
        threads: usize,
        one_sided: bool,
    ) -> DistNodeStore {
        let cap = max_per_pe.max(MIN_SLOTS).next_power_of_two();
        let slots = initial_per_pe.max(MIN_SLOTS).next_power_of_two().min(cap);
        let pes = ctx.num_pes();
        assert!(
            ((pes * cap) as u64) < INDEX_MASK,
            "{pes} partitions of {cap} slots exceed the 40-bit node index"
        );
        let (data, buckets) = (ctx.alloc(2 * cap), ctx.alloc(cap));
        let in_place = InPlace::new(ctx.memory(), pes, data, buckets, !one_sided);
        // Reaching every partition in place, the PE reads no node through the cache.
        let cache_entries = match in_place.all() {
            true => 1,
            false => (slots / CACHE_SHARE).clamp(MIN_CACHE, MAX_CACHE),
        };
        let store = DistNodeStore {
            mem: ctx.memory().clone(),
            pes,
            cap,
            cap_shift: cap.trailing_zeros(),
            slots: AtomicUsize::new(slots),
            data,
            buckets,
            used: ctx.alloc(cap / 64),
            header: ctx.alloc(HEADER_WORDS),
            cursors: (0..=threads)
                .map(|_| CachePadded::new(UnsafeCell::new(vec![Cursor::EMPTY; pes].into())))
                .collect(),
            outside: Mutex::new(()),
            full: AtomicBool::new(false),
            in_place,
            nodes: NodeCache::new(cache_entries),
            marks: Mutex::new(Vec::new()),
            live: vec![vec![0; slots / 64]; pes],
        };
        if ctx.my_pe() == 0 {
            // Index 0 is the `false` terminal: slot 0 of PE 0 is never allocated.
            store.mem.store(store.used.ptr(0, 0), 1);
            store.mem.store(store.header.ptr(0, COMMITTED), 1);
            store.mem.store(store.header.ptr(0, SIZE), slots as u64);
        }
        ctx.barrier();
        store
    }

    /// Slots of each PE's partition in use now.
    #[inline]
    pub fn slots_per_pe(&self) -> usize {
        self.slots.load(Ordering::Relaxed)
    }

    /// Slots each PE's partition may grow to.
    pub fn capacity_per_pe(&self) -> usize {
        self.cap
    }

    /// Whether this PE reaches every partition in place (the `local` transport, MPI
    /// ranks on one node), not one-sided.
    pub fn is_in_place(&self) -> bool {
        self.in_place.all()
    }

    /// PE and slot of a global node index.
    #[inline]
    fn place(&self, index: u64) -> (usize, usize) {
        let i = index as usize;
        (i >> self.cap_shift, i & (self.cap - 1))
    }

    /// The home partition of a node with hash `h`, and the bucket its probe starts at:
    /// uniform over all slots of all PEs (the index bits of the hash; the tag is the rest).
    #[inline]
    fn home(&self, h: u64) -> (usize, usize) {
        let slots = self.slots_per_pe();
        let total = (self.pes * slots) as u64;
        // Both below 2^40 (the index limit), so the product fits in 128 bits; `slots` is
        // a power of two, so a shift and a mask split the global bucket.
        let global = (((h & INDEX_MASK) as u128 * total as u128) >> 40) as usize;
        (global >> slots.trailing_zeros(), global & (slots - 1))
    }

    /// The two words of node `index`.
    #[inline(always)]
    fn words(&self, index: u64) -> (u64, u64) {
        let (pe, slot) = self.place(index);
        if let Some(d) = self.in_place.data(pe) {
            // Relaxed, as in the shared-memory table: whoever handed out the index saw
            // the node's words published (the bucket's release, or a synchronising
            // message or cache entry after it).
            return (
                d[2 * slot].load(Ordering::Relaxed),
                d[2 * slot + 1].load(Ordering::Relaxed),
            );
        }
        self.words_one_sided(index, pe, slot)
    }

    /// [`words`](Self::words) of a partition not reached in place: through the node
    /// cache, else one get. Out of line, so that `words` stays small enough to inline
    /// into the operations.
    #[inline(never)]
    fn words_one_sided(&self, index: u64, pe: usize, slot: usize) -> (u64, u64) {
        if let Some(w) = self.nodes.get(index) {
            return w;
        }
        let mut w = [0u64; 2];
        self.mem.get_into(self.data.ptr(pe, 2 * slot), &mut w);
        self.nodes.put(index, w[0], w[1]);
        (w[0], w[1])
    }

    /// A free slot of partition `pe` for `cursor`, as a global index.
    fn alloc(&self, pe: usize, cursor: &mut Cursor) -> Option<u64> {
        if cursor.at.spare != 0 {
            return Some(std::mem::take(&mut cursor.at.spare));
        }
        loop {
            if cursor.at.free != 0 {
                let bit = cursor.at.free.trailing_zeros() as usize;
                cursor.at.free &= cursor.at.free - 1;
                return Some((pe * self.cap + cursor.at.word * 64 + bit) as u64);
            }
            if cursor.at.words_left > 0 {
                cursor.at.word += 1;
                cursor.at.words_left -= 1;
            } else {
                let region = self.mem.fetch_add(self.header.ptr(pe, NEXT_REGION), 1) as usize;
                if region >= self.slots_per_pe() / REGION_SLOTS {
                    return None;
                }
                cursor.at.word = region * REGION_WORDS;
                cursor.at.words_left = REGION_WORDS - 1;
                self.mem
                    .get_into(self.used.ptr(pe, cursor.at.word), &mut cursor.region);
                let free: u64 = cursor.region.iter().map(|w| w.count_zeros() as u64).sum();
                let committed = self.mem.fetch_add(self.header.ptr(pe, COMMITTED), free) + free;
                if committed as f64 > MAX_LOAD * self.slots_per_pe() as f64 {
                    return None;
                }
            }
            cursor.at.free = !cursor.region[cursor.at.word % REGION_WORDS];
        }
    }

    /// [`alloc`](Self::alloc), marking the store full when the partition is.
    #[inline]
    fn alloc_or_full(&self, pe: usize, cursor: &mut Cursor) -> Option<u64> {
        let slot = self.alloc(pe, cursor);
        if slot.is_none() {
            self.full.store(true, Ordering::Relaxed);
        }
        slot
    }

    /// Keeps slot `mine` (if any), written but not published, for the cursor's next
    /// node. Its data is zeroed first: a slot with data counts as a node to a collection
    /// (the partial results of an interrupted operation), and the cursor may belong to a
    /// PE that is not the collecting one.
    fn keep_spare(&self, cursor: &mut Cursor, mine: u64) {
        if mine != 0 {
            let (pe, slot) = self.place(mine);
            self.mem.put_slice(self.data.ptr(pe, 2 * slot), &[0u64, 0]);
            cursor.at.spare = mine;
        }
    }

    /// Forgets this PE's view of the table after another PE collected it: the node cache
    /// (dead slots are reused), the allocation cursors (the bitmaps and regions were
    /// rewritten) and the full flag; takes the partitions' new size.
    ///
    /// # Safety
    /// No other thread may use the store meanwhile.
    pub(crate) unsafe fn forget_local(&self) {
        for set in self.cursors.iter() {
            // SAFETY: the caller guarantees exclusive use, so no cursor is borrowed.
            unsafe { (*set.get()).fill(Cursor::EMPTY) };
        }
        self.nodes.clear();
        self.full.store(false, Ordering::Relaxed);
        let size = self.mem.load(self.header.ptr(0, SIZE)) as usize;
        self.slots.store(size, Ordering::Relaxed);
    }

    /// The sum over the partitions of a header word.
    fn header_sum(&self, word: usize) -> usize {
        (0..self.pes)
            .map(|pe| self.mem.load(self.header.ptr(pe, word)) as usize)
            .sum()
    }
}

impl NodeStore for DistNodeStore {
    const SPREADS: bool = true;
    #[inline(always)]
    fn node(&self, index: u64) -> (u32, Bdd, Bdd) {
        let (w0, w1) = self.words(index);
        ((w0 >> 40) as u32, Bdd(w0 & INDEX_MASK), Bdd(w1))
    }

    fn find_or_put(&self, slot: usize, var: u32, low: Bdd, high: Bdd) -> Option<u64> {
        debug_assert!(low.0 & COMPLEMENT == 0);
        let (w0, w1) = encode(var, low, high);
        let h = hash(w0, w1);
        let tag = h & !INDEX_MASK;
        let (pe, start) = self.home(h);
        // SAFETY: the caller owns `slot` (trait contract), so no other thread touches this
        // cursor set while we hold the reference; it is not kept past this call.
        let cursor = unsafe { &mut (*self.cursors[slot].get())[pe] };
        if let (Some(data), Some(buckets)) = (self.in_place.data(pe), self.in_place.buckets(pe)) {
            return self.find_or_put_in_place((data, buckets), cursor, pe, start, (w0, w1), tag);
        }
        let mask = self.slots_per_pe() - 1;
        let mut base = start & !(CHUNK - 1);
        let mut first = start - base;
        let mut chunk = [0u64; CHUNK];
        let mut mine = 0u64;
        for _ in 0..MAX_CHUNKS {
            self.mem.get_into(self.buckets.ptr(pe, base), &mut chunk);
            for (i, &seen) in chunk.iter().enumerate().skip(first) {
                let mut v = seen;
                loop {
                    if v == 0 {
                        if mine == 0 {
                            mine = self.alloc_or_full(pe, cursor)?;
                            // Complete before the claim below: whoever finds the bucket
                            // reads the node with a get started after it.
                            let at = 2 * self.place(mine).1;
                            self.mem.put_slice(self.data.ptr(pe, at), &[w0, w1]);
                        }
                        let bucket = self.buckets.ptr(pe, base + i);
                        match self.mem.compare_exchange(bucket, 0, tag | mine) {
                            Ok(_) => {
                                self.nodes.put(mine, w0, w1);
                                return Some(mine);
                            }
                            Err(now) => v = now,
                        }
                        continue;
                    }
                    if v & !INDEX_MASK == tag && self.words(v & INDEX_MASK) == (w0, w1) {
                        self.keep_spare(cursor, mine);
                        return Some(v & INDEX_MASK);
                    }
                    break;
                }
            }
            first = 0;
            base = (base + CHUNK) & mask;
        }
        self.keep_spare(cursor, mine);
        self.full.store(true, Ordering::Relaxed);
        None
    }

    fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    fn abort(&self) {
        self.full.store(true, Ordering::Relaxed);
    }

    fn size(&self) -> usize {
        self.pes * self.slots_per_pe()
    }

    fn local_size(&self) -> usize {
        self.slots_per_pe()
    }

    fn used_count(&self) -> usize {
        // Right after a collection the committed count is the live count (terminal
        // included, as the bitmap counts it); between collections an upper bound.
        self.header_sum(COMMITTED) - 1
    }

    fn claimed(&self) -> usize {
        self.header_sum(COMMITTED)
    }

    fn with_outside_slot<R>(&self, f: impl FnOnce(usize) -> R) -> R {
        let _guard = self.outside.lock().unwrap_or_else(|e| e.into_inner());
        f(self.cursors.len() - 1)
    }

    fn alloc_mark(&self) -> usize {
        let regions = (0..self.pes)
            .map(|pe| self.mem.load(self.header.ptr(pe, NEXT_REGION)))
            .collect();
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        marks.push(regions);
        marks.len() - 1
    }

    fn is_live(&self, index: u64) -> bool {
        self.is_live_in(&self.live, index)
    }

    fn collect(&mut self, roots: &mut dyn Iterator<Item = Bdd>, plan: CollectPlan) -> bool {
        collect::collect(self, roots, plan)
    }
}
