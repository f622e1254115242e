//! The partitions of a [`DistNodeStore`](super::DistNodeStore) that this process can
//! reach in place: [`InPlace`].
//!
//! With the `local` transport every PE's partition is memory of this process, and with
//! MPI ranks on one node every rank's is mapped into every rank (shared windows); the
//! transport hands those words out as atomics ([`rhizome::Memory::direct_words`]). A get
//! through the one-sided layer would only copy memory this thread can read where it is,
//! and its dispatch, bounds checks, copy and fences cost several times the probe itself
//! (on collision.5 `sat` the store's `find_or_put` and its node cache took a third of
//! the driving PE's time). So the store probes such a partition exactly as the
//! shared-memory [`SharedNodeTable`](crate::SharedNodeTable) probes its table: an
//! acquire load of a bucket, relaxed loads of a node's two words, a compare-and-swap to
//! claim a bucket after relaxed stores of the node, and reads nodes in place rather than
//! through the node cache. Native atomics on these words are atomic with respect to the
//! one-sided operations other PEs apply to them (the contract of `direct_words`), so a
//! PE that reaches a partition in place and one that reaches it one-sided can share it.
//!
//! The pointers are taken once, at creation: a segment of global memory is never freed
//! while the transport lives, and the store keeps the transport alive (its `Memory`).

use rhizome::{GlobalArray, Memory};
use std::sync::atomic::AtomicU64;

/// The start and length of one PE's words of one array of global memory, in place:
/// taken once, where a lookup through `Memory::direct_words` is a call into the
/// transport and three loads. Whoever holds one keeps the transport alive (its `Memory`),
/// so that the words stay valid.
#[derive(Clone, Copy)]
pub(super) struct Words {
    base: *const AtomicU64,
    len: usize,
}

// SAFETY: the pointer is to atomics in global memory shared by every thread (and PE) of
// the run, valid while the holder keeps the transport alive; only shared references to
// them are handed out (`as_slice`).
unsafe impl Send for Words {}
// SAFETY: as above: access goes through `&AtomicU64`, which is Sync.
unsafe impl Sync for Words {}

impl Words {
    /// PE `pe`'s words of `array`, if this process reaches them in place.
    pub(super) fn of(mem: &Memory, array: GlobalArray<u64>, pe: usize) -> Option<Words> {
        mem.direct_words(array, pe).map(|w| Words {
            base: w.as_ptr(),
            len: w.len(),
        })
    }

    /// The words from the first on a boundary of `align` bytes (a power of two, a
    /// multiple of 8) on: at most `align / 8 - 1` fewer.
    pub(super) fn aligned(self, align: usize) -> Words {
        let skip = ((self.base as usize).wrapping_neg() % align / 8).min(self.len);
        Words {
            // SAFETY: `skip <= len`: still within (or one past) the same block.
            base: unsafe { self.base.add(skip) },
            len: self.len - skip,
        }
    }

    /// The words.
    ///
    /// # Safety
    /// The transport they belong to must still be alive (the caller holds its `Memory`).
    #[inline(always)]
    pub(super) unsafe fn as_slice(&self) -> &[AtomicU64] {
        // SAFETY: `base..base + len` are the words as `direct_words` handed them out (or a
        // suffix of them), valid while the transport lives (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }
}

/// One partition's node words (two a slot) and buckets (one a slot), in place.
#[derive(Clone, Copy)]
struct Partition {
    data: Words,
    buckets: Words,
}

/// Per PE, that PE's partition where this process reaches it in place; see the [module
/// docs](self).
pub(super) struct InPlace {
    /// Keeps the transport, and so the segments the pointers point into, alive.
    _mem: Memory,
    parts: Box<[Option<Partition>]>,
}

impl InPlace {
    /// The partitions of `data` and `buckets` this process reaches in place, of `pes`
    /// PEs; `enabled` false reaches none in place (every access one-sided, for tests of
    /// that path).
    pub(super) fn new(
        mem: &Memory,
        pes: usize,
        data: GlobalArray<u64>,
        buckets: GlobalArray<u64>,
        enabled: bool,
    ) -> InPlace {
        let parts = (0..pes)
            .map(|pe| {
                let data = Words::of(mem, data, pe)?;
                let buckets = Words::of(mem, buckets, pe)?;
                enabled.then_some(Partition { data, buckets })
            })
            .collect();
        InPlace {
            _mem: mem.clone(),
            parts,
        }
    }

    /// Whether every partition is reached in place.
    pub(super) fn all(&self) -> bool {
        self.parts.iter().all(Option::is_some)
    }

    /// The node words (two a slot) of `pe`'s partition, if reached in place.
    #[inline]
    pub(super) fn data(&self, pe: usize) -> Option<&[AtomicU64]> {
        // SAFETY: `_mem` keeps the transport alive.
        self.parts[pe]
            .as_ref()
            .map(|p| unsafe { p.data.as_slice() })
    }

    /// The buckets (one a slot) of `pe`'s partition, if reached in place.
    #[inline]
    pub(super) fn buckets(&self, pe: usize) -> Option<&[AtomicU64]> {
        // SAFETY: `_mem` keeps the transport alive.
        self.parts[pe]
            .as_ref()
            .map(|p| unsafe { p.buckets.as_slice() })
    }
}

impl super::DistNodeStore {
    /// [`find_or_put`](crate::NodeStore::find_or_put) of the node words `(w0, w1)`, with
    /// hash `h`, in the home partition `pe` reached in place (`data`, `buckets`), from
    /// bucket `start`: the probe of [`SharedNodeTable`](crate::SharedNodeTable), over as
    /// many buckets as the one-sided probe from `start` covers, so the two give up alike.
    #[inline]
    pub(super) fn find_or_put_in_place(
        &self,
        (data, buckets): (&[AtomicU64], &[AtomicU64]),
        cursor: &mut super::Cursor,
        pe: usize,
        start: usize,
        (w0, w1): (u64, u64),
        tag: u64,
    ) -> Option<u64> {
        use super::{CHUNK, INDEX_MASK, MAX_CHUNKS};
        use std::sync::atomic::Ordering;
        let mask = self.slots_per_pe() - 1;
        let mut pos = start;
        let mut mine = 0u64;
        // The node of a bucket word: a node lives in its home partition (no collection
        // moves one), so its words are in `data`.
        let holds = |v: u64| {
            let (home, slot) = self.place(v & INDEX_MASK);
            debug_assert_eq!(home, pe);
            (
                data[2 * slot].load(Ordering::Relaxed),
                data[2 * slot + 1].load(Ordering::Relaxed),
            ) == (w0, w1)
        };
        for _ in 0..CHUNK * MAX_CHUNKS - start % CHUNK {
            let bucket = &buckets[pos];
            let mut v = bucket.load(Ordering::Acquire);
            while v == 0 {
                if mine == 0 {
                    mine = self.alloc_or_full(pe, cursor)?;
                    let at = 2 * self.place(mine).1;
                    data[at].store(w0, Ordering::Relaxed);
                    data[at + 1].store(w1, Ordering::Relaxed);
                }
                // Release: whoever finds the bucket sees the node's words.
                let claim =
                    bucket.compare_exchange(0, tag | mine, Ordering::Release, Ordering::Acquire);
                v = match claim {
                    Ok(_) => return Some(mine),
                    Err(now) => now,
                };
            }
            if v & !INDEX_MASK == tag && holds(v) {
                self.keep_spare(cursor, mine);
                return Some(v & INDEX_MASK);
            }
            pos = (pos + 1) & mask;
        }
        self.keep_spare(cursor, mine);
        self.full.store(true, Ordering::Relaxed);
        None
    }
}
