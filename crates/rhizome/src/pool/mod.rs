//! Fork-join parallelism inside one PE.
//!
//! SCAFFOLDING: this sequential implementation only fixes the API so that the layers above
//! can be written against it; the work-stealing implementation replaces it.
//!
//! ```
//! use rhizome::pool::{Pool, Worker};
//! fn fib(w: &Worker, n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = w.join(|w| fib(w, n - 1), |w| fib(w, n - 2));
//!     a + b
//! }
//! let pool = Pool::new(2);
//! assert_eq!(pool.run(|w| fib(w, 20)), 6765);
//! ```

/// A set of worker threads that run fork-join jobs.
pub struct Pool {
    workers: usize,
}

/// The context of the worker thread running a job; `join` forks through it.
pub struct Worker {
    index: usize,
}

impl Pool {
    /// A pool of `workers` threads (at least one).
    pub fn new(workers: usize) -> Pool {
        Pool {
            workers: workers.max(1),
        }
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Runs `f` on a worker of this pool and returns its result.
    pub fn run<R: Send>(&self, f: impl FnOnce(&Worker) -> R + Send) -> R {
        f(&Worker { index: 0 })
    }
}

impl Worker {
    /// This worker's index in its pool, `0..workers`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Runs `a` and `b`, possibly in parallel, and returns both results.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&Worker) -> RA + Send,
        B: FnOnce(&Worker) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let rb = b(self);
        let ra = a(self);
        (ra, rb)
    }
}
