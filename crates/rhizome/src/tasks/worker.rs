//! The workers of a PE: [`TaskCtx`], the context of the worker a job runs on, how a
//! thread becomes a worker of a run (the thread-local worker and scheduler, the pool's
//! helper), and the background workers that the pool's idle hook turns into task workers.
//! What a job does with its worker (spawning, forking, waiting) is in `spawn.rs`; the loop
//! that finds the next job is in `schedule.rs`.

use super::Shared;
use super::schedule::help_step;
use super::stats::Counter;
use super::wire::Packet;
use crate::pool::{self, Worker};
use crate::rng::XorShift64;
use crate::world::{Am, Ctx};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

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

/// What only the PE's main thread has: the context for messages.
pub(super) struct MainCtx {
    pub(super) ctx: &'static Ctx,
    pub(super) am: Am<Packet>,
    pub(super) body_done: Cell<bool>,
}

/// The worker a job runs on: spawns sub-jobs, and tells where it runs.
pub struct TaskCtx {
    pub(super) sh: Arc<Shared>,
    pub(super) index: usize,
    pub(super) main: Option<MainCtx>,
    pub(super) tick: Cell<u32>,
    /// Jobs this worker ran in this run.
    pub(super) jobs: Cell<u64>,
    pub(super) rng: RefCell<XorShift64>,
    /// The pool worker this thread runs as (see `worker`).
    pub(super) worker: *const Worker,
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
        main: Option<MainCtx>,
        worker: &Worker,
    ) -> TaskCtx {
        let stream = (sh.pe * sh.workers + index) as u64;
        TaskCtx {
            sh,
            index,
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
}

/// Runs `f` as background worker `w` of the current run; `None` if its task worker index
/// is taken (the worker works for another run). Slots `f` leaves in the worker's deque are
/// let go of at the end. A panic in `f` passes through.
pub(super) fn as_background<R>(
    sh: &Arc<Shared>,
    w: &Worker,
    f: impl FnOnce(&TaskCtx) -> R,
) -> Option<R> {
    let i = (w.index() + 1) % sh.workers;
    if !sh.local.lend(i) {
        return None;
    }
    let t = TaskCtx::new(Arc::clone(sh), i, None, w);
    let mark = w.deque_mark();
    let g = t.enter();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&t)));
    t.release_slots_above(mark);
    drop(g);
    sh.stats.add(Counter::JobsRun, t.jobs.get());
    sh.local.give_back(i);
    Some(r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
}

/// The idle hook of the PE's pool during a run: a background worker of the pool becomes
/// task worker `index + 1` (the main thread, the pool's last worker, is task worker 0)
/// until the run stops.
pub(super) fn background_worker(sh: &Arc<Shared>, w: &Worker) {
    if sh.jobs.stopped() {
        return;
    }
    // A stop while waiting (another PE failed) unwinds to here.
    let _ = as_background(sh, w, |t| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.top_loop()))
    });
}
