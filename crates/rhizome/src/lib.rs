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
//! Modules:
//! - [`transport`]: the narrow interface to the communication library, its `local`
//!   implementation (all PEs in this process) and, with the cargo feature `mpi`, its
//!   `mpi` implementation (one PE per MPI rank, chosen automatically under `mpirun`).
//! - [`memory`]: global pointers, one-sided access, ordering guarantees.
//! - [`message`]: the byte encoding of message payloads.
//! - [`pool`]: the fork-join work-stealing pool inside one PE.
//! - [`tasks`]: futures (`spawn`/`async_on`/`get`/`.await`) over hierarchical work stealing
//!   across the workers of a PE and across PEs.
pub mod memory;
pub mod message;
pub mod pool;
pub mod tasks;
pub mod transport;
mod world;

pub use memory::{GlobalArray, GlobalPtr, Memory, Pod};
pub use message::Message;
pub use transport::{AtomicOp, ReduceOp, TransportError};
pub(crate) use world::fail;
pub use world::{
    Am, CallAm, CallHandle, Ctx, DEFAULT_AGGREGATION_BYTES, RunError, World, WorldBuilder,
    launcher_ranks,
};
