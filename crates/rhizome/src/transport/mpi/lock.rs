//! The lock around a transport's MPI calls and the state only touched under it.

use super::raw::H;
use crate::backoff::Backoff;
use ::mpi::ffi;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

/// State touched only while holding the MPI lock.
pub(super) struct Locked {
    /// Sends in flight, with the buffers MPI still reads.
    pub(super) sends: Vec<(H<ffi::MPI_Request>, Vec<u8>)>,
    /// Buffers sent to this PE itself.
    pub(super) own: VecDeque<Vec<u8>>,
    /// Emptied buffers for reuse.
    pub(super) free: Vec<Vec<u8>>,
    /// Origin values of non-blocking atomics, freed once their windows are flushed.
    #[allow(
        clippy::vec_box,
        reason = "MPI holds the cells' addresses: they must not move"
    )]
    pub(super) origins: Vec<Box<[u64; 2]>>,
}

/// The lock around every MPI call of a transport.
///
/// A test-and-test-and-set spin lock that yields the processor while it waits: its
/// release is a plain store (a `std` mutex releases with an atomic swap, a second locked
/// instruction per MPI call), and MPI calls under it are short; the waits that are not
/// (collectives) release it between polls.
pub(super) struct MpiLock {
    locked: AtomicBool,
    state: UnsafeCell<Locked>,
}

// SAFETY: `state` is only reached through a `Guard`, and at most one guard exists at a
// time (acquired by the compare-exchange in `try_lock`, released by `Guard::drop`), so the
// lock provides mutual exclusion like a mutex. `Locked` is `Send` (its raw MPI handles are
// wrapped in `H`).
unsafe impl Sync for MpiLock {}

/// `MpiLock: Sync` relies on this.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Locked>();
};

impl MpiLock {
    pub(super) fn new(state: Locked) -> MpiLock {
        MpiLock {
            locked: AtomicBool::new(false),
            state: UnsafeCell::new(state),
        }
    }

    /// The state without locking: `&mut self` proves no guard exists.
    pub(super) fn state_mut(&mut self) -> &mut Locked {
        self.state.get_mut()
    }

    #[inline]
    pub(super) fn try_lock(&self) -> Option<Guard<'_>> {
        self.locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            // `then`, not `then_some`: a guard built for a failed attempt would be dropped
            // at once and release the lock its holder still uses.
            .then(|| Guard { lock: self })
    }

    #[inline]
    pub(super) fn lock(&self) -> Guard<'_> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(&self) -> Guard<'_> {
        let mut backoff = Backoff::new(100);
        loop {
            while self.locked.load(Ordering::Relaxed) {
                backoff.snooze();
            }
            if let Some(g) = self.try_lock() {
                return g;
            }
        }
    }
}

/// Exclusive access to a transport's MPI state; MPI may be called while it lives.
pub(super) struct Guard<'a> {
    lock: &'a MpiLock,
}

impl std::ops::Deref for Guard<'_> {
    type Target = Locked;
    #[inline]
    fn deref(&self) -> &Locked {
        // SAFETY: this guard is the only one (see `MpiLock`), so no `&mut` exists.
        unsafe { &*self.lock.state.get() }
    }
}

impl std::ops::DerefMut for Guard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Locked {
        // SAFETY: this guard is the only one and is borrowed mutably, so this is the only
        // reference to the state.
        unsafe { &mut *self.lock.state.get() }
    }
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Mutual exclusion under contention, with failing `try_lock`s in the mix (a failed
    /// attempt once released the holder's lock). Needs no MPI: the lock is plain Rust.
    #[test]
    fn the_mpi_lock_excludes_under_contention() {
        let lock = Arc::new(MpiLock::new(Locked {
            sends: Vec::new(),
            own: VecDeque::new(),
            free: Vec::new(),
            origins: Vec::new(),
        }));
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for i in 0..ROUNDS {
                        let mut g = match lock.try_lock() {
                            Some(g) => g,
                            None => lock.lock(),
                        };
                        // A read-modify-write that loses updates if two threads overlap.
                        let n = g.own.len();
                        g.own.push_back(vec![(t + i) as u8]);
                        std::hint::black_box(&g.own);
                        assert_eq!(g.own.len(), n + 1, "another thread ran inside the lock");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no thread panics");
        }
        assert_eq!(lock.lock().own.len(), THREADS * ROUNDS);
    }
}
