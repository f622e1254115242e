//! The `mpi` transport: one PE per MPI rank (cargo feature `mpi`).
//!
//! Built on an existing MPI library (Open MPI) through the `mpi` crate's raw bindings:
//! - **Global memory**: on ranks that share one node, one shared window per symmetric
//!   segment, accessed directly (see "Ranks on one node" below). Otherwise one MPI-3 RMA
//!   window per segment (`MPI_Win_allocate`), opened once for passive-target access with `MPI_Win_lock_all`. `get`/`put` are
//!   `MPI_Get`/`MPI_Put`, atomics are `MPI_Fetch_and_op` (sum, replace, no-op) and
//!   `MPI_Compare_and_swap` on `MPI_UINT64_T`. Blocking forms end with `MPI_Win_flush` of
//!   the target; the `*_nbi` forms mark their window and [`Rma::quiet`](super::Rma::quiet) flushes the
//!   marked windows with `MPI_Win_flush_all`. Every access, also to this PE's own memory,
//!   goes through MPI, so MPI's atomics stay atomic with respect to each other whatever
//!   the one-sided component implements them with.
//! - **Messages**: `MPI_Isend` on a private duplicate of `MPI_COMM_WORLD`; the buffer is
//!   kept until the request completes (then reused), so a send never blocks, even for
//!   large buffers that MPI moves with a rendezvous protocol: two PEs flushing big buffers
//!   to each other cannot deadlock. [`Messages::try_recv`](super::Messages::try_recv) completes finished sends and
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
//! # Ranks on one node
//! When every rank runs on this node (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` puts
//! them all in one group) each segment is a shared window (`MPI_Win_allocate_shared`)
//! instead, mapped into every rank, and `get`, `put` and the atomics are copies and CPU
//! atomics on the target's block, as between the `local` transport's PEs (`shared` says
//! why that is sound); [`Memory::direct_words`](crate::Memory::direct_words) gives every
//! rank's block. MPI's `osc sm` would take a lock per atomic and a flush per operation.
//! Ranks on several nodes keep the RMA windows above for every rank.
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
//! # Choosing the path: `RHIZOME_MPI_RMA`
//! - `auto` (the default): shared windows when every rank is on this node, RMA windows
//!   otherwise.
//! - `shared`: shared windows; an error (`rhizome: error: ...`) when the ranks are on
//!   several nodes.
//! - `windows`: RMA windows for every rank, also on one node (for measurement, or an MPI
//!   without shared windows).
//! - `messages`: no window is made: every one-sided operation on another rank is a
//!   request message answered by a server thread on that rank (`msg_rma`), over the
//!   two-sided path that works wherever `mpirun` does (e.g. `btl tcp`). This is the mode
//!   for ranks on several machines joined by TCP, where Open MPI 4.1 has no reliable
//!   one-sided component (see `msg_rma`). It needs `MPI_THREAD_MULTIPLE`.

//! # Lifetime
//! MPI is initialised once per process, by the first [`MpiTransport::init`], and finalised
//! when the process exits normally (an `atexit` handler). Each `MpiTransport` has its own
//! communicator and windows, freed collectively when it is dropped, so a program may run
//! several worlds one after the other (not at the same time).
//!
//! # Files
//! `init` starts MPI and makes a transport, `lock` is the lock around MPI calls, `raw`
//! the handles and error codes of the C interface, `rma` the windows and one-sided
//! operations, `shared` the shared windows of ranks on one node, `msg_rma` the one-sided
//! operations over messages, `messages` the sends and receives of message buffers,
//! `collectives` the barrier and reductions. This file has the transport itself and its end.

mod collectives;
mod init;
mod lock;
mod messages;
mod msg_rma;
mod raw;
mod rma;
mod shared;

use super::Transport;
use ::mpi::ffi;
use lock::{Guard, MpiLock};
use messages::SendProgress;
use msg_rma::MsgRma;
use raw::H;
use rma::Segment;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// Most collective allocations one world may make.
pub const MAX_SEGMENTS: usize = 4096;

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
    /// One-sided operations over messages instead of windows (`RHIZOME_MPI_RMA=messages`).
    msg: Option<MsgRma>,
    /// Every rank is on this node: segments are shared windows accessed directly
    /// (`shared`), not through MPI RMA.
    shared: bool,
}

impl MpiTransport {
    #[inline]
    fn mpi(&self) -> Guard<'_> {
        self.lock.lock()
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        if let Some(p) = self.progress.take() {
            p.finish();
        }
        if let Some(m) = self.msg.as_mut() {
            m.finish();
        }
        // `&mut self` and the progress thread joined: no other thread can call MPI
        // through this transport any more.
        let Some(lock) = Arc::get_mut(&mut self.lock) else {
            unreachable!("the progress thread holds the only other reference")
        };
        let l = lock.state_mut();
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
