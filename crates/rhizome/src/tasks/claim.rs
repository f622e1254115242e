//! A job of this layer in a worker's deque: the deque is the pool's, shared with `join`
//! halves (one deque per worker). Several parties may reach one job: the owner popping its
//! slot, a PE-mate stealing it, the main thread taking it for another PE, and a worker
//! waiting for its future, which runs it directly wherever its slot is
//! (`docs/one-deque.md`: the awaited job may sit behind a half the waiter may not take).
//! The [`Claim`] makes exactly one of them run it; the others only let go of their
//! reference. A job is serialized only when it leaves the PE.
//!
//! The claim lives in the job's future (its [`State`]), not in an allocation of its own:
//! a deque slot points at the state (holding one count of its `Arc`), the waiter reaches
//! the claim through the future it holds, and a spawn allocates nothing more than the
//! state and the boxed job it allocated before the deques were merged.

use super::future::State;
use super::job::Task;
use super::worker::{TaskCtx, current_worker};
use crate::pool::{JobRef, Worker};
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The claim on a job that waits in a deque: the job, and a flag that lets one party take
/// it. The first field of [`State`] (which is `repr(C)`), so that a slot's pointer to the
/// state is also a pointer to its claim, whatever the state's value type.
pub(super) struct Claim {
    claimed: AtomicBool,
    /// Set once, before the job's slot is published; taken by the one party whose claim
    /// succeeded.
    task: UnsafeCell<Option<Task>>,
    /// Gives back a slot's count of the state (the state's type is erased in the slot).
    release: unsafe fn(*const Claim),
}

// SAFETY: `task` is written by `set` before the state is reachable from another thread
// (see `set`), and afterwards touched only by the one thread whose `claim` swapped
// `claimed` from false (the swap orders that access after the write and before nobody
// else's). `release` is a plain function pointer.
unsafe impl Sync for Claim {}

impl Claim {
    /// The claim of a `State<T>`: nothing to claim until [`set`](Claim::set).
    pub(super) fn new<T>() -> Claim {
        Claim {
            claimed: AtomicBool::new(false),
            task: UnsafeCell::new(None),
            release: release_state::<T>,
        }
    }

    /// Puts the job in the claim.
    ///
    /// # Safety
    /// No other thread can reach the state yet: its future is not handed out and no slot
    /// that points at it is published (the job's own clone of it is inside `task`).
    unsafe fn set(&self, task: Task) {
        // SAFETY: the caller's contract: nobody else touches `task` now.
        unsafe { *self.task.get() = Some(task) };
    }

    /// The job, for the first caller only (`None` also if there was never one: a future
    /// whose job runs on another PE).
    pub(super) fn claim(&self) -> Option<Task> {
        if self.claimed.load(Ordering::Relaxed) || self.claimed.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the swap above made this the only claim that succeeds, so no other
        // thread touches `task` (see the `Sync` impl).
        unsafe { (*self.task.get()).take() }
    }
}

/// Drops the state count that a slot made by [`TaskCtx::push_local`] holds.
///
/// # Safety
/// `claim` points at the claim of an `Arc<State<T>>` given to a slot by `push_local`, and
/// this is the one place that slot's count is given back.
unsafe fn release_state<T>(claim: *const Claim) {
    // SAFETY: the claim is the first field of the `repr(C)` state, so the pointer is the
    // one `Arc::into_raw` gave (the caller's contract).
    drop(unsafe { Arc::from_raw(claim.cast::<State<T>>()) });
}

/// The job of a slot made by `push_local`, taken by the caller if nobody claimed it first;
/// the slot's count of the state is given back.
///
/// # Safety
/// `job` came from `push_local`, and its slot was popped or won by the caller alone.
pub(super) unsafe fn claim_slot(job: JobRef) -> Option<Task> {
    let claim = job.data().cast::<Claim>();
    // SAFETY: the slot's count keeps the state, and so the claim, alive until released.
    let task = unsafe { &*claim }.claim();
    // SAFETY: the caller's contract; `claim` is not used afterwards (a job holds its own
    // count of the state, so the state outlives `task` anyway).
    unsafe { ((*claim).release)(claim) };
    task
}

/// What a deque slot of this layer runs: claims the job and runs it on the worker of this
/// thread; a job someone else claimed first (a waiter, another PE) is only let go of.
///
/// # Safety
/// As for [`claim_slot`].
unsafe fn run_slot(data: *const (), _w: &Worker) {
    // SAFETY: forwarded from the caller (the pool runs a slot once).
    let Some(task) = (unsafe { claim_slot(JobRef::new(data, run_slot)) }) else {
        return;
    };
    let t = current_worker().expect(
        "rhizome: a job ran outside a worker of its run (a pool thread outside Tasks::run)",
    );
    t.exec_claimed(task);
}

impl TaskCtx {
    /// Puts `task`, whose result goes to `st`, on this worker's deque (runs it now if the
    /// deque is full). A waiter on `st` may claim and run it first, wherever its slot is.
    ///
    /// # Safety
    /// `st` is new: no other thread can reach it yet (its future is made afterwards), and
    /// its claim was never set.
    pub(super) unsafe fn push_local<T: Send + 'static>(&self, st: &Arc<State<T>>, task: Task) {
        // SAFETY: the caller's contract.
        unsafe { st.claim.set(task) };
        let slot = JobRef::new(Arc::into_raw(Arc::clone(st)).cast(), run_slot);
        if !self.worker().push_job(slot) {
            // SAFETY: never pushed, so this is the only use of the slot's count.
            if let Some(task) = unsafe { claim_slot(slot) } {
                self.exec(task);
            }
        }
    }

    /// Lets go of the slots this worker's frames left above `mark` in its deque, at the
    /// end of its turn in a run: by then every job has run, so they are claimed already
    /// (or, if the run was stopped, never will be: then the job is dropped here, which
    /// also lets go of the state it holds).
    pub(super) fn release_slots_above(&self, mark: usize) {
        let w = self.worker();
        while w.deque_mark() > mark {
            if let Some(job) = w.pop_above(mark) {
                // SAFETY: popped, so this is the one party that takes the slot; above a
                // worker's base only jobs of this layer are left.
                drop(unsafe { claim_slot(job) });
            }
        }
    }
}
