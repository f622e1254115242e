//! Fork-join parallelism inside one PE: a work-stealing pool as cheap as Lace.
//!
//! [`Worker::join`] pushes its second closure on the worker's own deque, runs the first,
//! and pops the second back to run it inline unless a thief took it meanwhile;
//! [`Worker::fork`] hands the popped closure back instead, for a caller that runs it as
//! the next turn of a loop (`join.rs`). In the common case this touches no shared memory
//! at all (see the split deque in `deque.rs`).
//! An idle worker steals the oldest task of a random victim; an owner whose task was
//! stolen steals back from the thief while it waits (leapfrogging), so no thread blocks
//! while there is work.
//!
//! [`Pool::run`] makes the *calling thread* one of the workers for the duration of the
//! job, so a job starts without a thread hand-off, and a pool of one worker has no
//! threads at all. Background workers spin while a job runs (like Lace) and sleep when
//! the pool has been idle for a moment.
//!
//! A PE has one pool ([`Ctx::pool`](crate::Ctx::pool)); the futures scheduler of
//! [`crate::tasks`] runs its workers on its threads through the hooks of `idle.rs`, and
//! puts its jobs in the same deques (one per worker): a slot says whether it holds a half
//! or such a job, and a thief says which it may take (`Take`, `docs/one-deque.md`).
//!
//! ```
//! use rhizome::pool::{Pool, Worker};
//! fn fib(w: &Worker, n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = w.join(|w| fib(w, n - 1), |w| fib(w, n - 2));
//!     a + b
//! }
//! let pool = Pool::new(2);
//! assert_eq!(pool.run(|w| fib(w, 20)), 6765);
//! ```

mod deque;
mod idle;
mod job;
mod join;
mod sendable;

pub(crate) use deque::Take;
pub(crate) use idle::set_helper;
pub(crate) use job::JobRef;
pub use join::Forked;
pub use sendable::POLL_EVERY;
pub(crate) use sendable::{Export, ExportedHalf};

use crate::backoff::Backoff;
use crate::rng::XorShift64;
use deque::{COMPLETED, Deque, Owner, Pushed, RETURNED, THIEF_BASE};
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Task slots per worker: the deepest nesting of unfinished joins a worker can hold
/// before further joins run both halves inline.
const DEQUE_CAPACITY: usize = 1 << 16;
/// Stack of each background worker: deep recursions (BDD operations) run on them.
const WORKER_STACK: usize = 64 << 20;
/// How long an idle background worker spins before it sleeps.
const IDLE_SPIN: Duration = Duration::from_micros(500);

struct Shared {
    deques: Box<[Deque]>,
    /// Jobs being run through `Pool::run` (0 or 1: runs are serialised by `run_lock`).
    active: AtomicUsize,
    shutdown: AtomicBool,
    /// Background workers asleep (or about to be) on `wake`.
    sleepers: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    run_lock: Mutex<()>,
    /// The idle hook of the current run, if it has one.
    idle: idle::HookSlot,
}

/// A set of worker threads that run fork-join jobs.
pub struct Pool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// The context of the worker thread running a job; `join` forks through it.
pub struct Worker {
    shared: Arc<Shared>,
    /// This worker's side of `shared.deques[index]`, inline so that a fork does not
    /// chase pointers.
    owner: Owner,
    index: usize,
    rng: RefCell<XorShift64>,
}

thread_local! {
    /// The worker this thread is running as, if any: `run` from inside a job of the same
    /// pool runs inline instead of deadlocking on the run lock.
    static CURRENT: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
}

impl Pool {
    /// A pool of `workers` threads (at least one), counting the thread that calls
    /// [`run`](Pool::run): `workers - 1` background threads are started.
    pub fn new(workers: usize) -> Pool {
        let workers = workers.max(1);
        let shared = Arc::new(Shared {
            deques: (0..workers).map(|_| Deque::new(DEQUE_CAPACITY)).collect(),
            active: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            run_lock: Mutex::new(()),
            idle: idle::HookSlot::default(),
        });
        let threads = (0..workers - 1)
            .map(|i| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("rhizome-worker-{i}"))
                    .stack_size(WORKER_STACK)
                    .spawn(move || Worker::new(shared, i).background_loop())
                    .expect("cannot start a worker thread")
            })
            .collect();
        Pool { shared, threads }
    }

    /// A pool with one worker per available core.
    pub fn with_default_workers() -> Pool {
        Pool::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Number of worker threads (including the calling thread during `run`).
    pub fn workers(&self) -> usize {
        self.shared.deques.len()
    }

    /// Runs `f` on a worker of this pool and returns its result. The calling thread
    /// becomes the last worker for the duration; the other workers steal from it. Calls
    /// from several threads are serialised; a call from inside a job of this pool runs
    /// `f` inline on the current worker. A panic in `f` (or in any job it forks)
    /// propagates to the caller.
    pub fn run<R: Send>(&self, f: impl FnOnce(&Worker) -> R + Send) -> R {
        self.run_serialised(|| (), f)
    }

    /// `run`, with `setup` called once the run owns the pool (not for an inline run); what
    /// it returns is dropped when the run ends, before the next run may start.
    /// `f` runs on the calling thread, so unlike `run` it need not be `Send`.
    fn run_serialised<R, G>(&self, setup: impl FnOnce() -> G, f: impl FnOnce(&Worker) -> R) -> R {
        let current = CURRENT.with(|c| c.get());
        // SAFETY: CURRENT points at a live worker while that worker runs on this thread
        // (set and cleared around every use below and in `background_loop`).
        if let Some(w) = unsafe { current.as_ref() }
            && Arc::ptr_eq(&w.shared, &self.shared)
        {
            return f(w);
        }
        let _serial = self
            .shared
            .run_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let _setup = setup();
        self.shared.active.fetch_add(1, Ordering::SeqCst);
        // A sleeper registers (under the lock) before it checks `active`, so either it
        // sees the new job or we see it and wake it.
        if self.shared.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.shared.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        let w = Worker::new(Arc::clone(&self.shared), self.workers() - 1);
        CURRENT.with(|c| c.set(&w));
        let result = catch_unwind(AssertUnwindSafe(|| f(&w)));
        CURRENT.with(|c| c.set(current));
        self.shared.active.fetch_sub(1, Ordering::SeqCst);
        match result {
            Ok(r) => r,
            Err(p) => resume_unwind(p),
        }
    }
}

/// How a worker waits for work: spins first (work usually appears within microseconds),
/// then yields the core: when the machine has more runnable threads than cores, the thread
/// we wait for may be the one that needs it.
fn idle_backoff() -> Backoff {
    Backoff::new(256)
}

impl Drop for Pool {
    fn drop(&mut self) {
        {
            let _g = self.shared.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.shutdown.store(true, Ordering::SeqCst);
            self.shared.wake.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Worker {
    fn new(shared: Arc<Shared>, index: usize) -> Worker {
        // SAFETY: `shared` keeps the deque alive and never reallocates it, and a pool
        // has one worker per deque (`run` serialises the users of the last one).
        let owner = unsafe { Owner::new(&shared.deques[index]) };
        Worker {
            shared,
            owner,
            index,
            rng: RefCell::new(XorShift64::for_stream(index as u64)),
        }
    }

    /// This worker's index in its pool, `0..workers`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of workers of the pool.
    pub fn workers(&self) -> usize {
        self.shared.deques.len()
    }

    /// The slow path of a join's pop: its slot is shared, or jobs of the layer above were
    /// pushed above it (`push_job` shares them, so their joins come here). Runs those jobs
    /// first (the frames that spawned them have returned; a job is safe to run on any
    /// stack), then pulls the slot back or finds it stolen.
    #[cold]
    #[inline(never)]
    fn pop_shared(&self, slot: Pushed) -> bool {
        let floor = self.owner.index_of(slot) + 1;
        self.run_jobs_above(floor);
        self.owner.pop_shared(slot)
    }

    /// Runs (or, if a thief took them, lets go of) the slots at index `floor` and above:
    /// jobs of the layer above that the frames which pushed them left behind.
    pub(crate) fn run_jobs_above(&self, floor: usize) {
        while self.owner.top_above(floor).is_some() {
            if let Some(job) = self.pop_above(floor) {
                // SAFETY: popped back (or returned by its thief), so this is its only run;
                // a job's data lives on the heap until it runs.
                unsafe { job.execute(self) };
            }
        }
    }

    /// Pops the newest slot if it is at index `floor` or above: its job, or `None` if a
    /// thief took it (or there is none). For jobs of the layer above, which the frames
    /// that pushed them left behind (never a half of a `join` still waiting).
    pub(crate) fn pop_above(&self, floor: usize) -> Option<JobRef> {
        let top = self.owner.top_above(floor)?;
        self.owner.pop_top(top)
    }

    /// Where this worker's next push goes: a mark for [`run_jobs_above`](Worker::run_jobs_above).
    pub(crate) fn deque_mark(&self) -> usize {
        self.owner.head_index()
    }

    /// Pushes a job of the layer above (a future's job, on the heap) and shares it at once;
    /// false when the deque is full. Its `exec` must take it over whoever runs it: the
    /// owner popping it, a thief, or a waiter that claimed it first.
    pub(crate) fn push_job(&self, job: JobRef) -> bool {
        self.owner.push_job(job)
    }

    /// Pops this worker's newest slot if it holds a job of the layer above (never a half:
    /// the halves in a worker's own deque belong to `join`s waiting below on its stack).
    pub(crate) fn pop_own_job(&self) -> Option<JobRef> {
        let top = self.owner.top_above(0)?;
        if !self.owner.is_job(top) {
            return None;
        }
        self.owner.pop_top(top)
    }

    /// Jobs and halves that thieves could take from the workers of this pool now.
    pub(crate) fn shared_estimate(&self) -> usize {
        self.shared.deques.iter().map(|d| d.shared_len()).sum()
    }

    /// Waits for the thief of the most recent task, stealing meanwhile: back from the thief
    /// (leapfrogging: its deque holds only descendants of our task), then, in a plain run,
    /// from anyone. Under a layer with a helper (a run of [`crate::tasks`]), it takes no
    /// other PE-mate's half: a half may wait for a future whose job is suspended below this
    /// frame (see `Halves` in `tasks/worker.rs`); the helper runs jobs instead.
    ///
    /// Returns true if the thief returned the task unrun (it won a slot it may not run,
    /// see `RETURNED`): the caller runs it.
    #[cold]
    fn wait_for_thief(&self) -> bool {
        let h = self.owner.begin_wait();
        let mut backoff = idle_backoff();
        // A thread that works for no layer with a helper cannot run that layer's jobs.
        let any_half = !idle::has_helper();
        let leap = if any_half { Take::Halves } else { Take::Any };
        let state = loop {
            let state = self.owner.thief_state(h);
            if state == COMPLETED || state == RETURNED {
                break state;
            }
            let stolen_back = state >= THIEF_BASE && self.steal_from(state - THIEF_BASE, leap);
            if stolen_back || (any_half && self.steal_random(Take::Halves)) || idle::help() {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        };
        // Jobs that what ran meanwhile spawned and left above the slot.
        self.run_jobs_above(h + 1);
        self.owner.end_wait(h);
        state == RETURNED
    }

    /// Steals and runs the oldest shared task of a random PE-mate, if `take` allows it;
    /// false if it found none.
    pub(crate) fn steal_random(&self, take: Take) -> bool {
        let n = self.workers();
        if n < 2 {
            return false;
        }
        let mut v = self.rng.borrow_mut().below(n - 1);
        if v >= self.index {
            v += 1;
        }
        self.steal_from(v, take)
    }

    /// Steals and runs the oldest shared task of `victim`, if `take` allows it.
    pub(crate) fn steal_from(&self, victim: usize, take: Take) -> bool {
        if victim == self.index {
            return false;
        }
        let Some(d) = self.shared.deques.get(victim) else {
            return false;
        };
        let Some(s) = d.steal(self.index, take) else {
            return false;
        };
        // SAFETY: a half's frame waits in `wait_for_thief` until the slot is completed,
        // so it is alive; a job lives on the heap until it runs. Winning the slot made
        // this its only run (a job's `exec` also claims it against waiters).
        unsafe { s.job.execute(self) };
        if !s.is_job {
            d.complete(s.slot);
        }
        true
    }

    fn background_loop(self) {
        CURRENT.with(|c| c.set(&self));
        let shared = Arc::clone(&self.shared);
        let mut idle_since = Instant::now();
        let mut backoff = idle_backoff();
        loop {
            if shared.shutdown.load(Ordering::Relaxed) {
                break;
            }
            if shared.active.load(Ordering::Relaxed) > 0 {
                // The hook first: a layer that has one wants every task of the run, the
                // fork-join ones included, to run inside it (it has the waiting context).
                self.run_idle_hook();
                // Outside the hook: halves only (a job runs inside a worker of its run).
                if self.steal_random(Take::Halves) {
                    backoff.reset();
                } else {
                    backoff.snooze();
                }
                idle_since = Instant::now();
                continue;
            }
            if idle_since.elapsed() < IDLE_SPIN {
                backoff.snooze();
                continue;
            }
            let g = shared.sleep.lock().unwrap_or_else(|e| e.into_inner());
            shared.sleepers.fetch_add(1, Ordering::SeqCst);
            let g = shared
                .wake
                .wait_while(g, |_| {
                    shared.active.load(Ordering::SeqCst) == 0
                        && !shared.shutdown.load(Ordering::SeqCst)
                })
                .unwrap_or_else(|e| e.into_inner());
            shared.sleepers.fetch_sub(1, Ordering::SeqCst);
            drop(g);
            idle_since = Instant::now();
            backoff.reset();
        }
        CURRENT.with(|c| c.set(std::ptr::null()));
    }
}
