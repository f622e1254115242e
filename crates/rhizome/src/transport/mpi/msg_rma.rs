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

use super::raw::{H, byte_type, check};
use crate::backoff::Backoff;
use crate::transport::{AtomicOp, SegmentId, TransportError};
use ::mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const REQUEST: c_int = 11;
const REPLY: c_int = 12;
/// Bytes of a request header: kind, segment, offset, two operands.
const HEADER: usize = 5 * 8;

const GET: u64 = 0;
const PUT: u64 = 1;
const LOAD: u64 = 2;
const SWAP: u64 = 3;
const FETCH_ADD: u64 = 4;
const COMPARE_EXCHANGE: u64 = 5;

/// What the serving thread needs: the communicator, this rank, its blocks, and who serves.
struct Server {
    comm: H<ffi::MPI_Comm>,
    rank: usize,
    blocks: Blocks,
    /// Held by the one thread answering requests: replies to one source leave in the
    /// order of its requests only if one thread at a time answers.
    serving: AtomicBool,
    stop: AtomicBool,
}

/// A segment's length in bytes and this rank's block of it.
type Block = (usize, Box<[AtomicU64]>);
/// The blocks of this rank, one per segment, shared with the server thread.
type Blocks = Arc<[OnceLock<Block>]>;

/// A request in flight: its send, the receive of its reply, and the request bytes that
/// MPI reads until the send completes.
struct InFlight {
    reqs: [ffi::MPI_Request; 2],
    _bytes: Vec<u8>,
}
// SAFETY: MPI requests are handles valid in every thread (MPI_THREAD_MULTIPLE is required
// for this mode); the bytes are owned.
unsafe impl Send for InFlight {}

/// The one-sided operations of a transport in message mode. See the module docs.
pub(super) struct MsgRma {
    shared: Arc<Server>,
    size: usize,
    /// Non-blocking operations awaiting the next `quiet`.
    pending: Mutex<Vec<InFlight>>,
    thread: Option<JoinHandle<()>>,
    /// How long a wait for another rank may last before the run ends (`None`: forever).
    patience: Option<Duration>,
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
        })
    }

    /// Makes this rank's block of segment `id` (the caller agreed on the size and
    /// barriers afterwards, so no request reaches a block before it exists).
    pub(super) fn alloc(&self, id: SegmentId, bytes: usize) {
        let words = bytes.div_ceil(8).max(1);
        let block = (0..words).map(|_| AtomicU64::new(0)).collect();
        let _ = self.shared.blocks[id as usize].set((bytes, block));
    }

    /// Length in bytes of a segment, `None` if it does not exist.
    pub(super) fn segment_len(&self, segment: SegmentId) -> Option<usize> {
        self.shared.blocks.get(segment as usize)?.get().map(|b| b.0)
    }

    /// Bounds (and, for an atomic, alignment) check of an access.
    fn check(
        &self,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        len: usize,
        word: bool,
    ) -> Result<(), TransportError> {
        if word {
            crate::transport::check_word(pe, segment, offset)?;
        }
        let seg_len = self.segment_len(segment);
        let max = c_int::MAX as usize - HEADER;
        crate::transport::check_access(pe, self.size, segment, offset, len, seg_len, max)
    }

    /// A get of `len` bytes into `dst`, complete now (`blocking`) or at the next `quiet`.
    ///
    /// # Safety
    /// `dst` must stay valid for writes of `len` bytes until the operation is complete.
    #[allow(clippy::too_many_arguments, reason = "the get's parts and the lock")]
    pub(super) unsafe fn get(
        &self,
        lock: &super::MpiLock,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        dst: *mut u8,
        len: usize,
        blocking: bool,
    ) -> Result<(), TransportError> {
        self.check(pe, segment, offset, len, false)?;
        let header = [GET, segment as u64, offset as u64, len as u64, 0];
        // SAFETY: forwarded from the caller.
        unsafe { self.op(pe, header, &[], dst, len, blocking, lock) }
    }

    /// A put of `src` (copied before this returns), complete now or at the next `quiet`.
    pub(super) fn put(
        &self,
        lock: &super::MpiLock,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        src: &[u8],
        blocking: bool,
    ) -> Result<(), TransportError> {
        self.check(pe, segment, offset, src.len(), false)?;
        let header = [PUT, segment as u64, offset as u64, 0, 0];
        // SAFETY: a put's reply is empty: nothing is written through the null pointer.
        unsafe { self.op(pe, header, src, std::ptr::null_mut(), 0, blocking, lock) }
    }

    /// An atomic whose previous value goes to `result`, now or at the next `quiet`.
    ///
    /// # Safety
    /// `result` must stay valid for a write until the operation is complete.
    #[allow(clippy::too_many_arguments, reason = "the atomic's parts and the lock")]
    pub(super) unsafe fn atomic(
        &self,
        lock: &super::MpiLock,
        pe: usize,
        segment: SegmentId,
        offset: usize,
        op: AtomicOp,
        result: *mut u64,
        blocking: bool,
    ) -> Result<(), TransportError> {
        self.check(pe, segment, offset, 8, true)?;
        let header = atomic_header(segment, offset, op);
        // SAFETY: forwarded from the caller; `result` holds the reply's 8 bytes.
        unsafe { self.op(pe, header, &[], result.cast(), 8, blocking, lock) }
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
        pe: usize,
        header: [u64; 5],
        payload: &[u8],
        reply: *mut u8,
        reply_len: usize,
        lock: &super::MpiLock,
    ) -> Result<InFlight, TransportError> {
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
        // SAFETY: the caller keeps `reply` valid until completion; `bytes` moves into the
        // returned `InFlight`, which lives until both requests complete (its heap storage
        // does not move); the communicator is valid; MPI is thread-safe.
        unsafe {
            check(
                ffi::MPI_Irecv(
                    reply as *mut c_void,
                    r,
                    byte_type(),
                    pe as c_int,
                    REPLY,
                    self.shared.comm.0,
                    &mut reqs[1],
                ),
                || format!("MPI_Irecv (one-sided reply from PE {pe})"),
            )?;
            check(
                ffi::MPI_Isend(
                    bytes.as_ptr() as *const c_void,
                    n,
                    byte_type(),
                    pe as c_int,
                    REQUEST,
                    self.shared.comm.0,
                    &mut reqs[0],
                ),
                || format!("MPI_Isend (one-sided request to PE {pe})"),
            )?;
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
    #[allow(clippy::too_many_arguments, reason = "one request's parts")]
    unsafe fn op(
        &self,
        pe: usize,
        header: [u64; 5],
        payload: &[u8],
        reply: *mut u8,
        reply_len: usize,
        blocking: bool,
        lock: &super::MpiLock,
    ) -> Result<(), TransportError> {
        if pe == self.shared.rank {
            let block = self.block(header[1] as SegmentId);
            let out: &mut [u8] = if reply_len == 0 {
                &mut []
            } else {
                // SAFETY: the caller keeps `reply` valid for `reply_len` bytes.
                unsafe { std::slice::from_raw_parts_mut(reply, reply_len) }
            };
            apply(block, header, payload, out);
            return Ok(());
        }
        // SAFETY: forwarded from the caller.
        let mut op = unsafe { self.issue(pe, header, payload, reply, reply_len, lock)? };
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

/// The header of an atomic.
fn atomic_header(segment: SegmentId, offset: usize, op: AtomicOp) -> [u64; 5] {
    let (kind, a, b) = match op {
        AtomicOp::Load => (LOAD, 0, 0),
        AtomicOp::Store(v) | AtomicOp::Swap(v) => (SWAP, v, 0),
        AtomicOp::FetchAdd(v) => (FETCH_ADD, v, 0),
        AtomicOp::CompareExchange { current, new } => (COMPARE_EXCHANGE, current, new),
    };
    [kind, segment as u64, offset as u64, a, b]
}

/// Applies a request to this rank's `block`, writing the reply into `out`.
fn apply(block: &[AtomicU64], header: [u64; 5], payload: &[u8], out: &mut [u8]) {
    let [kind, _, offset, a, b] = header;
    let offset = offset as usize;
    let op = match kind {
        GET => return crate::transport::read_bytes(block, offset, out),
        PUT => return crate::transport::write_bytes(block, offset, payload),
        LOAD => AtomicOp::Load,
        SWAP => AtomicOp::Swap(a),
        FETCH_ADD => AtomicOp::FetchAdd(a),
        _ => AtomicOp::CompareExchange { current: a, new: b },
    };
    let prev = op.apply_to(&block[offset / 8]);
    out.copy_from_slice(&prev.to_le_bytes());
}

impl Server {
    /// The server thread: answers requests until `stop`, napping when none came for a
    /// while.
    fn run(&self) {
        let mut backoff = Backoff::with_nap(64, 4096, Duration::from_micros(20));
        while !self.stop.load(Ordering::Acquire) {
            if self.serve() {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
    }

    /// See [`MsgRma::serve`].
    fn serve(&self) -> bool {
        if self.serving.swap(true, Ordering::Acquire) {
            return false;
        }
        let mut any = false;
        loop {
            match serve_one(self.comm, &self.blocks) {
                Ok(true) => any = true,
                Ok(false) => break,
                Err(e) => fatal(self.rank, &format!("one-sided server: {e}")),
            }
        }
        self.serving.store(false, Ordering::Release);
        any
    }
}

/// Receives and answers one request if one has arrived.
fn serve_one(comm: H<ffi::MPI_Comm>, blocks: &Blocks) -> Result<bool, TransportError> {
    let (mut flag, mut count): (c_int, c_int) = (0, 0);
    let mut msg = ffi::MPI_Message(std::ptr::null_mut());
    // SAFETY: MPI_Status is plain data that MPI fills in.
    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointers and communicator; MPI is thread-safe.
    unsafe {
        let rc = ffi::MPI_Improbe(
            ffi::RSMPI_ANY_SOURCE,
            REQUEST,
            comm.0,
            &mut flag,
            &mut msg,
            &mut status,
        );
        check(rc, || "MPI_Improbe (one-sided requests)".into())?;
        if flag == 0 {
            return Ok(false);
        }
        check(ffi::MPI_Get_count(&status, byte_type(), &mut count), || {
            "MPI_Get_count".into()
        })?;
    }
    let count = count.max(0) as usize;
    let mut buf: Vec<u8> = Vec::with_capacity(count);
    // SAFETY: `buf` has room for the `count` bytes of the probed message, which MPI_Mrecv
    // writes before `set_len` exposes them.
    unsafe {
        check(
            ffi::MPI_Mrecv(
                buf.as_mut_ptr() as *mut c_void,
                count as c_int,
                byte_type(),
                &mut msg,
                ffi::RSMPI_STATUS_IGNORE,
            ),
            || "MPI_Mrecv (one-sided request)".into(),
        )?;
        buf.set_len(count);
    }
    let source = status.MPI_SOURCE;
    let (header, payload) = parse(&buf).ok_or_else(|| {
        TransportError::Other(format!("malformed one-sided request from rank {source}"))
    })?;
    let block = blocks
        .get(header[1] as usize)
        .and_then(|b| b.get())
        .map(|b| &b.1)
        .ok_or_else(|| {
            TransportError::Other(format!(
                "one-sided request from rank {source} for segment {} that does not exist here",
                header[1]
            ))
        })?;
    let reply_len = match header[0] {
        GET => header[3] as usize,
        PUT => 0,
        _ => 8,
    };
    let end = header[2] as usize + reply_len.max(payload.len());
    if end > block.len() * 8 || (header[0] > PUT && header[2] % 8 != 0) {
        return Err(TransportError::Other(format!(
            "one-sided request from rank {source} outside segment {}",
            header[1]
        )));
    }
    let mut reply = vec![0u8; reply_len];
    apply(block, header, payload, &mut reply);
    // SAFETY: `reply` holds `reply_len` bytes and outlives the blocking send; the
    // origin posted the matching receive before sending the request.
    let rc = unsafe {
        ffi::MPI_Send(
            reply.as_ptr() as *const c_void,
            reply_len as c_int,
            byte_type(),
            source,
            REPLY,
            comm.0,
        )
    };
    check(rc, || {
        format!("MPI_Send (one-sided reply to rank {source})")
    })?;
    Ok(true)
}

/// Splits a request into its header and payload.
fn parse(buf: &[u8]) -> Option<([u64; 5], &[u8])> {
    let (head, payload) = buf.split_at_checked(HEADER)?;
    let mut header = [0u64; 5];
    for (w, b) in header.iter_mut().zip(head.chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().ok()?);
    }
    (header[0] <= COMPARE_EXCHANGE).then_some((header, payload))
}

/// A server thread that cannot go on ends the run: one line, then `MPI_Abort`.
fn fatal(rank: usize, reason: &str) -> ! {
    // One write for the whole line, so that mpirun does not interleave other output.
    let line = format!("rhizome: run aborted on rank {rank}: {reason}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    // SAFETY: MPI_Abort ends every process of MPI_COMM_WORLD; it may be called from any
    // thread under MPI_THREAD_MULTIPLE.
    unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 1) };
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_through_parse() {
        let ops = [
            AtomicOp::Load,
            AtomicOp::Swap(7),
            AtomicOp::FetchAdd(3),
            AtomicOp::CompareExchange { current: 1, new: 2 },
        ];
        for op in ops {
            let h = atomic_header(4, 16, op);
            let mut bytes: Vec<u8> = h.iter().flat_map(|w| w.to_le_bytes()).collect();
            bytes.extend_from_slice(b"xy");
            let (back, payload) = parse(&bytes).expect("well-formed");
            assert_eq!(back, h);
            assert_eq!(payload, b"xy");
        }
        assert!(parse(&[0u8; HEADER - 1]).is_none(), "short header");
        let mut bad = [0u8; HEADER];
        bad[0] = 99;
        assert!(parse(&bad).is_none(), "unknown kind");
    }

    #[test]
    fn apply_matches_the_operations() {
        let block: Box<[AtomicU64]> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let mut out = [0u8; 8];
        apply(&block, [PUT, 0, 8, 0, 0], &5u64.to_le_bytes(), &mut []);
        apply(
            &block,
            atomic_header(0, 8, AtomicOp::FetchAdd(2)),
            &[],
            &mut out,
        );
        assert_eq!(u64::from_le_bytes(out), 5);
        let cas = AtomicOp::CompareExchange { current: 7, new: 9 };
        apply(&block, atomic_header(0, 8, cas), &[], &mut out);
        assert_eq!(
            u64::from_le_bytes(out),
            7,
            "the exchange saw 7 and stored 9"
        );
        apply(&block, [GET, 0, 8, 8, 0], &[], &mut out);
        assert_eq!(u64::from_le_bytes(out), 9);
    }
}
