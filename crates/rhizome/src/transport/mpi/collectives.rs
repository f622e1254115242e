//! Collectives of the `mpi` transport: the blocking `MPI_Barrier`/`MPI_Allreduce` without
//! the lock under `MPI_THREAD_MULTIPLE`, else their non-blocking forms polled with the
//! lock released between polls.

use super::MpiTransport;
use super::raw::{H, check, u64_type};
use crate::backoff::Backoff;
use crate::transport::{Collectives, ReduceOp, TransportError};
use ::mpi::ffi;
use std::ffi::c_int;
use std::sync::atomic::{Ordering, fence};

/// What an allreduce of `values` passes to MPI: a copy of the input (MPI may not read and
/// write one buffer), the count, and the MPI operation.
fn reduce_args(
    values: &[u64],
    op: ReduceOp,
) -> Result<(Vec<u64>, c_int, ffi::MPI_Op), TransportError> {
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
    Ok((values.to_vec(), count, mop))
}

impl MpiTransport {
    /// Whether collectives may block inside MPI: only when MPI is thread-safe and no
    /// thread of this PE must answer one-sided requests meanwhile (a thread spinning in
    /// `MPI_Barrier` would keep the core from the one that answers).
    fn blocking_collectives(&self) -> bool {
        self.thread_multiple && self.msg.is_none()
    }

    /// Waits for a non-blocking collective, releasing the lock between polls (and
    /// answering one-sided requests, in message mode).
    fn wait_request(&self, mut req: H<ffi::MPI_Request>, what: &str) -> Result<(), TransportError> {
        let mut backoff = Backoff::new(64);
        loop {
            let mut flag: c_int = 0;
            {
                let _l = self.mpi();
                // SAFETY: `req` is an active request started by the caller; lock held.
                let rc = unsafe { ffi::MPI_Test(&mut req.0, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
                check(rc, || what.to_string())?;
            }
            if flag != 0 {
                return Ok(());
            }
            // No time limit here: another rank may compute for long before it comes.
            if self.msg.as_ref().is_some_and(|m| m.serve()) {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Element-wise `op` over all ranks, polled (shared by `allreduce_u64` and the
    /// allocation check).
    pub(super) fn iallreduce(
        &self,
        values: &mut [u64],
        op: ReduceOp,
    ) -> Result<(), TransportError> {
        let (send, count, mop) = reduce_args(values, op)?;
        let mut req: ffi::MPI_Request = ffi::MPI_Request(std::ptr::null_mut());
        {
            let _l = self.mpi();
            let (sbuf, rbuf) = (send.as_ptr().cast(), values.as_mut_ptr().cast());
            // SAFETY: `send` and `values` hold `count` u64s and outlive the request, which
            // `wait_request` completes before returning; the lock is held.
            let rc = unsafe {
                ffi::MPI_Iallreduce(sbuf, rbuf, count, u64_type(), mop, self.comm.0, &mut req)
            };
            check(rc, || "MPI_Iallreduce".into())?;
        }
        self.wait_request(H(req), "MPI_Iallreduce")
    }

    /// Element-wise `op` over all ranks: the blocking `MPI_Allreduce` (faster than the
    /// non-blocking one) without the lock when MPI is thread-safe, else polled.
    fn allreduce(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        if !self.blocking_collectives() {
            return self.iallreduce(values, op);
        }
        let (send, count, mop) = reduce_args(values, op)?;
        let (sbuf, rbuf) = (send.as_ptr().cast(), values.as_mut_ptr().cast());
        // SAFETY: `send` and `values` hold `count` u64s; MPI is thread-safe, and collectives
        // on this communicator come from one thread at a time (the transport contract).
        let rc = unsafe { ffi::MPI_Allreduce(sbuf, rbuf, count, u64_type(), mop, self.comm.0) };
        check(rc, || "MPI_Allreduce".into())
    }
}

impl Collectives for MpiTransport {
    fn barrier(&self) -> Result<(), TransportError> {
        // Direct accesses to shared windows (ranks on one node) are ordered before the
        // barrier's signal to the other ranks, and what follows after its return.
        fence(Ordering::SeqCst);
        self.barrier_mpi()?;
        fence(Ordering::SeqCst);
        Ok(())
    }

    fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        self.allreduce(values, op)
    }
}

impl MpiTransport {
    /// The barrier: outstanding non-blocking operations flushed, then MPI's.
    fn barrier_mpi(&self) -> Result<(), TransportError> {
        let mut req: ffi::MPI_Request = ffi::MPI_Request(std::ptr::null_mut());
        {
            let mut l = self.mpi();
            self.flush_pending(&mut l)?;
            if self.blocking_collectives() {
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
}
