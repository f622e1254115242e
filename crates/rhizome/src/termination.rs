//! Termination detection: knowing that every message (or job) started has completed.
//!
//! The runtime uses the four-counter method (Mattern) wherever it must know that
//! distributed work is over: each PE counts what it started and what it completed (active
//! messages sent and handled for [`Ctx::finish`]; jobs created and completed for the
//! tasks layer), and the sums over all PEs are collected in waves. A wave alone can
//! miss work in flight, but the counters only grow: when two consecutive waves see the
//! same sums and started equals completed, nothing happened between them and nothing is
//! in flight. [`FourCounter`] is that decision, whatever carries the waves; [`Counters`]
//! are the per-PE counts of active messages.

use crate::context::Ctx;
use std::cell::Cell;

/// The decision of the four-counter method over successive waves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FourCounter {
    previous: Option<(u64, u64)>,
}

impl FourCounter {
    /// Takes the sums (started, completed) over all PEs of one wave; `true` once the work
    /// has terminated: this wave and the previous one saw the same sums, with nothing
    /// started that has not completed. Sums wrap, as the counters may.
    pub(crate) fn wave(&mut self, sums: (u64, u64)) -> bool {
        let done = sums.0 == sums.1 && self.previous == Some(sums);
        self.previous = Some(sums);
        done
    }
}

/// The active messages one PE has sent and handled (collective traffic excluded).
#[derive(Default)]
pub(crate) struct Counters {
    sent: Cell<u64>,
    handled: Cell<u64>,
}

impl Counters {
    #[inline]
    pub(crate) fn count_sent(&self) {
        self.sent.set(self.sent.get().wrapping_add(1));
    }
    #[inline]
    pub(crate) fn count_handled(&self, n: u64) {
        self.handled.set(self.handled.get().wrapping_add(n));
    }
    fn get(&self) -> (u64, u64) {
        (self.sent.get(), self.handled.get())
    }
}

impl Ctx {
    /// Collective: runs `body`, then returns once every message sent inside it (on any
    /// PE), and every message those handlers sent, transitively, has been handled.
    ///
    /// Termination detection (the four-counter method): each PE
    /// counts the messages it sent and handled. When a PE has flushed its buffers and has
    /// nothing left to handle, all PEs sum their counts in a wave; PEs keep handling
    /// messages while the wave runs. The scope ends when two consecutive waves see the
    /// same totals with sent equal to handled. PEs leave on the same wave but not at the
    /// same instant: a message sent after one PE's `finish` returned may already be
    /// handled by a PE still leaving it (put a [`Ctx::barrier`] after the scope if that
    /// matters).
    pub fn finish<R>(&self, body: impl FnOnce() -> R) -> R {
        let r = body();
        self.quiesce();
        r
    }

    /// Returns once every active message sent so far, anywhere, has been handled.
    /// Collective.
    pub(crate) fn quiesce(&self) {
        self.quiesce_with(|| {});
    }

    /// [`quiesce`](Self::quiesce) for a layer with buffers of its own (a selector's
    /// lanes): `settle` runs before every flush of the active-message buffers, so that it
    /// sends what it holds (and waits for its local tasks) before this PE joins a wave.
    /// Its messages must count as sent before they leave its buffers.
    pub(crate) fn quiesce_with(&self, mut settle: impl FnMut()) {
        let mut detector = FourCounter::default();
        loop {
            loop {
                settle();
                self.flush();
                if self.progress() == 0 {
                    break;
                }
            }
            // The wave is an allgather over messages, so this PE keeps handling messages
            // (e.g. answering calls) while it waits for the others.
            let all = self.allgather(self.termination.get());
            let sums = all.iter().fold((0u64, 0u64), |(s, h), &(a, b)| {
                (s.wrapping_add(a), h.wrapping_add(b))
            });
            if detector.wave(sums) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_equal_balanced_waves_end_the_work() {
        let mut d = FourCounter::default();
        assert!(!d.wave((3, 3)), "one wave alone may miss work in flight");
        assert!(d.wave((3, 3)));
    }

    #[test]
    fn work_between_waves_or_in_flight_keeps_it_going() {
        let mut d = FourCounter::default();
        assert!(!d.wave((3, 2)));
        assert!(!d.wave((3, 2)), "a message still in flight");
        assert!(!d.wave((3, 3)), "sums changed since the last wave");
        assert!(!d.wave((5, 5)), "more work happened between the waves");
        assert!(d.wave((5, 5)));
    }
}
