//! Futures over a cluster work-stealing scheduler: one interface for jobs that run on this
//! PE and jobs that run on another (seed: "A Unified Futures Interface"; scheduler: thesis
//! ch. 4, hierarchical private-deque work stealing with leapfrogging).
//!
//! # Model
//! [`Tasks::new`] (collective) sets up the scheduler of a PE; [`Tasks::run`] (collective)
//! runs a body on every PE as the first job of that PE and returns once every job started
//! anywhere, transitively, has completed. Inside, jobs create futures:
//!
//! - [`TaskCtx::spawn`] (`async` in the paper; `async` is a Rust keyword) starts a
//!   serializable [`Job`]; it may run on this PE or be stolen by another;
//! - [`TaskCtx::spawn_local`] starts a closure; it stays on this PE (any of its workers);
//! - [`TaskCtx::async_on`] runs a job on a given PE;
//! - [`make_future`] makes a ready future.
//!
//! [`Future::get`] blocks (a blocked worker runs other jobs meanwhile), futures are
//! `.await`able, clonable, and serializable, so they can be passed into jobs that run
//! elsewhere. A panic in a job is stored in its future and raised again in whoever calls
//! `get` ([`Future::try_get`] returns it as a [`JobError`]).
//!
//! ```
//! use rhizome::World;
//! use rhizome::tasks::{Job, TaskCtx, Tasks};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Fib(u64);
//!
//! impl Job for Fib {
//!     type Output = u64;
//!     fn run(self, t: &TaskCtx) -> u64 {
//!         if self.0 < 10 {
//!             return (1..=self.0).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
//!         }
//!         let a = t.spawn(Fib(self.0 - 1)); // may be stolen by another PE
//!         let b = Fib(self.0 - 2).run(t);
//!         a.get() + b
//!     }
//! }
//!
//! let out = World::builder().pes(2).run(|ctx| {
//!     let tasks = Tasks::new(ctx);
//!     tasks.register::<Fib>();
//!     tasks.run(ctx, |t| (t.my_pe() == 0).then(|| t.spawn(Fib(25)).get()))
//! }).unwrap();
//! assert_eq!(out[0], Some(75025));
//! ```
//!
//! # Scheduler
//! The workers of a PE are the threads of its fork-join pool ([`Ctx::pool`]): the main
//! thread runs the body, and each background thread of the pool becomes a task worker
//! through the pool's idle hook for the duration of a run. So a PE has one set of worker
//! threads for jobs, futures and fork-join ([`TaskCtx::join`], [`TaskCtx::worker`], and a
//! BDD manager made on the same pool).
//!
//! Every worker has one deque, the pool's, and it holds both its jobs and its `join`
//! halves (`claim.rs`, `docs/one-deque.md`): it pushes and pops at one end (newest first),
//! thieves take the oldest slot. A worker takes, in order, its own newest slots while they
//! are jobs (the awaited job is usually the newest), the job it waits for if no one has
//! claimed it yet (wherever its slot is; the claim lives in the job's future), then, step
//! by step, its own newest slot if that is a job, the
//! oldest job of the worker that runs the job it waits for (leapfrogging), a job from the
//! PE's inbox (jobs received from other PEs), and the oldest slot of a random PE-mate: any
//! slot if it waits for nothing, a job only if it waits. Only when the whole PE is out of
//! work does it steal from another PE: its main thread sends a steal request, and the
//! victim's main thread answers at its next poll point with one job (steal-one) or half of
//! its stealable jobs (steal-many), taken oldest first from its workers' deques and
//! encoded, or with nothing; after an empty answer the next request waits a moment (1 us,
//! doubling with every further empty answer up to 64 us), so that idle PEs do not flood
//! each other with requests. No lock and no remote memory access is involved: the deques are private
//! to their PE (request/transfer through messages). A stolen job's result travels back to
//! the owner of its future in a message; a job is encoded only when it leaves its PE. A
//! `join` waiting for its thief runs jobs and moves messages meanwhile. At the start of a
//! run PE 0 sends its first stealable jobs to the other PEs (initial work-sharing phase).
//!
//! Termination: each PE counts the jobs it created and the jobs it owns that completed.
//! Once its body is done and it is idle, PE 0 collects the sums in waves of messages;
//! two consecutive equal waves with created = completed mean every job has completed
//! (the four-counter method), and PE 0 tells everyone to stop.
//!
//! # Blocking and deadlock
//! A worker blocked in `get` runs other jobs *on its own stack* (there are no green
//! threads), as the job stacks of the unified-futures paper do. This is deadlock-free for
//! fork-join use: a job waits only for futures of jobs it spawned itself (directly or
//! through its descendants), for ready futures, or for *leaf* jobs (jobs that never wait).
//! A job that waits for any other future can deadlock: the awaited job may itself be
//! blocked below the waiter on the same worker's stack (e.g. job `A` waits for a future of
//! job `B`, `B` spawned children and waits for them, and a worker blocked in `B` picks up
//! `A`). The body of [`Tasks::run`] may wait for anything. To pass a non-leaf future into
//! other jobs, wait for it in a common ancestor first, or pass the value instead.
//!
//! The halves of a [`TaskCtx::join`] belong to their job: a half may wait for a job that
//! its job spawned before the `join`. Such a half is not safe on just any stack (the
//! awaited job may be suspended below it), so a worker that waits takes no PE-mate's half
//! except, inside `join`, from the thief of its own half (leapfrogging); idle workers take
//! the rest (`tests/task_nesting.rs` has the shapes that deadlock otherwise).
//!
//! Messages are handled by the PE's main thread (the one holding the [`Ctx`]) whenever it
//! is between jobs, when it spawns, and when it waits; a job that computes for long
//! without spawning can call [`TaskCtx::poll`] so steal requests are answered.

//! # Layout
//! `job` holds the jobs ([`Job`]), `claim` a job in a worker's deque and the claim that
//! runs it once, `wire` the messages and the decoder registry, `steal` the inbox and
//! remote stealing, `worker` [`TaskCtx`] and how threads become workers,
//! `spawn` what a job does with its worker (spawn, join, block_on), `schedule` the loop
//! that finds the next job, `future` the futures, `termination` the waves that end a run,
//! `stats` the counters.

mod claim;
mod future;
mod job;
mod schedule;
mod sendable;
mod spawn;
mod stats;
mod steal;
mod termination;
mod wire;
mod worker;

pub use future::{Future, JobError, make_future};
pub use job::Job;
pub use stats::Stats;
pub use steal::StealPolicy;
pub use worker::TaskCtx;

pub(crate) use schedule::idle_backoff;
pub(crate) use sendable::{decode_outcome, encode_description, help_remote, poll_here};

use crate::pool::{Pool, Worker};
use crate::world::{Am, Ctx};
use stats::Counter;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use wire::{Decoders, Msg, Outbox, Packet};
use worker::{MainCtx, current_worker, with_shared};

/// Marker payload: the run was stopped (another PE failed); waiting code unwinds.
struct Stopped;

/// The scheduler state of one PE, shared by its worker threads and its message handler.
pub(crate) struct Shared {
    pe: usize,
    pes: usize,
    workers: usize,
    local: steal::Local,
    remote: steal::Remote,
    outbox: Outbox,
    values: future::Values,
    decoders: Decoders,
    jobs: termination::Jobs,
    stats: stats::AtomicStats,
}

impl Shared {
    /// Handles one scheduler message (on the main thread).
    fn handle(&self, ctx: &Ctx, am: Am<Packet>, m: Msg) {
        match m {
            Msg::StealReq { thief, many } => self.answer_steal(ctx, am, thief, many),
            Msg::Transfer { reply, tasks } => self.receive_transfer(reply, tasks),
            Msg::Run { task } => self.receive_run(task),
            Msg::Value { id, bytes } => {
                if self.values.receive(self.pe, id, &bytes) {
                    self.jobs.complete();
                }
            }
            Msg::Subscribe { id, pe, sub } => {
                self.values.subscribe(&self.outbox.sender(), id, pe, sub)
            }
            Msg::CountReq { wave } => self.jobs.report(ctx, am, wave),
            Msg::CountRep {
                wave,
                created,
                completed,
            } => self
                .jobs
                .collect(ctx, am, self.pes, wave, (created, completed)),
            Msg::Stop => self.jobs.stop(),
        }
    }
}

/// The task scheduler of one PE. See the [module documentation](self).
pub struct Tasks {
    sh: Arc<Shared>,
    /// The PE's pool ([`Ctx::pool`]): its threads are this scheduler's workers.
    pool: Arc<Pool>,
    am: Am<Packet>,
    stats: Cell<Stats>,
}

impl Tasks {
    /// Collective: sets up the scheduler on this PE over the PE's pool ([`Ctx::pool`],
    /// [`Ctx::workers`] threads, the PE's main thread one of them) and registers its
    /// message handler.
    pub fn new(ctx: &Ctx) -> Tasks {
        let pool = Arc::clone(ctx.pool());
        let workers = pool.workers();
        let sh = Arc::new(Shared {
            pe: ctx.my_pe(),
            pes: ctx.num_pes(),
            workers,
            local: steal::Local::new(workers),
            remote: steal::Remote::new(),
            outbox: Outbox::new(),
            values: future::Values::new(),
            decoders: Decoders::default(),
            jobs: termination::Jobs::default(),
            stats: stats::AtomicStats::default(),
        });
        let sh2 = Arc::clone(&sh);
        let am_cell: Rc<Cell<Option<Am<Packet>>>> = Rc::new(Cell::new(None));
        let am_cell2 = Rc::clone(&am_cell);
        let am = ctx.register(move |ctx: &Ctx, Packet(m): Packet| {
            let am = am_cell2.get().expect("registered before any message");
            sh2.handle(ctx, am, m);
        });
        am_cell.set(Some(am));
        Tasks {
            sh,
            pool,
            am,
            stats: Cell::new(Stats::default()),
        }
    }

    /// Makes job type `J` known on this PE, so jobs of this type sent by other PEs can be
    /// decoded. Call it on every PE for every job type that may cross PEs, before
    /// [`Tasks::run`] (the order does not matter; repeating it is harmless).
    pub fn register<J: Job>(&self) -> &Self {
        self.sh.decoders.register::<J>();
        self
    }

    /// How many jobs a PE gives a thief from another PE (default [`StealPolicy::One`]).
    pub fn set_steal_policy(&self, p: StealPolicy) -> &Self {
        self.sh.remote.set_policy(p);
        self
    }

    /// Whether PE 0 sends its first stealable jobs to the other PEs (default on).
    pub fn set_initial_sharing(&self, on: bool) -> &Self {
        self.sh.remote.set_sharing(on);
        self
    }

    /// The counters of the last [`Tasks::run`] on this PE.
    pub fn stats(&self) -> Stats {
        self.stats.get()
    }

    /// Collective: runs `body` on this PE as a job (the other workers and PEs steal from
    /// it), then schedules jobs until every job created in this run, on any PE, has
    /// completed; returns the body's result. A panic in the body propagates (and stops
    /// the whole world, like any panic of a PE).
    pub fn run<R>(&self, ctx: &Ctx, body: impl FnOnce(&TaskCtx) -> R) -> R {
        assert!(
            ctx.my_pe() == self.sh.pe && ctx.num_pes() == self.sh.pes,
            "rhizome: Tasks::run with the context of another PE"
        );
        assert!(
            current_worker().is_none(),
            "rhizome: Tasks::run cannot be nested"
        );
        let sh = &self.sh;
        sh.remote.reset(sh.pe);
        sh.jobs.reset();
        sh.stats.reset();
        // Every PE is ready before anyone sends scheduler messages.
        ctx.barrier();
        let background = |w: &Worker| worker::background_worker(sh, w);
        let r = self.pool.run_with_idle(&background, |w| {
            let _stop = StopGuard(sh);
            assert!(sh.local.lend(0), "rhizome: Tasks::run re-entered");
            let mark = w.deque_mark();
            let main = TaskCtx::new(
                Arc::clone(sh),
                0,
                Some(MainCtx {
                    // SAFETY: only the lifetime is erased: `main` and every reference to
                    // it (the WORKER thread-local, reset by the guard) end inside this
                    // closure, while `ctx` is borrowed for the whole call.
                    ctx: unsafe { &*(ctx as *const Ctx) },
                    am: self.am,
                    body_done: Cell::new(false),
                }),
                w,
            );
            main.jobs.set(1);
            let g = main.enter();
            sh.jobs.create();
            let r = body(&main);
            sh.jobs.complete();
            if let Some(m) = &main.main {
                m.body_done.set(true);
            }
            main.top_loop();
            drop(g);
            sh.stats.add(Counter::JobsRun, main.jobs.get());
            main.release_slots_above(mark);
            sh.local.give_back(0);
            r
        });
        // Drain replies to late steal requests and subscriptions, on every PE.
        with_shared(sh, || ctx.finish(|| ()));
        // Values for subscriptions no one waits for any more.
        while sh.outbox.take().is_some() {}
        sh.values.clear();
        self.stats.set(sh.stats.snapshot());
        r
    }
}

/// Sets the stop flag when the run ends, also by unwinding, so worker threads leave.
struct StopGuard<'a>(&'a Shared);
impl Drop for StopGuard<'_> {
    fn drop(&mut self) {
        self.0.jobs.stop();
    }
}
