//! The owner's operations for the halves of `join_sendable` (`pool/sendable.rs`): a push
//! that marks its slot as one that may leave the PE, and the reset of that mark once the
//! join has its result back. A plain half's push and pop never touch the mark.

use super::super::job::JobRef;
use super::{Owner, Pushed};
use std::sync::atomic::Ordering;

impl Owner {
    /// Pushes a half that another PE may take (`Take::Export`); `None` when the deque is
    /// full. The mark is written before the push can publish the slot (the publishing
    /// release orders it, as for the job).
    #[inline]
    pub(in crate::pool) fn push_sendable(&self, job: JobRef) -> Option<Pushed> {
        let h = self.head.get();
        if h == self.end {
            return None;
        }
        // SAFETY: `h` is in `slots..end`; the slot is at `head`, so no thief can reach it
        // and no earlier thief still uses it (see `push`).
        unsafe { &*h }.sendable.store(true, Ordering::Relaxed);
        self.push(job)
    }

    /// Clears the mark of slot `pushed` once it is the owner's again (popped back, or its
    /// thief has completed it), before the slot is reused for a plain half.
    #[inline]
    pub(in crate::pool) fn clear_sendable(&self, pushed: Pushed) {
        // SAFETY: `pushed` is a slot of this deque. No thief reaches it: it is at or
        // above `head` (popped) or its thief is done (`end_wait` ran).
        unsafe { &*pushed.0 }
            .sendable
            .store(false, Ordering::Relaxed);
    }
}
