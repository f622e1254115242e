//! [`Backend`]: the transports of this build as one type, so that code above is
//! monomorphic (no trait object on a hot path).

#[cfg(feature = "mpi")]
use super::mpi;
use super::{
    AtomicOp, Collectives, Messages, ReduceOp, Rma, SegmentId, Transport, TransportError, local,
};

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
    fn get(&self, pe: usize, s: SegmentId, o: usize, d: &mut [u8]) -> Result<(), TransportError> {
        delegate!(self, t => t.get(pe, s, o, d))
    }
    #[inline]
    fn put(&self, pe: usize, s: SegmentId, o: usize, src: &[u8]) -> Result<(), TransportError> {
        delegate!(self, t => t.put(pe, s, o, src))
    }
    #[inline]
    unsafe fn get_nbi(
        &self,
        pe: usize,
        s: SegmentId,
        o: usize,
        d: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller's contract is passed on unchanged.
        delegate!(self, t => unsafe { t.get_nbi(pe, s, o, d, len) })
    }
    #[inline]
    unsafe fn put_nbi(
        &self,
        pe: usize,
        s: SegmentId,
        o: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller's contract is passed on unchanged.
        delegate!(self, t => unsafe { t.put_nbi(pe, s, o, src, len) })
    }
    #[inline]
    fn atomic(
        &self,
        pe: usize,
        s: SegmentId,
        o: usize,
        op: AtomicOp,
    ) -> Result<u64, TransportError> {
        delegate!(self, t => t.atomic(pe, s, o, op))
    }
    #[inline]
    unsafe fn atomic_nbi(
        &self,
        pe: usize,
        s: SegmentId,
        o: usize,
        op: AtomicOp,
        r: *mut u64,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller's contract is passed on unchanged.
        delegate!(self, t => unsafe { t.atomic_nbi(pe, s, o, op, r) })
    }
    #[inline]
    fn quiet(&self) -> Result<(), TransportError> {
        delegate!(self, t => t.quiet())
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
