//! The C interface of MPI as this transport uses it: handles that may cross threads,
//! error codes turned into [`TransportError`]s, the predefined datatypes and operations.

use crate::transport::TransportError;
use ::mpi::ffi;
use std::ffi::{c_char, c_int, c_void};

/// An MPI handle (a pointer into the MPI library) that may move between threads.
#[derive(Clone, Copy)]
pub(crate) struct H<T>(pub(crate) T);
// SAFETY: MPI handles are opaque identifiers, valid in every thread of the process; this
// transport makes all MPI calls while holding its lock.
unsafe impl<T> Send for H<T> {}
// SAFETY: as above; a handle is only read, never mutated through a shared reference.
unsafe impl<T> Sync for H<T> {}

pub(super) fn error_string(code: c_int) -> String {
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
pub(super) fn check(rc: c_int, what: impl FnOnce() -> String) -> Result<(), TransportError> {
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
pub(super) fn u64_type() -> ffi::MPI_Datatype {
    // SAFETY: reading a constant handle that the MPI binding initialises statically.
    unsafe { ffi::RSMPI_UINT64_T }
}
pub(super) fn byte_type() -> ffi::MPI_Datatype {
    // SAFETY: as in `u64_type`.
    unsafe { ffi::RSMPI_UINT8_T }
}
#[inline]
pub(super) fn op_sum() -> ffi::MPI_Op {
    // SAFETY: as in `u64_type`.
    unsafe { ffi::RSMPI_SUM }
}
#[inline]
pub(super) fn op_replace() -> ffi::MPI_Op {
    // Open MPI defines MPI_REPLACE as the address of this predefined object.
    ffi::MPI_Op((&raw mut ffi::ompi_mpi_op_replace).cast())
}
#[inline]
pub(super) fn op_no_op() -> ffi::MPI_Op {
    // Open MPI defines MPI_NO_OP as the address of this predefined object.
    ffi::MPI_Op((&raw mut ffi::ompi_mpi_op_no_op).cast())
}

/// Makes a new window's errors returned (not fatal) and opens it for passive-target access
/// by every rank (`MPI_Win_lock_all`, as one-sided calls and `MPI_Win_sync` need).
///
/// # Safety
/// `win` is a window this rank has just allocated and not yet opened; MPI may be called
/// by this thread now (lock held, or MPI thread-safe).
pub(super) unsafe fn open_window(win: ffi::MPI_Win) -> Result<(), TransportError> {
    // SAFETY: forwarded from the caller.
    unsafe {
        check(
            ffi::MPI_Win_set_errhandler(win, ffi::RSMPI_ERRORS_RETURN),
            || "MPI_Win_set_errhandler".into(),
        )?;
        check(
            ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win),
            || "MPI_Win_lock_all".into(),
        )
    }
}

/// Receives a message with `tag` on `comm` from any source if one has arrived: its
/// source and bytes, in a buffer from `buffer(len)` (which must have room for `len`).
/// `MPI_Improbe` then `MPI_Mrecv`, so that no other thread can take the probed message.
///
/// # Safety
/// MPI may be called by this thread now: under `MPI_THREAD_MULTIPLE`, or with the
/// transport's lock held.
pub(super) unsafe fn receive_probed(
    comm: H<ffi::MPI_Comm>,
    tag: c_int,
    buffer: impl FnOnce(usize) -> Vec<u8>,
) -> Result<Option<(usize, Vec<u8>)>, TransportError> {
    let (mut flag, mut count): (c_int, c_int) = (0, 0);
    let mut msg = ffi::MPI_Message(std::ptr::null_mut());
    // SAFETY: an all-zero MPI_Status is a valid value of this plain C struct.
    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointers and communicator; the caller may call MPI.
    let rc = unsafe {
        ffi::MPI_Improbe(
            ffi::RSMPI_ANY_SOURCE,
            tag,
            comm.0,
            &mut flag,
            &mut msg,
            &mut status,
        )
    };
    check(rc, || "MPI_Improbe".into())?;
    if flag == 0 {
        return Ok(None);
    }
    // SAFETY: `status` was filled by the matching probe.
    let rc = unsafe { ffi::MPI_Get_count(&status, byte_type(), &mut count) };
    check(rc, || "MPI_Get_count".into())?;
    let count = count.max(0) as usize;
    let mut buf = buffer(count);
    buf.clear();
    assert!(buf.capacity() >= count, "receive_probed: buffer too small");
    // SAFETY: `buf` has room for `count` bytes (asserted); MPI_Mrecv receives exactly the
    // probed message of `count` bytes into it, after which those bytes are initialised.
    unsafe {
        let rc = ffi::MPI_Mrecv(
            buf.as_mut_ptr() as *mut c_void,
            count as c_int,
            byte_type(),
            &mut msg,
            ffi::RSMPI_STATUS_IGNORE,
        );
        check(rc, || "MPI_Mrecv".into())?;
        buf.set_len(count);
    }
    Ok(Some((status.MPI_SOURCE as usize, buf)))
}

/// Zeroes `len` bytes at `base` (a window's memory, which MPI does not promise zeroed)
/// without committing its pages where the system allows: the whole pages are given back
/// with `MADV_REMOVE` (a hole punched in the shared-memory file of `osc sm`, which reads
/// as zeros and is committed again page by page as it is touched), the partial pages at
/// the ends are written. Where the memory is not such a mapping (`MADV_REMOVE` fails, as on
/// private memory), every byte is written, which commits the whole window.
///
/// # Safety
/// `base..base + len` must be memory this rank owns and nobody else accesses meanwhile.
pub(super) unsafe fn zero_lazily(base: *mut u8, len: usize) {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
    let (start, end) = (base as usize, base as usize + len);
    let (inner, outer) = (start.next_multiple_of(page), end / page * page);
    // SAFETY: `inner..outer` lies inside the caller's range (page-aligned); MADV_REMOVE
    // only frees its pages, after which they read as zeros.
    if outer > inner
        && unsafe { libc::madvise(inner as *mut c_void, outer - inner, libc::MADV_REMOVE) } == 0
    {
        // SAFETY: the two ends lie inside the caller's range.
        unsafe {
            std::ptr::write_bytes(base, 0, inner - start);
            std::ptr::write_bytes(outer as *mut u8, 0, end - outer);
        }
    } else {
        // SAFETY: the caller's range.
        unsafe { std::ptr::write_bytes(base, 0, len) };
    }
}
