//! The owner's operations for the jobs of the layer above (futures) that share the deque
//! with `join` halves: pushing a job (shared at once), looking at and popping the newest
//! slot, and letting go of a stolen one only once its thief has read it
//! (`docs/one-deque.md`).

use super::super::job::JobRef;
use super::{COMPLETED, Owner, Pushed, RETURNED, pack, unpack};
use crate::backoff::Backoff;
use std::sync::atomic::Ordering;

impl Owner {
    /// The slot below `head` (the newest), if there is one above `floor` (an index).
    #[inline]
    pub(in crate::pool) fn top_above(&self, floor: usize) -> Option<Pushed> {
        let h = self.index(self.head.get());
        (h > floor).then(|| Pushed(self.slot_at(h - 1)))
    }

    /// The index of `head`: where the next push goes.
    pub(in crate::pool) fn head_index(&self) -> usize {
        self.index(self.head.get())
    }

    /// Whether the newest slot, `top`, holds a job of the layer above (false also if a
    /// thief has taken it meanwhile).
    pub(in crate::pool) fn is_job(&self, top: Pushed) -> bool {
        // SAFETY: `top` is a slot of this deque.
        unsafe { &*top.0 }.is_job.load(Ordering::Relaxed)
    }

    /// Pushes a job of the layer above and shares it (and every private slot below it) at
    /// once: a job is meant to be stolen, and a `join` below it then finds its own slot
    /// shared, so its pop takes the slow path, which runs the jobs above it first. False
    /// when the deque is full.
    pub(in crate::pool) fn push_job(&self, job: JobRef) -> bool {
        let h = self.head.get();
        if h == self.end {
            return false;
        }
        // SAFETY: as in `push`.
        let slot = unsafe { &*h };
        // SAFETY: as in `push`: the slot is at `head`, no thief can reach it.
        unsafe { slot.job.write(job) };
        slot.is_job.store(true, Ordering::Relaxed);
        // SAFETY: `h < end`.
        self.head.set(unsafe { h.add(1) });
        let h = self.index(h);
        let d = self.deque();
        if self.allstolen.get() {
            // Everything below was stolen: share from here.
            self.allstolen.set(false);
            d.ts.store(pack(h, h + 1), Ordering::Release);
        } else {
            let mut ts = d.ts.load(Ordering::Relaxed);
            loop {
                let (tail, _) = unpack(ts);
                match d.ts.compare_exchange_weak(
                    ts,
                    pack(tail, h + 1),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => ts = now,
                }
            }
        }
        self.split.set(self.slot_at(h + 1));
        d.movesplit.store(false, Ordering::Relaxed);
        true
    }

    /// Takes the newest slot, `top` (from [`top_above`](Owner::top_above)), back: its
    /// job if it was not stolen or a thief returned it, `None` if a thief took it (then
    /// the slot is released, after its thief is done reading it). Only for job slots, or
    /// for a half the caller would run anyway.
    pub(in crate::pool) fn pop_top(&self, top: Pushed) -> Option<JobRef> {
        // SAFETY: `top` is a slot of this deque.
        let slot = unsafe { &*top.0 };
        if self.pop_private(top) || self.pop_shared(top) {
            // SAFETY: popped back, so no thief has the slot; the owner wrote it.
            let job = unsafe { slot.job.read() };
            slot.is_job.store(false, Ordering::Relaxed);
            return Some(job);
        }
        let h = self.begin_wait();
        // A thief of a job completes its slot as soon as it has read it; a thief that won
        // a slot it may not run returns it.
        // The wait is short unless the thief lost its core between its CAS and that store:
        // then give the core up rather than spin through the thief's time slice.
        let mut state = self.thief_state(h);
        let mut backoff = Backoff::new(64);
        while state != COMPLETED && state != RETURNED {
            backoff.snooze();
            state = self.thief_state(h);
        }
        let job = (state == RETURNED).then(|| {
            // SAFETY: the thief returned the slot (release, acquired above) and does not
            // touch it again; the owner wrote it.
            let job = unsafe { slot.job.read() };
            slot.is_job.store(false, Ordering::Relaxed);
            job
        });
        self.end_wait(h);
        job
    }
}
