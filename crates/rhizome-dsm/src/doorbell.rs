//! The doorbell of a PE's service thread: what wakes it when there is work.
//!
//! Three things give the service thread work: a request of one of its application threads
//! (a fault, a lock operation, a barrier), the end of an application thread, and a message
//! from another PE (a page or lock request, a grant, a diff). All of them ring the same
//! bell, so the service thread can sleep on one `futex` word and still answer a remote
//! page fetch or lock request within a wake-up, with no nap on the critical path. The
//! messages ring it through the transport's arrival hook ([`rhizome::Ctx::set_arrival_hook`]);
//! a transport without one (MPI, where a message is only seen when the PE calls into MPI)
//! leaves the service thread polling instead of sleeping.
//!
//! Ringing costs an atomic add, and a `futex` wake only while the service thread sleeps
//! (the `sleeping` flag), so a busy service thread is not slowed by system calls. Ringing
//! is async-signal-safe (atomics and `futex`): the fault handler rings it.

use crate::fault::{wait_while, wake_all};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// A counter of events, and whether the service thread sleeps on it.
pub(crate) struct Doorbell {
    rings: AtomicU32,
    sleeping: AtomicBool,
}

impl Doorbell {
    pub(crate) fn new() -> Doorbell {
        Doorbell {
            rings: AtomicU32::new(0),
            sleeping: AtomicBool::new(false),
        }
    }

    /// The count so far: read it before looking for work, then [`sleep`](Doorbell::sleep)
    /// with it, so that a ring between the two is not missed.
    pub(crate) fn seen(&self) -> u32 {
        self.rings.load(Ordering::SeqCst)
    }

    /// Something happened: wakes the service thread if it sleeps. Async-signal-safe.
    pub(crate) fn ring(&self) {
        // SeqCst on both sides: either the sleeper's flag store comes first and we wake
        // it, or our add comes first and its futex wait sees the new count and returns.
        self.rings.fetch_add(1, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            wake_all(&self.rings);
        }
    }

    /// Sleeps until the bell rings after `seen` was read, at most `timeout`.
    pub(crate) fn sleep(&self, seen: u32, timeout: &libc::timespec) {
        self.sleeping.store(true, Ordering::SeqCst);
        wait_while(&self.rings, seen, Some(timeout));
        self.sleeping.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_ring_wakes_a_sleeper_and_a_ring_before_the_sleep_is_not_lost() {
        let bell = Doorbell::new();
        let seen = bell.seen();
        bell.ring();
        // Rung after `seen`: the sleep returns at once instead of waiting an hour.
        let hour = libc::timespec {
            tv_sec: 3600,
            tv_nsec: 0,
        };
        bell.sleep(seen, &hour);
        let bell = Arc::new(bell);
        let b = bell.clone();
        let seen = bell.seen();
        let t = std::thread::spawn(move || {
            let start = Instant::now();
            b.sleep(seen, &hour);
            start.elapsed()
        });
        // Ring until the sleeper is woken (a ring before it sleeps also ends its sleep).
        while !t.is_finished() {
            bell.ring();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            t.join().unwrap() < Duration::from_secs(600),
            "woken by a ring"
        );
    }
}
