//! Cooperative tasks: many cheap blocking tasks per PE, for latency-bound,
//! message-bound code (Grappa's workers, seed 003 section 2).
//!
//! A task is a Rust `async` block spawned on this PE's executor ([`Coop::run`]). It runs
//! on the PE's main thread until it awaits something that is not ready (a [`Reply`] from
//! another PE, a [`GlobalLock`], a [`CondVar`], a [`CompletionEvent`]); then the PE runs
//! its other tasks. A task is never preempted between two `.await` points, so state that
//! only this PE's tasks touch (a flat-combining proxy, say) needs no lock: a check and
//! an update with no `.await` between them are atomic. The PE's message loop drives the
//! executor: after each round of ready tasks it flushes the aggregation buffers and runs
//! the received handlers, which answer other PEs' delegates and wake the tasks whose
//! replies arrived. Thousands of tasks blocked on remote operations therefore cost one
//! small heap object each, and their requests leave in shared buffers.
//!
//! # Why a hand-written executor
//! It must run on the PE's main thread, interleaved with [`Ctx::progress`], and let tasks
//! borrow the non-`Send` [`Ctx`]; tokio's and async-executor's local executors would
//! need their own reactor loop, a thread-safe spawn path and a dependency for what is a
//! run queue, a waker and a loop here (`executor.rs`, ~150 lines).
//!
//! # Beside the other ways to run work
//! - [`crate::pool`] (fork-join): nested parallel *compute* on the PE's worker threads;
//!   a job runs to completion and never waits for a message.
//! - [`crate::tasks`] futures: serializable one-shot jobs that idle PEs steal; good for
//!   load balancing divide-and-conquer work across the cluster.
//! - `coop` tasks stay on the PE that spawned them, on one thread, and spend their life
//!   waiting for other PEs; they are for latency-bound code with many outstanding
//!   remote operations (delegates, global data structures, graph traversals).
//!
//! ```
//! use rhizome::World;
//! use rhizome::coop::Coop;
//! use std::cell::Cell;
//! let sums = World::builder().pes(2).run(|ctx| {
//!     let coop = Coop::new(ctx); // collective: registers the delegate handlers
//!     let counter = ctx.alloc::<u64>(1);
//!     let done = Cell::new(0u64);
//!     coop.run(|s| {
//!         for _ in 0..1000 {
//!             let (coop, done) = (&coop, &done);
//!             // 1000 tasks per PE, each blocked on a remote fetch-and-add at PE 0.
//!             s.spawn(async move {
//!                 coop.fetch_add(counter.ptr(0, 0), 1).await;
//!                 done.set(done.get() + 1);
//!             });
//!         }
//!     }); // collective: returns when every PE's tasks are done
//!     ctx.barrier();
//!     (done.get(), ctx.load(counter.ptr(0, 0)))
//! }).unwrap();
//! assert_eq!(sums, vec![(1000, 2000), (1000, 2000)]);
//! ```

mod delegate;
mod executor;
mod join;
mod sync;

pub use delegate::Reply;
pub use executor::{Scope, yield_now};
pub use join::{JoinAll, join_all};
pub use sync::{CompletionEvent, CondVar, GlobalLock, LockGuard};

use crate::context::Ctx;

/// One PE's cooperative executor and its delegate handlers. Made collectively
/// ([`Coop::new`]); [`Coop::run`] runs tasks on it. Clones share the handlers.
#[derive(Clone)]
pub struct Coop<'c> {
    ctx: &'c Ctx,
    memory: delegate::MemoryDelegates,
    locks: sync::Locks,
}

impl<'c> Coop<'c> {
    /// Collective: registers the delegate and lock handlers (every PE makes its `Coop`s
    /// at the same point of its registrations).
    pub fn new(ctx: &'c Ctx) -> Self {
        Coop {
            ctx,
            memory: delegate::MemoryDelegates::register(ctx),
            locks: sync::Locks::register(ctx),
        }
    }

    /// The PE's context.
    pub fn ctx(&self) -> &'c Ctx {
        self.ctx
    }

    /// Collective: runs `body`, which spawns tasks on this PE, then runs the tasks (and
    /// those they spawn) until all have finished, and returns once every PE's tasks have
    /// finished and every message they sent has been handled (a [`Ctx::finish`] scope).
    pub fn run<'a, R>(&self, body: impl FnOnce(&Scope<'a>) -> R) -> R {
        self.ctx.finish(|| executor::run(self.ctx, body))
    }

    /// Not collective: runs `body`'s tasks until this PE's have all finished, without
    /// the termination scope of [`run`](Self::run) (whose waves cost two collective
    /// rounds). For a phase whose tasks send only requests they await (delegates,
    /// flat-combining commits): once they have finished, nothing they started is in
    /// flight. Other PEs may still be in the phase and send this PE requests: it answers
    /// them whenever it next handles messages, so what follows must handle messages while
    /// it waits: a collective over messages ([`Ctx::allgather`], [`Ctx::allreduce`], ...,
    /// not the transport's [`Ctx::barrier`] or [`Ctx::allreduce_u64`], which would
    /// deadlock with a PE waiting for this one's answer) is the barrier that tells all
    /// PEs the phase is over.
    /// One-way messages the tasks sent last (a global lock's release) leave before this
    /// returns.
    pub fn run_local<'a, R>(&self, body: impl FnOnce(&Scope<'a>) -> R) -> R {
        let r = executor::run(self.ctx, body);
        self.ctx.flush();
        r
    }
}
