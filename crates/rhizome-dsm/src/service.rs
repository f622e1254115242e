//! The service thread of a PE: its main thread, while the application threads run.
//!
//! The runtime runs message handlers only on a PE's main thread, when it waits (`Ctx` is
//! not `Sync`), so that thread is the natural server: it answers other PEs' page, diff and
//! lock messages, and its own application threads' requests (faults, lock acquire and
//! release, barrier), in one loop. A request that only needs answers from handlers (a
//! page fetch, diff acknowledgements) is served to the end while the loop keeps running
//! handlers; a request that waits for other PEs' threads (a lock held elsewhere, a
//! barrier) is parked and finished when its message arrives, so the loop never blocks on
//! something only another application thread can do. The barrier itself is made of
//! messages for the same reason: a PE whose threads all wait in it still passes on the
//! tokens of the locks cached here. A run ends on a PE when the threads of every PE have
//! ended (each PE tells the others), since until then another PE may still ask for a lock
//! whose token is here.

use crate::fault::{Done, Op};
use crate::protocol::Protocol;
use rhizome::{CallHandle, Ctx, Message};
use std::sync::atomic::Ordering;

/// Idle rounds the service thread spins before it yields or sleeps: few, since every
/// round is CPU time taken from the application threads when the cores are all busy,
/// and the doorbell wakes it anyway.
const SPINS: u32 = 16;

impl Protocol {
    /// Serves until every application thread of every PE has ended (or one of this PE's
    /// panicked).
    pub(crate) fn serve(&self, ctx: &Ctx) {
        let sh = &self.shared;
        self.pe.borrow_mut().runs += 1;
        let mut told = false;
        let mut idle = 0u32;
        loop {
            let bell = sh.doorbell.seen();
            let mut busy = ctx.progress() > 0;
            loop {
                let f = self.pe.borrow_mut().forwards.pop_front();
                let Some((lock, from, vt)) = f else { break };
                self.serve_forward(ctx, lock, from, vt);
                busy = true;
            }
            loop {
                let g = self.pe.borrow_mut().grants.pop_front();
                let Some((lock, notices)) = g else { break };
                self.serve_grant(ctx, lock, notices);
                busy = true;
            }
            busy |= self.finish_barrier(ctx);
            for (i, slot) in sh.slots.iter().enumerate() {
                if let Some((op, arg)) = slot.take() {
                    self.serve_request(ctx, i, op, arg);
                    busy = true;
                }
            }
            if busy {
                ctx.flush();
                idle = 0;
                continue;
            }
            if sh.panicked.load(Ordering::Acquire) {
                return;
            }
            // Ended only once this PE's fetches are answered: until every PE has ended,
            // every home still serves.
            if !told
                && sh.finished.load(Ordering::Acquire) == sh.slots.len()
                && self.pe.borrow().inflight.is_empty()
            {
                told = true;
                self.tell_ended(ctx);
                continue;
            }
            if told {
                let pe = self.pe.borrow();
                if pe.ended >= pe.runs * pe.pes as u64 {
                    return;
                }
            }
            idle += 1;
            self.snooze(idle, 32, bell, true);
        }
    }

    /// One idle round of the service thread, its `idle`-th in a row: spin for the first
    /// [`SPINS`], yield until round `yields`, then sleep until the doorbell rings after
    /// `bell` was read. Without an arrival hook (MPI) it yields on while `idle_nap` is
    /// false (a reply is due), and naps briefly between polls while it is true (nothing
    /// is awaited).
    fn snooze(&self, idle: u32, yields: u32, bell: u32, idle_nap: bool) {
        let sh = &self.shared;
        let ring = sh.messages_ring.load(Ordering::Relaxed);
        if idle < SPINS {
            std::hint::spin_loop();
        } else if idle < yields || (!ring && !idle_nap) {
            std::thread::yield_now();
        } else if !ring {
            // A message is only seen by polling. Yielding between polls kept a core's
            // worth of polling runnable beside the application threads (under `mpirun
            // -np 2` on 2 cores, Water-like's PEs spent a third of their compute time
            // again in `MPI_Improbe` and `sched_yield`): nap instead, 10 us at first and
            // longer while nothing comes, up to 160 us; this PE's own threads' requests
            // still ring the bell and end the nap at once.
            let us = 10 << ((idle - yields) / 16).min(4);
            let nap = libc::timespec {
                tv_sec: 0,
                tv_nsec: us * 1000,
            };
            sh.doorbell.sleep(bell, &nap);
        } else {
            // Every event rings the bell: sleep until it does. The timeout only bounds
            // how late an abort of another PE is noticed.
            let nap = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            sh.doorbell.sleep(bell, &nap);
        }
    }

    /// Runs handlers until `ready` holds: spins briefly, then, where messages ring the
    /// doorbell, sleeps on it between polls (a reply, another PE's request or one of this
    /// PE's threads wakes it), so that a service thread waiting for a page or for diff
    /// acknowledgements leaves its core to the application threads; without an arrival
    /// hook it yields between polls instead.
    pub(crate) fn wait_until(&self, ctx: &Ctx, mut ready: impl FnMut(&Ctx) -> bool) {
        let sh = &self.shared;
        let mut idle = 0u32;
        loop {
            let bell = sh.doorbell.seen();
            if ready(ctx) {
                return;
            }
            let ran = ctx.progress();
            // Always: `ready` may have run handlers too, whose replies must not wait
            // here while the other PE waits for them.
            ctx.flush();
            if ran > 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            self.snooze(idle, SPINS, bell, false);
        }
    }

    /// The reply of `call`, waited for as [`Protocol::wait_until`] waits.
    pub(crate) fn reply<R: Message>(&self, ctx: &Ctx, call: CallHandle<'_, R>) -> R {
        self.wait_until(ctx, |_| call.is_ready());
        call.wait()
    }

    /// This PE's threads have all ended: every PE (this one too) learns it.
    fn tell_ended(&self, ctx: &Ctx) {
        let mut pe = self.pe.borrow_mut();
        pe.ended += 1;
        let me = pe.me;
        for q in (0..pe.pes).filter(|&q| q != me) {
            pe.stats.messages += 1;
            ctx.send(q, self.wire.ended, &());
        }
        drop(pe);
        ctx.flush();
    }

    fn serve_request(&self, ctx: &Ctx, slot: usize, op: Op, arg: usize) {
        let done = match op {
            Op::Fault => match self.fault(ctx, slot, arg) {
                // Waits for a page fetch, whose answer lets it go.
                Ok(false) => return,
                done => done.map(|_| ()),
            },
            Op::Acquire => return self.acquire(ctx, slot, arg as u32),
            Op::Release => self.release(ctx, slot, arg as u32),
            Op::Barrier => return self.arrive(ctx, slot),
            Op::Prefetch => {
                self.prefetch(ctx, (arg >> 32) as u32, arg as u32);
                Ok(())
            }
        };
        let s = &self.shared.slots[slot];
        match done {
            Ok(()) => s.complete(Done::Ok),
            Err(msg) => {
                if op == Op::Fault {
                    // The faulting thread cannot be told: it ends the process.
                    eprintln!("{msg}");
                }
                *s.error.lock().unwrap_or_else(|e| e.into_inner()) = msg;
                s.complete(Done::Refused);
            }
        }
    }

    /// A thread enters the barrier; when the last of the PE's threads is in, the PE's
    /// interval ends, its diffs are acknowledged, and its log goes to every other PE.
    fn arrive(&self, ctx: &Ctx, slot: usize) {
        let all = {
            let mut pe = self.pe.borrow_mut();
            pe.arrivals.push(slot);
            pe.arrivals.len() == self.shared.slots.len()
        };
        if !all {
            return;
        }
        self.close_interval(ctx);
        self.wait_for_diffs(ctx, None);
        let (me, pes, barrier) = {
            let pe = self.pe.borrow();
            (pe.me, pe.pes, pe.barriers_done)
        };
        for q in (0..pes).filter(|&q| q != me) {
            let log = {
                let pe = self.pe.borrow();
                let mine = [(me as u32, pe.bases[me], &pe.logs[me][..])];
                self.onesided.ship_notices(&pe, q, &mine)
            };
            let mut pe = self.pe.borrow_mut();
            pe.stats.messages += 1;
            pe.stats.puts += log.1;
            pe.stats.put_bytes += log.2;
            ctx.send(q, self.wire.arrive, &(barrier, me as u32, log.0));
        }
        self.pe.borrow_mut().in_barrier = true;
    }

    /// Completes the barrier once every other PE's arrival is in: their intervals are
    /// applied, the logs start afresh, the threads go on. Returns whether it did.
    fn finish_barrier(&self, ctx: &Ctx) -> bool {
        let logs = {
            let mut pe = self.pe.borrow_mut();
            let barrier = pe.barriers_done;
            let here = pe.barrier_logs.iter().filter(|a| a.0 == barrier).count();
            if !pe.in_barrier || here + 1 < pe.pes {
                return false;
            }
            let (now, later) = std::mem::take(&mut pe.barrier_logs)
                .into_iter()
                .partition(|a| a.0 == barrier);
            pe.barrier_logs = later;
            now
        };
        let logs: Vec<(u32, u32, Vec<u32>)> = logs;
        // The pages the notices take away from this PE come back in one batch a home at
        // the first fault on one of them (see `fetch`).
        self.clear_barrier_drops();
        for (_, _, payload) in logs {
            for (q, from, intervals) in self.onesided.receive_notices(&payload) {
                self.mark_barrier_drops(intervals.iter().flatten().copied());
                self.apply_notices(ctx, q, from, &intervals);
            }
        }
        // Asked for now, they travel while the threads start the next phase.
        self.prefetch_dropped(ctx);
        let arrivals = {
            let mut pe = self.pe.borrow_mut();
            crate::onesided::close_bins_epoch(&mut pe);
            pe.bases = pe.vt.clone();
            for log in pe.logs.iter_mut() {
                log.clear();
            }
            pe.barriers_done += 1;
            pe.in_barrier = false;
            pe.stats.barriers += 1;
            // Tokens from PEs that passed this barrier first (never more than one ahead:
            // a PE cannot pass the next one before this PE's arrival at it).
            let early = std::mem::take(&mut pe.early_grants);
            pe.grants.extend(early);
            std::mem::take(&mut pe.arrivals)
        };
        for s in arrivals {
            self.shared.slots[s].complete(Done::Ok);
        }
        true
    }
}

/// Ends a PE's application threads if its service thread unwinds (this PE or another
/// failed): every pending and later request is answered with an abort, and the
/// application view is opened so that a thread stopped in a fault runs on to its next
/// request, where it unwinds.
pub(crate) struct AbortOnUnwind<'a>(pub(crate) &'a crate::Shared);

impl Drop for AbortOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let sh = self.0;
            sh.aborted.store(true, Ordering::Release);
            sh.region.open_all();
            for s in sh.slots.iter() {
                s.complete(Done::Aborted);
            }
        }
    }
}
