//! The PE context: one PE's view of the world.
//!
//! A [`Ctx`] holds what belongs to one PE: its number, the transport handle, and the state
//! of the layers that run on its main thread: active messages ([`crate::am`]), termination
//! counters ([`crate::termination`]) and collectives ([`crate::collectives`]). Those layers
//! add their methods to `Ctx` in their own modules; this one has the constructor, the
//! accessors and global-memory allocation.

use crate::am;
use crate::collectives;
use crate::error::ok;
use crate::memory::{GlobalArray, Memory, Pod};
use crate::pool::Pool;
use crate::termination;
use crate::transport::{Backend, Rma, Transport};
use std::sync::Arc;

/// One PE's view of the world, passed to the closure of [`World::run`](crate::World::run).
///
/// It dereferences to [`Memory`] for one-sided access (`ctx.get(..)`, `ctx.fetch_add(..)`).
/// The context belongs to the PE's main thread (it is not `Sync`); clone
/// [`Ctx::memory`] into other threads for one-sided access from them.
///
/// # Progress
/// Message handlers run on the PE's main thread whenever it calls into the runtime to
/// wait: [`Ctx::progress`], [`Ctx::finish`], [`CallHandle::wait`](crate::CallHandle::wait),
/// and the collectives other than `barrier`. A PE that computes for a long time without
/// any of these delays the handlers of the messages sent to it (as in UPC++).
pub struct Ctx {
    pub(crate) mem: Memory,
    pub(crate) pe: usize,
    pub(crate) pes: usize,
    workers: usize,
    pub(crate) am: am::State,
    pub(crate) termination: termination::Counters,
    pub(crate) collectives: collectives::State,
    /// The PE's worker threads, started on first use.
    pool: std::cell::OnceCell<Arc<Pool>>,
}

impl std::ops::Deref for Ctx {
    type Target = Memory;
    fn deref(&self) -> &Memory {
        &self.mem
    }
}

impl Ctx {
    pub(crate) fn new(t: Arc<Backend>, workers: usize, agg: usize) -> Ctx {
        let pe = t.my_pe();
        let pes = t.num_pes();
        let ctx = Ctx {
            mem: Memory { t },
            pe,
            pes,
            workers,
            am: am::State::new(pes, agg),
            termination: termination::Counters::default(),
            collectives: collectives::State::default(),
            pool: std::cell::OnceCell::new(),
        };
        ctx.register_runtime_handlers();
        ctx
    }

    /// This PE's number, `0..num_pes()`.
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.pe
    }
    /// Number of PEs.
    #[inline]
    pub fn num_pes(&self) -> usize {
        self.pes
    }
    /// Worker threads per PE, as configured.
    pub fn workers(&self) -> usize {
        self.workers
    }
    /// The PE's fork-join pool of [`Ctx::workers`] workers (the calling thread counts as
    /// one while it runs a job), started on first use: the one set of worker threads of
    /// this PE. [`Tasks`](crate::tasks::Tasks) runs its jobs on it; give it to any other
    /// fork-join user of the PE (e.g. a BDD manager) so that it shares these threads.
    ///
    /// ```
    /// use rhizome::World;
    /// let sums = World::builder().pes(1).workers(2).run(|ctx| {
    ///     ctx.pool().run(|w| w.join(|_| 1, |_| 2))
    /// }).unwrap();
    /// assert_eq!(sums, vec![(1, 2)]);
    /// ```
    pub fn pool(&self) -> &Arc<Pool> {
        self.pool
            .get_or_init(|| Arc::new(Pool::new(self.workers.max(1))))
    }
    /// Size of each per-destination aggregation buffer in bytes.
    pub fn aggregation_bytes(&self) -> usize {
        self.am.agg
    }
    /// Name of the transport in use (`"local"` or `"mpi"`).
    pub fn transport_name(&self) -> &'static str {
        self.mem.t.name()
    }
    /// Asks the transport to call `hook` whenever a message buffer reaches this PE (or to
    /// stop, with `None`): a PE's main thread that sleeps until it has something to do
    /// (as a service thread does) can then be woken by an incoming message at once.
    /// Returns whether the transport does so (`local` does; `mpi` cannot, as a message
    /// only shows up when this PE calls into MPI, so such a thread must keep polling).
    pub fn set_arrival_hook(&self, hook: Option<crate::transport::ArrivalHook>) -> bool {
        use crate::transport::Messages;
        self.mem.t.set_arrival_hook(hook)
    }
    /// The one-sided access handle (clone it into other threads of this PE).
    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    /// Collective: allocates `len` zeroed elements of `T` on every PE. Every PE must call
    /// it with the same `len`, in the same order relative to other allocations.
    pub fn alloc<T: Pod>(&self, len: usize) -> GlobalArray<T> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .unwrap_or_else(|| {
                panic!(
                    "rhizome: alloc of {len} elements of {} bytes overflows",
                    std::mem::size_of::<T>()
                )
            });
        GlobalArray::new(ok(self.mem.t.alloc_segment(bytes)), len)
    }
}
