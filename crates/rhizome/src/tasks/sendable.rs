//! The scheduler's side of the pool's sendable halves (`pool/sendable.rs`): how a half
//! that another PE's steal request took travels (as a job of its description's type, with
//! the frame that waits for it registered for the result), and what the frame's wait and
//! a long recursion of sendable joins do meanwhile (poll the PE's messages, run jobs, ask
//! other PEs for work).

use super::Shared;
use super::future::{JobError, NO_THIEF, decode_result};
use super::job::Job;
use super::schedule::{Halves, REMOTE_GRACE};
use super::wire::{Wire, encode_job, kind_of};
use super::worker::current_worker;
use crate::backoff::Backoff;
use crate::pool::ExportedHalf;

/// A sendable half's description as it travels: its type's wire id and its bytes.
pub(crate) fn encode_description<D: Job>(desc: &D) -> (u64, Vec<u8>) {
    let w = encode_job(desc, 0, 0);
    debug_assert_eq!(w.kind, kind_of::<D>());
    (w.kind, w.bytes)
}

/// The outcome of a remote run of a sendable half, from its `Value` message.
pub(crate) fn decode_outcome<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, JobError> {
    decode_result(bytes)
}

/// Lets this thread's PE move its messages now, if this thread is the PE's main thread
/// in a run (a no-op elsewhere).
pub(crate) fn poll_here() {
    if let Some(t) = current_worker() {
        t.poll();
    }
}

/// One step of a frame that waits for its half on another PE: runs a job if there is one
/// (the PE's main thread also moves messages, the result among them); after a grace of
/// `REMOTE_GRACE` empty steps, asks other PEs for work. When nothing ran, waits one round
/// of `backoff` (an `idle_backoff()`, as a waiting `get` uses); when something did, resets
/// it.
pub(crate) fn help_remote(backoff: &mut Backoff) {
    let ran = match current_worker() {
        Some(t) => {
            if t.sh.jobs.stopped() {
                super::future::stopped();
            }
            t.step(NO_THIEF, backoff.rounds() >= REMOTE_GRACE, Halves::Waiting)
        }
        // Outside a run nothing can take a half for another PE.
        None => false,
    };
    if ran {
        backoff.reset();
    } else {
        backoff.snooze();
    }
}

impl Shared {
    /// A sendable half for another PE's steal request: its description, and a pending value whose
    /// arrival writes the result into the waiting frame and completes its slot. Counted as
    /// a job of this PE until then (termination).
    pub(super) fn export_half(&self, half: ExportedHalf) -> Wire {
        let (kind, bytes) = half.encode();
        self.jobs.create();
        let id = self
            .values
            .add_pending(Box::new(move |bytes| half.fulfill(bytes)), true);
        Wire {
            kind,
            owner: self.pe as u32,
            id,
            bytes,
        }
    }
}
