//! The `local` transport: every PE in this process, sharing memory.
//!
//! Segments are arrays of `AtomicU64` (so 64-bit atomics are native atomics and every
//! segment is 8-byte aligned); one-sided operations are memory copies and complete at once,
//! so `quiet` only orders. Message buffers move between PEs through channels without being
//! copied. The barrier spins briefly, then yields, and watches the abort flag so that a
//! failed PE wakes everybody.

use super::{AtomicOp, ReduceOp, SegmentId, Transport, TransportError};
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Most collective allocations a run may make.
pub const MAX_SEGMENTS: usize = 4096;
/// Most emptied buffers kept per PE for reuse.
const MAX_FREE_BUFFERS: usize = 64;

struct Segment {
    len: usize,
    /// One zeroed block per PE.
    mem: Box<[Box<[AtomicU64]>]>,
}

struct Inbox {
    tx: Sender<(usize, Vec<u8>)>,
    rx: Receiver<(usize, Vec<u8>)>,
    free: Mutex<Vec<Vec<u8>>>,
}

/// State shared by all PEs of one local run.
pub struct LocalFabric {
    pes: usize,
    segments: Box<[OnceLock<Segment>]>,
    inboxes: Box<[Inbox]>,
    barrier_count: AtomicUsize,
    barrier_generation: AtomicUsize,
    reduce_slots: Box<[Mutex<Vec<u64>>]>,
    aborted: AtomicBool,
    abort_message: Mutex<Option<String>>,
}

/// One PE's handle on a [`LocalFabric`].
pub struct LocalTransport {
    fabric: Arc<LocalFabric>,
    pe: usize,
    next_segment: AtomicU32,
}

impl LocalFabric {
    /// A fabric for `pes` PEs (at least one).
    pub fn new(pes: usize) -> Arc<LocalFabric> {
        let pes = pes.max(1);
        Arc::new(LocalFabric {
            pes,
            segments: (0..MAX_SEGMENTS).map(|_| OnceLock::new()).collect(),
            inboxes: (0..pes)
                .map(|_| {
                    let (tx, rx) = unbounded();
                    Inbox {
                        tx,
                        rx,
                        free: Mutex::new(Vec::new()),
                    }
                })
                .collect(),
            barrier_count: AtomicUsize::new(0),
            barrier_generation: AtomicUsize::new(0),
            reduce_slots: (0..pes).map(|_| Mutex::new(Vec::new())).collect(),
            aborted: AtomicBool::new(false),
            abort_message: Mutex::new(None),
        })
    }

    /// The handle of PE `pe`; make exactly one per PE.
    pub fn transport(self: &Arc<Self>, pe: usize) -> LocalTransport {
        assert!(pe < self.pes, "PE {pe} out of range (0..{})", self.pes);
        LocalTransport {
            fabric: Arc::clone(self),
            pe,
            next_segment: AtomicU32::new(0),
        }
    }

    fn abort_error(&self) -> TransportError {
        let msg = self
            .abort_message
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| "unknown reason".into());
        TransportError::Aborted(msg)
    }

    #[inline]
    fn check_abort(&self) -> Result<(), TransportError> {
        if self.aborted.load(Ordering::Relaxed) {
            Err(self.abort_error())
        } else {
            Ok(())
        }
    }
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
        super::check_access(
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
        super::check_word(pe, segment, offset)?;
        let mem = self.locate(pe, segment, offset, 8)?;
        Ok(&mem[offset / 8])
    }
}

#[inline]
fn apply(word: &AtomicU64, op: AtomicOp) -> u64 {
    match op {
        AtomicOp::Load => word.load(Ordering::SeqCst),
        AtomicOp::Store(v) | AtomicOp::Swap(v) => word.swap(v, Ordering::SeqCst),
        AtomicOp::FetchAdd(v) => word.fetch_add(v, Ordering::SeqCst),
        AtomicOp::CompareExchange { current, new } => {
            match word.compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(v) | Err(v) => v,
            }
        }
    }
}

impl Transport for LocalTransport {
    #[inline]
    fn my_pe(&self) -> usize {
        self.pe
    }
    #[inline]
    fn num_pes(&self) -> usize {
        self.fabric.pes
    }
    fn name(&self) -> &'static str {
        "local"
    }

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
        // SAFETY: `locate` checked `offset + dst.len()` against the segment length, which
        // is at most the byte size of `mem`; `dst` is an exclusive borrow so the ranges do
        // not overlap. Concurrent writes to the same bytes are a documented program race
        // (as in OpenSHMEM); they cannot tear anything beyond the bytes involved.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (mem.as_ptr() as *const u8).add(offset),
                dst.as_mut_ptr(),
                dst.len(),
            );
        }
        std::sync::atomic::fence(Ordering::Acquire);
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
        std::sync::atomic::fence(Ordering::Release);
        // SAFETY: bounds checked by `locate`; the segment is interior-mutable memory
        // (`AtomicU64`s), so writing through a shared reference is allowed; racing
        // accesses to the same bytes are a documented program error.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.as_ptr(),
                (mem.as_ptr() as *mut u8).add(offset),
                src.len(),
            );
        }
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
        Ok(apply(self.word(pe, segment, offset)?, op))
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

    #[inline]
    fn send(&self, pe: usize, buf: Vec<u8>) -> Result<(), TransportError> {
        let inbox = self.fabric.inboxes.get(pe).ok_or_else(|| {
            TransportError::Other(format!(
                "send to PE {pe}, but there are {} PEs",
                self.fabric.pes
            ))
        })?;
        inbox
            .tx
            .send((self.pe, buf))
            .map_err(|_| TransportError::Other("inbox closed".into()))
    }

    #[inline]
    fn try_recv(&self) -> Result<Option<(usize, Vec<u8>)>, TransportError> {
        self.fabric.check_abort()?;
        Ok(self.fabric.inboxes[self.pe].rx.try_recv().ok())
    }

    fn recycle(&self, mut buf: Vec<u8>) {
        buf.clear();
        let mut free = self.fabric.inboxes[self.pe]
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if free.len() < MAX_FREE_BUFFERS {
            free.push(buf);
        }
    }

    fn buffer(&self, capacity: usize) -> Vec<u8> {
        let reused = self.fabric.inboxes[self.pe]
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        match reused {
            Some(mut b) => {
                b.reserve(capacity);
                b
            }
            None => Vec::with_capacity(capacity),
        }
    }

    fn barrier(&self) -> Result<(), TransportError> {
        let f = &*self.fabric;
        f.check_abort()?;
        let generation = f.barrier_generation.load(Ordering::Acquire);
        if f.barrier_count.fetch_add(1, Ordering::AcqRel) + 1 == f.pes {
            f.barrier_count.store(0, Ordering::Relaxed);
            f.barrier_generation.fetch_add(1, Ordering::AcqRel);
            return Ok(());
        }
        let mut spins = 0u32;
        while f.barrier_generation.load(Ordering::Acquire) == generation {
            f.check_abort()?;
            spins += 1;
            if spins < 200 {
                std::hint::spin_loop();
            } else if spins < 20_000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        Ok(())
    }

    fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        let f = &*self.fabric;
        {
            let mut slot = f.reduce_slots[self.pe]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            slot.clear();
            slot.extend_from_slice(values);
        }
        self.barrier()?;
        for (pe, slot) in f.reduce_slots.iter().enumerate() {
            let slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if slot.len() != values.len() {
                let msg = format!(
                    "allreduce: PE {} passed {} values, PE {pe} passed {}",
                    self.pe,
                    values.len(),
                    slot.len()
                );
                drop(slot);
                self.abort(&msg);
                return Err(TransportError::Collective(msg));
            }
            if pe == 0 {
                values.copy_from_slice(&slot);
            } else {
                for (v, s) in values.iter_mut().zip(slot.iter()) {
                    *v = op.apply(*v, *s);
                }
            }
        }
        // Nobody may overwrite a slot before everyone has read all of them.
        self.barrier()
    }

    fn abort(&self, message: &str) {
        let f = &*self.fabric;
        let mut m = f.abort_message.lock().unwrap_or_else(|e| e.into_inner());
        if m.is_none() {
            *m = Some(message.to_string());
        }
        f.aborted.store(true, Ordering::SeqCst);
    }

    fn aborted(&self) -> Option<String> {
        if self.fabric.aborted.load(Ordering::SeqCst) {
            Some(match self.fabric.abort_error() {
                TransportError::Aborted(m) => m,
                e => e.to_string(),
            })
        } else {
            None
        }
    }
}
