//! The `mpi` transport: one PE per MPI rank (cargo feature `mpi`).
//!
//! Built on an existing MPI library (Open MPI) through the `mpi` crate's raw bindings:
//! - **Global memory**: one MPI-3 RMA window per symmetric segment (`MPI_Win_allocate`),
//!   opened once for passive-target access with `MPI_Win_lock_all`. `get`/`put` are
//!   `MPI_Get`/`MPI_Put`, atomics are `MPI_Fetch_and_op` (sum, replace, no-op) and
//!   `MPI_Compare_and_swap` on `MPI_UINT64_T`. Blocking forms end with `MPI_Win_flush` of
//!   the target; the `*_nbi` forms mark their window and [`Transport::quiet`] flushes the
//!   marked windows with `MPI_Win_flush_all`. Every access, also to this PE's own memory,
//!   goes through MPI, so MPI's atomics stay atomic with respect to each other whatever
//!   the one-sided component implements them with.
//! - **Messages**: `MPI_Isend` on a private duplicate of `MPI_COMM_WORLD`; the buffer is
//!   kept until the request completes (then reused), so a send never blocks, even for
//!   large buffers that MPI moves with a rendezvous protocol: two PEs flushing big buffers
//!   to each other cannot deadlock. [`Transport::try_recv`] completes finished sends and
//!   receives with `MPI_Improbe`/`MPI_Mrecv`; every call into it also drives MPI's progress
//!   engine. Messages to this PE itself bypass MPI.
//! - **Collectives**: `MPI_Barrier` and `MPI_Allreduce`, called without the lock below
//!   (under `MPI_THREAD_MULTIPLE`; otherwise `MPI_Ibarrier`/`MPI_Iallreduce` polled with
//!   `MPI_Test`), so the PE's other threads keep working while one waits in a collective.
//!   The barrier first flushes the windows with outstanding non-blocking operations.
//! - **Failure**: [`Transport::abort`] prints the reason as one line on stderr and calls
//!   `MPI_Abort`, which ends every rank with a non-zero exit status (the launcher kills the
//!   others: no hang, no orphan rank).
//!
//! # Threads
//! The runtime calls MPI from several threads of a PE (clones of [`crate::Memory`] in
//! worker threads), so MPI is initialised with `MPI_THREAD_MULTIPLE`, and one-sided
//! operations (`get`, `put`, atomics and their `*_nbi` forms, except `atomic_nbi`, which
//! keeps its origin cell in the transport's state) are issued from any thread without a
//! lock of ours; the `sm` component makes them plain copies and CPU atomics. Everything
//! that touches the transport's own state (sends in flight, received and free buffers,
//! origin cells, the pending marks that `quiet` flushes) and the collectives hold one lock
//! per transport. Why not `MPI_THREAD_SERIALIZED` plus the lock everywhere: the lock is
//! then paid on every one-sided operation (a locked instruction, about 5 ns, or a third
//! of a get on `osc sm`), and Open MPI 4.1's `osc ucx` creates a single-threaded UCX
//! worker in that mode and aborts (`worker->inprogress++ == 0`) when two threads use it
//! one after the other. Why not a funnel thread: it adds a hand-off (two cache-line
//! transfers and a wake-up) to every operation. An MPI that only provides
//! `MPI_THREAD_SERIALIZED` (e.g. initialised by the program before rhizome) is accepted:
//! then every MPI call takes the lock. The lock is a spin lock (see `MpiLock`); blocking
//! waits (collectives) release it between polls, so other threads of the PE keep working.
//!
//! # One-sided component
//! Debian's default Open MPI one-sided component (`osc rdma` over `btl`) crashes on
//! compare-and-swap. Unless the user chose one, [`MpiTransport::init`] sets
//! `OMPI_MCA_osc=sm,ucx` before `MPI_Init_thread`: `sm` on one node, `ucx` across nodes.
//! Known limit of Open MPI 4.1's `osc ucx` (tested on one node only): with
//! `OMPI_MCA_osc=ucx` the SPMD test `ordering_flag` (PE 1 spins on atomic loads of its own
//! word while PE 0 does an atomic store to it) hangs inside `MPI_Fetch_and_op` on both
//! PEs, probably because `osc ucx` serialises atomics with a lock word at the target that
//! the spinning PE keeps taking; the other 16 suite tests pass on 2 ranks with `ucx`.
//! `osc sm` passes the whole suite.
//!
//! # Lifetime
//! MPI is initialised once per process, by the first [`MpiTransport::init`], and finalised
//! when the process exits normally (an `atexit` handler). Each `MpiTransport` has its own
//! communicator and windows, freed collectively when it is dropped, so a program may run
//! several worlds one after the other (not at the same time).

use super::{AtomicOp, ReduceOp, SegmentId, Transport, TransportError};
use mpi::ffi;
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::cell::UnsafeCell;
use std::sync::{Arc, OnceLock};

/// Most collective allocations one world may make.
pub const MAX_SEGMENTS: usize = 4096;
/// Most emptied buffers kept for reuse.
const MAX_FREE_BUFFERS: usize = 64;
/// Tag of active-message buffers on the transport's communicator.
const MSG_TAG: c_int = 1;
/// Tag of the raw-MPI ping-pong baseline.
const PING_TAG: c_int = 2;

/// Whether this process was started by an MPI launcher (`mpirun`/`mpiexec` of Open MPI,
/// MPICH's Hydra, or a PMIx-based launcher such as `srun --mpi=pmix`).
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// An MPI handle (a pointer into the MPI library) that may move between threads.
#[derive(Clone, Copy)]
struct H<T>(T);
// SAFETY: MPI handles are opaque identifiers, valid in every thread of the process; this
// transport makes all MPI calls while holding its lock.
unsafe impl<T> Send for H<T> {}
// SAFETY: as above; a handle is only read, never mutated through a shared reference.
unsafe impl<T> Sync for H<T> {}

struct Segment {
    win: H<ffi::MPI_Win>,
    len: usize,
    /// A `*_nbi` operation on this window awaits the next `quiet`.
    pending: AtomicBool,
}

/// State touched only while holding the MPI lock.
struct Locked {
    /// Sends in flight, with the buffers MPI still reads.
    sends: Vec<(H<ffi::MPI_Request>, Vec<u8>)>,
    /// Buffers sent to this PE itself.
    own: VecDeque<Vec<u8>>,
    /// Emptied buffers for reuse.
    free: Vec<Vec<u8>>,
    /// Origin values of non-blocking atomics, freed once their windows are flushed.
    #[allow(clippy::vec_box, reason = "MPI holds the cells' addresses: they must not move")]
    origins: Vec<Box<[u64; 2]>>,
}

/// The lock around every MPI call of a transport.
///
/// A test-and-test-and-set spin lock that yields the processor while it waits: its
/// release is a plain store (a `std` mutex releases with an atomic swap, a second locked
/// instruction per MPI call), and MPI calls under it are short; the waits that are not
/// (collectives) release it between polls.
struct MpiLock {
    locked: AtomicBool,
    state: UnsafeCell<Locked>,
}

// SAFETY: `state` is only reached through a `Guard`, and at most one guard exists at a
// time (acquired by the compare-exchange in `try_lock`, released by `Guard::drop`), so the
// lock provides mutual exclusion like a mutex. `Locked` is `Send` (its raw MPI handles are
// wrapped in `H`).
unsafe impl Sync for MpiLock {}

/// `MpiLock: Sync` relies on this.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Locked>();
};

impl MpiLock {
    fn new(state: Locked) -> MpiLock {
        MpiLock {
            locked: AtomicBool::new(false),
            state: UnsafeCell::new(state),
        }
    }

    #[inline]
    fn try_lock(&self) -> Option<Guard<'_>> {
        self.locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // `then`, not `then_some`: a guard built for a failed attempt would be dropped
            // at once and release the lock its holder still uses.
            .then(|| Guard { lock: self })
    }

    #[inline]
    fn lock(&self) -> Guard<'_> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(&self) -> Guard<'_> {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 100 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if let Some(g) = self.try_lock() {
                return g;
            }
        }
    }
}

/// Exclusive access to a transport's MPI state; MPI may be called while it lives.
struct Guard<'a> {
    lock: &'a MpiLock,
}

impl std::ops::Deref for Guard<'_> {
    type Target = Locked;
    #[inline]
    fn deref(&self) -> &Locked {
        // SAFETY: this guard is the only one (see `MpiLock`), so no `&mut` exists.
        unsafe { &*self.lock.state.get() }
    }
}

impl std::ops::DerefMut for Guard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Locked {
        // SAFETY: this guard is the only one and is borrowed mutably, so this is the only
        // reference to the state.
        unsafe { &mut *self.lock.state.get() }
    }
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// One PE per MPI rank. See the module docs.
pub struct MpiTransport {
    rank: usize,
    size: usize,
    comm: H<ffi::MPI_Comm>,
    /// MPI provides `MPI_THREAD_MULTIPLE`: one-sided operations skip the lock.
    thread_multiple: bool,
    lock: Arc<MpiLock>,
    segments: Box<[OnceLock<Segment>]>,
    next_segment: AtomicU32,
    /// Drives large sends (see [`SendProgress`]); only under `MPI_THREAD_MULTIPLE`.
    progress: Option<SendProgress>,
}

/// Messages above this size may need the sender inside MPI to move: Open MPI's
/// shared-memory transport sends them by rendezvous and then in fragments, unless a
/// single-copy mechanism (CMA, XPMEM) lets the receiver fetch them.
const EAGER_LIMIT: usize = 4096;

/// A thread that completes large sends while the thread that posted them computes.
///
/// A worker that sends a job of megabytes to a thief and then runs a job of its own for
/// milliseconds without calling MPI would hold the thief's `MPI_Mrecv` that long where
/// no single-copy mechanism is available (on this machine the tiled LU on two ranks then
/// lost its whole speedup). The thread sleeps (parked) while no large send is in flight,
/// and calls `MPI_Test` on the sends, yielding in between, while one is.
struct SendProgress {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl SendProgress {
    fn start(lock: Arc<MpiLock>) -> std::io::Result<SendProgress> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rhizome-mpi-progress".into())
            .spawn(move || {
                while !stop2.load(Ordering::Acquire) {
                    let pending = {
                        let mut l = lock.lock();
                        // An error stays with its request; the posting thread's next
                        // reap reports it.
                        let _ = MpiTransport::reap_sends(&mut l);
                        l.sends.iter().any(|(_, b)| b.len() > EAGER_LIMIT)
                    };
                    if pending {
                        std::thread::yield_now();
                    } else {
                        std::thread::park();
                    }
                }
            })?;
        Ok(SendProgress { stop, thread })
    }

    /// Called after posting a large send.
    fn wake(&self) {
        self.thread.thread().unpark();
    }

    fn finish(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

fn error_string(code: c_int) -> String {
    let mut buf = [0 as c_char; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` has room for MPI_MAX_ERROR_STRING characters plus a terminator, as the
    // MPI standard requires; `len` receives the length written.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) };
    if rc != 0 {
        return format!("MPI error code {code}");
    }
    let bytes: Vec<u8> = buf[..len.max(0) as usize]
        .iter()
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[inline]
fn check(rc: c_int, what: impl FnOnce() -> String) -> Result<(), TransportError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(TransportError::Other(format!(
            "{} failed: {}",
            what(),
            error_string(rc)
        )))
    }
}

#[inline]
fn u64_type() -> ffi::MPI_Datatype {
    // SAFETY: reading a constant handle that the MPI binding initialises statically.
    unsafe { ffi::RSMPI_UINT64_T }
}
#[inline]
/// Issues `MPI_Get` of `len` bytes at `offset` of `seg` on `pe` into `dst`.
///
/// # Safety
/// `dst` must stay valid for `len` bytes until the window is flushed; the range must lie
/// in the segment; the caller holds the RMA lock (or MPI is thread-safe).
unsafe fn issue_get(
    seg: &Segment,
    pe: usize,
    offset: usize,
    dst: *mut u8,
    len: usize,
) -> Result<(), TransportError> {
    // SAFETY: forwarded from the caller.
    let rc = unsafe {
        ffi::MPI_Get(
            dst as *mut c_void,
            len as c_int,
            byte_type(),
            pe as c_int,
            offset as ffi::MPI_Aint,
            len as c_int,
            byte_type(),
            seg.win.0,
        )
    };
    check(rc, || format!("MPI_Get from PE {pe}"))
}

/// Issues `MPI_Put` of `len` bytes from `src` to `offset` of `seg` on `pe`.
///
/// # Safety
/// As [`issue_get`], with `src` unchanged until the flush.
unsafe fn issue_put(
    seg: &Segment,
    pe: usize,
    offset: usize,
    src: *const u8,
    len: usize,
) -> Result<(), TransportError> {
    // SAFETY: forwarded from the caller.
    let rc = unsafe {
        ffi::MPI_Put(
            src as *const c_void,
            len as c_int,
            byte_type(),
            pe as c_int,
            offset as ffi::MPI_Aint,
            len as c_int,
            byte_type(),
            seg.win.0,
        )
    };
    check(rc, || format!("MPI_Put to PE {pe}"))
}

/// Completes every operation issued on `seg` towards `pe`.
fn flush(seg: &Segment, pe: usize) -> Result<(), TransportError> {
    // SAFETY: the window is valid while the segment lives (freed only at finalisation).
    check(unsafe { ffi::MPI_Win_flush(pe as c_int, seg.win.0) }, || {
        "MPI_Win_flush".into()
    })
}

fn byte_type() -> ffi::MPI_Datatype {
    // SAFETY: as in `u64_type`.
    unsafe { ffi::RSMPI_UINT8_T }
}
#[inline]
fn op_sum() -> ffi::MPI_Op {
    // SAFETY: as in `u64_type`.
    unsafe { ffi::RSMPI_SUM }
}
#[inline]
fn op_replace() -> ffi::MPI_Op {
    // Open MPI defines MPI_REPLACE as the address of this predefined object.
    ffi::MPI_Op((&raw mut ffi::ompi_mpi_op_replace).cast())
}
#[inline]
fn op_no_op() -> ffi::MPI_Op {
    // Open MPI defines MPI_NO_OP as the address of this predefined object.
    ffi::MPI_Op((&raw mut ffi::ompi_mpi_op_no_op).cast())
}

extern "C" fn finalize_at_exit() {
    let (mut init, mut fin) = (0, 0);
    // SAFETY: MPI_Initialized and MPI_Finalized may be called at any time, even after
    // MPI_Finalize; MPI_Finalize is called at most once, from the exiting thread, after
    // every world of the process has ended.
    unsafe {
        ffi::MPI_Initialized(&mut init);
        ffi::MPI_Finalized(&mut fin);
        if init != 0 && fin == 0 {
            ffi::MPI_Finalize();
        }
    }
}

// SAFETY: the C library's `atexit(3)`, declared with its C signature.
unsafe extern "C" {
    /// Registers `f` to run at normal process exit.
    fn atexit(f: extern "C" fn()) -> c_int;
}

/// Initialises MPI once per process; the thread level provided, or the error text.
fn init_mpi() -> Result<c_int, TransportError> {
    static INIT: OnceLock<Result<c_int, String>> = OnceLock::new();
    INIT.get_or_init(|| {
        if std::env::var_os("OMPI_MCA_osc").is_none() {
            // SAFETY: MPI is not initialised yet, so no MPI thread reads the environment;
            // Rust's own environment accesses take std's environment lock. This runs once.
            unsafe { std::env::set_var("OMPI_MCA_osc", "sm,ucx") };
        }
        let (mut already, mut provided): (c_int, c_int) = (0, 0);
        // SAFETY: MPI_Initialized may be called at any time; `already` is a valid local.
        unsafe { ffi::MPI_Initialized(&mut already) };
        if already != 0 {
            // Someone else (e.g. the program through the `mpi` crate) initialised MPI and
            // will finalise it; it must allow calls from several threads, one at a time.
            // SAFETY: MPI is initialised; `provided` is a valid local.
            unsafe { ffi::MPI_Query_thread(&mut provided) };
            // SAFETY: reading a constant handle initialised by the binding.
            return if provided < unsafe { ffi::RSMPI_THREAD_SERIALIZED } {
                Err(format!(
                    "MPI was initialised with thread level {provided}; rhizome needs MPI_THREAD_SERIALIZED or higher"
                ))
            } else {
                Ok(provided)
            };
        }
        // SAFETY: MPI_Init_thread accepts null argc/argv; it runs once (OnceLock).
        let rc = unsafe {
            ffi::MPI_Init_thread(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                ffi::RSMPI_THREAD_MULTIPLE,
                &mut provided,
            )
        };
        if rc != 0 {
            return Err(format!("MPI_Init_thread failed: {}", error_string(rc)));
        }
        // SAFETY: reading a constant handle initialised by the binding.
        if provided < unsafe { ffi::RSMPI_THREAD_SERIALIZED } {
            return Err(format!(
                "the MPI library provides thread level {provided}, below MPI_THREAD_SERIALIZED"
            ));
        }
        // SAFETY: `finalize_at_exit` is a plain extern "C" function that never unwinds.
        unsafe { atexit(finalize_at_exit) };
        Ok(provided)
    })
    .clone()
    .map_err(TransportError::Other)
}

impl MpiTransport {
    /// Initialises MPI (the first time) and returns this rank's transport, on a private
    /// duplicate of `MPI_COMM_WORLD` whose errors are returned rather than fatal.
    pub fn init() -> Result<MpiTransport, TransportError> {
        let provided = init_mpi()?;
        // SAFETY: reading a constant handle initialised by the binding.
        let thread_multiple = provided >= unsafe { ffi::RSMPI_THREAD_MULTIPLE };
        let mut comm: ffi::MPI_Comm = ffi::MPI_Comm(std::ptr::null_mut());
        let (mut rank, mut size) = (0, 0);
        // SAFETY: MPI is initialised; the out-pointers are valid locals; all MPI calls of
        // a new transport happen before it is shared (no other thread can race them)...
        unsafe {
            check(ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut comm), || {
                "MPI_Comm_dup".into()
            })?;
            check(
                ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN),
                || "MPI_Comm_set_errhandler".into(),
            )?;
            check(ffi::MPI_Comm_rank(comm, &mut rank), || {
                "MPI_Comm_rank".into()
            })?;
            check(ffi::MPI_Comm_size(comm, &mut size), || {
                "MPI_Comm_size".into()
            })?;
        }
        // ...except for other worlds' transports, which the module docs forbid at the
        // same time.
        Ok(MpiTransport {
            rank: rank as usize,
            size: size as usize,
            comm: H(comm),
            thread_multiple,
            progress: None,
            lock: Arc::new(MpiLock::new(Locked {
                sends: Vec::new(),
                own: VecDeque::new(),
                free: Vec::new(),
                origins: Vec::new(),
            })),
            segments: (0..MAX_SEGMENTS).map(|_| OnceLock::new()).collect(),
            next_segment: AtomicU32::new(0),
        })
        .map(|mut t| {
            // Under MPI_THREAD_SERIALIZED a second thread calling MPI could meet a UCX
            // worker made for one thread (see "Threads" above): no progress thread then,
            // and large sends move when this PE next calls MPI.
            if t.thread_multiple {
                t.progress = SendProgress::start(Arc::clone(&t.lock)).ok();
            }
            t
        })
    }

    #[inline]
    fn mpi(&self) -> Guard<'_> {
        self.lock.lock()
    }

    /// The lock for a one-sided operation that touches no transport state: none when MPI
    /// is thread-safe (`MPI_THREAD_MULTIPLE`), so threads of a PE issue them in parallel.
    #[inline]
    fn rma_lock(&self) -> Option<Guard<'_>> {
        (!self.thread_multiple).then(|| self.mpi())
    }

    /// The segment of an access, bounds checked.
    #[inline]
    fn locate(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        len: usize,
    ) -> Result<&Segment, TransportError> {
        let seg = self.segments.get(segment as usize).and_then(|s| s.get());
        let max = c_int::MAX as usize;
        super::check_access(pe, self.size, segment, offset, len, seg.map(|s| s.len), max)?;
        Ok(seg.expect("checked above"))
    }

    #[inline]
    fn word(&self, pe: usize, segment: SegmentId, offset: usize) -> Result<&Segment, TransportError> {
        super::check_word(pe, segment, offset)?;
        self.locate(pe, segment, offset, 8)
    }

    /// Issues an atomic without completing it. Call with the lock held, or without it if
    /// MPI is thread-safe and the caller keeps no transport state.
    ///
    /// # Safety
    /// `origin` and `result` must stay valid until the window is flushed.
    #[inline]
    unsafe fn issue_atomic(
        &self,
        seg: &Segment,
        pe: usize,
        offset: usize,
        op: AtomicOp,
        origin: *mut [u64; 2],
        result: *mut u64,
    ) -> Result<(), TransportError> {
        let (rank, disp, win) = (pe as c_int, offset as ffi::MPI_Aint, seg.win.0);
        let o = origin as *mut u64;
        // SAFETY: the caller keeps `origin` and `result` alive until the flush; the target
        // word was bounds- and alignment-checked by `word`; the lock is held.
        let rc = unsafe {
            match op {
                AtomicOp::CompareExchange { current, new } => {
                    *o = new;
                    *o.add(1) = current;
                    ffi::MPI_Compare_and_swap(
                        o as *const c_void,
                        o.add(1) as *const c_void,
                        result as *mut c_void,
                        u64_type(),
                        rank,
                        disp,
                        win,
                    )
                }
                _ => {
                    let (v, mop) = match op {
                        AtomicOp::Load => (0, op_no_op()),
                        AtomicOp::Store(v) | AtomicOp::Swap(v) => (v, op_replace()),
                        AtomicOp::FetchAdd(v) => (v, op_sum()),
                        AtomicOp::CompareExchange { .. } => unreachable!(),
                    };
                    *o = v;
                    ffi::MPI_Fetch_and_op(
                        o as *const c_void,
                        result as *mut c_void,
                        u64_type(),
                        rank,
                        disp,
                        mop,
                        win,
                    )
                }
            }
        };
        check(rc, || format!("atomic {op:?} on PE {pe}"))
    }

    /// Flushes every window with outstanding non-blocking operations. Lock held, so a
    /// `quiet` that finds a mark already cleared by another thread's `quiet` waits until
    /// that thread's flush has completed.
    fn flush_pending(&self, l: &mut Guard<'_>) -> Result<(), TransportError> {
        let n = self.next_segment.load(Ordering::Acquire) as usize;
        for seg in self.segments[..n.min(MAX_SEGMENTS)]
            .iter()
            .filter_map(|s| s.get())
        {
            if seg.pending.swap(false, Ordering::AcqRel) {
                // SAFETY: the window is valid and locked for all ranks; the lock is held.
                let rc = unsafe { ffi::MPI_Win_flush_all(seg.win.0) };
                check(rc, || "MPI_Win_flush_all".into())?;
            }
        }
        // Every non-blocking atomic was on a window flushed above.
        l.origins.clear();
        Ok(())
    }

    /// Completes finished sends and keeps their buffers for reuse. Lock held.
    fn reap_sends(l: &mut Locked) -> Result<(), TransportError> {
        let mut i = 0;
        while i < l.sends.len() {
            let mut flag: c_int = 0;
            // SAFETY: the request is an active send request owned by this list; the lock
            // is held.
            let rc = unsafe {
                ffi::MPI_Test(&mut l.sends[i].0.0, &mut flag, ffi::RSMPI_STATUS_IGNORE)
            };
            check(rc, || "MPI_Test (send)".into())?;
            if flag != 0 {
                let (_, mut buf) = l.sends.swap_remove(i);
                if l.free.len() < MAX_FREE_BUFFERS {
                    buf.clear();
                    l.free.push(buf);
                }
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Waits for a non-blocking collective, releasing the lock between polls.
    fn wait_request(
        &self,
        mut req: H<ffi::MPI_Request>,
        what: &str,
    ) -> Result<(), TransportError> {
        let mut idle = 0u32;
        loop {
            let mut flag: c_int = 0;
            {
                let _l = self.mpi();
                // SAFETY: `req` is an active request started by the caller; lock held.
                let rc =
                    unsafe { ffi::MPI_Test(&mut req.0, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
                check(rc, || what.to_string())?;
            }
            if flag != 0 {
                return Ok(());
            }
            idle += 1;
            if idle < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Element-wise `op` over all ranks, polled (shared by `allreduce_u64` and the
    /// allocation check).
    fn iallreduce(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        let send = values.to_vec();
        let count = c_int::try_from(values.len())
            .map_err(|_| TransportError::Collective("allreduce of more than 2^31 values".into()))?;
        let mut req: ffi::MPI_Request = ffi::MPI_Request(std::ptr::null_mut());
        {
            let _l = self.mpi();
            // SAFETY: reading constant operation handles initialised by the binding.
            let mop = unsafe {
                match op {
                    ReduceOp::Sum => ffi::RSMPI_SUM,
                    ReduceOp::Min => ffi::RSMPI_MIN,
                    ReduceOp::Max => ffi::RSMPI_MAX,
                }
            };
            // SAFETY: `send` and `values` hold `count` u64s and outlive the request, which
            // `wait_request` completes before returning; the lock is held.
            let rc = unsafe {
                ffi::MPI_Iallreduce(
                    send.as_ptr() as *const c_void,
                    values.as_mut_ptr() as *mut c_void,
                    count,
                    u64_type(),
                    mop,
                    self.comm.0,
                    &mut req,
                )
            };
            check(rc, || "MPI_Iallreduce".into())?;
        }
        self.wait_request(H(req), "MPI_Iallreduce")
    }

    /// Element-wise `op` over all ranks: the blocking `MPI_Allreduce` (faster than the
    /// non-blocking one) without the lock when MPI is thread-safe, else polled.
    fn allreduce(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        if !self.thread_multiple {
            return self.iallreduce(values, op);
        }
        let send = values.to_vec();
        let count = c_int::try_from(values.len())
            .map_err(|_| TransportError::Collective("allreduce of more than 2^31 values".into()))?;
        // SAFETY: reading constant operation handles initialised by the binding.
        let mop = unsafe {
            match op {
                ReduceOp::Sum => ffi::RSMPI_SUM,
                ReduceOp::Min => ffi::RSMPI_MIN,
                ReduceOp::Max => ffi::RSMPI_MAX,
            }
        };
        // SAFETY: `send` and `values` hold `count` u64s; MPI is thread-safe, and collectives
        // on this communicator come from one thread at a time (the transport contract).
        let rc = unsafe {
            ffi::MPI_Allreduce(
                send.as_ptr() as *const c_void,
                values.as_mut_ptr() as *mut c_void,
                count,
                u64_type(),
                mop,
                self.comm.0,
            )
        };
        check(rc, || "MPI_Allreduce".into())
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        if let Some(p) = self.progress.take() {
            p.finish();
        }
        // `&mut self` and the progress thread joined: no other thread can call MPI
        // through this transport any more.
        let Some(lock) = Arc::get_mut(&mut self.lock) else {
            unreachable!("the progress thread holds the only other reference")
        };
        let l = lock.state.get_mut();
        // Outstanding sends were all received (the world ends with a barrier after its
        // final finish); complete them before their buffers go.
        for (req, _) in l.sends.iter_mut() {
            // SAFETY: an active send request; the lock is held.
            unsafe { ffi::MPI_Wait(&mut req.0, ffi::RSMPI_STATUS_IGNORE) };
        }
        l.sends.clear();
        let n = self.next_segment.load(Ordering::Acquire) as usize;
        for seg in self.segments[..n.min(MAX_SEGMENTS)]
            .iter_mut()
            .filter_map(|s| s.get_mut())
        {
            // SAFETY: the window was locked with MPI_Win_lock_all at allocation; every
            // rank frees the same windows in the same order (collective), lock held.
            unsafe {
                ffi::MPI_Win_unlock_all(seg.win.0);
                ffi::MPI_Win_free(&mut seg.win.0);
            }
        }
        // Unlocking completed every operation that still read an origin cell.
        l.origins.clear();
        // SAFETY: the communicator was duplicated by `init` and is no longer used.
        unsafe { ffi::MPI_Comm_free(&mut self.comm.0) };
    }
}

impl Transport for MpiTransport {
    #[inline]
    fn my_pe(&self) -> usize {
        self.rank
    }
    #[inline]
    fn num_pes(&self) -> usize {
        self.size
    }
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn alloc_segment(&self, bytes: usize) -> Result<SegmentId, TransportError> {
        let id = self.next_segment.load(Ordering::Relaxed);
        if id as usize >= MAX_SEGMENTS {
            return Err(TransportError::Collective(format!(
                "more than {MAX_SEGMENTS} segments allocated"
            )));
        }
        // Agree on the size (max of bytes and of !bytes gives max and min), and wait for
        // everyone with the lock free, so that MPI_Win_allocate below returns promptly.
        let mut sizes = [bytes as u64, !(bytes as u64)];
        self.iallreduce(&mut sizes, ReduceOp::Max)?;
        let (max, min) = (sizes[0], !sizes[1]);
        if max != min {
            return Err(TransportError::Collective(format!(
                "segment {id}: PE {} asked for {bytes} bytes, but the PEs asked for {min} to {max}",
                self.rank
            )));
        }
        let alloc = bytes.max(8);
        let mut base: *mut u8 = std::ptr::null_mut();
        let mut win: ffi::MPI_Win = ffi::MPI_Win(std::ptr::null_mut());
        {
            let _l = self.mpi();
            // SAFETY: `base` receives the address of `alloc` bytes owned by the window;
            // every rank calls this collectively (ids advance in step); lock held.
            unsafe {
                check(
                    ffi::MPI_Win_allocate(
                        alloc as ffi::MPI_Aint,
                        1,
                        ffi::RSMPI_INFO_NULL,
                        self.comm.0,
                        (&raw mut base).cast(),
                        &mut win,
                    ),
                    || format!("MPI_Win_allocate of {bytes} bytes"),
                )?;
                std::ptr::write_bytes(base, 0, alloc);
                check(
                    ffi::MPI_Win_set_errhandler(win, ffi::RSMPI_ERRORS_RETURN),
                    || "MPI_Win_set_errhandler".into(),
                )?;
                check(
                    ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win),
                    || "MPI_Win_lock_all".into(),
                )?;
                // Make the zeroes written above part of the window's public copy.
                check(ffi::MPI_Win_sync(win), || "MPI_Win_sync".into())?;
            }
        }
        if self.segments[id as usize]
            .set(Segment {
                win: H(win),
                len: bytes,
                pending: AtomicBool::new(false),
            })
            .is_err()
        {
            return Err(TransportError::Collective(
                "alloc_segment called from two threads at once".into(),
            ));
        }
        self.next_segment.store(id + 1, Ordering::Release);
        // Nobody accesses the memory before every rank has zeroed its part.
        self.barrier()?;
        Ok(id)
    }

    fn segment_len(&self, segment: SegmentId) -> Option<usize> {
        self.segments
            .get(segment as usize)
            .and_then(|s| s.get())
            .map(|s| s.len)
    }

    #[inline]
    fn get(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        let seg = self.locate(pe, segment, offset, dst.len())?;
        if dst.is_empty() {
            return Ok(());
        }
        let _l = self.rma_lock();
        // SAFETY: `dst` is valid for its length and borrowed until the flush below
        // completes the get; the range was checked by `locate`; lock held.
        unsafe { issue_get(seg, pe, offset, dst.as_mut_ptr(), dst.len())? };
        flush(seg, pe)
    }

    #[inline]
    fn put(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        src: &[u8],
    ) -> Result<(), TransportError> {
        let seg = self.locate(pe, segment, offset, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        let _l = self.rma_lock();
        // SAFETY: `src` is valid for its length until the flush completes the put; range
        // checked by `locate`; lock held.
        unsafe { issue_put(seg, pe, offset, src.as_ptr(), src.len())? };
        flush(seg, pe)
    }

    #[inline]
    unsafe fn get_nbi(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let seg = self.locate(pe, segment, offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let _l = self.rma_lock();
        // SAFETY: the caller keeps `dst` valid and untouched until `quiet`, which flushes
        // this window (marked pending below); range checked; lock held or MPI thread-safe.
        unsafe { issue_get(seg, pe, offset, dst, len)? };
        // Marked after issuing: a `quiet` that finds the mark flushes after the issue.
        seg.pending.store(true, Ordering::Release);
        Ok(())
    }

    #[inline]
    unsafe fn put_nbi(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let seg = self.locate(pe, segment, offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let _l = self.rma_lock();
        // SAFETY: the caller keeps `src` valid and unchanged until `quiet`, which flushes
        // this window (marked pending below); range checked; lock held or MPI thread-safe.
        unsafe { issue_put(seg, pe, offset, src, len)? };
        seg.pending.store(true, Ordering::Release);
        Ok(())
    }

    #[inline]
    fn atomic(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        op: AtomicOp,
    ) -> Result<u64, TransportError> {
        let seg = self.word(pe, segment, offset)?;
        let mut origin = [0u64; 2];
        let mut result = 0u64;
        let _l = self.rma_lock();
        // SAFETY: `origin` and `result` live until the flush below completes the
        // operation; lock held or MPI thread-safe.
        unsafe { self.issue_atomic(seg, pe, offset, op, &mut origin, &mut result)? };
        flush(seg, pe)?;
        Ok(result)
    }

    #[inline]
    unsafe fn atomic_nbi(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        op: AtomicOp,
        result: *mut u64,
    ) -> Result<(), TransportError> {
        let seg = self.word(pe, segment, offset)?;
        let mut l = self.mpi();
        // The standard lets MPI read the origin values until the operation completes, so
        // they live in a heap cell kept until the next flush of pending windows.
        let mut origin = Box::new([0u64; 2]);
        // SAFETY: the boxed origin stays in `l.origins` (its heap address is stable) until
        // `flush_pending` completed this window; the caller keeps `result` valid until
        // `quiet`; lock held.
        unsafe { self.issue_atomic(seg, pe, offset, op, &mut *origin, result)? };
        l.origins.push(origin);
        seg.pending.store(true, Ordering::Release);
        Ok(())
    }

    fn quiet(&self) -> Result<(), TransportError> {
        let mut l = self.mpi();
        self.flush_pending(&mut l)
    }

    fn send(&self, pe: usize, buf: Vec<u8>) -> Result<(), TransportError> {
        if pe >= self.size {
            return Err(TransportError::Other(format!(
                "send to PE {pe}, but there are {} PEs",
                self.size
            )));
        }
        let mut l = self.mpi();
        if pe == self.rank {
            l.own.push_back(buf);
            return Ok(());
        }
        let count = c_int::try_from(buf.len()).map_err(|_| {
            TransportError::Other(format!(
                "a message buffer of {} bytes exceeds MPI's 2 GiB message limit",
                buf.len()
            ))
        })?;
        let mut req: ffi::MPI_Request = ffi::MPI_Request(std::ptr::null_mut());
        // SAFETY: the buffer moves into `sends` together with its request and is neither
        // changed nor freed before MPI_Test/MPI_Wait reports the request complete (the
        // heap storage does not move when the Vec does); lock held.
        let rc = unsafe {
            ffi::MPI_Isend(
                buf.as_ptr() as *const c_void,
                count,
                byte_type(),
                pe as c_int,
                MSG_TAG,
                self.comm.0,
                &mut req,
            )
        };
        check(rc, || format!("MPI_Isend to PE {pe}"))?;
        let large = buf.len() > EAGER_LIMIT;
        l.sends.push((H(req), buf));
        if l.sends.len() > 4 * self.size {
            Self::reap_sends(&mut l)?;
        }
        drop(l);
        if large && let Some(p) = &self.progress {
            p.wake();
        }
        Ok(())
    }

    fn try_recv(&self) -> Result<Option<(usize, Vec<u8>)>, TransportError> {
        let mut l = self.mpi();
        if !l.sends.is_empty() {
            Self::reap_sends(&mut l)?;
        }
        if let Some(b) = l.own.pop_front() {
            return Ok(Some((self.rank, b)));
        }
        let mut flag: c_int = 0;
        let mut msg: ffi::MPI_Message = ffi::MPI_Message(std::ptr::null_mut());
        // SAFETY: an all-zero MPI_Status is a valid value of this plain C struct.
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: out-pointers are valid locals; lock held.
        let rc = unsafe {
            ffi::MPI_Improbe(
                ffi::RSMPI_ANY_SOURCE,
                MSG_TAG,
                self.comm.0,
                &mut flag,
                &mut msg,
                &mut status,
            )
        };
        check(rc, || "MPI_Improbe".into())?;
        if flag == 0 {
            return Ok(None);
        }
        let mut count: c_int = 0;
        // SAFETY: `status` was filled by the matching probe; lock held.
        let rc = unsafe { ffi::MPI_Get_count(&status, byte_type(), &mut count) };
        check(rc, || "MPI_Get_count".into())?;
        let count = count.max(0) as usize;
        let mut buf = match l.free.pop() {
            Some(b) if b.capacity() >= count => b,
            _ => Vec::with_capacity(count),
        };
        // SAFETY: `buf` has room for `count` bytes; MPI_Mrecv receives exactly the probed
        // message of `count` bytes into it, after which those bytes are initialised.
        unsafe {
            check(
                ffi::MPI_Mrecv(
                    buf.as_mut_ptr() as *mut c_void,
                    count as c_int,
                    byte_type(),
                    &mut msg,
                    ffi::RSMPI_STATUS_IGNORE,
                ),
                || "MPI_Mrecv".into(),
            )?;
            buf.set_len(count);
        }
        Ok(Some((status.MPI_SOURCE as usize, buf)))
    }

    fn recycle(&self, mut buf: Vec<u8>) {
        buf.clear();
        let mut l = self.mpi();
        if l.free.len() < MAX_FREE_BUFFERS {
            l.free.push(buf);
        }
    }

    fn buffer(&self, capacity: usize) -> Vec<u8> {
        let reused = self.mpi().free.pop();
        match reused {
            Some(mut b) => {
                b.reserve(capacity);
                b
            }
            None => Vec::with_capacity(capacity),
        }
    }

    fn barrier(&self) -> Result<(), TransportError> {
        let mut req: ffi::MPI_Request = ffi::MPI_Request(std::ptr::null_mut());
        {
            let mut l = self.mpi();
            self.flush_pending(&mut l)?;
            if self.thread_multiple {
                drop(l);
                // The blocking barrier is faster than polling MPI_Ibarrier. SAFETY: MPI
                // is thread-safe, the lock is free for the PE's other threads, and
                // collectives come from one thread at a time (the transport contract).
                let rc = unsafe { ffi::MPI_Barrier(self.comm.0) };
                return check(rc, || "MPI_Barrier".into());
            }
            // SAFETY: `req` is a valid out-pointer; lock held.
            let rc = unsafe { ffi::MPI_Ibarrier(self.comm.0, &mut req) };
            check(rc, || "MPI_Ibarrier".into())?;
        }
        self.wait_request(H(req), "MPI_Ibarrier")
    }

    fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        self.allreduce(values, op)
    }

    fn abort(&self, message: &str) {
        use std::io::Write;
        let rank = self.rank;
        // One write(2) for the whole line: stderr is unbuffered, so `writeln!` would issue
        // one write per piece, and mpirun, which forwards each read separately, could put
        // its own MPI_ABORT notice (or another rank's output) in the middle of the line.
        let line = format!("rhizome: run aborted on rank {rank}: {message}\n");
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
        drop(err);
        // Take the MPI lock if another thread of this PE does not hold it for long (it
        // may be blocked in a one-sided operation forever if the target is gone).
        let mut guard = None;
        for _ in 0..2000 {
            if let Some(g) = self.lock.try_lock() {
                guard = Some(g);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // SAFETY: MPI_Abort ends every process of MPI_COMM_WORLD; called with the lock
        // held when it could be taken (otherwise the process is ending regardless).
        unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 1) };
        drop(guard);
        std::process::exit(1);
    }

    fn aborted(&self) -> Option<String> {
        // A run that aborted does not come back: MPI_Abort ended this process.
        None
    }
}

/// Raw-MPI baselines for `rhizome bench comm`: the same operations as the transport's,
/// written directly against MPI on the transport's own windows and communicator, with no
/// runtime around them. Each loop runs `iters` operations and holds the MPI lock for its
/// whole duration; time it from the outside.
pub mod baseline {
    use super::*;

    fn seg(t: &MpiTransport, segment: SegmentId, bytes: usize) -> Result<&Segment, TransportError> {
        t.locate(t.rank, segment, 0, bytes)
    }

    /// `iters` times: `MPI_Get` of `len` bytes from `target` (offsets stepping by 8 within
    /// the first 2 KiB), then `MPI_Win_flush`.
    pub fn get(
        t: &MpiTransport,
        target: usize,
        segment: SegmentId,
        len: usize,
        iters: u64,
    ) -> Result<(), TransportError> {
        let seg = seg(t, segment, 2048 + len)?;
        let mut buf = vec![0u8; len];
        let _l = t.mpi();
        for i in 0..iters {
            // SAFETY: `buf` outlives the flush; range within the checked 2 KiB + len.
            unsafe {
                ffi::MPI_Get(
                    buf.as_mut_ptr() as *mut c_void,
                    len as c_int,
                    byte_type(),
                    target as c_int,
                    ((i as usize * 8) % 2048) as ffi::MPI_Aint,
                    len as c_int,
                    byte_type(),
                    seg.win.0,
                );
                ffi::MPI_Win_flush(target as c_int, seg.win.0);
            }
        }
        std::hint::black_box(&buf);
        Ok(())
    }

    /// `iters` times: `MPI_Put` of `len` bytes to `target`, then `MPI_Win_flush`.
    pub fn put(
        t: &MpiTransport,
        target: usize,
        segment: SegmentId,
        len: usize,
        iters: u64,
    ) -> Result<(), TransportError> {
        let seg = seg(t, segment, 2048 + len)?;
        let buf = vec![7u8; len];
        let _l = t.mpi();
        for i in 0..iters {
            // SAFETY: as in `get`.
            unsafe {
                ffi::MPI_Put(
                    buf.as_ptr() as *const c_void,
                    len as c_int,
                    byte_type(),
                    target as c_int,
                    ((i as usize * 8) % 2048) as ffi::MPI_Aint,
                    len as c_int,
                    byte_type(),
                    seg.win.0,
                );
                ffi::MPI_Win_flush(target as c_int, seg.win.0);
            }
        }
        Ok(())
    }

    /// `iters` times: `MPI_Compare_and_swap` (i → i+1) of word 0 on `target`, then flush.
    pub fn compare_exchange(
        t: &MpiTransport,
        target: usize,
        segment: SegmentId,
        iters: u64,
    ) -> Result<(), TransportError> {
        let seg = seg(t, segment, 8)?;
        let _l = t.mpi();
        let mut result = 0u64;
        for i in 0..iters {
            let (cmp, new) = (i, i + 1);
            // SAFETY: locals outlive the flush; word 0 is in bounds and aligned.
            unsafe {
                ffi::MPI_Compare_and_swap(
                    (&raw const new).cast(),
                    (&raw const cmp).cast(),
                    (&raw mut result).cast(),
                    u64_type(),
                    target as c_int,
                    0,
                    seg.win.0,
                );
                ffi::MPI_Win_flush(target as c_int, seg.win.0);
            }
        }
        std::hint::black_box(result);
        Ok(())
    }

    /// `iters` times: `MPI_Fetch_and_op(MPI_SUM, 1)` on word 0 of `target`, then flush.
    pub fn fetch_add(
        t: &MpiTransport,
        target: usize,
        segment: SegmentId,
        iters: u64,
    ) -> Result<(), TransportError> {
        let seg = seg(t, segment, 8)?;
        let _l = t.mpi();
        let (one, mut result) = (1u64, 0u64);
        for _ in 0..iters {
            // SAFETY: locals outlive the flush; word 0 is in bounds and aligned.
            unsafe {
                ffi::MPI_Fetch_and_op(
                    (&raw const one).cast(),
                    (&raw mut result).cast(),
                    u64_type(),
                    target as c_int,
                    0,
                    op_sum(),
                    seg.win.0,
                );
                ffi::MPI_Win_flush(target as c_int, seg.win.0);
            }
        }
        std::hint::black_box(result);
        Ok(())
    }

    /// Collective over all ranks: rank 0 sends an 8-byte message to `peer`, which answers
    /// with one, `iters` times (`MPI_Send`/`MPI_Recv`); other ranks return at once.
    pub fn ping_pong(t: &MpiTransport, peer: usize, iters: u64) -> Result<(), TransportError> {
        if peer == 0 || (t.rank != 0 && t.rank != peer) {
            return Ok(());
        }
        let _l = t.mpi();
        let mut v = 0u64;
        let other = if t.rank == 0 { peer } else { 0 } as c_int;
        for _ in 0..iters {
            // SAFETY: `v` is a valid 8-byte buffer; lock held.
            unsafe {
                if t.rank == 0 {
                    ffi::MPI_Send((&raw const v).cast(), 1, u64_type(), other, PING_TAG, t.comm.0);
                    ffi::MPI_Recv(
                        (&raw mut v).cast(),
                        1,
                        u64_type(),
                        other,
                        PING_TAG,
                        t.comm.0,
                        ffi::RSMPI_STATUS_IGNORE,
                    );
                } else {
                    ffi::MPI_Recv(
                        (&raw mut v).cast(),
                        1,
                        u64_type(),
                        other,
                        PING_TAG,
                        t.comm.0,
                        ffi::RSMPI_STATUS_IGNORE,
                    );
                    v += 1;
                    ffi::MPI_Send((&raw const v).cast(), 1, u64_type(), other, PING_TAG, t.comm.0);
                }
            }
        }
        Ok(())
    }

    /// Collective: hand-aggregated one-way messages. Every rank packs `per_rank` 8-byte
    /// values into `buf_bytes`-byte buffers sent with `MPI_Isend` to the next rank, and
    /// receives and sums the previous rank's; returns the sum received.
    pub fn aggregated(
        t: &MpiTransport,
        per_rank: u64,
        buf_bytes: usize,
    ) -> Result<u64, TransportError> {
        let n = t.size;
        let (dest, src) = ((t.rank + 1) % n, (t.rank + n - 1) % n);
        let per_buf = (buf_bytes / 8).max(1) as u64;
        let buffers = per_rank.div_ceil(per_buf);
        let _l = t.mpi();
        let mut sum = 0u64;
        let mut inb: Vec<u64> = vec![0; per_buf as usize];
        // Two send buffers alternate (double buffering); a slot is refilled once its send
        // has completed. Nothing blocks while a message may be waiting to be received, so
        // two ranks sending large buffers to each other cannot deadlock.
        let mut out: [Vec<u64>; 2] = [
            Vec::with_capacity(per_buf as usize),
            Vec::with_capacity(per_buf as usize),
        ];
        let mut reqs = [ffi::MPI_Request(std::ptr::null_mut()); 2];
        let mut active = [false; 2];
        let (mut sent, mut received, mut k) = (0u64, 0u64, 0usize);
        while received < buffers || sent < buffers {
            if sent < buffers {
                if active[k] {
                    let mut flag: c_int = 0;
                    // SAFETY: an active send request of this loop; lock held.
                    unsafe { ffi::MPI_Test(&mut reqs[k], &mut flag, ffi::RSMPI_STATUS_IGNORE) };
                    active[k] = flag == 0;
                }
                if !active[k] {
                    let first = sent * per_buf;
                    let last = (first + per_buf).min(per_rank);
                    out[k].clear();
                    out[k].extend((first..last).map(|i| i & 1));
                    // SAFETY: `out[k]` is not touched until its request completes; lock
                    // held.
                    unsafe {
                        ffi::MPI_Isend(
                            out[k].as_ptr().cast(),
                            out[k].len() as c_int,
                            u64_type(),
                            dest as c_int,
                            PING_TAG,
                            t.comm.0,
                            &mut reqs[k],
                        );
                    }
                    active[k] = true;
                    sent += 1;
                    k ^= 1;
                }
            }
            if received < buffers {
                let mut flag: c_int = 0;
                // SAFETY: an all-zero MPI_Status is a valid value of this C struct.
                let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
                // SAFETY: valid out-pointers; lock held.
                unsafe {
                    ffi::MPI_Iprobe(src as c_int, PING_TAG, t.comm.0, &mut flag, &mut status)
                };
                if flag != 0 {
                    let mut count: c_int = 0;
                    // SAFETY: `inb` has room for a whole buffer; `status` is the probe's.
                    unsafe {
                        ffi::MPI_Get_count(&status, u64_type(), &mut count);
                        ffi::MPI_Recv(
                            inb.as_mut_ptr().cast(),
                            per_buf as c_int,
                            u64_type(),
                            src as c_int,
                            PING_TAG,
                            t.comm.0,
                            ffi::RSMPI_STATUS_IGNORE,
                        );
                    }
                    for v in &inb[..count.max(0) as usize] {
                        sum = sum.wrapping_add(*v);
                    }
                    received += 1;
                }
            }
        }
        for (r, a) in reqs.iter_mut().zip(active) {
            if a {
                // SAFETY: an active send request of this loop; its receiver has received
                // everything (it loops until it has), so this returns.
                unsafe { ffi::MPI_Wait(r, ffi::RSMPI_STATUS_IGNORE) };
            }
        }
        Ok(sum)
    }

    /// `iters` times `MPI_Barrier`.
    pub fn barrier(t: &MpiTransport, iters: u64) -> Result<(), TransportError> {
        let _l = t.mpi();
        for _ in 0..iters {
            // SAFETY: a valid communicator; lock held.
            unsafe { ffi::MPI_Barrier(t.comm.0) };
        }
        Ok(())
    }

    /// `iters` times `MPI_Allreduce` of one u64 with `MPI_SUM`.
    pub fn allreduce(t: &MpiTransport, iters: u64) -> Result<(), TransportError> {
        let _l = t.mpi();
        let mut out = 0u64;
        for i in 0..iters {
            // SAFETY: one-element local buffers; lock held.
            unsafe {
                ffi::MPI_Allreduce(
                    (&raw const i).cast(),
                    (&raw mut out).cast(),
                    1,
                    u64_type(),
                    op_sum(),
                    t.comm.0,
                )
            };
        }
        std::hint::black_box(out);
        Ok(())
    }
}

#[cfg(test)]
mod lock_tests {
    use super::*;

    /// Mutual exclusion under contention, with failing `try_lock`s in the mix (a failed
    /// attempt once released the holder's lock). Needs no MPI: the lock is plain Rust.
    #[test]
    fn the_mpi_lock_excludes_under_contention() {
        let lock = Arc::new(MpiLock::new(Locked {
            sends: Vec::new(),
            own: VecDeque::new(),
            free: Vec::new(),
            origins: Vec::new(),
        }));
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for i in 0..ROUNDS {
                        let mut g = match lock.try_lock() {
                            Some(g) => g,
                            None => lock.lock(),
                        };
                        // A read-modify-write that loses updates if two threads overlap.
                        let n = g.own.len();
                        g.own.push_back(vec![(t + i) as u8]);
                        std::hint::black_box(&g.own);
                        assert_eq!(g.own.len(), n + 1, "another thread ran inside the lock");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no thread panics");
        }
        assert_eq!(lock.lock().own.len(), THREADS * ROUNDS);
    }
}
