//! The service thread of a PE: its main thread, while the application threads run.
//!
//! The runtime runs message handlers only on a PE's main thread, when it waits (`Ctx` is
//! not `Sync`), so that thread is the natural server: it answers other PEs' page, diff,
//! notice and lock messages, and its own application threads' requests (faults, lock
//! acquire and release, barrier), in one loop. A request that only needs answers from
//! handlers (a page fetch, diff acknowledgements, write notices) is served to the end
//! while the loop keeps running handlers; a request that waits for other PEs' threads (a
//! lock held elsewhere, a barrier) is parked and finished when its message arrives, so
//! the loop never blocks on something only another application thread can do.

use crate::fault::{Done, Op};
use crate::protocol::Protocol;
use crate::wire::{flatten, unflatten};
use rhizome::Ctx;
use std::sync::atomic::Ordering;

impl Protocol {
    /// Serves until every application thread of this PE has ended (or one panicked).
    pub(crate) fn serve(&self, ctx: &Ctx) {
        let sh = &self.shared;
        let mut idle = 0u32;
        loop {
            let bell = sh.doorbell.seen();
            let mut busy = ctx.progress() > 0;
            loop {
                let g = self.pe.borrow_mut().grants.pop_front();
                let Some((lock, slot, vt)) = g else { break };
                self.serve_grant(ctx, lock, slot, vt);
                busy = true;
            }
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
            let finished = sh.finished.load(Ordering::Acquire);
            if finished == sh.slots.len() || sh.panicked.load(Ordering::Acquire) {
                return;
            }
            idle += 1;
            if idle < 64 {
                std::hint::spin_loop();
            } else if idle < 128 || !sh.messages_ring.load(Ordering::Relaxed) {
                // Without an arrival hook a message is only seen by polling: yield the
                // core to the application threads between polls, but never nap.
                std::thread::yield_now();
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
    }

    fn serve_request(&self, ctx: &Ctx, slot: usize, op: Op, arg: usize) {
        let done = match op {
            Op::Fault => self.fault(ctx, arg),
            Op::Acquire => return self.acquire(ctx, slot, arg as u32),
            Op::Release => self.release(ctx, slot, arg as u32),
            Op::Barrier => return self.arrive(ctx, slot),
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

    fn acquire(&self, ctx: &Ctx, slot: usize, lock: u32) {
        let (me, pes, held) = {
            let pe = self.pe.borrow();
            (pe.me, pe.pes, pe.held.get(&lock).copied())
        };
        if held == Some(slot) {
            let s = &self.shared.slots[slot];
            *s.error.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                "rhizome: error: PE {me} thread {slot} acquired DSM lock {lock}, which it holds already"
            );
            return s.complete(Done::Refused);
        }
        self.pe.borrow_mut().stats.messages += 1;
        let manager = lock as usize % pes;
        ctx.send(manager, self.wire.acquire, &(lock, me as u32, slot as u32));
    }

    fn release(&self, ctx: &Ctx, slot: usize, lock: u32) -> Result<(), String> {
        let (me, pes, held) = {
            let pe = self.pe.borrow();
            (pe.me, pe.pes, pe.held.get(&lock).copied())
        };
        if held != Some(slot) {
            return Err(format!(
                "rhizome: error: PE {me} thread {slot} released DSM lock {lock}, which it does not hold"
            ));
        }
        self.close_interval(ctx);
        let vt = {
            let mut pe = self.pe.borrow_mut();
            pe.held.remove(&lock);
            pe.stats.messages += 1;
            pe.vt.clone()
        };
        ctx.send(lock as usize % pes, self.wire.release, &(lock, vt));
        Ok(())
    }

    /// A thread enters the barrier; the last of the PE's threads runs it for all.
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
        // Every PE learns every interval since the last barrier: its own log, flattened.
        let (me, mine) = {
            let pe = self.pe.borrow();
            let mut v = vec![pe.log_base];
            v.extend(flatten(&pe.log));
            (pe.me, v)
        };
        let all = ctx.allgather(mine);
        for (q, flat) in all.iter().enumerate().filter(|&(q, _)| q != me) {
            self.apply_notices(ctx, q, flat[0], &unflatten(&flat[1..]));
        }
        let arrivals = {
            let mut pe = self.pe.borrow_mut();
            pe.log_base = pe.vt[me];
            pe.log.clear();
            pe.stats.barriers += 1;
            pe.stats.messages += 2 * (pe.pes as u64 - 1);
            std::mem::take(&mut pe.arrivals)
        };
        for s in arrivals {
            self.shared.slots[s].complete(Done::Ok);
        }
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
