//! Global memory of the `mpi` transport: one MPI-3 window per segment, opened for
//! passive-target access once. When every rank shares this node the window is a shared one
//! and every operation is a direct access to the target's block (`shared`); otherwise
//! blocking operations flush their target, and non-blocking ones mark their window for the
//! next `quiet`.

use super::lock::Guard;
use super::raw::{
    H, byte_type, check, op_no_op, op_replace, op_sum, open_window, u64_type, zero_lazily,
};
use super::shared::{self, Block};
use super::{MAX_SEGMENTS, MpiTransport};
use crate::transport::{
    Addr, AtomicOp, Collectives, ReduceOp, Rma, SegmentId, TransportError, read_bytes, write_bytes,
};
use ::mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(super) struct Segment {
    pub(super) win: H<ffi::MPI_Win>,
    pub(super) len: usize,
    /// A `*_nbi` operation on this window awaits the next `quiet`.
    pending: AtomicBool,
    /// Every rank's block, where the window is a shared one (ranks on one node).
    blocks: Option<Box<[Block]>>,
}

impl Segment {
    /// The words of `pe`'s block, where this process maps it.
    #[inline]
    fn block(&self, pe: usize) -> Option<&[AtomicU64]> {
        self.blocks.as_ref()?.get(pe).map(Block::words)
    }
}

/// This PE's side of a byte transfer with a window.
#[derive(Clone, Copy)]
enum Local {
    /// A get lands here.
    Dst(*mut u8),
    /// A put reads from here.
    Src(*const u8),
}

/// Issues `MPI_Get` or `MPI_Put` of `len` bytes between `local` and `at` (in `seg`).
///
/// # Safety
/// `local` must stay valid for `len` bytes (and a source unchanged) until the window is
/// flushed; the range must lie in the segment; the caller holds the RMA lock (or MPI is
/// thread-safe).
#[inline]
unsafe fn issue_bytes(
    seg: &Segment,
    at: Addr,
    local: Local,
    len: usize,
) -> Result<(), TransportError> {
    let (n, b, disp, win) = (
        len as c_int,
        byte_type(),
        at.offset as ffi::MPI_Aint,
        seg.win.0,
    );
    let (pe, rank) = (at.pe, at.pe as c_int);
    // SAFETY: forwarded from the caller.
    let rc = unsafe {
        match local {
            Local::Dst(dst) => ffi::MPI_Get(dst.cast(), n, b, rank, disp, n, b, win),
            Local::Src(src) => ffi::MPI_Put(src.cast(), n, b, rank, disp, n, b, win),
        }
    };
    check(rc, || match local {
        Local::Dst(_) => format!("MPI_Get from PE {pe}"),
        Local::Src(_) => format!("MPI_Put to PE {pe}"),
    })
}

/// Completes every operation issued on `seg` towards `pe`.
fn flush(seg: &Segment, pe: usize) -> Result<(), TransportError> {
    // SAFETY: the window is valid while the segment lives (freed only at finalisation).
    check(
        unsafe { ffi::MPI_Win_flush(pe as c_int, seg.win.0) },
        || "MPI_Win_flush".into(),
    )
}

/// Collectively allocates an RMA window of `bytes` bytes per rank on `comm`, zeroed and
/// locked for passive access by every rank. The caller holds the transport's lock.
fn allocate_window(comm: H<ffi::MPI_Comm>, bytes: usize) -> Result<ffi::MPI_Win, TransportError> {
    let alloc = bytes.max(8);
    let mut base: *mut u8 = std::ptr::null_mut();
    let mut win: ffi::MPI_Win = ffi::MPI_Win(std::ptr::null_mut());
    // SAFETY: `base` receives the address of `alloc` bytes owned by the window; every rank
    // calls this collectively (ids advance in step); lock held.
    unsafe {
        check(
            ffi::MPI_Win_allocate(
                alloc as ffi::MPI_Aint,
                1,
                ffi::RSMPI_INFO_NULL,
                comm.0,
                (&raw mut base).cast(),
                &mut win,
            ),
            || format!("MPI_Win_allocate of {bytes} bytes"),
        )?;
        zero_lazily(base, alloc);
        open_window(win)?;
        // Make the zeroes written above part of the window's public copy.
        check(ffi::MPI_Win_sync(win), || "MPI_Win_sync".into())?;
    }
    Ok(win)
}

impl MpiTransport {
    /// The lock for a one-sided operation that touches no transport state: none when MPI
    /// is thread-safe (`MPI_THREAD_MULTIPLE`), so threads of a PE issue them in parallel.
    #[inline]
    fn rma_lock(&self) -> Option<Guard<'_>> {
        (!self.thread_multiple).then(|| self.mpi())
    }

    /// The segment of an access, bounds checked.
    #[inline]
    pub(super) fn locate(&self, at: Addr, len: usize) -> Result<&Segment, TransportError> {
        let seg = self.segments.get(at.segment as usize).and_then(|s| s.get());
        let (seg_len, max) = (seg.map(|s| s.len), c_int::MAX as usize);
        crate::transport::check_access(at, len, self.size, seg_len, max)?;
        Ok(seg.expect("checked above"))
    }

    #[inline]
    fn word(&self, at: Addr) -> Result<&Segment, TransportError> {
        crate::transport::check_word(at)?;
        self.locate(at, 8)
    }

    /// Issues an atomic without completing it. Call with the lock held, or without it if
    /// MPI is thread-safe and the caller keeps no transport state.
    ///
    /// # Safety
    /// `origin` and `result` must stay valid until the window is flushed.
    #[inline]
    unsafe fn issue_atomic(
        &self,
        seg: &Segment,
        at: Addr,
        op: AtomicOp,
        origin: *mut [u64; 2],
        result: *mut u64,
    ) -> Result<(), TransportError> {
        let (pe, disp, win) = (at.pe, at.offset as ffi::MPI_Aint, seg.win.0);
        let rank = pe as c_int;
        let o = origin as *mut u64;
        // SAFETY: the caller keeps `origin` and `result` alive until the flush; the target
        // word was bounds- and alignment-checked by `word`; the lock is held.
        let rc = unsafe {
            match op {
                AtomicOp::CompareExchange { current, new } => {
                    *o = new;
                    *o.add(1) = current;
                    ffi::MPI_Compare_and_swap(
                        o as *const c_void,
                        o.add(1) as *const c_void,
                        result as *mut c_void,
                        u64_type(),
                        rank,
                        disp,
                        win,
                    )
                }
                _ => {
                    let (v, mop) = match op {
                        AtomicOp::Load => (0, op_no_op()),
                        AtomicOp::Store(v) | AtomicOp::Swap(v) => (v, op_replace()),
                        AtomicOp::FetchAdd(v) => (v, op_sum()),
                        AtomicOp::CompareExchange { .. } => unreachable!(),
                    };
                    *o = v;
                    ffi::MPI_Fetch_and_op(
                        o as *const c_void,
                        result as *mut c_void,
                        u64_type(),
                        rank,
                        disp,
                        mop,
                        win,
                    )
                }
            }
        };
        check(rc, || format!("atomic {op:?} on PE {pe}"))
    }

    /// The path of every get and put: bounds check, nothing for an empty range, a copy
    /// where this process maps the target's block, else `local`'s transfer issued under
    /// the RMA lock, then completed at once (`blocking`) or marked for `quiet`.
    ///
    /// # Safety
    /// `local` is valid for `len` bytes (writes for a get, reads for a put), not used by
    /// anyone else, and (a source) unchanged, until the operation completes: at return if
    /// `blocking`, else at this PE's next `quiet`.
    #[inline]
    unsafe fn transfer(
        &self,
        at: Addr,
        local: Local,
        len: usize,
        blocking: bool,
    ) -> Result<(), TransportError> {
        let seg = self.locate(at, len)?;
        if len == 0 {
            return Ok(());
        }
        if let Some(block) = seg.block(at.pe) {
            // SAFETY: the caller's contract makes `local` a valid, unshared range of
            // `len` bytes; the block range was bounds-checked by `locate`.
            match local {
                Local::Dst(d) => read_bytes(block, at.offset, unsafe {
                    std::slice::from_raw_parts_mut(d, len)
                }),
                Local::Src(s) => write_bytes(block, at.offset, unsafe {
                    std::slice::from_raw_parts(s, len)
                }),
            }
            return Ok(());
        }
        let _l = self.rma_lock();
        // SAFETY: forwarded from the caller; range checked; lock held or MPI thread-safe.
        unsafe { issue_bytes(seg, at, local, len)? };
        if blocking {
            flush(seg, at.pe)
        } else {
            // Marked after issuing: a `quiet` that finds the mark flushes after the issue.
            seg.pending.store(true, Ordering::Release);
            Ok(())
        }
    }

    /// Flushes every window with outstanding non-blocking operations. Lock held, so a
    /// `quiet` that finds a mark already cleared by another thread's `quiet` waits until
    /// that thread's flush has completed.
    pub(super) fn flush_pending(&self, l: &mut Guard<'_>) -> Result<(), TransportError> {
        if let Some(m) = &self.msg {
            return m.quiet();
        }
        let n = self.next_segment.load(Ordering::Acquire) as usize;
        for seg in self.segments[..n.min(MAX_SEGMENTS)]
            .iter()
            .filter_map(|s| s.get())
        {
            if seg.pending.swap(false, Ordering::AcqRel) {
                // SAFETY: the window is valid and locked for all ranks; the lock is held.
                let rc = unsafe { ffi::MPI_Win_flush_all(seg.win.0) };
                check(rc, || "MPI_Win_flush_all".into())?;
            }
        }
        // Every non-blocking atomic was on a window flushed above.
        l.origins.clear();
        Ok(())
    }
}

impl Rma for MpiTransport {
    fn alloc_segment(&self, bytes: usize) -> Result<SegmentId, TransportError> {
        let id = self.next_segment.load(Ordering::Relaxed);
        if id as usize >= MAX_SEGMENTS {
            return Err(TransportError::Collective(format!(
                "more than {MAX_SEGMENTS} segments allocated"
            )));
        }
        // Agree on the size (max of bytes and of !bytes gives max and min), and wait for
        // everyone with the lock free, so that MPI_Win_allocate below returns promptly.
        let mut sizes = [bytes as u64, !(bytes as u64)];
        self.iallreduce(&mut sizes, ReduceOp::Max)?;
        let (max, min) = (sizes[0], !sizes[1]);
        if max != min {
            return Err(TransportError::Collective(format!(
                "segment {id}: PE {} asked for {bytes} bytes, but the PEs asked for {min} to {max}",
                self.rank
            )));
        }
        if let Some(m) = &self.msg {
            m.alloc(id, bytes);
            self.next_segment.store(id + 1, Ordering::Release);
            // Nobody sends a request for the block before every rank has made its own.
            self.barrier()?;
            return Ok(id);
        }
        let (win, blocks) = {
            let _l = self.mpi();
            if self.shared {
                let (win, blocks) = shared::allocate(self.comm, self.size, bytes)?;
                (win, Some(blocks))
            } else {
                (allocate_window(self.comm, bytes)?, None)
            }
        };
        if self.segments[id as usize]
            .set(Segment {
                win: H(win),
                len: bytes,
                pending: AtomicBool::new(false),
                blocks,
            })
            .is_err()
        {
            return Err(TransportError::Collective(
                "alloc_segment called from two threads at once".into(),
            ));
        }
        self.next_segment.store(id + 1, Ordering::Release);
        // Nobody accesses the memory before every rank has zeroed its part.
        self.barrier()?;
        Ok(id)
    }

    fn segment_len(&self, segment: SegmentId) -> Option<usize> {
        if let Some(m) = &self.msg {
            return m.segment_len(segment);
        }
        self.segments
            .get(segment as usize)
            .and_then(|s| s.get())
            .map(|s| s.len)
    }

    #[inline]
    fn get(&self, at: Addr, dst: &mut [u8]) -> Result<(), TransportError> {
        let (ptr, len) = (dst.as_mut_ptr(), dst.len());
        if let Some(m) = &self.msg {
            // SAFETY: `dst` is borrowed until the blocking get has completed.
            return unsafe { m.get(&self.lock, at, ptr, len, true) };
        }
        // SAFETY: `dst` is valid for its length and borrowed until the blocking get has
        // completed.
        unsafe { self.transfer(at, Local::Dst(ptr), len, true) }
    }

    #[inline]
    fn put(&self, at: Addr, src: &[u8]) -> Result<(), TransportError> {
        let (ptr, len) = (src.as_ptr(), src.len());
        if let Some(m) = &self.msg {
            return m.put(&self.lock, at, src, true);
        }
        // SAFETY: `src` is valid for its length and borrowed until the blocking put has
        // completed.
        unsafe { self.transfer(at, Local::Src(ptr), len, true) }
    }

    #[inline]
    unsafe fn get_nbi(&self, at: Addr, dst: *mut u8, len: usize) -> Result<(), TransportError> {
        if let Some(m) = &self.msg {
            // SAFETY: the caller keeps `dst` valid and untouched until `quiet`.
            return unsafe { m.get(&self.lock, at, dst, len, false) };
        }
        // SAFETY: the caller keeps `dst` valid and untouched until `quiet`, which flushes
        // this window (`transfer` marks it pending).
        unsafe { self.transfer(at, Local::Dst(dst), len, false) }
    }

    #[inline]
    unsafe fn put_nbi(&self, at: Addr, src: *const u8, len: usize) -> Result<(), TransportError> {
        if let Some(m) = &self.msg {
            // SAFETY: the caller keeps `src` valid for `len` bytes (copied at once).
            let src = unsafe { std::slice::from_raw_parts(src, len) };
            return m.put(&self.lock, at, src, false);
        }
        // SAFETY: as in `get_nbi`, with `src` unchanged until `quiet`.
        unsafe { self.transfer(at, Local::Src(src), len, false) }
    }

    #[inline]
    fn atomic(&self, at: Addr, op: AtomicOp) -> Result<u64, TransportError> {
        if let Some(m) = &self.msg {
            let mut result = 0u64;
            // SAFETY: `result` lives until the blocking atomic has completed.
            unsafe { m.atomic(&self.lock, at, op, &mut result, true)? };
            return Ok(result);
        }
        let seg = self.word(at)?;
        if let Some(block) = seg.block(at.pe) {
            return Ok(op.apply_to(&block[at.offset / 8]));
        }
        let mut origin = [0u64; 2];
        let mut result = 0u64;
        let _l = self.rma_lock();
        // SAFETY: `origin` and `result` live until the flush below completes the
        // operation; lock held or MPI thread-safe.
        unsafe { self.issue_atomic(seg, at, op, &mut origin, &mut result)? };
        flush(seg, at.pe)?;
        Ok(result)
    }

    #[inline]
    unsafe fn atomic_nbi(
        &self,
        at: Addr,
        op: AtomicOp,
        result: *mut u64,
    ) -> Result<(), TransportError> {
        if let Some(m) = &self.msg {
            // SAFETY: the caller keeps `result` valid and untouched until `quiet`.
            return unsafe { m.atomic(&self.lock, at, op, result, false) };
        }
        let seg = self.word(at)?;
        if let Some(block) = seg.block(at.pe) {
            // SAFETY: the caller keeps `result` valid for a write until `quiet`.
            unsafe { result.write(op.apply_to(&block[at.offset / 8])) };
            return Ok(());
        }
        let mut l = self.mpi();
        // The standard lets MPI read the origin values until the operation completes, so
        // they live in a heap cell kept until the next flush of pending windows.
        let mut origin = Box::new([0u64; 2]);
        // SAFETY: the boxed origin stays in `l.origins` (its heap address is stable) until
        // `flush_pending` completed this window; the caller keeps `result` valid until
        // `quiet`; lock held.
        unsafe { self.issue_atomic(seg, at, op, &mut *origin, result)? };
        l.origins.push(origin);
        seg.pending.store(true, Ordering::Release);
        Ok(())
    }

    /// Every rank's block where the ranks share this node and segments are shared windows
    /// (every operation on them is then a direct access); this rank's own block where
    /// one-sided operations are messages served by its RMA thread with native atomics on
    /// the same words. Never an RMA window's memory: MPI promises its atomics atomic only
    /// with respect to each other.
    #[inline]
    fn direct(&self, segment: SegmentId, pe: usize) -> Option<&[AtomicU64]> {
        match &self.msg {
            Some(m) if pe == self.rank => m.direct(segment),
            Some(_) => None,
            None => self.segments.get(segment as usize)?.get()?.block(pe),
        }
    }

    fn remote_ops(&self) -> Option<crate::transport::RemoteOps> {
        self.msg.as_ref().map(|m| m.remote_ops())
    }

    fn quiet(&self) -> Result<(), TransportError> {
        if self.shared {
            // Every operation completed when issued (direct accesses); the fence orders
            // them before what this thread does next.
            std::sync::atomic::fence(Ordering::SeqCst);
            return Ok(());
        }
        let mut l = self.mpi();
        self.flush_pending(&mut l)
    }
}
