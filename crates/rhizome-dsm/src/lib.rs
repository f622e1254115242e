//! Home-based lazy-release-consistency (HLRC) distributed shared memory on the Rhizome
//! runtime, after Iosevich and Schuster's multithreaded HLRC.
//!
//! Every PE maps one shared region; ordinary loads and stores reach it, and page faults
//! keep it consistent. Each page has a home PE holding its master copy. A PE writing a
//! page keeps a twin of it and, at the next release, sends the word-level diff to the
//! home; the write notice (which pages an interval wrote) travels lazily, with vector
//! timestamps, to whoever acquires a lock next or meets at a barrier, and that PE
//! invalidates its stale copies and fetches them from their homes on the next access.
//!
//! **Consistency model.** Lazy release consistency: a write becomes visible to another
//! thread once the writer has released a lock that the reader then acquired (or both
//! passed a barrier since); a data-race-free program therefore sees sequential
//! consistency.
//!
//! ```
//! use rhizome::World;
//! use rhizome_dsm::{Dsm, DsmConfig, DsmLock};
//! let totals = World::builder().pes(2).run(|ctx| {
//!     let dsm = Dsm::new(ctx, DsmConfig::default().threads(2)).unwrap();
//!     let counter = dsm.alloc::<u64>(1).unwrap();
//!     let lock = DsmLock::new(0);
//!     dsm.run(ctx, |t| {
//!         for _ in 0..10 {
//!             lock.acquire(t);
//!             counter.set(0, counter.get(0) + 1);
//!             lock.release(t).unwrap();
//!         }
//!         t.barrier();
//!         counter.get(0)
//!     })
//! }).unwrap();
//! assert!(totals.iter().flatten().all(|&n| n == 2 * 2 * 10));
//! ```
//!
//! Modules: `config` ([`DsmConfig`]: homes, interval policy), `region` (the `memfd` and
//! its two views), `fault` (the `SIGSEGV` handler and the requests of application
//! threads), `doorbell` (what wakes the service thread), `diff` (twins and word-level diffs), `fetch` (page fetches with read-ahead, and the barrier's prefetch), `inflight` (fetches sent and not answered, and the threads waiting for them), `protocol`
//! (page states, intervals, write notices), `locks` (lock tokens, cached where last used), `wire` (messages and their handlers),
//! `service` (the service loop: faults, locks, barriers), `sched` (its time slice), `stats` ([`DsmStats`]).

mod config;
mod diff;
mod doorbell;
mod fault;
mod fetch;
mod inflight;
mod locks;
mod onesided;
mod pages;
mod protocol;
mod region;
mod sched;
mod service;
mod stats;
mod wire;

pub use config::{DsmConfig, Homes, Intervals, Transfer};
pub use stats::DsmStats;

use fault::{Done, Op, Slot};
use protocol::{Pe, Protocol};
use region::{Access, Region};
use rhizome::{Ctx, Pod};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Misuse of the shared memory, reported instead of corrupting it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DsmError {
    /// The region could not be mapped.
    #[error("cannot map the DSM region: {0}")]
    Map(String),
    /// An allocation does not fit in what is left of the region.
    #[error("DSM region exhausted: {requested} bytes asked, {free} of {size} free")]
    RegionFull {
        /// Bytes the allocation needed (whole pages).
        requested: usize,
        /// Bytes left.
        free: usize,
        /// The region's size.
        size: usize,
    },
    /// A lock operation the calling thread may not do (release without acquire,
    /// acquiring a lock it holds).
    #[error("{0}")]
    Lock(String),
}

/// What the application threads and the service thread of one PE share.
pub(crate) struct Shared {
    pub(crate) region: Region,
    pub(crate) pages: pages::Pages,
    pub(crate) slots: Box<[Slot]>,
    pub(crate) doorbell: Arc<doorbell::Doorbell>,
    /// Whether the transport rings the doorbell when a message arrives.
    pub(crate) messages_ring: AtomicBool,
    /// Application threads that have ended.
    pub(crate) finished: AtomicUsize,
    pub(crate) panicked: AtomicBool,
    pub(crate) aborted: AtomicBool,
    lock_wait_ns: AtomicU64,
    barrier_wait_ns: AtomicU64,
    /// The locks an application thread may take or give back without the service thread.
    pub(crate) fast_locks: locks::FastLocks,
}

/// One PE's handle on the distributed shared memory. Made collectively by [`Dsm::new`]
/// on every PE's main thread, which then runs the application threads with [`Dsm::run`].
pub struct Dsm {
    shared: Arc<Shared>,
    protocol: Protocol,
    homes: Homes,
}

impl Dsm {
    /// Collective: maps this PE's region and registers the protocol's messages.
    pub fn new(ctx: &Ctx, config: DsmConfig) -> Result<Dsm, DsmError> {
        let page = region::page_size();
        let len = config.region_bytes.max(page).div_ceil(page) * page;
        let region = Region::new(len).map_err(|e| DsmError::Map(e.to_string()))?;
        let base = region.app_base() as usize;
        let shared = Arc::new_cyclic(|_| Shared {
            region,
            pages: pages::Pages::new(len / page),
            slots: Box::new([]),
            doorbell: Arc::new(doorbell::Doorbell::new()),
            messages_ring: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            lock_wait_ns: AtomicU64::new(0),
            barrier_wait_ns: AtomicU64::new(0),
            fast_locks: locks::FastLocks::default(),
        });
        // The slots point at the shared state inside the Arc, so they are made once it
        // has its final address (the Arc's allocation does not move).
        let mut shared = shared;
        let owner: *const Shared = Arc::as_ptr(&shared);
        let sh = Arc::get_mut(&mut shared).expect("not shared yet");
        sh.slots = (0..config.threads)
            .map(|_| Slot::new(owner, base, len))
            .collect();
        let pe = Rc::new(RefCell::new(Pe::new(
            ctx.my_pe(),
            ctx.num_pes(),
            config.intervals,
        )));
        #[cfg(feature = "failpoints")]
        {
            pe.borrow_mut().notice_pause = config.notice_pause;
        }
        let wire = wire::Wire::register(ctx, &shared, &pe);
        let ring = config.ring_bytes.max(16 * page);
        let config = config.clone().one_sided_sizes(ring, config.bin_words);
        let onesided = onesided::OneSided::new(ctx, &config, &shared, &pe);
        Ok(Dsm {
            protocol: Protocol {
                shared: shared.clone(),
                pe,
                wire,
                onesided,
            },
            shared,
            homes: config.homes,
        })
    }

    /// Allocates `len` zeroed elements in the region, homes as configured. Every PE must
    /// allocate the same sizes in the same order (outside [`Dsm::run`]), so that an
    /// allocation has the same offset everywhere.
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<DsmVec<T>, DsmError> {
        self.alloc_with(len, self.homes)
    }

    /// [`Dsm::alloc`] with its own home assignment.
    pub fn alloc_with<T: Pod>(&self, len: usize, homes: Homes) -> Result<DsmVec<T>, DsmError> {
        let region = &self.shared.region;
        let page = region.page();
        let mut pe = self.protocol.pe.borrow_mut();
        let size = region.len();
        let free = size - pe.allocated;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .map(|b| b.max(1).div_ceil(page) * page)
            .filter(|&b| b <= free)
            .ok_or(DsmError::RegionFull {
                requested: len.saturating_mul(std::mem::size_of::<T>()),
                free,
                size,
            })?;
        let offset = pe.allocated;
        pe.allocated += bytes;
        pe.add_pages(offset / page, bytes / page, homes);
        let me = pe.me;
        for p in offset / page..(offset + bytes) / page {
            let home = pe.homes[p];
            let here = (home != protocol::UNDECIDED).then_some(home as usize == me);
            self.shared.pages.add(p, here);
        }
        region.protect(offset / page, bytes / page, Access::Read);
        Ok(DsmVec {
            // SAFETY: offset + bytes lies inside the application view (checked above).
            ptr: unsafe { region.app_base().add(offset) }.cast(),
            offset,
            len,
            _t: PhantomData,
        })
    }

    /// Runs `f` on this PE's application threads (as many as configured) and serves
    /// them and the other PEs until all PEs' threads are done; returns their results in
    /// thread order. Collective.
    pub fn run<R: Send>(&self, ctx: &Ctx, f: impl Fn(&DsmThread) -> R + Sync) -> Vec<R> {
        let sh = &*self.shared;
        let threads = sh.slots.len();
        sh.finished.store(0, Ordering::Relaxed);
        let (pe, pes) = (ctx.my_pe(), ctx.num_pes());
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let f = &f;
                    s.spawn(move || {
                        let t = DsmThread {
                            shared: sh,
                            thread: i,
                            pe,
                            pes,
                        };
                        let _app = fault::enter(&sh.slots[i]);
                        let _end = EndOfThread(sh);
                        f(&t)
                    })
                })
                .collect();
            let abort = service::AbortOnUnwind(sh);
            // Messages from other PEs wake the service thread, as local requests do.
            let bell = sh.doorbell.clone();
            let hooked = ctx.set_arrival_hook(Some(Arc::new(move || bell.ring())));
            sh.messages_ring.store(hooked, Ordering::Relaxed);
            let _unhook = Unhook(ctx);
            // Woken, the service thread should run at once (see `sched`); one that polls
            // (no arrival hook) keeps the default slice, or it would take the core from
            // the application threads at every poll.
            let _slice = hooked.then(sched::ShortSlice::new);
            self.protocol.serve(ctx);
            if sh.panicked.load(Ordering::Acquire) {
                panic!(
                    "rhizome: error: an application thread of PE {} panicked",
                    ctx.my_pe()
                );
            }
            // Keep answering the other PEs until their threads are done too.
            ctx.allgather(());
            drop(abort);
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// This PE's protocol counters so far.
    pub fn stats(&self) -> DsmStats {
        let mut s = self.protocol.pe.borrow().stats;
        s.write_faults += self.shared.pages.fast_write_faults.load(Ordering::Relaxed);
        let fast = self.shared.fast_locks.acquires.load(Ordering::Relaxed);
        s.lock_acquires += fast;
        s.lock_local += fast;
        s.lock_wait_ns = self.shared.lock_wait_ns.load(Ordering::Relaxed);
        s.barrier_wait_ns = self.shared.barrier_wait_ns.load(Ordering::Relaxed);
        s
    }

    /// The page size of the protocol, in bytes.
    pub fn page_size(&self) -> usize {
        self.shared.region.page()
    }
}

/// Removes the arrival hook when a run ends, also when it unwinds.
struct Unhook<'a>(&'a Ctx);

impl Drop for Unhook<'_> {
    fn drop(&mut self) {
        self.0.set_arrival_hook(None);
    }
}

/// Counts an application thread's end, also when it panics.
struct EndOfThread<'a>(&'a Shared);

impl Drop for EndOfThread<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.0.aborted.load(Ordering::Acquire) {
            self.0.panicked.store(true, Ordering::Release);
        }
        self.0.finished.fetch_add(1, Ordering::AcqRel);
        self.0.doorbell.ring();
    }
}

/// Unwinds an application thread quietly: the run was aborted and its reason is
/// reported by the PE that failed.
struct Aborted;

/// One application thread's handle: its place, locks and barriers.
pub struct DsmThread<'a> {
    shared: &'a Shared,
    thread: usize,
    pe: usize,
    pes: usize,
}

impl DsmThread<'_> {
    /// This thread's PE.
    pub fn pe(&self) -> usize {
        self.pe
    }
    /// Number of PEs.
    pub fn num_pes(&self) -> usize {
        self.pes
    }
    /// This thread's number within its PE.
    pub fn thread(&self) -> usize {
        self.thread
    }
    /// Application threads per PE.
    pub fn threads_per_pe(&self) -> usize {
        self.shared.slots.len()
    }
    /// This thread's number among all application threads, `pe * threads_per_pe + thread`.
    pub fn global_id(&self) -> usize {
        self.pe * self.threads_per_pe() + self.thread
    }
    /// Number of application threads on all PEs.
    pub fn global_threads(&self) -> usize {
        self.pes * self.threads_per_pe()
    }

    fn request(&self, op: Op, arg: usize) -> Result<(), DsmError> {
        match self.shared.slots[self.thread].request(op, arg) {
            Done::Ok => Ok(()),
            Done::Aborted => std::panic::resume_unwind(Box::new(Aborted)),
            Done::Refused => {
                let slot = &self.shared.slots[self.thread];
                let msg = slot.error.lock().unwrap_or_else(|e| e.into_inner()).clone();
                Err(DsmError::Lock(msg))
            }
        }
    }

    /// Waits until every application thread of every PE has called `barrier`; writes
    /// before it are visible to every thread after it.
    pub fn barrier(&self) {
        let start = Instant::now();
        self.request(Op::Barrier, 0)
            .expect("a barrier is never refused");
        let ns = start.elapsed().as_nanos() as u64;
        self.shared.barrier_wait_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

/// A lock of the shared memory, named by a number; its manager is PE `id mod n`. The lock
/// stays on the PE that released it last, so taking it again there costs no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsmLock {
    id: u32,
}

impl DsmLock {
    /// The lock numbered `id` (the same number names the same lock on every PE).
    pub const fn new(id: u32) -> DsmLock {
        DsmLock { id }
    }

    /// Waits for the lock; the writes of every earlier holder, made before its release,
    /// are visible once this returns. Panics (with a clear message) if the calling thread
    /// holds it already: that would wait forever.
    pub fn acquire(&self, t: &DsmThread) {
        let start = Instant::now();
        if t.shared.fast_locks.try_acquire(self.id, t.thread) {
            return;
        }
        if let Err(e) = t.request(Op::Acquire, self.id as usize) {
            panic!("{e}");
        }
        let ns = start.elapsed().as_nanos() as u64;
        t.shared.lock_wait_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Releases the lock: this thread's writes are sent to their homes first. An error if
    /// the calling thread does not hold it.
    pub fn release(&self, t: &DsmThread) -> Result<(), DsmError> {
        if t.shared.fast_locks.try_release(self.id, t.thread) {
            return Ok(());
        }
        t.request(Op::Release, self.id as usize)
    }

    /// Asks for the tokens of locks `ids` ahead of the calling thread's acquisitions of
    /// them, and returns without waiting: the PE asks for each token not here and not
    /// asked for yet, so that their round trips overlap and a later
    /// [`acquire`](DsmLock::acquire) finds the token here. A hint only: it holds nothing,
    /// a token asked for so may go on to another PE that asks later, and what the holder
    /// sees is decided at its acquisition as always. Costs nothing if every token is here.
    ///
    /// ```no_run
    /// # use rhizome_dsm::{DsmLock, DsmThread};
    /// # fn add(t: &DsmThread) {
    /// DsmLock::prefetch(t, 64..128); // the next block, while this one is summed
    /// for id in 0..64 {
    ///     DsmLock::new(id).acquire(t);
    ///     // ... update the data lock `id` guards ...
    ///     DsmLock::new(id).release(t).unwrap();
    /// }
    /// # }
    /// ```
    pub fn prefetch(t: &DsmThread, ids: std::ops::Range<u32>) {
        let fast = &t.shared.fast_locks;
        let mut ids = ids;
        // Trimmed to the locks whose tokens are not here: none left, no request.
        while !ids.is_empty() && fast.here(ids.start) {
            ids.start += 1;
        }
        while !ids.is_empty() && fast.here(ids.end - 1) {
            ids.end -= 1;
        }
        if ids.is_empty() {
            return;
        }
        let arg = ((ids.start as u64) << 32 | (ids.end - ids.start) as u64) as usize;
        t.request(Op::Prefetch, arg)
            .expect("a prefetch is never refused");
    }
}

/// `len` elements of `T` in the shared region: an allocation of [`Dsm::alloc`].
///
/// [`get`](DsmVec::get) and [`set`](DsmVec::set) are loads and stores through this PE's
/// application view, bounds-checked; [`as_ptr`](DsmVec::as_ptr) is the raw address for
/// code that wants slices. The handle is only meaningful on the PE that allocated it
/// (the local transport maps each PE's view at its own address); [`offset`](DsmVec::offset)
/// names the same data on every PE. Loads and stores must come from application threads
/// (inside [`Dsm::run`]): elsewhere an access to an invalid page ends the process.
pub struct DsmVec<T> {
    ptr: *mut T,
    offset: usize,
    len: usize,
    _t: PhantomData<T>,
}

impl<T> Clone for DsmVec<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DsmVec<T> {}
// SAFETY: the handle is an address in a mapping that lives as long as the Dsm, used only
// through volatile loads and stores of Pod values; sharing it between the PE's threads is
// what it is for.
unsafe impl<T: Pod> Send for DsmVec<T> {}
// SAFETY: as for Send.
unsafe impl<T: Pod> Sync for DsmVec<T> {}

impl<T: Pod> DsmVec<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Byte offset of the first element in the region: the same on every PE.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Address of the first element in this PE's application view.
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    #[track_caller]
    fn at(&self, i: usize) -> *mut T {
        assert!(
            i < self.len,
            "rhizome: error: DSM index {i} out of range for an allocation of {} elements",
            self.len
        );
        // SAFETY: in bounds (checked).
        unsafe { self.ptr.add(i) }
    }

    /// Element `i`. Racing with a write of the same element by another thread (without a
    /// lock or barrier between) gives an unspecified value of `T`, as in any LRC system.
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        // SAFETY: in bounds and aligned (allocations are page-aligned, elements packed);
        // every bit pattern is a valid Pod; a protected page faults and is made readable
        // by the handler before the load completes.
        unsafe { self.at(i).read_volatile() }
    }

    /// Sets element `i` (see [`get`](DsmVec::get) on races).
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        // SAFETY: as for `get`; a write-protected page faults and is opened first.
        unsafe { self.at(i).write_volatile(v) }
    }
}
