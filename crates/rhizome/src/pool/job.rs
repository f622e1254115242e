//! Type-erased jobs that live on the stack of the worker that forked them.

use super::Worker;
use std::cell::UnsafeCell;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A pointer to a job and the function that runs it: what a deque slot holds. A `join`
/// half is a [`StackJob`] on its forker's stack; the layer above (futures) pushes jobs of
/// its own, on the heap, with [`JobRef::new`].
#[derive(Clone, Copy)]
pub(crate) struct JobRef {
    data: *const (),
    exec: unsafe fn(*const (), &Worker),
}

impl JobRef {
    /// A job at `data`, run by `exec(data, worker)`.
    pub(crate) fn new(data: *const (), exec: unsafe fn(*const (), &Worker)) -> JobRef {
        JobRef { data, exec }
    }

    /// The `data` the job was made with.
    pub(crate) fn data(self) -> *const () {
        self.data
    }

    /// Runs the job on worker `w`.
    ///
    /// # Safety
    /// The job must still be alive and must not have been run before.
    pub(crate) unsafe fn execute(self, w: &Worker) {
        // SAFETY: forwarded from the caller.
        unsafe { (self.exec)(self.data, w) }
    }
}

/// The closure of the second half of a `join`, and the slot its result goes to when a
/// thief runs it.
///
/// Who owns the closure is known from the control flow of `join` (the owner popped it
/// back, or a thief took it), so neither field carries a flag: an `Option` here costs a
/// store, a load and a test per join, and a drop check of the result on the inline path.
pub(super) struct StackJob<F, R> {
    f: UnsafeCell<ManuallyDrop<F>>,
    result: UnsafeCell<MaybeUninit<std::thread::Result<R>>>,
}

impl<F: FnOnce(&Worker) -> R, R> StackJob<F, R> {
    #[inline]
    pub(super) fn new(f: F) -> Self {
        StackJob {
            f: UnsafeCell::new(ManuallyDrop::new(f)),
            result: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A reference for the deque. The job must outlive every use of it: `join` does not
    /// return before the job has been run inline or its thief has completed it.
    #[inline]
    pub(super) fn as_job_ref(&self) -> JobRef {
        JobRef {
            data: self as *const Self as *const (),
            exec: Self::execute,
        }
    }

    pub(super) unsafe fn execute(data: *const (), w: &Worker) {
        // SAFETY: `data` came from `as_job_ref` of a live job (the caller's contract), and
        // only the one thread that won it from the deque runs it, so nobody else touches
        // `f` or `result` until the owner sees the completion flag (release/acquire). The
        // owner does not take `f` back after a thief won it.
        unsafe {
            let this = &*(data as *const Self);
            let f = ManuallyDrop::take(&mut *this.f.get());
            (*this.result.get()).write(catch_unwind(AssertUnwindSafe(|| f(w))));
        }
    }

    /// Takes the closure back to run it inline.
    ///
    /// # Safety
    /// The owner reclaimed the job from its deque (no thief can run it), and calls this
    /// at most once; `drop_fn` is not called too.
    #[inline]
    pub(super) unsafe fn take_fn(&self) -> F {
        // SAFETY: the caller's contract: this is the only use of `f`.
        unsafe { ManuallyDrop::take(&mut *self.f.get()) }
    }

    /// Drops the closure unrun (the first half of the join panicked).
    ///
    /// # Safety
    /// As for `take_fn`.
    pub(super) unsafe fn drop_fn(&self) {
        // SAFETY: the caller's contract: this is the only use of `f`.
        unsafe { ManuallyDrop::drop(&mut *self.f.get()) }
    }

    /// Leaves the result of a run elsewhere (another PE ran the job from its encoded
    /// description), as a thief's run would.
    ///
    /// # Safety
    /// The job was won by a thief and not run; this is its one result, written before
    /// its slot is completed (release).
    pub(super) unsafe fn write_result(&self, r: std::thread::Result<R>) {
        // SAFETY: the caller's contract: nobody else touches `result` now.
        unsafe { (*self.result.get()).write(r) };
    }

    /// The result a thief left.
    ///
    /// # Safety
    /// The thief's completion flag was seen (acquire), and this is called at most once.
    pub(super) unsafe fn take_result(&self) -> std::thread::Result<R> {
        // SAFETY: the thief wrote the result before releasing the completion flag, which
        // the caller acquired.
        unsafe { (*self.result.get()).assume_init_read() }
    }
}

#[cfg(all(test, loom))]
impl JobRef {
    /// A job that the deque's models pass around and compare, but never run.
    pub(super) fn tagged(tag: usize) -> JobRef {
        unsafe fn never(_: *const (), _: &Worker) {
            unreachable!("a tagged job is never run")
        }
        JobRef {
            data: std::ptr::without_provenance(tag),
            exec: never,
        }
    }

    /// The tag of a job made by [`tagged`](JobRef::tagged).
    pub(super) fn tag(self) -> usize {
        self.data.addr()
    }
}
