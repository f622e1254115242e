//! [`Backend`]: the transports of this build as one type, so that code above is
//! monomorphic (no trait object on a hot path).

#[cfg(feature = "mpi")]
use super::mpi;
use super::{
    Addr, ArrivalHook, AtomicOp, Collectives, Messages, ReduceOp, Rma, SegmentId, Transport,
    TransportError, local,
};
use std::sync::atomic::AtomicU64;

/// The transports of this build, as one type so that code above is monomorphic.
pub enum Backend {
    /// All PEs in this process.
    Local(local::LocalTransport),
    /// One PE per MPI rank.
    #[cfg(feature = "mpi")]
    Mpi(mpi::MpiTransport),
}

macro_rules! delegate {
    ($self:ident, $t:ident => $e:expr) => {
        match $self {
            Backend::Local($t) => $e,
            #[cfg(feature = "mpi")]
            Backend::Mpi($t) => $e,
        }
    };
}

impl Transport for Backend {
    #[inline]
    fn my_pe(&self) -> usize {
        delegate!(self, t => t.my_pe())
    }
    #[inline]
    fn num_pes(&self) -> usize {
        delegate!(self, t => t.num_pes())
    }
    #[inline]
    fn name(&self) -> &'static str {
        delegate!(self, t => t.name())
    }
    #[inline]
    fn abort(&self, message: &str) {
        delegate!(self, t => t.abort(message))
    }
    #[inline]
    fn aborted(&self) -> Option<String> {
        delegate!(self, t => t.aborted())
    }
}

impl Rma for Backend {
    #[inline]
    fn alloc_segment(&self, bytes: usize) -> Result<SegmentId, TransportError> {
        delegate!(self, t => t.alloc_segment(bytes))
    }
    #[inline]
    fn segment_len(&self, segment: SegmentId) -> Option<usize> {
        delegate!(self, t => t.segment_len(segment))
    }
    #[inline]
    fn get(&self, at: Addr, d: &mut [u8]) -> Result<(), TransportError> {
        delegate!(self, t => t.get(at, d))
    }
    #[inline]
    fn put(&self, at: Addr, src: &[u8]) -> Result<(), TransportError> {
        delegate!(self, t => t.put(at, src))
    }
    #[inline]
    unsafe fn get_nbi(&self, at: Addr, d: *mut u8, len: usize) -> Result<(), TransportError> {
        // SAFETY: the caller's contract is passed on unchanged.
        delegate!(self, t => unsafe { t.get_nbi(at, d, len) })
    }
    #[inline]
    unsafe fn put_nbi(&self, at: Addr, s: *const u8, len: usize) -> Result<(), TransportError> {
        // SAFETY: the caller's contract is passed on unchanged.
        delegate!(self, t => unsafe { t.put_nbi(at, s, len) })
    }
    #[inline]
    fn atomic(&self, at: Addr, op: AtomicOp) -> Result<u64, TransportError> {
        delegate!(self, t => t.atomic(at, op))
    }
    #[inline]
    unsafe fn atomic_nbi(&self, at: Addr, op: AtomicOp, r: *mut u64) -> Result<(), TransportError> {
        // SAFETY: the caller's contract is passed on unchanged.
        delegate!(self, t => unsafe { t.atomic_nbi(at, op, r) })
    }
    #[inline]
    fn quiet(&self) -> Result<(), TransportError> {
        delegate!(self, t => t.quiet())
    }
    #[inline]
    fn direct(&self, segment: SegmentId, pe: usize) -> Option<&[AtomicU64]> {
        delegate!(self, t => t.direct(segment, pe))
    }
    fn remote_ops(&self) -> Option<super::RemoteOps> {
        delegate!(self, t => t.remote_ops())
    }
}

impl Messages for Backend {
    #[inline]
    fn send(&self, pe: usize, buf: Vec<u8>) -> Result<(), TransportError> {
        delegate!(self, t => t.send(pe, buf))
    }
    #[inline]
    fn try_recv(&self) -> Result<Option<(usize, Vec<u8>)>, TransportError> {
        delegate!(self, t => t.try_recv())
    }
    #[inline]
    fn recycle(&self, buf: Vec<u8>) {
        delegate!(self, t => t.recycle(buf))
    }
    #[inline]
    fn buffer(&self, capacity: usize) -> Vec<u8> {
        delegate!(self, t => t.buffer(capacity))
    }
    #[inline]
    fn set_arrival_hook(&self, hook: Option<ArrivalHook>) -> bool {
        delegate!(self, t => t.set_arrival_hook(hook))
    }
}

impl Collectives for Backend {
    #[inline]
    fn barrier(&self) -> Result<(), TransportError> {
        delegate!(self, t => t.barrier())
    }
    #[inline]
    fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        delegate!(self, t => t.allreduce_u64(values, op))
    }
}
