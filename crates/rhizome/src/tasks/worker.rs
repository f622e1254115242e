//! The workers of a PE: [`TaskCtx`], what a job sees of the worker running it (spawning,
//! waiting, polling), and the scheduling loop every worker runs: its own deque first, then
//! stealing ([`super::steal`]), with the PE's main thread also moving the messages.

use super::Shared;
use super::future::{self, Future, LOCAL_THIEF, NO_THIEF, REMOTE_THIEF, State};
use super::job::{Dest, Job, JobTask, LocalTask, Pinned, Task};
use super::stats::Counter;
use super::wire::{Msg, Packet, encode_job, send_msg};
use crate::backoff::Backoff;
use crate::pool::{self, Worker};
use crate::rng::XorShift64;
use crate::world::{Am, Ctx};
use crossbeam_deque::Worker as Deque;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the main thread handles messages while it has local work (in scheduler steps).
const POLL_EVERY: u32 = 2;
/// Idle steps a waiting worker makes before it asks other PEs for work.
const REMOTE_GRACE: u32 = 32;

/// How an idle worker waits between scheduling steps: spins, then yields, then naps (short
/// enough for steal latency, long enough to leave the core to busy threads when the
/// machine is oversubscribed).
fn idle_backoff() -> Backoff {
    Backoff::with_nap(64, 2048, Duration::from_micros(20))
}

thread_local! {
    static SHARED: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    static WORKER: Cell<*const TaskCtx> = const { Cell::new(std::ptr::null()) };
}

/// The scheduler of the run this thread works in, if any.
pub(super) fn current_shared() -> Option<Arc<Shared>> {
    SHARED.with(|s| s.borrow().clone())
}

/// Installs `sh` as this thread's scheduler until `f` returns.
pub(super) fn with_shared<R>(sh: &Arc<Shared>, f: impl FnOnce() -> R) -> R {
    SHARED.with(|s| *s.borrow_mut() = Some(Arc::clone(sh)));
    let r = f();
    SHARED.with(|s| *s.borrow_mut() = None);
    r
}

/// The worker this thread runs as, if any.
pub(super) fn current_worker<'a>() -> Option<&'a TaskCtx> {
    let p = WORKER.with(|w| w.get());
    // SAFETY: WORKER is set by `TaskCtx::enter` to a worker that lives on this thread's
    // stack for the whole time the pointer is set (reset by the guard before the worker
    // is dropped), and the returned reference is used only within calls made while that
    // worker runs (a job's `get`), never stored.
    unsafe { p.as_ref() }
}

/// One scheduling step of this thread's worker (the pool's helper while it works here): a
/// `join` waiting for its thief, so the worker is [`Waiting`](Halves::Waiting).
fn help_step() -> bool {
    current_worker().is_some_and(|t| t.step(NO_THIEF, false, Halves::Waiting))
}

/// Whether a scheduling step may take a forked `join` half of a PE-mate.
///
/// A worker that waits (in [`Future::get`], [`TaskCtx::block_on`], or a `join` waiting for
/// its thief) runs what it takes on its own stack, above the frame that waits; that frame
/// resumes only once everything above it has returned. A *job* is safe to run there: it
/// waits only for jobs of its own subtree, for leaves and for ready futures (the contract
/// in the module docs), none of which can be suspended below it. A `join` half is not: it
/// may wait for a job its parent spawned before the `join`, and that job (or one of its
/// descendants) may be exactly the frame suspended below (tests/task_nesting.rs). So a
/// waiting worker takes halves only by leapfrogging inside `Worker::join` (from the thief
/// of its own half, whose deque holds only that half's descendants), and a PE-mate's
/// halves are otherwise taken only by idle workers, whose stacks hold no frame to wait for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Halves {
    /// The worker has no suspended frame: it may take any half.
    Idle,
    /// The worker waits in a frame: it takes jobs only.
    Waiting,
}

/// What only the PE's main thread has: the context for messages.
pub(super) struct MainCtx {
    pub(super) ctx: &'static Ctx,
    pub(super) am: Am<Packet>,
    pub(super) body_done: Cell<bool>,
}

/// The worker a job runs on: spawns sub-jobs, and tells where it runs.
pub struct TaskCtx {
    pub(super) sh: Arc<Shared>,
    index: usize,
    pub(super) deque: Deque<Task>,
    pub(super) main: Option<MainCtx>,
    tick: Cell<u32>,
    /// Jobs this worker ran in this run.
    pub(super) jobs: Cell<u64>,
    rng: RefCell<XorShift64>,
    /// The pool worker this thread runs as (see `worker`).
    worker: *const Worker,
}

/// Clears the thread's worker and scheduler when the worker stops (also by unwinding).
pub(super) struct EnterGuard;
impl Drop for EnterGuard {
    fn drop(&mut self) {
        pool::set_helper(None);
        WORKER.with(|w| w.set(std::ptr::null()));
        SHARED.with(|s| *s.borrow_mut() = None);
    }
}

impl TaskCtx {
    pub(super) fn new(
        sh: Arc<Shared>,
        index: usize,
        deque: Deque<Task>,
        main: Option<MainCtx>,
        worker: &Worker,
    ) -> TaskCtx {
        let stream = (sh.pe * sh.workers + index) as u64;
        TaskCtx {
            sh,
            index,
            deque,
            main,
            tick: Cell::new(0),
            jobs: Cell::new(0),
            rng: RefCell::new(XorShift64::for_stream(stream)),
            worker,
        }
    }

    /// Makes this the thread's worker until the guard is dropped.
    pub(super) fn enter(&self) -> EnterGuard {
        WORKER.with(|w| w.set(self));
        SHARED.with(|s| *s.borrow_mut() = Some(Arc::clone(&self.sh)));
        // A `join` of a job waiting for its thief runs this PE's jobs and moves its
        // messages meanwhile: the thief may be waiting for one of them.
        pool::set_helper(Some(help_step));
        EnterGuard
    }

    /// Runs `f` with the worker this thread runs as inside a [`Tasks::run`](super::Tasks::run)
    /// (its body, a job, or a `join` half of one), or returns `None` on a thread that
    /// works in no run. Code that is called from deep inside a job without a `&TaskCtx`
    /// (a library's recursion on the pool's [`Worker`], say) reaches the scheduler this
    /// way, to spawn a job that another PE may steal.
    ///
    /// ```
    /// use rhizome::World;
    /// use rhizome::tasks::{TaskCtx, Tasks};
    /// let out = World::builder().pes(1).run(|ctx| {
    ///     assert!(TaskCtx::with_current(|_| ()).is_none());
    ///     Tasks::new(ctx).run(ctx, |_| TaskCtx::with_current(|t| t.my_pe()))
    /// }).unwrap();
    /// assert_eq!(out, vec![Some(0)]);
    /// ```
    pub fn with_current<R>(f: impl FnOnce(&TaskCtx) -> R) -> Option<R> {
        current_worker().map(f)
    }

    /// This PE's number.
    pub fn my_pe(&self) -> usize {
        self.sh.pe
    }
    /// Number of PEs.
    pub fn num_pes(&self) -> usize {
        self.sh.pes
    }
    /// This worker's index within its PE (0 is the PE's main thread).
    pub fn worker_index(&self) -> usize {
        self.index
    }
    /// Worker threads of this PE.
    pub fn workers(&self) -> usize {
        self.sh.workers
    }

    /// The fork-join worker of this thread, in the PE's pool ([`Ctx::pool`]): a job forks
    /// with [`Worker::join`] on the same threads and deques that run the PE's jobs, and its
    /// halves are stolen by idle PE-mates. A BDD manager made on the PE's pool runs
    /// its operations inline here.
    ///
    /// ```
    /// use rhizome::World;
    /// use rhizome::pool::Worker;
    /// use rhizome::tasks::Tasks;
    /// fn sum(w: &Worker, lo: u64, hi: u64) -> u64 {
    ///     if hi - lo < 64 { return (lo..hi).sum(); }
    ///     let mid = (lo + hi) / 2;
    ///     let (a, b) = w.join(|w| sum(w, lo, mid), |w| sum(w, mid, hi));
    ///     a + b
    /// }
    /// let out = World::builder().pes(1).workers(2).run(|ctx| {
    ///     Tasks::new(ctx).run(ctx, |t| t.spawn_local(|t| sum(t.worker(), 0, 1000)).get())
    /// }).unwrap();
    /// assert_eq!(out, vec![499_500]);
    /// ```
    pub fn worker(&self) -> &Worker {
        // SAFETY: a `TaskCtx` lives only inside the pool call that lends this thread's
        // worker (`Tasks::run`'s body or the idle hook), so the worker outlives it.
        unsafe { &*self.worker }
    }

    /// Runs `a` and `b`, possibly in parallel, with a context each, and returns both
    /// results: a fork-join [`Worker::join`] whose halves may spawn and wait for jobs. `b`
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
        self.push(task);
        Future::from_state(st)
    }

    /// Starts closure `f`; it runs on some worker of this PE.
    pub fn spawn_local<T: Send + 'static>(
        &self,
        f: impl FnOnce(&TaskCtx) -> T + Send + 'static,
    ) -> Future<T> {
        let st = Arc::new(State::new());
        self.sh.jobs.create();
        self.deque.push(Box::new(LocalTask {
            f,
            state: Arc::clone(&st),
        }));
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
            self.deque.push(Box::new(Pinned(Box::new(JobTask {
                job,
                dest: Dest::Local(Arc::clone(&st)),
            }))));
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
        loop {
            if flag.0.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
            } else {
                if self.sh.jobs.stopped() {
                    future::stopped();
                }
                if !self.step(NO_THIEF, true, Halves::Waiting) {
                    std::hint::spin_loop();
                }
            }
        }
    }

    #[inline]
    fn push(&self, task: Task) {
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
                }
                Err(t) => self.deque.push(t),
            }
            return;
        }
        self.deque.push(task);
        self.maybe_poll();
    }

    #[inline]
    fn maybe_poll(&self) {
        if let Some(m) = &self.main {
            let t = self.tick.get().wrapping_add(1);
            self.tick.set(t);
            if t.is_multiple_of(POLL_EVERY) {
                self.poll_main(m);
            }
        }
    }

    /// Sends queued messages and runs the handlers of received ones.
    fn poll_main(&self, m: &MainCtx) {
        let ctx = m.ctx;
        let mut sent = false;
        while let Some((pe, msg)) = self.sh.outbox.take() {
            send_msg(ctx, m.am, pe, &msg);
            sent = true;
        }
        let n = ctx.progress();
        if sent || n > 0 {
            ctx.flush();
        }
        if self.sh.remote.take_hungry() {
            self.request_remote(m);
        }
    }

    fn request_remote(&self, m: &MainCtx) {
        self.sh
            .request_remote(m.ctx, m.am, &mut self.rng.borrow_mut());
    }

    fn exec(&self, t: Task) {
        self.tick.set(self.tick.get().wrapping_add(1));
        self.jobs.set(self.jobs.get() + 1);
        t.run(self);
        // A result for another PE leaves at once (job round-trip latency).
        if let Some(m) = &self.main
            && !self.sh.outbox.is_empty()
        {
            self.poll_main(m);
        }
    }

    /// Runs a job taken from another worker of this PE or from the inbox.
    fn exec_stolen(&self, t: Task, from_mate: bool) {
        if from_mate {
            self.sh.stats.add(Counter::LocalSteals, 1);
        }
        t.note_thief(LOCAL_THIEF + self.index as u64);
        self.exec(t);
    }

    /// One scheduling step: runs one job if there is one anywhere reachable. `hint` is the
    /// thief code of an awaited job (leapfrogging); `halves` says whether a PE-mate's
    /// `join` half may be taken too.
    fn step(&self, hint: u64, remote: bool, halves: Halves) -> bool {
        let sh = &*self.sh;
        if let Some(m) = &self.main
            && self.tick.get().is_multiple_of(POLL_EVERY)
        {
            self.poll_main(m);
        }
        if let Some(t) = self.deque.pop() {
            self.exec(t);
            return true;
        }
        // Leapfrogging inside the PE: steal from the worker that runs the awaited job.
        if (LOCAL_THIEF..REMOTE_THIEF).contains(&hint) {
            let w = (hint - LOCAL_THIEF) as usize;
            if w != self.index
                && let Some(t) = sh.local.steal_from(w)
            {
                self.exec_stolen(t, true);
                return true;
            }
        }
        if let Some(t) = sh.local.take_inbox() {
            self.exec_stolen(t, false);
            return true;
        }
        let n = sh.workers;
        if n > 1 {
            let start = self.rng.borrow_mut().below(n);
            for k in 0..n {
                let v = (start + k) % n;
                if v == self.index {
                    continue;
                }
                if let Some(t) = sh.local.steal_from(v) {
                    self.exec_stolen(t, true);
                    return true;
                }
            }
            // Fork-join halves of the jobs PE-mates run (see `Halves` for why not while
            // waiting).
            if halves == Halves::Idle && self.worker().steal_random() {
                return true;
            }
        }
        // The whole PE looks idle: handle messages (they may bring jobs), then steal from
        // another PE (the awaited job's PE first).
        if let Some(m) = &self.main {
            self.poll_main(m);
            if let Some(t) = sh.local.take_inbox() {
                self.exec_stolen(t, false);
                return true;
            }
        }
        if hint >= REMOTE_THIEF {
            sh.remote.leap_to((hint - REMOTE_THIEF) as usize);
        }
        match &self.main {
            Some(m) if remote => self.request_remote(m),
            Some(_) => {}
            None => sh.remote.ask_later(),
        }
        false
    }

    /// Runs jobs until `st` is ready.
    pub(super) fn help_until<T>(&self, st: &State<T>) {
        let mut backoff = idle_backoff();
        let mut idle = 0u32;
        while !st.is_ready() {
            if self.sh.jobs.stopped() {
                future::stopped();
            }
            // A short grace before stealing from other PEs: a quick remote job (a round
            // trip) should not be slowed down by steal traffic.
            let hint = st.thief.load(Ordering::Relaxed);
            if self.step(hint, idle >= REMOTE_GRACE, Halves::Waiting) {
                idle = 0;
                backoff.reset();
            } else {
                idle = idle.saturating_add(1);
                backoff.snooze();
            }
        }
    }

    /// The loop of a worker with nothing to wait for: runs jobs until the run stops.
    pub(super) fn top_loop(&self) {
        let mut backoff = idle_backoff();
        loop {
            if self.sh.jobs.stopped() {
                return;
            }
            if self.step(NO_THIEF, true, Halves::Idle) {
                backoff.reset();
                continue;
            }
            if let Some(m) = &self.main
                && self.sh.pe == 0
                && m.body_done.get()
            {
                self.sh.jobs.maybe_start_wave(m.ctx, m.am, self.sh.pes);
            }
            backoff.snooze();
        }
    }
}

/// The idle hook of the PE's pool during a run: a background worker of the pool becomes
/// task worker `index + 1` (the main thread, the pool's last worker, is task worker 0)
/// until the run stops.
/// Runs `f` as background worker `w` of the current run, on the worker's own deque, which
/// keeps what `f` leaves in it for the worker's next turn; `None` if that deque is not free
/// (the worker works for another run). A panic in `f` passes through.
fn as_background<R>(sh: &Arc<Shared>, w: &Worker, f: impl FnOnce(&TaskCtx) -> R) -> Option<R> {
    let i = (w.index() + 1) % sh.workers;
    let deque = sh.local.deques()[i].take()?;
    let t = TaskCtx::new(Arc::clone(sh), i, deque, None, w);
    let g = t.enter();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&t)));
    drop(g);
    sh.stats.add(Counter::JobsRun, t.jobs.get());
    sh.local.deques()[i] = Some(t.deque);
    Some(r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
}

pub(super) fn background_worker(sh: &Arc<Shared>, w: &Worker) {
    if sh.jobs.stopped() {
        return;
    }
    // A stop while waiting (another PE failed) unwinds to here.
    let _ = as_background(sh, w, |t| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.top_loop()))
    });
}
