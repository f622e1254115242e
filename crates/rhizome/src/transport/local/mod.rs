//! The `local` transport: every PE in this process, sharing memory.
//!
//! Segments are arrays of `AtomicU64` (so 64-bit atomics are native atomics and every
//! segment is 8-byte aligned); one-sided operations are memory copies and complete at once,
//! so `quiet` only orders. Message buffers move between PEs through channels without being
//! copied. The barrier spins briefly, then yields, and watches the abort flag so that a
//! failed PE wakes everybody.
//!
//! Files by concern: this one has the fabric (the state all PEs share, made once per run)
//! and the per-PE handle; `rma` the segments and one-sided operations, `messages` the
//! inboxes, `collectives` the barrier and the reduction.

mod collectives;
mod messages;
mod rma;

use super::{Transport, TransportError};
use messages::Inbox;
use rma::Segment;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use rma::MAX_SEGMENTS;

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
            inboxes: (0..pes).map(|_| Inbox::new()).collect(),
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
