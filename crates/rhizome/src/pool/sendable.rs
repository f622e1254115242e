//! Join halves that may leave the PE: [`Worker::join_sendable`].
//!
//! A plain `join` half borrows its forker's stack, so only a PE-mate can run it. Many
//! halves are small descriptions of work, though: a BDD operation's sub-call is an
//! operation code and a few node indices that mean the same on every PE. A sendable half
//! carries such a description (a [`Job`], usually a few words) beside the closure that
//! runs it here. Locally it is an ordinary half: pushed, popped back or taken by a
//! PE-mate, and run through the closure, with nothing encoded (the description only sits
//! in the frame). Only when another PE's steal request takes the slot (`Take::Export`,
//! answered by the PE's main thread from the oldest slot of a deque) is the description
//! encoded and sent; the other PE runs it as a job ([`Job::run`], on its view of the
//! data), and its result comes back in a message that writes it into the waiting frame
//! and completes the slot, as a PE-mate thief would. The frame meanwhile runs other jobs
//! and asks the PEs for work (the thief's deque first).
//!
//! A sendable half runs on another PE's stack as a job does, so it keeps the jobs' rule
//! (`docs/one-deque.md`): it waits only for work of its own subtree (its own joins and
//! spawns), never for a job its forker spawned before the join.
//!
//! The main thread answers steal requests when it polls its messages, so a long
//! recursion of sendable joins polls every [`POLL_EVERY`] of them: without it a PE busy
//! in one operation would answer no request until the operation returned.

use super::Worker;
use super::deque::{COMPLETED, Deque, EXPORTED, Pushed, RETURNED};
use super::job::{JobRef, StackJob};
use super::join::reclaim_on_unwind;
use crate::tasks::Job;
use std::cell::Cell;
use std::panic::resume_unwind;

/// Sendable joins between two polls of the PE's messages on one thread: often enough
/// that a steal request waits a few microseconds, rarely enough that polling (an MPI
/// progress call) stays a small share of the work.
pub const POLL_EVERY: u32 = 256;

thread_local! {
    /// Sendable joins on this thread until the next poll.
    static UNTIL_POLL: Cell<u32> = const { Cell::new(POLL_EVERY) };
}

/// What exports a sendable half: the first field of [`SendableJob`], reached from its
/// slot's data pointer whatever the description's type.
struct Header {
    /// The description's wire id and bytes.
    encode: unsafe fn(*const Header) -> (u64, Vec<u8>),
    /// Writes the encoded outcome of the remote run into the frame.
    fulfill: unsafe fn(*const Header, &[u8]),
}

/// A half of `join_sendable` on its forker's stack: the exporter, the description and
/// the local half.
#[repr(C)]
struct SendableJob<D: Job, F> {
    header: Header,
    desc: D,
    job: StackJob<F, D::Output>,
}

impl<D: Job + Sync, F: FnOnce(&Worker) -> D::Output> SendableJob<D, F> {
    fn as_job_ref(&self) -> JobRef {
        JobRef::new(self as *const Self as *const (), Self::execute)
    }

    /// Runs the half here (a PE-mate stole it, or the owner pops it through a slow path).
    unsafe fn execute(data: *const (), w: &Worker) {
        // SAFETY: `data` is a live `SendableJob` of these types (`as_job_ref`), run once
        // by the one thread that won it (the caller's contract).
        unsafe {
            let this = &*(data as *const Self);
            StackJob::<F, D::Output>::execute(&this.job as *const _ as *const (), w)
        }
    }

    unsafe fn encode(h: *const Header) -> (u64, Vec<u8>) {
        // SAFETY: the header is the first field of a live `SendableJob<D, F>` (repr(C)),
        // whose frame waits until the slot is completed.
        let this = unsafe { &*(h as *const Self) };
        crate::tasks::encode_description(&this.desc)
    }

    unsafe fn fulfill(h: *const Header, bytes: &[u8]) {
        // SAFETY: as in `encode`; the slot is not completed yet, so the frame still waits
        // and nobody else touches the result.
        let this = unsafe { &*(h as *const Self) };
        let r = crate::tasks::decode_outcome::<D::Output>(bytes)
            .map_err(|e| Box::new(e) as Box<dyn std::any::Any + Send>);
        // SAFETY: the slot was exported (won by the thief path, never run here), so the
        // closure is unused and dropped here, and this is its one outcome (the message
        // for its id arrives once).
        unsafe {
            this.job.drop_fn();
            this.job.write_result(r);
        }
    }
}

/// A sendable half taken for another PE: encode it, send it, and on its result call
/// [`fulfill`](ExportedHalf::fulfill). Until then its frame waits.
pub(crate) struct ExportedHalf {
    header: *const Header,
    deque: *const Deque,
    slot: usize,
}

// SAFETY: the pointers reach the forker's frame and its pool's deque, both alive until the
// slot is completed (the frame waits for it, the pool outlives every run), and the frame
// only reads the result after the completion (release/acquire).
unsafe impl Send for ExportedHalf {}

impl ExportedHalf {
    /// The description's wire id and bytes.
    pub(crate) fn encode(&self) -> (u64, Vec<u8>) {
        // SAFETY: see the `Send` impl: the frame is alive until `fulfill`.
        unsafe { ((*self.header).encode)(self.header) }
    }

    /// Writes the encoded outcome of the remote run into the frame and completes the
    /// slot: the frame resumes with the result.
    pub(crate) fn fulfill(self, bytes: &[u8]) {
        // SAFETY: see the `Send` impl; consumed, so the outcome is written once.
        unsafe {
            ((*self.header).fulfill)(self.header, bytes);
            (*self.deque).complete(self.slot);
        }
    }
}

/// What a steal for another PE took (see [`Worker::steal_for_export`]).
pub(crate) enum Export {
    /// A job of the layer above (its claim decides who runs it).
    Job(JobRef),
    /// A sendable half.
    Half(ExportedHalf),
}

/// Unwinding out of the first closure: reclaims the half like `join`'s guard, then clears
/// the slot's mark.
struct ClearOnUnwind<'a, F: FnOnce(&Worker) -> R, R> {
    worker: &'a Worker,
    job: &'a StackJob<F, R>,
    slot: Pushed,
}

impl<F: FnOnce(&Worker) -> R, R> Drop for ClearOnUnwind<'_, F, R> {
    fn drop(&mut self) {
        reclaim_on_unwind(self.worker, self.job, self.slot);
        self.worker.owner.clear_sendable(self.slot);
    }
}

impl Worker {
    /// Runs `a` and `b`, possibly in parallel, like [`join`](Worker::join), where `b`
    /// may also run on another PE: `desc` is the same work as `b`, as a [`Job`] (read
    /// by the thread that encodes it, hence `Sync`) whose
    /// [`run`](Job::run) computes what `b` returns. Here `b` runs (nothing is encoded);
    /// when another PE's steal request takes the half, `desc` is encoded and run there,
    /// and its result comes back into this frame. `b` and `desc` must agree, and `b` must
    /// keep the jobs' rule (it waits only for work it starts itself). `desc`'s type must
    /// be registered on every PE ([`Tasks::register`](crate::tasks::Tasks::register));
    /// outside a run of [`crate::tasks`] this is a plain `join`.
    ///
    /// ```
    /// use rhizome::World;
    /// use rhizome::pool::Worker;
    /// use rhizome::tasks::{Job, TaskCtx, Tasks};
    /// use serde::{Deserialize, Serialize};
    ///
    /// /// The sum of `lo..hi`, split in sendable halves.
    /// #[derive(Clone, Copy, Serialize, Deserialize)]
    /// struct Sum(u64, u64);
    /// impl Sum {
    ///     fn compute(self, w: &Worker) -> u64 {
    ///         let Sum(lo, hi) = self;
    ///         if hi - lo < 1000 { return (lo..hi).sum(); }
    ///         let mid = (lo + hi) / 2;
    ///         let right = Sum(mid, hi);
    ///         let (a, b) = w.join_sendable(|w| Sum(lo, mid).compute(w), |w| right.compute(w), right);
    ///         a + b
    ///     }
    /// }
    /// impl Job for Sum {
    ///     type Output = u64;
    ///     fn run(self, t: &TaskCtx) -> u64 { self.compute(t.worker()) }
    /// }
    ///
    /// let out = World::builder().pes(2).run(|ctx| {
    ///     let tasks = Tasks::new(ctx);
    ///     tasks.register::<Sum>();
    ///     tasks.run(ctx, |t| (t.my_pe() == 0).then(|| Sum(0, 1 << 20).compute(t.worker())))
    /// }).unwrap();
    /// assert_eq!(out[0], Some((0..1u64 << 20).sum()));
    /// ```
    #[inline]
    pub fn join_sendable<A, B, RA, D>(&self, a: A, b: B, desc: D) -> (RA, D::Output)
    where
        A: FnOnce(&Worker) -> RA + Send,
        B: FnOnce(&Worker) -> D::Output + Send,
        RA: Send,
        D: Job + Sync,
    {
        self.maybe_poll();
        let half = SendableJob {
            header: Header {
                encode: SendableJob::<D, B>::encode,
                fulfill: SendableJob::<D, B>::fulfill,
            },
            desc,
            job: StackJob::new(b),
        };
        let Some(slot) = self.owner.push_sendable(half.as_job_ref()) else {
            // The deque is full: no more parallelism at this depth, both halves run here.
            // SAFETY: never pushed, so this is the only use of the closure.
            let b = unsafe { half.job.take_fn() };
            let ra = a(self);
            return (ra, b(self));
        };
        let guard = ClearOnUnwind {
            worker: self,
            job: &half.job,
            slot,
        };
        let ra = a(self);
        std::mem::forget(guard);
        let here = self.owner.pop_private(slot)
            || self.pop_shared(slot)
            || if self.owner.thief_state(self.owner.index_of(slot)) == EXPORTED {
                self.wait_for_export()
            } else {
                // A PE-mate's theft (or an export not yet marked: that wait also ends
                // when the result comes back).
                self.wait_for_thief()
            };
        self.owner.clear_sendable(slot);
        if here {
            // SAFETY: popped back (or returned unrun by the thief that won it), so no
            // thief runs it; its closure is used once, here.
            return (ra, unsafe { half.job.take_fn() }(self));
        }
        // SAFETY: the thief completed the slot (acquired by the wait); the result is read
        // once.
        match unsafe { half.job.take_result() } {
            Ok(rb) => (ra, rb),
            Err(p) => resume_unwind(p),
        }
    }

    /// Counts a sendable join and, every [`POLL_EVERY`], lets the PE move its messages
    /// (the main thread answers steal requests there; elsewhere it is a no-op).
    #[inline]
    fn maybe_poll(&self) {
        let left = UNTIL_POLL.with(|c| {
            let n = c.get() - 1;
            c.set(if n == 0 { POLL_EVERY } else { n });
            n
        });
        if left == 0 {
            crate::tasks::poll_here();
        }
    }

    /// Waits for the result of a half that another PE took: runs jobs and asks other PEs
    /// for work meanwhile (the slot is completed by the message with the result). Returns
    /// false (the result is in the frame).
    #[cold]
    #[inline(never)]
    fn wait_for_export(&self) -> bool {
        let h = self.owner.begin_wait();
        let mut backoff = crate::tasks::idle_backoff();
        loop {
            let state = self.owner.thief_state(h);
            if state == COMPLETED {
                break;
            }
            debug_assert_ne!(state, RETURNED, "an exported half is never returned");
            crate::tasks::help_remote(&mut backoff);
        }
        self.run_jobs_above(h + 1);
        self.owner.end_wait(h);
        false
    }

    /// Takes the oldest shared slot of worker `victim` (this worker too) for another PE's
    /// steal request, if it may leave the PE: a job of the layer above, or a sendable
    /// half (then the slot waits for the half's result, see [`ExportedHalf`]).
    pub(crate) fn steal_for_export(&self, victim: usize) -> Option<Export> {
        let d = self.shared.deques.get(victim)?;
        let s = d.steal(self.index, super::Take::Export)?;
        Some(if s.exported {
            Export::Half(ExportedHalf {
                header: s.job.data().cast::<Header>(),
                deque: d,
                slot: s.slot,
            })
        } else {
            Export::Job(s.job)
        })
    }
}
