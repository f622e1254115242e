//! The target side of one-sided operations over messages: the request format, and the
//! answering of requests by whichever thread of the rank holds the serving flag (the
//! server thread, or a thread that waits for something anyway).

use super::super::raw::{H, byte_type, check, receive_probed};
use crate::backoff::Backoff;
use crate::transport::{AtomicOp, SegmentId, TransportError};
use ::mpi::ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub(super) const REQUEST: c_int = 11;
pub(super) const REPLY: c_int = 12;
/// Bytes of a request header: kind, segment, offset, two operands.
pub(super) const HEADER: usize = 5 * 8;

pub(super) const GET: u64 = 0;
pub(super) const PUT: u64 = 1;
pub(super) const LOAD: u64 = 2;
pub(super) const SWAP: u64 = 3;
pub(super) const FETCH_ADD: u64 = 4;
pub(super) const COMPARE_EXCHANGE: u64 = 5;

/// What the serving thread needs: the communicator, this rank, its blocks, and who serves.
pub(super) struct Server {
    pub(super) comm: H<ffi::MPI_Comm>,
    pub(super) rank: usize,
    pub(super) blocks: Blocks,
    /// Held by the one thread answering requests: replies to one source leave in the
    /// order of its requests only if one thread at a time answers.
    pub(super) serving: AtomicBool,
    pub(super) stop: AtomicBool,
}

/// A segment's length in bytes and this rank's block of it.
pub(super) type Block = (usize, Box<[AtomicU64]>);
/// The blocks of this rank, one per segment, shared with the server thread.
pub(super) type Blocks = Arc<[OnceLock<Block>]>;

/// The header of an atomic.
pub(super) fn atomic_header(segment: SegmentId, offset: usize, op: AtomicOp) -> [u64; 5] {
    let (kind, a, b) = match op {
        AtomicOp::Load => (LOAD, 0, 0),
        AtomicOp::Store(v) | AtomicOp::Swap(v) => (SWAP, v, 0),
        AtomicOp::FetchAdd(v) => (FETCH_ADD, v, 0),
        AtomicOp::CompareExchange { current, new } => (COMPARE_EXCHANGE, current, new),
    };
    [kind, segment as u64, offset as u64, a, b]
}

/// Applies a request to this rank's `block`, writing the reply into `out`.
pub(super) fn apply(block: &[AtomicU64], header: [u64; 5], payload: &[u8], out: &mut [u8]) {
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
    pub(super) fn run(&self) {
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
    pub(super) fn serve(&self) -> bool {
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
    // SAFETY: MPI is thread-safe in this mode.
    let Some((source, buf)) = (unsafe { receive_probed(comm, REQUEST, Vec::with_capacity)? })
    else {
        return Ok(false);
    };
    let source = source as c_int;
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
pub(super) fn fatal(rank: usize, reason: &str) -> ! {
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
