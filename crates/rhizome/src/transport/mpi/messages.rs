//! Message buffers of the `mpi` transport: `MPI_Isend` that never blocks (the buffer is
//! kept until its request completes), `MPI_Improbe`/`MPI_Mrecv` to receive, and a thread
//! that moves large sends along while their sender computes.

use super::MpiTransport;
use super::lock::{Locked, MpiLock};
use super::raw::{H, byte_type, check, receive_probed};
use crate::transport::{Messages, TransportError};
use ::mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Most emptied buffers kept for reuse.
const MAX_FREE_BUFFERS: usize = 64;
/// Tag of active-message buffers on the transport's communicator.
const MSG_TAG: c_int = 1;

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
pub(super) struct SendProgress {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl SendProgress {
    pub(super) fn start(lock: Arc<MpiLock>) -> std::io::Result<SendProgress> {
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

    pub(super) fn finish(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

impl MpiTransport {
    /// Completes finished sends and keeps their buffers for reuse. Lock held.
    fn reap_sends(l: &mut Locked) -> Result<(), TransportError> {
        let mut i = 0;
        while i < l.sends.len() {
            let mut flag: c_int = 0;
            // SAFETY: the request is an active send request owned by this list; the lock
            // is held.
            let rc =
                unsafe { ffi::MPI_Test(&mut l.sends[i].0.0, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
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
}

impl Messages for MpiTransport {
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
        // What this thread wrote before (also directly into shared windows) is ordered
        // before the message; the receiver's acquire in `try_recv` pairs with it.
        std::sync::atomic::fence(Ordering::Release);
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
        // Workers poll here when idle: they answer one-sided requests too (message mode).
        if let Some(m) = &self.msg {
            m.serve();
        }
        let mut l = self.mpi();
        if !l.sends.is_empty() {
            Self::reap_sends(&mut l)?;
        }
        if let Some(b) = l.own.pop_front() {
            return Ok(Some((self.rank, b)));
        }
        // SAFETY: the lock is held, so this thread alone calls MPI for this transport.
        let got = unsafe {
            receive_probed(self.comm, MSG_TAG, |count| match l.free.pop() {
                Some(b) if b.capacity() >= count => b,
                _ => Vec::with_capacity(count),
            })
        };
        // The handler sees what the sender wrote before sending (see `send`).
        std::sync::atomic::fence(Ordering::Acquire);
        got
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
}
