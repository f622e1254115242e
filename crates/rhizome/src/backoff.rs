//! Waiting for something another thread or PE will do: spin briefly, then yield the core,
//! then (optionally) nap.
//!
//! Spinning first because the awaited event usually comes within microseconds; yielding
//! next because on an oversubscribed machine the thread we wait for may be the one that
//! needs our core; napping last so that a long-idle thread stops burning a core at all.

use std::time::Duration;

/// The state of one wait; make a new one (or [`reset`](Backoff::reset)) per wait.
#[derive(Clone, Debug)]
pub struct Backoff {
    idle: u32,
    // Under loom every round is a model yield, so the schedule goes unread there.
    #[cfg_attr(loom, allow(dead_code))]
    spins: u32,
    #[cfg_attr(loom, allow(dead_code))]
    yields: u32,
    #[cfg_attr(loom, allow(dead_code))]
    nap: Duration,
}

impl Backoff {
    /// Spins `spins` rounds, then yields on every round.
    pub const fn new(spins: u32) -> Backoff {
        Backoff {
            idle: 0,
            spins,
            yields: u32::MAX,
            nap: Duration::ZERO,
        }
    }

    /// Spins `spins` rounds, yields until round `yields`, then sleeps `nap` per round.
    pub const fn with_nap(spins: u32, yields: u32, nap: Duration) -> Backoff {
        Backoff {
            idle: 0,
            spins,
            yields,
            nap,
        }
    }

    /// One round of waiting.
    #[cfg(not(loom))]
    #[inline]
    pub fn snooze(&mut self) {
        if self.idle < self.spins {
            std::hint::spin_loop();
        } else if self.idle < self.yields {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.nap);
        }
        self.idle = self.idle.saturating_add(1);
    }

    /// One round of waiting, under loom's model checker: every round lets the other
    /// modelled threads run (a spin would be an unbounded loop to loom).
    #[cfg(loom)]
    pub fn snooze(&mut self) {
        ::loom::thread::yield_now();
        self.idle = self.idle.saturating_add(1);
    }

    /// Rounds waited since the start or the last [`reset`](Backoff::reset): for a waiter
    /// that does something else after a grace (such as asking other PEs for work).
    #[inline]
    pub fn rounds(&self) -> u32 {
        self.idle
    }

    /// Something happened: the next wait starts with spinning again.
    #[inline]
    pub fn reset(&mut self) {
        self.idle = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_from_spinning_to_yielding_to_napping_and_back() {
        let mut b = Backoff::with_nap(2, 4, Duration::from_micros(1));
        for _ in 0..5 {
            b.snooze();
        }
        assert_eq!(b.rounds(), 5);
        b.reset();
        assert_eq!(b.rounds(), 0);
        let mut forever = Backoff::new(1);
        for _ in 0..3 {
            forever.snooze();
        }
        assert_eq!(forever.yields, u32::MAX, "no nap without with_nap");
    }
}
