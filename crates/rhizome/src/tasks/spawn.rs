//! What a job does with the worker it runs on: start jobs ([`TaskCtx::spawn`],
//! [`TaskCtx::spawn_local`], [`TaskCtx::async_on`]), fork ([`TaskCtx::join`]), wait for an
//! `async` block ([`TaskCtx::block_on`]) and let the PE answer messages
//! ([`TaskCtx::poll`]). A spawned job goes to the worker's own deque, or, during the
//! initial work sharing of a run, straight to another PE.

use super::future::{self, Future, NO_THIEF, REMOTE_THIEF, State};
use super::job::{Dest, Job, JobTask, LocalTask, Pinned, Task};
use super::schedule::Halves;
use super::wire::{Msg, encode_job};
use super::worker::{TaskCtx, as_background, current_worker};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

impl TaskCtx {
    /// Runs `a` and `b`, possibly in parallel, with a context each, and returns both
    /// results: a fork-join [`Worker::join`](crate::pool::Worker::join) whose halves may spawn and wait for jobs. `b`
    /// is stolen by an idle PE-mate (never by another PE: it borrows this stack frame).
    pub fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce(&TaskCtx) -> RA + Send,
        b: impl FnOnce(&TaskCtx) -> RB + Send,
    ) -> (RA, RB) {
        /// `&TaskCtx` for the first half, which `Worker::join` runs on the calling thread.
        struct OnThisThread<'a>(&'a TaskCtx);
        // SAFETY: the reference is used only by `join`'s first closure, which `Worker::join`
        // runs inline on the calling thread (the owner of the `TaskCtx`) before it returns.
        unsafe impl Send for OnThisThread<'_> {}
        let me = OnThisThread(self);
        let sh = &self.sh;
        self.worker().join(
            move |_| {
                let me = me;
                a(me.0)
            },
            move |w| match current_worker() {
                Some(t) => b(t),
                // A background worker between its hook of the last run and that of this
                // one (its hook returned, and it stole before entering the next) took
                // the half at the pool level: it works for this run while the half runs.
                None => as_background(sh, w, b)
                    .expect("rhizome: a join half's thief works for another run"),
            },
        )
    }

    /// Starts `job`; it runs on this worker later, or on another worker or PE that steals
    /// it. (`async` in the unified-futures paper.)
    pub fn spawn<J: Job>(&self, job: J) -> Future<J::Output> {
        let st = Arc::new(State::new());
        self.sh.jobs.create();
        let task: Task = Box::new(JobTask {
            job,
            dest: Dest::Local(Arc::clone(&st)),
        });
        // SAFETY: `st` is new, its future is made below.
        unsafe { self.push(&st, task) };
        Future::from_state(st)
    }

    /// Starts closure `f`; it runs on some worker of this PE.
    pub fn spawn_local<T: Send + 'static>(
        &self,
        f: impl FnOnce(&TaskCtx) -> T + Send + 'static,
    ) -> Future<T> {
        let st = Arc::new(State::new());
        self.sh.jobs.create();
        let task = Box::new(LocalTask {
            f,
            state: Arc::clone(&st),
        });
        // SAFETY: `st` is new, its future is made below.
        unsafe { self.push_local(&st, task) };
        self.maybe_poll();
        Future::from_state(st)
    }

    /// Runs `job` on PE `pe` (on any worker there; it is not stolen away from `pe`).
    pub fn async_on<J: Job>(&self, pe: usize, job: J) -> Future<J::Output> {
        assert!(
            pe < self.sh.pes,
            "rhizome: async_on PE {pe}, but there are {} PEs",
            self.sh.pes
        );
        let st = Arc::new(State::new());
        self.sh.jobs.create();
        if pe == self.sh.pe {
            let task = Box::new(Pinned(Box::new(JobTask {
                job,
                dest: Dest::Local(Arc::clone(&st)),
            })));
            // SAFETY: `st` is new, its future is made below.
            unsafe { self.push_local(&st, task) };
        } else {
            st.thief.store(REMOTE_THIEF + pe as u64, Ordering::Relaxed);
            let id = self
                .sh
                .values
                .add_pending(future::remote_fulfiller(Arc::clone(&st)), true);
            let task = encode_job(&job, self.sh.pe as u32, id);
            self.sh.outbox.post(pe, Msg::Run { task });
            self.poll();
        }
        Future::from_state(st)
    }

    /// Lets the PE answer messages (steal requests, values) now; call it now and then in
    /// a job that computes for long without spawning. Cheap; a no-op on workers other
    /// than the PE's main thread.
    pub fn poll(&self) {
        if let Some(m) = &self.main {
            self.poll_main(m);
        }
    }

    /// Drives a [`std::future::Future`] (e.g. an `async` block that `.await`s futures of
    /// jobs) to completion on this worker, running other jobs while it is pending.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        use std::task::{Context, Poll, Wake, Waker};
        struct Flag(AtomicBool);
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::Release);
            }
        }
        let flag = Arc::new(Flag(AtomicBool::new(true)));
        let waker = Waker::from(Arc::clone(&flag));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        let mut backoff = super::schedule::idle_backoff();
        loop {
            if flag.0.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
                backoff.reset();
            } else {
                if self.sh.jobs.stopped() {
                    future::stopped();
                }
                if self.step(NO_THIEF, true, Halves::Waiting) {
                    backoff.reset();
                } else {
                    backoff.snooze();
                }
            }
        }
    }

    /// Pushes a spawned job whose result goes to `st`, or sends it to another PE in the
    /// initial work sharing.
    ///
    /// # Safety
    /// As for [`push_local`](TaskCtx::push_local): `st` is new.
    #[inline]
    unsafe fn push<T: Send + 'static>(&self, st: &Arc<State<T>>, task: Task) {
        let sh = &*self.sh;
        if let Some(p) = sh.remote.share_target(sh.pes) {
            match task.export(sh, p) {
                Ok(w) => {
                    sh.outbox.post(
                        p,
                        Msg::Transfer {
                            reply: false,
                            tasks: vec![w],
                        },
                    );
                    self.poll();
                    return;
                }
                // SAFETY: the caller's contract.
                Err(t) => return unsafe { self.push_local(st, t) },
            }
        }
        // SAFETY: the caller's contract.
        unsafe { self.push_local(st, task) };
        self.maybe_poll();
    }
}
