//! A job of this layer in a worker's deque: the deque is the pool's, shared with `join`
//! halves (one deque per worker), and a slot holds a pointer to a [`Claimable`] on the
//! heap. Several parties may reach one job: the owner popping its slot, a PE-mate stealing
//! it, the main thread taking it for another PE, and a worker waiting for its future,
//! which runs it directly wherever its slot is (`docs/one-deque.md`: the awaited job may
//! sit behind a half the waiter may not take). The claim makes exactly one of them run it;
//! the others drop their reference. A job is serialized only when it leaves the PE.

use super::job::Task;
use super::worker::{TaskCtx, current_worker};
use crate::pool::{JobRef, Worker};
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A job and its claim.
pub(super) struct Claimable {
    claimed: AtomicBool,
    /// Taken by the one party whose claim succeeded.
    task: UnsafeCell<Option<Task>>,
}

// SAFETY: `task` is written at construction, before the `Arc` is shared, and afterwards
// touched only by the one thread whose `claim` swapped `claimed` from false (the swap
// orders that access after the construction and before nobody else's).
unsafe impl Sync for Claimable {}

impl Claimable {
    pub(super) fn new(task: Task) -> Arc<Claimable> {
        Arc::new(Claimable {
            claimed: AtomicBool::new(false),
            task: UnsafeCell::new(Some(task)),
        })
    }

    /// The job, for the first caller only.
    pub(super) fn claim(&self) -> Option<Task> {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the swap above made this the only claim that succeeds, so no other
        // thread touches `task` (see the `Sync` impl).
        unsafe { (*self.task.get()).take() }
    }

    /// A deque slot's reference to the job: the slot owns one count of the `Arc`, given
    /// back by [`from_slot`](Claimable::from_slot) to whoever takes the slot.
    pub(super) fn to_slot(cell: &Arc<Claimable>) -> JobRef {
        JobRef::new(Arc::into_raw(Arc::clone(cell)).cast(), run_slot)
    }

    /// The job of a slot that holds a job of this layer (made by `to_slot`).
    ///
    /// # Safety
    /// `job` came from `to_slot`, and this is the one place its count is taken back (the
    /// slot was popped or won by exactly one party).
    pub(super) unsafe fn from_slot(job: JobRef) -> Arc<Claimable> {
        // SAFETY: the caller's contract: `data` is the pointer `into_raw` gave.
        unsafe { Arc::from_raw(job.data().cast()) }
    }
}

/// What a deque slot of this layer runs: claims the job and runs it on the worker of this
/// thread; a job someone else claimed first (a waiter, another PE) is only let go of.
///
/// # Safety
/// As for [`Claimable::from_slot`].
unsafe fn run_slot(data: *const (), _w: &Worker) {
    // SAFETY: forwarded from the caller (the pool runs a slot once).
    let cell = unsafe { Claimable::from_slot(JobRef::new(data, run_slot)) };
    let Some(task) = cell.claim() else {
        return;
    };
    drop(cell);
    let t = current_worker().expect(
        "rhizome: a job ran outside a worker of its run (a pool thread outside Tasks::run)",
    );
    t.exec_claimed(task);
}

impl TaskCtx {
    /// Puts `task` on this worker's deque (runs it now if the deque is full) and returns
    /// its claim, through which a waiter may run it first.
    pub(super) fn push_local(&self, task: Task) -> Arc<Claimable> {
        let cell = Claimable::new(task);
        let slot = Claimable::to_slot(&cell);
        if !self.worker().push_job(slot) {
            // SAFETY: never pushed, so this is the only use of the slot's count.
            drop(unsafe { Claimable::from_slot(slot) });
            if let Some(task) = cell.claim() {
                self.exec(task);
            }
        }
        cell
    }

    /// Lets go of the slots this worker's frames left above `mark` in its deque, at the
    /// end of its turn in a run: by then every job has run, so they are claimed already
    /// (or, if the run was stopped, never will be).
    pub(super) fn release_slots_above(&self, mark: usize) {
        let w = self.worker();
        while w.deque_mark() > mark {
            if let Some(job) = w.pop_above(mark) {
                // SAFETY: popped, so this is the one party that takes the slot's count;
                // above a worker's base only jobs of this layer are left.
                drop(unsafe { Claimable::from_slot(job) });
            }
        }
    }
}
