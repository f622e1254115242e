//! The transport: the narrow interface between the runtime and a communication library.
//!
//! Everything the runtime needs from the machine is in [`Transport`] and its three
//! parts, one trait per concern: [`Transport`] itself (who am I, and a way to abort the
//! whole run), [`Rma`] (collective allocation of symmetric segments, one-sided byte
//! transfers and 64-bit atomics at `(pe, segment, offset)`), [`Messages`] (delivery of
//! byte buffers: aggregated batches of active messages) and [`Collectives`] (a barrier
//! and a small `u64` allreduce). Only bytes and plain integers cross it: no closures, no
//! remote pointers, so it maps onto MPI-3 RMA windows plus two-sided messages,
//! OpenSHMEM, or libfabric.
//!
//! Implementations, each a folder with a file per concern:
//! - [`local::LocalTransport`]: every PE in this process, one handle per PE (the default).
//! - `mpi::MpiTransport` (cargo feature `mpi`): one PE per MPI rank. It must provide
//!   `MpiTransport::init() -> Result<MpiTransport, TransportError>`.
//!
//! The runtime above is generic code over [`Backend`], an enum of the implementations, so
//! no trait object sits on a hot path. No public item hands the backend to programs:
//! tools that need the communication library itself (the raw-MPI baselines of the
//! benchmarks) open their own communicator on it.
//!
//! # Contract common to all implementations
//! - A transport handle belongs to one PE and may be used from several threads of that PE
//!   at once (`Sync`).
//! - Collective calls ([`Rma::alloc_segment`], [`Collectives::barrier`],
//!   [`Collectives::allreduce_u64`]) are made by every PE, in the same order, from one thread
//!   per PE at a time.
//! - Blocking `get`/`put`/`atomic` are complete when they return: a `put` is visible to
//!   every later operation of any PE on those bytes; `get` and `atomic` return the value.
//! - The `*_nbi` forms are complete after the next [`Rma::quiet`] of the same PE; the
//!   buffers they name must stay valid and untouched until then.
//! - Atomics are atomic with respect to other atomics on the same 8-byte-aligned word, not
//!   with respect to `put`/`get` on it (mixing them on one word at the same time is a race).
//! - `barrier` implies `quiet` on every PE: everything done by any PE before the barrier is
//!   visible to everything done by any PE after it.
//! - A buffer sent with [`Messages::send`] is received whole, exactly once, by the target's
//!   [`Messages::try_recv`]; buffers from one source to one target arrive in order.
//! - After [`Transport::abort`] on any PE, every blocking call on every PE returns
//!   [`TransportError::Aborted`] (MPI may instead end the processes with `MPI_Abort`).

mod backend;
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi;
mod remote_ops;

pub use backend::Backend;
pub use remote_ops::{RemoteOpCounter, RemoteOpKind, RemoteOps};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bounds check every implementation applies to an access of `len` bytes at `at`:
/// `seg_len` is the segment's length (`None` if it does not exist), `pes` the number of
/// PEs, `max_len` the largest single transfer the library takes.
pub(crate) fn check_access(
    at: Addr,
    len: usize,
    pes: usize,
    seg_len: Option<usize>,
    max_len: usize,
) -> Result<(), TransportError> {
    let Addr {
        pe,
        segment,
        offset,
    } = at;
    let oob = |len_seg| TransportError::OutOfBounds {
        pe,
        segment,
        offset,
        len_access: len,
        len: len_seg,
    };
    let seg_len = match seg_len {
        Some(l) if pe < pes => l,
        _ => return Err(oob(0)),
    };
    match offset.checked_add(len) {
        Some(end) if end <= seg_len && len <= max_len => Ok(()),
        _ => Err(oob(seg_len)),
    }
}

/// The alignment check of an atomic on the word at `at`.
pub(crate) fn check_word(at: Addr) -> Result<(), TransportError> {
    if at.offset.is_multiple_of(8) {
        Ok(())
    } else {
        Err(TransportError::Misaligned {
            pe: at.pe,
            segment: at.segment,
            offset: at.offset,
        })
    }
}

/// Copies `dst.len()` bytes at byte `offset` of `mem` into `dst`, then an acquire fence:
/// a get from memory held as words (the local transport's segments, the message-carried
/// one-sided operations of the `mpi` transport). The caller checked the bounds.
pub(crate) fn read_bytes(mem: &[AtomicU64], offset: usize, dst: &mut [u8]) {
    assert!(
        offset + dst.len() <= mem.len() * 8,
        "read_bytes out of bounds"
    );
    // SAFETY: the range lies in `mem` (asserted above); `dst` is an exclusive borrow so
    // the ranges do not overlap. Concurrent writes to the same bytes are a documented
    // program race (as in OpenSHMEM); they cannot tear anything beyond the bytes involved.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (mem.as_ptr() as *const u8).add(offset),
            dst.as_mut_ptr(),
            dst.len(),
        );
    }
    std::sync::atomic::fence(Ordering::Acquire);
}

/// A release fence, then copies `src` to byte `offset` of `mem`: the put of
/// [`read_bytes`]. The caller checked the bounds.
pub(crate) fn write_bytes(mem: &[AtomicU64], offset: usize, src: &[u8]) {
    assert!(
        offset + src.len() <= mem.len() * 8,
        "write_bytes out of bounds"
    );
    std::sync::atomic::fence(Ordering::Release);
    // SAFETY: the range lies in `mem` (asserted above), which is interior-mutable memory
    // (`AtomicU64`s), so writing through a shared reference is allowed; racing accesses to
    // the same bytes are a documented program error.
    unsafe {
        std::ptr::copy_nonoverlapping(
            src.as_ptr(),
            (mem.as_ptr() as *mut u8).add(offset),
            src.len(),
        );
    }
}

/// Identifies a symmetric segment: the k-th collective allocation has id k on every PE.
pub type SegmentId = u32;

/// Where a one-sided access goes: byte `offset` of `segment` on PE `pe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addr {
    /// The PE whose memory is accessed.
    pub pe: usize,
    /// The segment.
    pub segment: SegmentId,
    /// The first byte accessed.
    pub offset: usize,
}

/// A 64-bit atomic operation on a remote word; every operation returns the previous value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// Read the word.
    Load,
    /// Write the word (returns the previous value).
    Store(u64),
    /// Replace the word.
    Swap(u64),
    /// Add (wrapping) to the word.
    FetchAdd(u64),
    /// If the word equals `current`, replace it with `new`; succeeded iff the returned
    /// previous value equals `current`.
    CompareExchange {
        /// Expected value.
        current: u64,
        /// Value stored on success.
        new: u64,
    },
}

/// Element-wise reduction of [`Collectives::allreduce_u64`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Wrapping sum.
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl AtomicOp {
    /// Performs the operation on a word of this process's memory; the previous value.
    #[inline]
    pub(crate) fn apply_to(self, word: &AtomicU64) -> u64 {
        match self {
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
}

impl ReduceOp {
    /// Combines two values.
    #[inline]
    pub fn apply(self, a: u64, b: u64) -> u64 {
        match self {
            ReduceOp::Sum => a.wrapping_add(b),
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
        }
    }
}

/// What can go wrong below the runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// Some PE aborted the run (a panic or an error); the text says which and why.
    #[error("run aborted: {0}")]
    Aborted(String),
    /// An access outside a segment, or to a segment or PE that does not exist.
    #[error(
        "out-of-bounds global access: PE {pe}, segment {segment}, bytes {offset}..{end} (segment length {len})",
        end = offset + len_access
    )]
    OutOfBounds {
        /// Target PE.
        pe: usize,
        /// Segment id.
        segment: SegmentId,
        /// First byte accessed.
        offset: usize,
        /// Bytes accessed.
        len_access: usize,
        /// Length of the segment (0 if it or the PE does not exist).
        len: usize,
    },
    /// An atomic on an address that is not 8-byte aligned.
    #[error(
        "misaligned atomic: PE {pe}, segment {segment}, offset {offset} is not a multiple of 8"
    )]
    Misaligned {
        /// Target PE.
        pe: usize,
        /// Segment id.
        segment: SegmentId,
        /// Offset of the word.
        offset: usize,
    },
    /// A collective used inconsistently (e.g. PEs asked for different segment sizes).
    #[error("collective misuse: {0}")]
    Collective(String),
    /// Anything else the communication library reports.
    #[error("transport error: {0}")]
    Other(String),
}

/// The operations the runtime needs from a communication library, one trait per concern:
/// this one (who am I, failure), [`Rma`] (global memory), [`Messages`] (buffers of active
/// messages) and [`Collectives`]. See the module docs for the contract.
pub trait Transport: Rma + Messages + Collectives + Send + Sync + 'static {
    /// This PE's number, `0..num_pes()`.
    fn my_pe(&self) -> usize;
    /// Number of PEs in the run.
    fn num_pes(&self) -> usize;
    /// Short name for reports ("local", "mpi").
    fn name(&self) -> &'static str;

    /// Ends the run on every PE: blocking calls everywhere fail with
    /// [`TransportError::Aborted`] carrying `message` (or the processes exit non-zero).
    fn abort(&self, message: &str);
    /// `Some(message)` once any PE has aborted.
    fn aborted(&self) -> Option<String>;
}

/// Symmetric segments and one-sided access to them.
pub trait Rma {
    /// Collective: allocates `bytes` zeroed bytes on every PE (the same size everywhere)
    /// and returns the segment id. Returns once every PE's memory is ready.
    fn alloc_segment(&self, bytes: usize) -> Result<SegmentId, TransportError>;
    /// Length in bytes of a segment, `None` if it does not exist.
    fn segment_len(&self, segment: SegmentId) -> Option<usize>;

    /// Copies `dst.len()` bytes from `at` into `dst`.
    fn get(&self, at: Addr, dst: &mut [u8]) -> Result<(), TransportError>;
    /// Copies `src` to `at`; visible to everyone when it returns.
    fn put(&self, at: Addr, src: &[u8]) -> Result<(), TransportError>;
    /// Performs `op` on the 8-byte-aligned word at `at`, returns the previous value.
    fn atomic(&self, at: Addr, op: AtomicOp) -> Result<u64, TransportError>;

    // The non-blocking forms. By default they complete at once (a transport whose
    // operations are memory accesses gains nothing by deferring them), which `quiet`
    // allows: it only promises completion by then.

    /// Starts a get of `len` bytes into `dst`; complete after the next [`quiet`](Self::quiet).
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes, and not read or written by anyone
    /// else, until `quiet` returns.
    #[inline]
    unsafe fn get_nbi(&self, at: Addr, dst: *mut u8, len: usize) -> Result<(), TransportError> {
        // SAFETY: the caller guarantees `dst` is valid and exclusively ours for `len` bytes.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst, len) };
        self.get(at, dst)
    }
    /// Starts a put of `len` bytes from `src`; complete after the next [`quiet`](Self::quiet).
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes and not written until `quiet` returns.
    #[inline]
    unsafe fn put_nbi(&self, at: Addr, src: *const u8, len: usize) -> Result<(), TransportError> {
        // SAFETY: the caller guarantees `src` is valid for reads of `len` bytes.
        let src = unsafe { std::slice::from_raw_parts(src, len) };
        self.put(at, src)
    }
    /// Starts `op`; the previous value is in `*result` after the next [`quiet`](Self::quiet).
    ///
    /// # Safety
    /// `result` must be valid for a write of a `u64` and untouched until `quiet` returns.
    #[inline]
    unsafe fn atomic_nbi(
        &self,
        at: Addr,
        op: AtomicOp,
        result: *mut u64,
    ) -> Result<(), TransportError> {
        let v = self.atomic(at, op)?;
        // SAFETY: the caller guarantees `result` is valid for a write until `quiet`.
        unsafe { result.write(v) };
        Ok(())
    }
    /// Completes every `*_nbi` operation this PE started: gets have landed, puts and
    /// atomics are visible to every later operation of any PE.
    fn quiet(&self) -> Result<(), TransportError>;

    /// The words of `segment` on `pe` as memory this process may access directly, where
    /// the transport keeps them so (native atomics on them are atomic with respect to
    /// every PE's atomics on the same words, and plain copies are its gets and puts);
    /// `None` where it does not, or the segment does not exist (the default).
    #[inline]
    fn direct(&self, segment: SegmentId, pe: usize) -> Option<&[AtomicU64]> {
        let _ = (segment, pe);
        None
    }

    /// The one-sided operations this PE has sent to other PEs as messages, where the
    /// transport carries them so (`None`, the default, where it does not).
    fn remote_ops(&self) -> Option<RemoteOps> {
        None
    }
}

/// Delivery of byte buffers (aggregated batches of active messages).
pub trait Messages {
    /// Delivers `buf` to PE `pe` (which may be this PE).
    fn send(&self, pe: usize, buf: Vec<u8>) -> Result<(), TransportError>;
    /// A received buffer and its source PE, if one is waiting. Never blocks.
    fn try_recv(&self) -> Result<Option<(usize, Vec<u8>)>, TransportError>;
    /// Returns an emptied buffer for reuse by later sends (an optimisation; may drop it).
    fn recycle(&self, buf: Vec<u8>) {
        drop(buf);
    }
    /// An empty buffer with at least `capacity` bytes reserved, recycled when possible.
    fn buffer(&self, capacity: usize) -> Vec<u8> {
        Vec::with_capacity(capacity)
    }
    /// Asks the transport to call `hook` (on the sender's thread) whenever a buffer is
    /// delivered to this PE, or to stop with `None`, so that a thread sleeping until this
    /// PE has something to do can be woken by a message. Returns whether the transport
    /// does so; by default it cannot (the hook is dropped), and such a sleeper must poll.
    fn set_arrival_hook(&self, hook: Option<ArrivalHook>) -> bool {
        drop(hook);
        false
    }
}

/// Called by a transport when a buffer reaches a PE (see [`Messages::set_arrival_hook`]).
/// It runs on the sending thread, so it must be quick and must not block.
pub type ArrivalHook = Arc<dyn Fn() + Send + Sync>;

/// Collective operations over all PEs.
pub trait Collectives {
    /// Collective: returns once every PE has entered it (implies `quiet` everywhere).
    fn barrier(&self) -> Result<(), TransportError>;
    /// Collective: replaces `values` on every PE by the element-wise reduction over all
    /// PEs. Every PE passes the same length.
    fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError>;
}
