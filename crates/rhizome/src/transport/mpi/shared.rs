//! Global memory of the `mpi` transport when every rank runs on one node: each segment is
//! an MPI-3 shared-memory window (`MPI_Win_allocate_shared`), and every one-sided operation
//! is a load, store, copy or CPU atomic on the target rank's block, mapped into this
//! process at the address `MPI_Win_shared_query` returns.
//!
//! Why: through `MPI_Get`/`MPI_Put`/`MPI_Fetch_and_op`, Open MPI's `osc sm` takes a lock
//! per atomic and a flush per blocking operation, so a compare-and-swap costs several
//! times a CPU one (the hash table's mixed load ran at 5.1 M find-or-put/s on 2 ranks
//! against 17.7 M/s with both PEs in one process). With the blocks mapped here, ranks on
//! one node reach each other's memory as the `local` transport's PEs do, and
//! [`Rma::direct`](crate::transport::Rma::direct) hands every rank's block to data
//! structures that probe in place (the hash table's direct mode).
//!
//! # Memory model
//! The window's memory is ordinary coherent memory shared by the processes (MPI's unified
//! model, which shared windows have). It is touched only by this module's accesses, the
//! same instructions the `local` transport uses between threads: atomics are the CPU's
//! (`SeqCst`), gets and puts are copies behind an acquire / after a release fence. No MPI
//! one-sided call ever targets these windows, so there is no mix of MPI RMA and direct
//! access for `MPI_Win_sync` to order; the one place MPI and our accesses meet is the
//! zeroing at allocation, followed by `MPI_Win_sync` and a barrier. Synchronisation
//! between ranks (barriers, messages) goes through MPI, which the transport brackets with
//! fences (see `barrier`, `send` and `try_recv`).
//!
//! # When not
//! Ranks on several nodes keep windows made with `MPI_Win_allocate` and MPI RMA for every
//! rank, also their on-node neighbours: MPI promises its atomics atomic only with respect
//! to each other, and a network adapter's atomics (or UCX's emulation of them) need not be
//! atomic with respect to CPU atomics on the same word. `RHIZOME_MPI_RMA=windows` forces
//! that path on one node too (for measurement, or an MPI without shared windows).

use super::raw::{H, check, open_window, zero_lazily};
use crate::transport::TransportError;
use ::mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU64;

/// One rank's block of a shared segment, mapped into this process.
#[derive(Clone, Copy)]
pub(super) struct Block {
    base: *const AtomicU64,
    words: usize,
}
// SAFETY: the block is process-shared memory owned by an MPI window, accessed only through
// `AtomicU64`s (interior mutability designed for sharing between threads); the pointer is
// valid in every thread of the process until the window is freed.
unsafe impl Send for Block {}
// SAFETY: as above.
unsafe impl Sync for Block {}

impl Block {
    /// The block's words.
    #[inline]
    pub(super) fn words(&self) -> &[AtomicU64] {
        // SAFETY: `base` is the 8-byte-aligned start of `words` words of a window (checked
        // at allocation) that is freed only by `MpiTransport`'s `drop`, which takes
        // `&mut self`, so no borrow of the segment (and of this slice) is alive then.
        // Other processes change the words only through atomics and copies of the same
        // kind, as threads do in the `local` transport.
        unsafe { std::slice::from_raw_parts(self.base, self.words) }
    }
}

/// Whether every rank of `comm` runs on this node (one shared-memory domain), as
/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` groups them. Collective over `comm`; every
/// rank gets the same answer (a node holding all ranks is every rank's node).
pub(super) fn one_node(comm: H<ffi::MPI_Comm>, size: usize) -> Result<bool, TransportError> {
    let mut node = ffi::MPI_Comm(std::ptr::null_mut());
    let mut node_size: c_int = 0;
    // SAFETY: `comm` is a valid communicator; the out-pointers are valid locals; called
    // collectively while the transport is made, before any other thread uses it; the node
    // communicator is freed before returning.
    unsafe {
        check(
            ffi::MPI_Comm_split_type(
                comm.0,
                ffi::RSMPI_COMM_TYPE_SHARED,
                0,
                ffi::RSMPI_INFO_NULL,
                &mut node,
            ),
            || "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)".into(),
        )?;
        let rc = ffi::MPI_Comm_size(node, &mut node_size);
        ffi::MPI_Comm_free(&mut node);
        check(rc, || "MPI_Comm_size".into())?;
    }
    Ok(node_size as usize == size)
}

/// Collectively allocates a shared window of `bytes` bytes per rank on `comm` (whose ranks
/// all share this node), zeroes this rank's block and maps every rank's. The window is
/// locked for passive access (`MPI_Win_lock_all`), as `MPI_Win_sync` needs. The caller
/// holds the transport's lock and ends the allocation with a barrier.
pub(super) fn allocate(
    comm: H<ffi::MPI_Comm>,
    size: usize,
    bytes: usize,
) -> Result<(ffi::MPI_Win, Box<[Block]>), TransportError> {
    // Whole words (at least one allocated, so that every block has an address).
    let words = bytes.div_ceil(8);
    let alloc = words.max(1) * 8;
    let mut base: *mut u8 = std::ptr::null_mut();
    let mut win = ffi::MPI_Win(std::ptr::null_mut());
    let mut info = ffi::MPI_Info(std::ptr::null_mut());
    // SAFETY: MPI is initialised and the caller holds the lock; every rank calls this
    // collectively (segment ids advance in step); `base` receives the address of this
    // rank's `alloc` bytes, owned by the window; the info object is freed after use.
    unsafe {
        check(ffi::MPI_Info_create(&mut info), || "MPI_Info_create".into())?;
        // Each rank's block on pages of its own (first touched, so placed, by its owner).
        ffi::MPI_Info_set(info, c"alloc_shared_noncontig".as_ptr(), c"true".as_ptr());
        let rc = ffi::MPI_Win_allocate_shared(
            alloc as ffi::MPI_Aint,
            8,
            info,
            comm.0,
            (&raw mut base).cast(),
            &mut win,
        );
        ffi::MPI_Info_free(&mut info);
        check(rc, || {
            format!(
                "MPI_Win_allocate_shared of {bytes} bytes (RHIZOME_MPI_RMA=windows uses MPI RMA windows instead)"
            )
        })?;
        open_window(win)?;
    }
    let mut blocks = Vec::with_capacity(size);
    for rank in 0..size {
        let (mut len, mut unit, mut ptr): (ffi::MPI_Aint, c_int, *mut c_void) =
            (0, 0, std::ptr::null_mut());
        // SAFETY: a valid shared window and rank; valid out-pointers.
        let rc = unsafe {
            ffi::MPI_Win_shared_query(
                win,
                rank as c_int,
                &mut len,
                &mut unit,
                (&raw mut ptr).cast(),
            )
        };
        check(rc, || format!("MPI_Win_shared_query of rank {rank}"))?;
        if ptr.is_null() || !(ptr as usize).is_multiple_of(8) || (len as usize) < alloc {
            return Err(TransportError::Other(format!(
                "MPI_Win_shared_query: rank {rank}'s block is {len} bytes at {ptr:?}, not {alloc} aligned to 8"
            )));
        }
        blocks.push(Block {
            base: ptr as *const AtomicU64,
            words,
        });
    }
    // SAFETY: `base` is this rank's `alloc` bytes; no rank reads them before the barrier
    // that ends the allocation. MPI_Win_sync makes the zeroes part of the window's memory
    // as the standard's unified model asks (a memory barrier in `osc sm`).
    unsafe {
        zero_lazily(base, alloc);
        check(ffi::MPI_Win_sync(win), || "MPI_Win_sync".into())?;
    }
    Ok((win, blocks.into_boxed_slice()))
}
