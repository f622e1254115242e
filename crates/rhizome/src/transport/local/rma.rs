//! Global memory of the `local` transport: segments are arrays of `AtomicU64` shared by
//! all PEs; one-sided operations are memory copies and native atomics.

use super::LocalTransport;
use crate::transport::{Addr, AtomicOp, Collectives, Rma, SegmentId, TransportError};
use std::sync::atomic::{AtomicU64, Ordering};

/// Most collective allocations a run may make.
pub const MAX_SEGMENTS: usize = 4096;

pub(super) struct Segment {
    len: usize,
    /// One zeroed block per PE.
    mem: Box<[Box<[AtomicU64]>]>,
}

/// `words` zero words, allocated zeroed: the allocator maps a large block from the
/// system, which commits its pages only as they are first touched, so a segment reserved
/// for its largest use costs the memory its PE touches (as the MPI windows do). A large
/// block is backed by transparent huge pages where the system grants them on request.
fn zeroed_words(words: usize) -> Box<[AtomicU64]> {
    if words == 0 {
        return Box::new([]);
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(words).expect("segment size overflows");
    // SAFETY: `layout` has a non-zero size; an all-zero `AtomicU64` is a valid value, so
    // the zeroed block is `words` initialised atomics, owned by the box made from it with
    // the same layout (a boxed slice of `words` atomics frees with that layout).
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<AtomicU64>();
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // Data structures in global memory (a hash table's partitions, a BDD store's
        // buckets) are read at random: on 4 KiB pages nearly every access misses the TLB.
        crate::hint::advise_huge_pages(ptr.cast(), layout.size());
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, words))
    }
}

impl LocalTransport {
    /// The segment and the checked word range of an access.
    #[inline]
    fn locate(&self, at: Addr, len: usize) -> Result<&[AtomicU64], TransportError> {
        let segments = &self.fabric.segments;
        let seg = segments.get(at.segment as usize).and_then(|s| s.get());
        let seg_len = seg.map(|s| s.len);
        crate::transport::check_access(at, len, self.fabric.pes, seg_len, usize::MAX)?;
        Ok(&seg.expect("checked above").mem[at.pe])
    }

    #[inline]
    fn word(&self, at: Addr) -> Result<&AtomicU64, TransportError> {
        crate::transport::check_word(at)?;
        let mem = self.locate(at, 8)?;
        Ok(&mem[at.offset / 8])
    }
}

impl Rma for LocalTransport {
    fn alloc_segment(&self, bytes: usize) -> Result<SegmentId, TransportError> {
        let id = self.next_segment.fetch_add(1, Ordering::Relaxed);
        let slot = self.fabric.segments.get(id as usize).ok_or_else(|| {
            TransportError::Collective(format!("more than {MAX_SEGMENTS} segments allocated"))
        })?;
        let words = bytes.div_ceil(8);
        let seg = slot.get_or_init(|| Segment {
            len: bytes,
            mem: (0..self.fabric.pes).map(|_| zeroed_words(words)).collect(),
        });
        let result = if seg.len != bytes {
            Err(TransportError::Collective(format!(
                "segment {id}: PE {} asked for {bytes} bytes, another PE for {}",
                self.pe, seg.len
            )))
        } else {
            Ok(id)
        };
        self.barrier()?;
        result
    }

    fn segment_len(&self, segment: SegmentId) -> Option<usize> {
        self.fabric
            .segments
            .get(segment as usize)
            .and_then(|s| s.get())
            .map(|s| s.len)
    }

    #[inline]
    fn get(&self, at: Addr, dst: &mut [u8]) -> Result<(), TransportError> {
        let mem = self.locate(at, dst.len())?;
        crate::transport::read_bytes(mem, at.offset, dst);
        Ok(())
    }

    #[inline]
    fn put(&self, at: Addr, src: &[u8]) -> Result<(), TransportError> {
        let mem = self.locate(at, src.len())?;
        crate::transport::write_bytes(mem, at.offset, src);
        Ok(())
    }

    #[inline]
    fn atomic(&self, at: Addr, op: AtomicOp) -> Result<u64, TransportError> {
        Ok(op.apply_to(self.word(at)?))
    }

    // The non-blocking forms are the trait's: they complete at once.

    /// Every PE's block: all PEs live in this process.
    #[inline]
    fn direct(&self, segment: SegmentId, pe: usize) -> Option<&[AtomicU64]> {
        let seg = self.fabric.segments.get(segment as usize)?.get()?;
        seg.mem.get(pe).map(|m| &m[..])
    }

    #[inline]
    fn quiet(&self) -> Result<(), TransportError> {
        // Local operations complete when issued; the fence orders them before what follows.
        std::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }
}
