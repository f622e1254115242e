//! CPU time of threads, for speedups that a loaded machine does not blur.
//!
//! On a machine shared with other jobs the wall time of a parallel run says mostly how
//! often its threads were scheduled. The CPU time each PE spent (its application threads
//! and its service thread) says how much work the run did and how evenly it was spread:
//! the sequential run's CPU time over the busiest PE's is the speedup the run would have
//! with a core per PE and no one else on them, protocol work included, waiting excluded.

/// A thread's CPU-time clock, readable from any thread of the process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock.
    pub(crate) fn current() -> ThreadClock {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self() is the calling, live thread; `id` is a valid out pointer.
        let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        if r != 0 {
            return ThreadClock(libc::CLOCK_THREAD_CPUTIME_ID);
        }
        ThreadClock(id)
    }

    /// Nanoseconds of CPU time the thread has used so far (0 if the clock cannot be read).
    /// Read from another thread, the clock's thread must still be alive.
    pub(crate) fn ns(self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a valid out pointer.
        if unsafe { libc::clock_gettime(self.0, &mut ts) } != 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// CPU time of the calling thread, in nanoseconds.
pub(crate) fn this_thread_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_threads_clock_counts_its_work_not_the_readers() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(ThreadClock::current()).unwrap();
            let start = this_thread_ns();
            let mut x = 1u64;
            while this_thread_ns() - start < 20_000_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            // Stay alive until the reader has read the clock.
            done_rx.recv().unwrap();
        });
        let clock = rx.recv().unwrap();
        while clock.ns() < 20_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            this_thread_ns() < clock.ns(),
            "the reader slept; the worker spun 20 ms"
        );
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
