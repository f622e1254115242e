//! The fork-join fast path: [`Worker::fork`] and [`Worker::join`] on top of it.
//!
//! `fork` pushes its second closure on the worker's own deque, runs the first, and pops
//! the second back, handing it to the caller unrun unless a thief took it. `join` runs a
//! closure that came back at once. A caller that wants to run the second half itself, in
//! a loop rather than a call (what gcc makes of Lace's `SYNC` followed by the inline
//! `CALL` of a recursive task), uses `fork`: a recursion whose every node forks then
//! costs one call per node instead of two.

use super::Worker;
use super::deque::Pushed;
use super::job::StackJob;
use std::panic::resume_unwind;

/// What became of the second closure of a [`fork`](Worker::fork).
#[derive(Debug)]
pub enum Forked<B, R> {
    /// No thief ran it: the closure, for the caller to run (or drop).
    Back(B),
    /// A thief ran it: its result.
    Stolen(R),
}

/// Unwinding out of `fork`'s first closure: takes the forked task back, or waits until
/// its thief has finished with it, so that nothing refers to the unwinding frame.
struct ReclaimOnUnwind<'a, F: FnOnce(&Worker) -> R, R> {
    worker: &'a Worker,
    job: &'a StackJob<F, R>,
    /// The slot the job was pushed to.
    slot: Pushed,
}

impl<F: FnOnce(&Worker) -> R, R> Drop for ReclaimOnUnwind<'_, F, R> {
    // Inlined so that the guard's two fields stay in the registers they are in anyway:
    // a guard that `drop` takes by reference would be stored to the frame on every join.
    #[inline]
    fn drop(&mut self) {
        reclaim_on_unwind(self.worker, self.job, self.slot);
    }
}

#[cold]
#[inline(never)]
pub(super) fn reclaim_on_unwind<F: FnOnce(&Worker) -> R, R>(
    worker: &Worker,
    job: &StackJob<F, R>,
    slot: Pushed,
) {
    // A task that was not stolen is dropped unrun; a stolen one's result (or panic) is
    // dropped here: the first panic is the one that propagates. Jobs the unwinding frame
    // spawned above it still run (their futures may be awaited elsewhere).
    if worker.owner.pop_private(slot) || worker.pop_shared(slot) {
        // SAFETY: popped back, so no thief has it; its closure is used nowhere else.
        unsafe { job.drop_fn() };
    } else if worker.wait_for_thief() {
        // SAFETY: returned unrun by the thief that won it; its closure is used nowhere else.
        unsafe { job.drop_fn() };
    } else {
        // SAFETY: `wait_for_thief` saw the completion flag; the result is read once.
        drop(unsafe { job.take_result() });
    }
}

impl Worker {
    /// Runs `a` and `b`, possibly in parallel, and returns both results. A panic in
    /// either propagates after both have finished (nothing borrowed outlives them).
    #[inline]
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&Worker) -> RA + Send,
        B: FnOnce(&Worker) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        match self.fork(a, b) {
            (ra, Forked::Back(b)) => (ra, b(self)),
            (ra, Forked::Stolen(rb)) => (ra, rb),
        }
    }

    /// Offers `b` to thieves, runs `a`, and returns `a`'s result with `b` back unrun
    /// ([`Forked::Back`]) if no thief ran it, or with `b`'s result
    /// ([`Forked::Stolen`]). The caller runs (or drops) a closure that came back: `join`
    /// is `fork` followed by that call. A panic in `a` propagates once `b` is back or
    /// its thief has finished; a panic in a stolen `b` propagates from here.
    ///
    /// ```
    /// use rhizome::pool::{Forked, Pool, Worker};
    /// // `fib(n)` with one call per node: the second half, when it comes back, is
    /// // the next turn of the loop.
    /// fn fib(w: &Worker, mut n: u64) -> u64 {
    ///     let mut sum = 0;
    ///     while n >= 2 {
    ///         let (a, b) = w.fork(move |w| fib(w, n - 2), move |w| fib(w, n - 1));
    ///         sum += a;
    ///         match b {
    ///             Forked::Back(_) => n -= 1,
    ///             Forked::Stolen(b) => return sum + b,
    ///         }
    ///     }
    ///     sum + n
    /// }
    /// assert_eq!(Pool::new(2).run(|w| fib(w, 20)), 6765);
    /// ```
    #[inline]
    pub fn fork<A, B, RA, RB>(&self, a: A, b: B) -> (RA, Forked<B, RB>)
    where
        A: FnOnce(&Worker) -> RA + Send,
        B: FnOnce(&Worker) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let job_b = StackJob::new(b);
        let Some(slot) = self.owner.push(job_b.as_job_ref()) else {
            // SAFETY: the job was never pushed, so this is the only use of its closure.
            let b = unsafe { job_b.take_fn() };
            let ra = self.run_unforked(a);
            self.owner.restore_head_at_end();
            return (ra, Forked::Back(b));
        };
        // If `a` panics, `job_b` (on this stack frame) must be reclaimed or waited for
        // before the frame unwinds; the guard does that without a `catch_unwind` on the
        // hot path.
        let guard = ReclaimOnUnwind {
            worker: self,
            job: &job_b,
            slot,
        };
        let ra = a(self);
        std::mem::forget(guard);
        if self.owner.pop_private(slot) || self.pop_or_wait(slot) {
            // SAFETY: popped back (or returned unrun by the thief that won it), so no
            // thief runs it; its closure is taken once, here.
            (ra, Forked::Back(unsafe { job_b.take_fn() }))
        } else {
            // SAFETY: `wait_for_thief` saw the completion flag; the result is read once.
            match unsafe { job_b.take_result() } {
                Ok(rb) => (ra, Forked::Stolen(rb)),
                Err(p) => resume_unwind(p),
            }
        }
    }

    /// The slow path of `fork`'s pop: takes the slot back (true) or waits for its thief
    /// (false, or true if the thief returned it unrun). Either way `head` is back at the
    /// slot, and the store that says so is inline: see [`restore_head`](super::deque::Owner::restore_head).
    #[inline]
    fn pop_or_wait(&self, slot: Pushed) -> bool {
        let back = self.pop_shared(slot) || self.wait_for_thief();
        self.owner.restore_head(slot);
        back
    }

    /// Runs `a` alone: the deque is full, so there is no more parallelism at this depth.
    /// Out of line so that `fork` does not keep registers for it (every register `fork`
    /// keeps is saved and restored on every call); `b` goes back to the caller by the
    /// same path as a half popped back, so the two paths merge.
    #[cold]
    #[inline(never)]
    fn run_unforked<A: FnOnce(&Worker) -> RA, RA>(&self, a: A) -> RA {
        a(self)
    }
}
