//! Raw-MPI baselines of the communication benchmarks (cargo feature `mpi`): the same
//! operations as the runtime's, written directly against MPI with no runtime around them,
//! so that `rhizome bench comm` can put each figure next to what MPI itself does on the
//! same machine, in the same run.
//!
//! [`RawMpi`] owns a communicator and an RMA window of its own, made collectively inside
//! a [`World::run`](rhizome::World::run) on the `mpi` transport (which has initialised
//! MPI). Each loop runs `iters` operations; time it from the outside.

use mpi::ffi;
use rhizome::Ctx;
use std::ffi::{c_int, c_void};

/// Bytes of the window that the get and put loops use (offsets step by 8 within the
/// first 2 KiB, transfers are up to 2 KiB long).
const BYTES: usize = 4096;
/// The word of the atomics loops, after the bytes (so puts do not disturb it).
const WORD_AT: usize = BYTES;
/// Tag of the point-to-point baselines on the private communicator.
const TAG: c_int = 2;

/// A private communicator and window for the raw-MPI loops. Make and drop it on every PE
/// at the same point of the program (both are collective).
pub struct RawMpi {
    comm: ffi::MPI_Comm,
    win: ffi::MPI_Win,
    rank: usize,
    size: usize,
}

/// Panics with the name of the MPI call that failed: a baseline that cannot run has no
/// figure to report.
fn check(rc: c_int, what: &str) {
    assert!(
        rc == 0,
        "raw MPI baseline: {what} failed with error code {rc}"
    );
}

fn u64_type() -> ffi::MPI_Datatype {
    // SAFETY: reading a constant handle that the MPI binding initialises statically.
    unsafe { ffi::RSMPI_UINT64_T }
}

fn byte_type() -> ffi::MPI_Datatype {
    // SAFETY: as in `u64_type`.
    unsafe { ffi::RSMPI_UINT8_T }
}

fn op_sum() -> ffi::MPI_Op {
    // SAFETY: as in `u64_type`.
    unsafe { ffi::RSMPI_SUM }
}

impl RawMpi {
    /// Collective: the baselines' communicator and window, or `None` unless the run is on
    /// the `mpi` transport with MPI at `MPI_THREAD_MULTIPLE` (the runtime's threads may
    /// call MPI while a loop runs).
    pub fn new(ctx: &Ctx) -> Option<RawMpi> {
        if ctx.transport_name() != "mpi" {
            return None;
        }
        let (mut init, mut provided) = (0, 0);
        // SAFETY: MPI_Initialized may be called at any time; MPI_Query_thread once MPI is
        // initialised (the `mpi` transport of this run did it); valid out-pointers.
        unsafe {
            ffi::MPI_Initialized(&mut init);
            if init == 0 {
                return None;
            }
            ffi::MPI_Query_thread(&mut provided);
            if provided < ffi::RSMPI_THREAD_MULTIPLE {
                return None;
            }
        }
        let mut comm = ffi::MPI_Comm(std::ptr::null_mut());
        let mut win = ffi::MPI_Win(std::ptr::null_mut());
        let mut base: *mut u8 = std::ptr::null_mut();
        let (mut rank, mut size) = (0, 0);
        // SAFETY: MPI is initialised at MPI_THREAD_MULTIPLE; every PE makes these
        // collective calls in the same order; `base` receives memory owned by the window,
        // zeroed here before any other rank can reach it (the barrier below).
        unsafe {
            check(
                ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut comm),
                "MPI_Comm_dup",
            );
            check(ffi::MPI_Comm_rank(comm, &mut rank), "MPI_Comm_rank");
            check(ffi::MPI_Comm_size(comm, &mut size), "MPI_Comm_size");
            check(
                ffi::MPI_Win_allocate(
                    (BYTES + 8) as ffi::MPI_Aint,
                    1,
                    ffi::RSMPI_INFO_NULL,
                    comm,
                    (&raw mut base).cast(),
                    &mut win,
                ),
                "MPI_Win_allocate",
            );
            std::ptr::write_bytes(base, 0, BYTES + 8);
            check(
                ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win),
                "MPI_Win_lock_all",
            );
            check(ffi::MPI_Win_sync(win), "MPI_Win_sync");
            check(ffi::MPI_Barrier(comm), "MPI_Barrier");
        }
        Some(RawMpi {
            comm,
            win,
            rank: rank as usize,
            size: size as usize,
        })
    }

    /// `iters` times: `MPI_Get` (or with `put`, `MPI_Put`) of `len` bytes (at most
    /// 2 KiB) at offsets stepping by 8 within the first 2 KiB of `target`, then
    /// `MPI_Win_flush`.
    pub fn get_or_put(&self, target: usize, len: usize, iters: u64, put: bool) {
        assert!(len <= BYTES / 2, "transfers of at most {} bytes", BYTES / 2);
        let mut buf = vec![7u8; len];
        for i in 0..iters {
            let (t, offset) = (target as c_int, ((i as usize * 8) % 2048) as ffi::MPI_Aint);
            let n = len as c_int;
            // SAFETY: `buf` outlives the flush; the range lies within the window, whose
            // size every rank allocated alike.
            let rc = unsafe {
                if put {
                    let src = buf.as_ptr() as *const c_void;
                    ffi::MPI_Put(src, n, byte_type(), t, offset, n, byte_type(), self.win)
                } else {
                    let dst = buf.as_mut_ptr() as *mut c_void;
                    ffi::MPI_Get(dst, n, byte_type(), t, offset, n, byte_type(), self.win)
                }
            };
            check(rc, if put { "MPI_Put" } else { "MPI_Get" });
            self.flush(target);
        }
        std::hint::black_box(&buf);
    }

    /// `iters` times: `MPI_Compare_and_swap` (i → i+1) of the word of `target`, then flush.
    pub fn compare_exchange(&self, target: usize, iters: u64) {
        let mut result = 0u64;
        for i in 0..iters {
            let (cmp, new) = (i, i + 1);
            // SAFETY: locals outlive the flush; the word is in the window and aligned.
            let rc = unsafe {
                ffi::MPI_Compare_and_swap(
                    (&raw const new).cast(),
                    (&raw const cmp).cast(),
                    (&raw mut result).cast(),
                    u64_type(),
                    target as c_int,
                    WORD_AT as ffi::MPI_Aint,
                    self.win,
                )
            };
            check(rc, "MPI_Compare_and_swap");
            self.flush(target);
        }
        std::hint::black_box(result);
    }

    /// `iters` times: `MPI_Fetch_and_op(MPI_SUM, 1)` on the word of `target`, then flush.
    pub fn fetch_add(&self, target: usize, iters: u64) {
        let (one, mut result) = (1u64, 0u64);
        let (t, at) = (target as c_int, WORD_AT as ffi::MPI_Aint);
        for _ in 0..iters {
            let (src, dst) = ((&raw const one).cast(), (&raw mut result).cast());
            // SAFETY: locals outlive the flush; the word is in the window and aligned.
            let rc =
                unsafe { ffi::MPI_Fetch_and_op(src, dst, u64_type(), t, at, op_sum(), self.win) };
            check(rc, "MPI_Fetch_and_op");
            self.flush(target);
        }
        std::hint::black_box(result);
    }

    fn flush(&self, target: usize) {
        // SAFETY: the window is valid and locked for all ranks while `self` lives.
        check(
            unsafe { ffi::MPI_Win_flush(target as c_int, self.win) },
            "MPI_Win_flush",
        );
    }

    /// Collective over all ranks: rank 0 sends an 8-byte message to `peer`, which answers
    /// with one, `iters` times (`MPI_Send`/`MPI_Recv`); other ranks return at once.
    pub fn ping_pong(&self, peer: usize, iters: u64) {
        if peer == 0 || (self.rank != 0 && self.rank != peer) {
            return;
        }
        let mut v = 0u64;
        let other = if self.rank == 0 { peer } else { 0 } as c_int;
        let (ty, comm) = (u64_type(), self.comm);
        let send = |v: &u64| {
            let buf = (v as *const u64).cast();
            // SAFETY: `v` is a valid 8-byte buffer for the call's duration.
            check(
                unsafe { ffi::MPI_Send(buf, 1, ty, other, TAG, comm) },
                "MPI_Send",
            );
        };
        let recv = |v: &mut u64| {
            let buf = (v as *mut u64).cast();
            // SAFETY: `v` is a valid, writable 8-byte buffer for the call's duration;
            // MPI_STATUS_IGNORE is a constant handle initialised by the binding.
            let rc =
                unsafe { ffi::MPI_Recv(buf, 1, ty, other, TAG, comm, ffi::RSMPI_STATUS_IGNORE) };
            check(rc, "MPI_Recv");
        };
        for _ in 0..iters {
            if self.rank == 0 {
                send(&v);
                recv(&mut v);
            } else {
                recv(&mut v);
                v += 1;
                send(&v);
            }
        }
    }

    /// Collective: hand-aggregated one-way messages. Every rank packs `per_rank` 8-byte
    /// values (alternately 0 and 1) into `buf_bytes`-byte buffers sent with `MPI_Isend` to
    /// the next rank, and receives and sums the previous rank's; returns the sum received.
    pub fn aggregated(&self, per_rank: u64, buf_bytes: usize) -> u64 {
        let n = self.size;
        let (dest, src) = ((self.rank + 1) % n, (self.rank + n - 1) % n);
        let per_buf = (buf_bytes / 8).max(1) as u64;
        let buffers = per_rank.div_ceil(per_buf);
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
                    // SAFETY: an active send request of this loop.
                    let rc =
                        unsafe { ffi::MPI_Test(&mut reqs[k], &mut flag, ffi::RSMPI_STATUS_IGNORE) };
                    check(rc, "MPI_Test");
                    active[k] = flag == 0;
                }
                if !active[k] {
                    let first = sent * per_buf;
                    let last = (first + per_buf).min(per_rank);
                    out[k].clear();
                    out[k].extend((first..last).map(|i| i & 1));
                    // SAFETY: `out[k]` is not touched until its request completes.
                    let rc = unsafe {
                        ffi::MPI_Isend(
                            out[k].as_ptr().cast(),
                            out[k].len() as c_int,
                            u64_type(),
                            dest as c_int,
                            TAG,
                            self.comm,
                            &mut reqs[k],
                        )
                    };
                    check(rc, "MPI_Isend");
                    active[k] = true;
                    sent += 1;
                    k ^= 1;
                }
            }
            if received < buffers {
                let mut flag: c_int = 0;
                // SAFETY: an all-zero MPI_Status is a valid value of this C struct.
                let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
                // SAFETY: valid out-pointers.
                let rc = unsafe {
                    ffi::MPI_Iprobe(src as c_int, TAG, self.comm, &mut flag, &mut status)
                };
                check(rc, "MPI_Iprobe");
                if flag != 0 {
                    let mut count: c_int = 0;
                    // SAFETY: `inb` has room for a whole buffer; `status` is the probe's.
                    unsafe {
                        check(
                            ffi::MPI_Get_count(&status, u64_type(), &mut count),
                            "MPI_Get_count",
                        );
                        check(
                            ffi::MPI_Recv(
                                inb.as_mut_ptr().cast(),
                                per_buf as c_int,
                                u64_type(),
                                src as c_int,
                                TAG,
                                self.comm,
                                ffi::RSMPI_STATUS_IGNORE,
                            ),
                            "MPI_Recv",
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
                check(
                    unsafe { ffi::MPI_Wait(r, ffi::RSMPI_STATUS_IGNORE) },
                    "MPI_Wait",
                );
            }
        }
        sum
    }

    /// `iters` times `MPI_Barrier`.
    pub fn barrier(&self, iters: u64) {
        for _ in 0..iters {
            // SAFETY: a valid communicator.
            check(unsafe { ffi::MPI_Barrier(self.comm) }, "MPI_Barrier");
        }
    }

    /// `iters` times `MPI_Allreduce` of one u64 with `MPI_SUM`.
    pub fn allreduce(&self, iters: u64) {
        let mut out = 0u64;
        for i in 0..iters {
            let (src, dst) = ((&raw const i).cast(), (&raw mut out).cast());
            // SAFETY: one-element local buffers.
            let rc = unsafe { ffi::MPI_Allreduce(src, dst, 1, u64_type(), op_sum(), self.comm) };
            check(rc, "MPI_Allreduce");
        }
        std::hint::black_box(out);
    }
}

impl Drop for RawMpi {
    fn drop(&mut self) {
        // SAFETY: collective on every PE (see the type's docs); the window was locked
        // with MPI_Win_lock_all and every loop flushed its operations.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
            ffi::MPI_Comm_free(&mut self.comm);
        }
    }
}
