//! Knowing that a run is over: every job created anywhere, transitively, has completed.
//!
//! Each PE counts the jobs it created and the jobs it owns that completed. Once its body is
//! done and it is idle, PE 0 collects the sums in waves of messages; the decision is the
//! runtime's four-counter method ([`FourCounter`]), and PE 0 then tells everyone to stop.

use super::wire::{Msg, Packet, send_msg};
use crate::termination::FourCounter;
use crate::world::{Am, Ctx};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The least time between two termination waves.
const WAVE_GAP: Duration = Duration::from_micros(20);

#[derive(Default)]
struct Wave {
    seq: u64,
    active: bool,
    /// PEs whose counts for wave `seq` have not arrived yet.
    waiting: usize,
    sums: (u64, u64),
    detector: FourCounter,
    last: Option<Instant>,
}

/// One PE's job counts, its part in the waves, and the stop flag they end with.
#[derive(Default)]
pub(super) struct Jobs {
    created: AtomicU64,
    completed: AtomicU64,
    stop: AtomicBool,
    wave: Mutex<Wave>,
}

impl Jobs {
    /// Forgets the last run.
    pub(super) fn reset(&self) {
        self.created.store(0, Ordering::Relaxed);
        self.completed.store(0, Ordering::Relaxed);
        self.stop.store(false, Ordering::Relaxed);
        *self.wave.lock().unwrap_or_else(|e| e.into_inner()) = Wave::default();
    }

    #[inline]
    pub(super) fn create(&self) {
        self.created.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(super) fn complete(&self) {
        self.completed.fetch_add(1, Ordering::Release);
    }

    /// Whether the run is over (or was stopped because another PE failed).
    #[inline]
    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// (created, completed), completed read first: a job completing after that read was
    /// created before the second one, so the pair never shows more completed than created.
    fn counts(&self) -> (u64, u64) {
        let completed = self.completed.load(Ordering::Acquire);
        (self.created.load(Ordering::Acquire), completed)
    }

    /// A PE other than 0: answers wave `wave` with its counts.
    pub(super) fn report(&self, ctx: &Ctx, am: Am<Packet>, wave: u64) {
        let (created, completed) = self.counts();
        send_msg(
            ctx,
            am,
            0,
            &Msg::CountRep {
                wave,
                created,
                completed,
            },
        );
    }

    /// PE 0: starts a wave over `pes` PEs if none runs and the last one is old enough.
    pub(super) fn maybe_start_wave(&self, ctx: &Ctx, am: Am<Packet>, pes: usize) {
        let mut w = self.wave.lock().unwrap_or_else(|e| e.into_inner());
        if w.active || w.last.is_some_and(|t| t.elapsed() < WAVE_GAP) {
            return;
        }
        w.seq += 1;
        w.active = true;
        w.last = Some(Instant::now());
        w.sums = self.counts();
        w.waiting = pes - 1;
        if w.waiting == 0 {
            self.end_wave(ctx, am, pes, &mut w);
            return;
        }
        let seq = w.seq;
        drop(w);
        for pe in 1..pes {
            send_msg(ctx, am, pe, &Msg::CountReq { wave: seq });
        }
        ctx.flush();
    }

    /// PE 0: the counts of one PE for wave `wave`.
    pub(super) fn collect(
        &self,
        ctx: &Ctx,
        am: Am<Packet>,
        pes: usize,
        wave: u64,
        counts: (u64, u64),
    ) {
        let mut w = self.wave.lock().unwrap_or_else(|e| e.into_inner());
        if w.active && w.seq == wave {
            w.sums.0 = w.sums.0.wrapping_add(counts.0);
            w.sums.1 = w.sums.1.wrapping_add(counts.1);
            w.waiting -= 1;
            if w.waiting == 0 {
                self.end_wave(ctx, am, pes, &mut w);
            }
        }
    }

    fn end_wave(&self, ctx: &Ctx, am: Am<Packet>, pes: usize, w: &mut Wave) {
        w.active = false;
        let sums = w.sums;
        if w.detector.wave(sums) {
            for pe in 1..pes {
                send_msg(ctx, am, pe, &Msg::Stop);
            }
            ctx.flush();
            self.stop();
        }
    }
}
