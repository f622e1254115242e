//! The C interface of MPI as this transport uses it: handles that may cross threads,
//! error codes turned into [`TransportError`]s, the predefined datatypes and operations.

use crate::transport::TransportError;
use ::mpi::ffi;
use std::ffi::{c_char, c_int};

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
