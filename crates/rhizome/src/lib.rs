//! Rhizome: a partitioned-global-address-space runtime for irregular, fine-grained
//! parallel programs.
//!
//! A program is SPMD: [`World::run`] runs one closure on every processing element (PE),
//! each with its own [`Ctx`]. PEs share symmetric global memory ([`memory`]), send each
//! other aggregated active messages ([`Ctx::send`], [`Ctx::call`]), wait for distributed
//! termination ([`Ctx::finish`]) and use collectives ([`Ctx::barrier`],
//! [`Ctx::broadcast`], [`Ctx::allreduce`], [`Ctx::gather`], ...).
//!
//! ```
//! use rhizome::World;
//! // A distributed histogram: every PE sends increments to the owners of the bins.
//! let totals = World::builder().pes(2).run(|ctx| {
//!     let bins = ctx.alloc::<u64>(4);
//!     let mem = ctx.memory().clone();
//!     let me = ctx.my_pe();
//!     let incr = ctx.register(move |_ctx, bin: u64| {
//!         mem.fetch_add(bins.ptr(me, bin as usize), 1);
//!     });
//!     ctx.finish(|| {
//!         for i in 0..100u64 {
//!             let dest = (i as usize) % ctx.num_pes();
//!             ctx.send(dest, incr, &(i % 4));
//!         }
//!     });
//!     ctx.barrier();
//!     (0..4).map(|b| ctx.get(bins.ptr(me, b))).sum::<u64>()
//! }).unwrap();
//! assert_eq!(totals.iter().sum::<u64>(), 200);
//! ```
//!
//! Modules, one runtime concept each:
//! - [`World`] and [`WorldBuilder`] (`world`): how a run starts, picks its transport and
//!   ends; [`Ctx`] (`context`): one PE's view of it.
//! - `am`: active messages (registration, aggregation, dispatch, calls), with
//!   [`message`], the payload codec.
//! - `termination`: the four-counter detection behind [`Ctx::finish`].
//! - `collectives`: barrier, reductions, broadcast, gather; `error`: [`RunError`].
//! - [`memory`]: global pointers, one-sided access, ordering guarantees.
//! - [`transport`]: the narrow interface to the communication library, its `local`
//!   implementation (all PEs in this process) and, with the cargo feature `mpi`, its
//!   `mpi` implementation (one PE per MPI rank, chosen automatically under `mpirun`).
//! - [`pool`]: the fork-join work-stealing pool inside one PE.
//! - [`tasks`]: futures (`spawn`/`async_on`/`get`/`.await`) over hierarchical work stealing
//!   across the workers of a PE and across PEs.
//! - [`conveyor`]: Bale-style conveyors (typed items pushed to a PE, pulled there, in
//!   batches with credits); `aggregate`: aggregation contexts ([`Ctx::aggregate`],
//!   [`AggContext`]), one-sided puts, adds and reads packed per destination on conveyors.
//! - [`actor`]: actors with mailboxes (selectors, as in HClib-Actor): per-mailbox
//!   handlers with `&mut` PE-local state, aggregated sends, supersteps that wait for
//!   multi-hop messages and for the tasks spawned in handlers.
//! - [`coop`]: cooperative tasks, many per PE, that block on delegate operations (remote
//!   calls, reads, writes, compare-and-swap), global locks, condition variables and
//!   completion events while the PE runs others (Grappa's workers).
//! - [`rng`]: the one pseudo-random generator (victim selection, benchmark inputs).
pub mod actor;
mod aggregate;
mod am;
pub mod backoff;
mod collectives;
mod context;
pub mod conveyor;
pub mod coop;
mod error;
pub mod hint;
pub mod memory;
pub mod pool;
pub mod rng;
pub mod tasks;
mod termination;
pub mod transport;
mod world;

pub use aggregate::AggContext;
pub use am::message;
pub use am::{Am, CallAm, CallHandle, DEFAULT_AGGREGATION_BYTES};
pub use context::Ctx;
pub use error::RunError;
pub use memory::{GlobalArray, GlobalPtr, Memory, Pod};
pub use message::Message;
pub use transport::{AtomicOp, ReduceOp, TransportError};
pub use world::{World, WorldBuilder, launcher_ranks};
