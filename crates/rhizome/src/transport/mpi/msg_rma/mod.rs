//! One-sided operations carried by two-sided messages: the `mpi` transport's global memory
//! when ranks do not share memory and no one-sided component of the MPI library works
//! over their network (`RHIZOME_MPI_RMA=messages`).
//!
//! Why by hand: Open MPI 4.1 over TCP has no reliable RMA for this runtime. `osc ucx` with
//! `UCX_TLS=tcp` emulates atomics with messages that need the target's UCX worker to
//! progress; the SPMD suite's multithreaded fetch-add stress test stalls there for minutes
//! and then fails (`MPI_ERR_OTHER`, UCX "Endpoint timeout"); `osc pt2pt` refuses
//! `MPI_THREAD_MULTIPLE`; `osc rdma` cannot make windows over `btl tcp` (it needs network
//! atomics). Two-sided messages over `btl tcp` do work, so this module builds the
//! one-sided operations on them, as `osc pt2pt` would, with a thread per rank that serves
//! them (a passive target must answer while its own threads compute).
//!
//! - **Memory**: each segment is this rank's block of zeroed `AtomicU64`s (no MPI window).
//!   Operations on this rank's own memory are plain copies and CPU atomics, as in the
//!   `local` transport; the server thread applies remote ones to the same words with the
//!   same instructions, so atomics stay atomic with respect to each other.
//! - **Protocol**: a request is one message with tag `REQUEST` on a private communicator:
//!   a header of five `u64`s (kind, segment, offset, two operands) and, for a put, the
//!   bytes. The server answers each with one message with tag `REPLY`: the bytes of a get,
//!   the previous value of an atomic, nothing for a put (the put is then visible).
//! - **Matching**: the origin posts the receive of the reply and sends the request under
//!   the transport lock, so its replies-to-be from one target are posted in the order of
//!   its requests; the target answers one source's requests in their order (one server
//!   thread, and MPI does not reorder messages between two ranks on one communicator), so
//!   every reply lands in the receive posted for it, with one tag for all.
//! - **Completion**: a blocking operation waits for its reply; a `*_nbi` one keeps its
//!   requests (and the request bytes MPI still reads) until the next `quiet`, so round
//!   trips overlap as with windows.

//!
//! `server` has the protocol's constants, the serving of requests and the end of a run by
//! a server that cannot go on; this file has the origin side.

mod server;

use super::raw::{H, byte_type, check};
use crate::backoff::Backoff;
use crate::transport::{
    Addr, AtomicOp, RemoteOpCounter, RemoteOpKind, RemoteOps, SegmentId, TransportError,
};
use ::mpi::ffi;
use server::{
    COMPARE_EXCHANGE, GET, HEADER, PUT, REPLY, REQUEST, Server, apply, atomic_header, fatal,
};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A request in flight: its send, the receive of its reply, and the request bytes that
/// MPI reads until the send completes.
struct InFlight {
    reqs: [ffi::MPI_Request; 2],
    _bytes: Vec<u8>,
}
// SAFETY: MPI requests are handles valid in every thread (MPI_THREAD_MULTIPLE is required
// for this mode); the bytes are owned.
unsafe impl Send for InFlight {}

/// One operation on `pe`: its header and payload, and where its reply goes.
#[derive(Clone, Copy)]
struct Request<'a> {
    pe: usize,
    header: [u64; 5],
    payload: &'a [u8],
    reply: *mut u8,
    reply_len: usize,
}

/// The one-sided operations of a transport in message mode. See the module docs.
pub(super) struct MsgRma {
    shared: Arc<Server>,
    size: usize,
    /// Non-blocking operations awaiting the next `quiet`.
    pending: Mutex<Vec<InFlight>>,
    thread: Option<JoinHandle<()>>,
    /// How long a wait for another rank may last before the run ends (`None`: forever).
    patience: Option<Duration>,
    /// The requests this rank sent, by kind.
    sent: RemoteOpCounter,
}

impl MsgRma {
    /// Starts the server thread on a duplicate of `comm`. Collective; needs
    /// `MPI_THREAD_MULTIPLE` (the server calls MPI beside the PE's threads).
    pub(super) fn start(
        comm: ffi::MPI_Comm,
        rank: usize,
        size: usize,
        max_segments: usize,
    ) -> Result<MsgRma, TransportError> {
        let patience = patience()?;
        let mut dup = ffi::MPI_Comm(std::ptr::null_mut());
        // SAFETY: `comm` is a valid communicator; collective over it, before any thread
        // of this transport exists.
        unsafe {
            check(ffi::MPI_Comm_dup(comm, &mut dup), || "MPI_Comm_dup".into())?;
            check(
                ffi::MPI_Comm_set_errhandler(dup, ffi::RSMPI_ERRORS_RETURN),
                || "MPI_Comm_set_errhandler".into(),
            )?;
        }
        let shared = Arc::new(Server {
            comm: H(dup),
            rank,
            blocks: (0..max_segments).map(|_| OnceLock::new()).collect(),
            serving: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let server = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rhizome-mpi-rma".into())
            .spawn(move || server.run())
            .map_err(|e| TransportError::Other(format!("cannot start the RMA server: {e}")))?;
        Ok(MsgRma {
            shared,
            size,
            pending: Mutex::new(Vec::new()),
            thread: Some(thread),
            patience,
            sent: RemoteOpCounter::default(),
        })
    }

    /// Makes this rank's block of segment `id` (the caller agreed on the size and
    /// barriers afterwards, so no request reaches a block before it exists).
    pub(super) fn alloc(&self, id: SegmentId, bytes: usize) {
        let words = bytes.div_ceil(8).max(1);
        let block = (0..words).map(|_| AtomicU64::new(0)).collect();
        let _ = self.shared.blocks[id as usize].set((bytes, block));
    }

    /// This rank's block of `segment`, if it exists: the server applies every rank's
    /// operations to it with native atomics and copies.
    pub(super) fn direct(&self, segment: SegmentId) -> Option<&[AtomicU64]> {
        self.shared
            .blocks
            .get(segment as usize)?
            .get()
            .map(|b| &b.1[..])
    }

    /// Length in bytes of a segment, `None` if it does not exist.
    pub(super) fn segment_len(&self, segment: SegmentId) -> Option<usize> {
        self.shared.blocks.get(segment as usize)?.get().map(|b| b.0)
    }

    /// Bounds (and, for an atomic, alignment) check of an access.
    fn check(&self, at: Addr, len: usize, word: bool) -> Result<(), TransportError> {
        if word {
            crate::transport::check_word(at)?;
        }
        let seg_len = self.segment_len(at.segment);
        let max = c_int::MAX as usize - HEADER;
        crate::transport::check_access(at, len, self.size, seg_len, max)
    }

    /// A get of `len` bytes into `dst`, complete now (`blocking`) or at the next `quiet`.
    ///
    /// # Safety
    /// `dst` must stay valid for writes of `len` bytes until the operation is complete.
    pub(super) unsafe fn get(
        &self,
        lock: &super::MpiLock,
        at: Addr,
        dst: *mut u8,
        len: usize,
        blocking: bool,
    ) -> Result<(), TransportError> {
        self.check(at, len, false)?;
        let header = [GET, at.segment as u64, at.offset as u64, len as u64, 0];
        let req = Request {
            pe: at.pe,
            header,
            payload: &[],
            reply: dst,
            reply_len: len,
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.op(req, blocking, lock) }
    }

    /// A put of `src` (copied before this returns), complete now or at the next `quiet`.
    pub(super) fn put(
        &self,
        lock: &super::MpiLock,
        at: Addr,
        src: &[u8],
        blocking: bool,
    ) -> Result<(), TransportError> {
        self.check(at, src.len(), false)?;
        let header = [PUT, at.segment as u64, at.offset as u64, 0, 0];
        let req = Request {
            pe: at.pe,
            header,
            payload: src,
            reply: std::ptr::null_mut(),
            reply_len: 0,
        };
        // SAFETY: a put's reply is empty: nothing is written through the null pointer.
        unsafe { self.op(req, blocking, lock) }
    }

    /// An atomic whose previous value goes to `result`, now or at the next `quiet`.
    ///
    /// # Safety
    /// `result` must stay valid for a write until the operation is complete.
    pub(super) unsafe fn atomic(
        &self,
        lock: &super::MpiLock,
        at: Addr,
        op: AtomicOp,
        result: *mut u64,
        blocking: bool,
    ) -> Result<(), TransportError> {
        self.check(at, 8, true)?;
        let header = atomic_header(at.segment, at.offset, op);
        let req = Request {
            pe: at.pe,
            header,
            payload: &[],
            reply: result.cast(),
            reply_len: 8,
        };
        // SAFETY: forwarded from the caller; `result` holds the reply's 8 bytes.
        unsafe { self.op(req, blocking, lock) }
    }

    fn block(&self, segment: SegmentId) -> &[AtomicU64] {
        &self.shared.blocks[segment as usize]
            .get()
            .expect("the caller checked that the segment exists")
            .1
    }

    /// Sends a request to `pe` and posts the receive of its reply into `reply`.
    ///
    /// # Safety
    /// `reply` must stay valid for `reply_len` bytes until the returned operation is
    /// complete.
    unsafe fn issue(
        &self,
        req: &Request<'_>,
        lock: &super::MpiLock,
    ) -> Result<InFlight, TransportError> {
        let Request {
            pe,
            header,
            payload,
            reply,
            reply_len,
        } = *req;
        let mut bytes = Vec::with_capacity(HEADER + payload.len());
        for w in header {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        bytes.extend_from_slice(payload);
        let too_big = |n: usize| {
            TransportError::Other(format!(
                "a one-sided transfer of {n} bytes exceeds MPI's 2 GiB message limit"
            ))
        };
        let n = c_int::try_from(bytes.len()).map_err(|_| too_big(bytes.len()))?;
        let r = c_int::try_from(reply_len).map_err(|_| too_big(reply_len))?;
        let mut reqs = [ffi::MPI_Request(std::ptr::null_mut()); 2];
        // The lock orders this rank's (receive, request) pairs: see "Matching".
        let _l = lock.lock();
        let (comm, peer, b) = (self.shared.comm.0, pe as c_int, byte_type());
        let (rbuf, sbuf) = (reply as *mut c_void, bytes.as_ptr() as *const c_void);
        // SAFETY: the caller keeps `reply` valid until completion; `bytes` moves into the
        // returned `InFlight`, which lives until both requests complete (its heap storage
        // does not move); the communicator is valid; MPI is thread-safe.
        unsafe {
            let rc = ffi::MPI_Irecv(rbuf, r, b, peer, REPLY, comm, &mut reqs[1]);
            check(rc, || format!("MPI_Irecv (one-sided reply from PE {pe})"))?;
            let rc = ffi::MPI_Isend(sbuf, n, b, peer, REQUEST, comm, &mut reqs[0]);
            check(rc, || format!("MPI_Isend (one-sided request to PE {pe})"))?;
        }
        Ok(InFlight {
            reqs,
            _bytes: bytes,
        })
    }

    /// Performs `header` on `pe`: at once on this rank's own block, else by a round trip
    /// (`blocking`) or with the completion left to `quiet`.
    ///
    /// # Safety
    /// `reply` as in [`issue`](Self::issue); for a non-blocking operation it must stay
    /// valid until `quiet` returns.
    unsafe fn op(
        &self,
        req: Request<'_>,
        blocking: bool,
        lock: &super::MpiLock,
    ) -> Result<(), TransportError> {
        if req.pe == self.shared.rank {
            let block = self.block(req.header[1] as SegmentId);
            let out: &mut [u8] = if req.reply_len == 0 {
                &mut []
            } else {
                // SAFETY: the caller keeps `reply` valid for `reply_len` bytes.
                unsafe { std::slice::from_raw_parts_mut(req.reply, req.reply_len) }
            };
            apply(block, req.header, req.payload, out);
            return Ok(());
        }
        let kind = match req.header[0] {
            GET => RemoteOpKind::Get(req.reply_len),
            PUT => RemoteOpKind::Put,
            COMPARE_EXCHANGE => RemoteOpKind::CompareExchange,
            _ => RemoteOpKind::OtherAtomic,
        };
        self.sent.count(kind, blocking);
        // SAFETY: forwarded from the caller.
        let mut op = unsafe { self.issue(&req, lock)? };
        if blocking {
            self.wait_all(&mut op.reqs)
        } else {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(op);
            Ok(())
        }
    }

    /// The requests this rank has sent to others so far, by kind.
    pub(super) fn remote_ops(&self) -> RemoteOps {
        self.sent.snapshot()
    }

    /// Completes every non-blocking operation issued so far by this rank.
    pub(super) fn quiet(&self) -> Result<(), TransportError> {
        let ops = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        let mut reqs: Vec<ffi::MPI_Request> = ops.iter().flat_map(|o| o.reqs).collect();
        self.wait_all(&mut reqs)
    }

    /// Answers the requests that have arrived, unless another thread is answering;
    /// whether any was answered. Threads that wait for something call this, so requests
    /// are answered without waiting for the server thread to get a core.
    pub(super) fn serve(&self) -> bool {
        self.shared.serve()
    }

    /// Waits for `reqs`, testing and answering requests rather than blocking inside MPI,
    /// so that the PE's other threads (and other processes on a small machine) get the
    /// core, and two ranks waiting for each other's answers both answer.
    fn wait_all(&self, reqs: &mut [ffi::MPI_Request]) -> Result<(), TransportError> {
        if reqs.is_empty() {
            return Ok(());
        }
        let n = reqs.len() as c_int;
        let mut backoff = Backoff::new(64);
        let since = Instant::now();
        for round in 0u64.. {
            let mut done: c_int = 0;
            // SAFETY: active (or completed, then null) requests owned by the caller; MPI
            // is thread-safe.
            let rc = unsafe {
                ffi::MPI_Testall(n, reqs.as_mut_ptr(), &mut done, ffi::RSMPI_STATUSES_IGNORE)
            };
            check(rc, || "one-sided operation over messages".into())?;
            if done != 0 {
                return Ok(());
            }
            if self.serve() {
                backoff.reset();
            } else {
                backoff.snooze();
            }
            if round % 1024 == 1023 {
                self.check_patience(since, "a one-sided operation");
            }
        }
        unreachable!("the loop above ends by returning")
    }

    /// Ends the run (one line, `MPI_Abort`) if a wait for `what` that began at `since`
    /// has lasted longer than `RHIZOME_MPI_TIMEOUT`. Only replies are timed: a target's
    /// server answers whatever its PE computes, so a reply that does not come means a dead
    /// rank or link, and waiting longer would be a hang (collectives are not timed: a
    /// rank may compute for long before it joins one).
    fn check_patience(&self, since: Instant, what: &str) {
        if let Some(limit) = self.patience
            && since.elapsed() > limit
        {
            let secs = limit.as_secs();
            fatal(
                self.shared.rank,
                &format!(
                    "no answer from another rank for {secs} s while waiting for {what} (is the network between the ranks down? RHIZOME_MPI_TIMEOUT sets the limit)"
                ),
            );
        }
    }

    /// Ends the server thread (every rank's operations are complete: the world ended
    /// with a barrier) and frees the communicator.
    pub(super) fn finish(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The server thread has ended and no other thread of this PE calls the transport
        // any more (it is being dropped): the communicator can go.
        let mut comm = self.shared.comm;
        // SAFETY: as above.
        unsafe { ffi::MPI_Comm_free(&mut comm.0) };
    }
}

/// `RHIZOME_MPI_TIMEOUT`: seconds a wait for another rank may last, 0 for no limit;
/// 120 by default.
fn patience() -> Result<Option<Duration>, TransportError> {
    let secs = match std::env::var("RHIZOME_MPI_TIMEOUT") {
        Err(_) => 120,
        Ok(v) => v.trim().parse::<u64>().map_err(|_| {
            TransportError::Other(format!(
                "RHIZOME_MPI_TIMEOUT={v:?} is not a whole number of seconds"
            ))
        })?,
    };
    Ok((secs > 0).then(|| Duration::from_secs(secs)))
}
