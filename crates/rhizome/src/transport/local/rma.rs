//! Global memory of the `local` transport: segments are arrays of `AtomicU64` shared by
//! all PEs; one-sided operations are memory copies and native atomics.

use super::LocalTransport;
use crate::transport::{AtomicOp, Collectives, Rma, SegmentId, TransportError};
use std::sync::atomic::{AtomicU64, Ordering};

/// Most collective allocations a run may make.
pub const MAX_SEGMENTS: usize = 4096;

pub(super) struct Segment {
    len: usize,
    /// One zeroed block per PE.
    mem: Box<[Box<[AtomicU64]>]>,
}

impl LocalTransport {
    /// The segment and the checked word range of an access.
    #[inline]
    fn locate(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        len: usize,
    ) -> Result<&[AtomicU64], TransportError> {
        let seg = self
            .fabric
            .segments
            .get(segment as usize)
            .and_then(|s| s.get());
        let pes = self.fabric.pes;
        crate::transport::check_access(
            pe,
            pes,
            segment,
            offset,
            len,
            seg.map(|s| s.len),
            usize::MAX,
        )?;
        Ok(&seg.expect("checked above").mem[pe])
    }

    #[inline]
    fn word(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
    ) -> Result<&AtomicU64, TransportError> {
        crate::transport::check_word(pe, segment, offset)?;
        let mem = self.locate(pe, segment, offset, 8)?;
        Ok(&mem[offset / 8])
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
            mem: (0..self.fabric.pes)
                .map(|_| (0..words).map(|_| AtomicU64::new(0)).collect())
                .collect(),
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
    fn get(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        let mem = self.locate(pe, segment, offset, dst.len())?;
        crate::transport::read_bytes(mem, offset, dst);
        Ok(())
    }

    #[inline]
    fn put(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        src: &[u8],
    ) -> Result<(), TransportError> {
        let mem = self.locate(pe, segment, offset, src.len())?;
        crate::transport::write_bytes(mem, offset, src);
        Ok(())
    }

    #[inline]
    unsafe fn get_nbi(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller guarantees `dst` is valid and exclusively ours for `len` bytes.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst, len) };
        self.get(pe, segment, offset, dst)
    }

    #[inline]
    unsafe fn put_nbi(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller guarantees `src` is valid for reads of `len` bytes.
        let src = unsafe { std::slice::from_raw_parts(src, len) };
        self.put(pe, segment, offset, src)
    }

    #[inline]
    fn atomic(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        op: AtomicOp,
    ) -> Result<u64, TransportError> {
        Ok(op.apply_to(self.word(pe, segment, offset)?))
    }

    #[inline]
    unsafe fn atomic_nbi(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        op: AtomicOp,
        result: *mut u64,
    ) -> Result<(), TransportError> {
        let v = self.atomic(pe, segment, offset, op)?;
        // SAFETY: the caller guarantees `result` is valid for a write until `quiet`.
        unsafe { result.write(v) };
        Ok(())
    }

    #[inline]
    fn quiet(&self) -> Result<(), TransportError> {
        // Local operations complete when issued; the fence orders them before what follows.
        std::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }
}
