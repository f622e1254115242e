//! The scheduler's counters: what one PE did over one run.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one PE's scheduler over one [`Tasks::run`](super::Tasks::run).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Jobs run on this PE (the body included).
    pub jobs_run: u64,
    /// Jobs taken from another worker of the same PE.
    pub local_steals: u64,
    /// Jobs received from other PEs in answer to steal requests.
    pub remote_steals: u64,
    /// Steal requests this PE sent to other PEs.
    pub steal_requests: u64,
    /// Steal requests that brought at least one job.
    pub steal_successes: u64,
    /// Jobs this PE received in the initial work-sharing phase.
    pub shared_in: u64,
    /// Total time from sending a successful steal request to receiving its jobs, in ns.
    pub steal_latency_ns: u64,
    /// Jobs received through `async_on` from other PEs.
    pub remote_runs: u64,
}

impl Stats {
    /// Mean latency of a successful remote steal, in microseconds (0 if none).
    pub fn mean_steal_latency_us(&self) -> f64 {
        if self.steal_successes == 0 {
            0.0
        } else {
            self.steal_latency_ns as f64 / self.steal_successes as f64 / 1e3
        }
    }

    /// Sums the counters of several PEs.
    pub fn sum(all: &[Stats]) -> Stats {
        let mut s = Stats::default();
        for a in all {
            s.jobs_run += a.jobs_run;
            s.local_steals += a.local_steals;
            s.remote_steals += a.remote_steals;
            s.steal_requests += a.steal_requests;
            s.steal_successes += a.steal_successes;
            s.shared_in += a.shared_in;
            s.steal_latency_ns += a.steal_latency_ns;
            s.remote_runs += a.remote_runs;
        }
        s
    }
}

/// One counter of [`AtomicStats`] (the field of [`Stats`] of the same name).
#[derive(Clone, Copy)]
pub(super) enum Counter {
    JobsRun,
    LocalSteals,
    RemoteSteals,
    StealRequests,
    StealSuccesses,
    SharedIn,
    StealLatencyNs,
    RemoteRuns,
}

/// [`Stats`] as the worker threads of a PE update them during a run.
#[derive(Default)]
pub(super) struct AtomicStats([AtomicU64; 8]);

impl AtomicStats {
    #[inline]
    pub(super) fn add(&self, c: Counter, n: u64) {
        self.0[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self, c: Counter) -> u64 {
        self.0[c as usize].load(Ordering::Relaxed)
    }

    pub(super) fn reset(&self) {
        for c in &self.0 {
            c.store(0, Ordering::Relaxed);
        }
    }

    pub(super) fn snapshot(&self) -> Stats {
        Stats {
            jobs_run: self.get(Counter::JobsRun),
            local_steals: self.get(Counter::LocalSteals),
            remote_steals: self.get(Counter::RemoteSteals),
            steal_requests: self.get(Counter::StealRequests),
            steal_successes: self.get(Counter::StealSuccesses),
            shared_in: self.get(Counter::SharedIn),
            steal_latency_ns: self.get(Counter::StealLatencyNs),
            remote_runs: self.get(Counter::RemoteRuns),
        }
    }
}
