//! Type-erased jobs that live on the stack of the worker that forked them.

use super::Worker;
use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A pointer to a job and the function that runs it: what a deque slot holds.
#[derive(Clone, Copy)]
pub(super) struct JobRef {
    data: *const (),
    exec: unsafe fn(*const (), &Worker),
}

impl JobRef {
    /// Runs the job on worker `w`.
    ///
    /// # Safety
    /// The job must still be alive and must not have been run before.
    pub(super) unsafe fn execute(self, w: &Worker) {
        // SAFETY: forwarded from the caller.
        unsafe { (self.exec)(self.data, w) }
    }
}

/// The closure of the second half of a `join`, and the slot its result goes to when a
/// thief runs it.
pub(super) struct StackJob<F, R> {
    f: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<std::thread::Result<R>>>,
}

impl<F: FnOnce(&Worker) -> R, R> StackJob<F, R> {
    pub(super) fn new(f: F) -> Self {
        StackJob {
            f: UnsafeCell::new(Some(f)),
            result: UnsafeCell::new(None),
        }
    }

    /// A reference for the deque. The job must outlive every use of it: `join` does not
    /// return before the job has been run inline or its thief has completed it.
    pub(super) fn as_job_ref(&self) -> JobRef {
        JobRef {
            data: self as *const Self as *const (),
            exec: Self::execute,
        }
    }

    unsafe fn execute(data: *const (), w: &Worker) {
        // SAFETY: `data` came from `as_job_ref` of a live job (the caller's contract), and
        // only the one thread that won it from the deque runs it, so nobody else touches
        // `f` or `result` until the owner sees the completion flag (release/acquire).
        unsafe {
            let this = &*(data as *const Self);
            let f = (*this.f.get()).take().expect("job run twice");
            *this.result.get() = Some(catch_unwind(AssertUnwindSafe(|| f(w))));
        }
    }

    /// Takes the closure back to run it inline (the job was not stolen).
    pub(super) fn take_fn(&self) -> F {
        // SAFETY: the owner reclaimed the job from its deque, so no thief can run it.
        unsafe { (*self.f.get()).take().expect("job already run") }
    }

    /// The result a thief left (after its completion flag was seen).
    pub(super) fn take_result(&self) -> std::thread::Result<R> {
        // SAFETY: the thief finished writing before releasing the completion flag, which
        // the owner acquired before calling this.
        unsafe {
            (*self.result.get())
                .take()
                .expect("stolen job has no result")
        }
    }
}
