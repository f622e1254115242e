//! The scheduling loop of a worker: one step takes the next job (own deque, the thief of
//! an awaited job, the inbox, PE-mates, a PE-mate's `join` half when idle, then other PEs
//! through the main thread), and the loops built on it: waiting for a future
//! ([`TaskCtx::help_until`]), a `join` waiting for its thief (the pool's helper), and the
//! loop of a worker with nothing to wait for. The PE's main thread also moves the
//! messages here.

use super::future::{self, LOCAL_THIEF, NO_THIEF, REMOTE_THIEF, State};
use super::job::Task;
use super::stats::Counter;
use super::wire::send_msg;
use super::worker::{MainCtx, TaskCtx, current_worker};
use crate::backoff::Backoff;
use crate::pool::Take;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the main thread handles messages while it has local work (in scheduler steps).
const POLL_EVERY: u32 = 2;
/// Idle steps a waiting worker makes before it asks other PEs for work.
pub(super) const REMOTE_GRACE: u32 = 32;

/// How an idle worker waits between scheduling steps: spins, then yields, then naps (short
/// enough for steal latency, long enough to leave the core to busy threads when the
/// machine is oversubscribed).
pub(crate) fn idle_backoff() -> Backoff {
    Backoff::with_nap(64, 2048, Duration::from_micros(20))
}

/// One scheduling step of this thread's worker (the pool's helper while it works here): a
/// `join` waiting for its thief, so the worker is [`Waiting`](Halves::Waiting).
pub(super) fn help_step() -> bool {
    current_worker().is_some_and(|t| t.step(NO_THIEF, false, Halves::Waiting))
}

/// Whether a scheduling step may take a forked `join` half of a PE-mate.
///
/// A worker that waits (in [`Future::get`], [`TaskCtx::block_on`], or a `join` waiting for
/// its thief) runs what it takes on its own stack, above the frame that waits; that frame
/// resumes only once everything above it has returned. A *job* is safe to run there: it
/// waits only for jobs of its own subtree, for leaves and for ready futures (the contract
/// in the module docs), none of which can be suspended below it. A `join` half is not: it
/// may wait for a job its parent spawned before the `join`, and that job (or one of its
/// descendants) may be exactly the frame suspended below (tests/task_nesting.rs). So a
/// waiting worker takes halves only by leapfrogging inside `Worker::join` (from the thief
/// of its own half, whose deque holds only that half's descendants), and a PE-mate's
/// halves are otherwise taken only by idle workers, whose stacks hold no frame to wait for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Halves {
    /// The worker has no suspended frame: it may take any half.
    Idle,
    /// The worker waits in a frame: it takes jobs only.
    Waiting,
}

impl TaskCtx {
    #[inline]
    pub(super) fn maybe_poll(&self) {
        if let Some(m) = &self.main {
            let t = self.tick.get().wrapping_add(1);
            self.tick.set(t);
            if t.is_multiple_of(POLL_EVERY) {
                self.poll_main(m);
            }
        }
    }

    /// Sends queued messages and runs the handlers of received ones.
    pub(super) fn poll_main(&self, m: &MainCtx) {
        let ctx = m.ctx;
        let mut sent = false;
        while let Some((pe, msg)) = self.sh.outbox.take() {
            send_msg(ctx, m.am, pe, &msg);
            sent = true;
        }
        let n = ctx.progress();
        if sent || n > 0 {
            ctx.flush();
        }
        if self.sh.remote.take_hungry() {
            self.request_remote(m);
        }
    }

    fn request_remote(&self, m: &MainCtx) {
        self.sh
            .request_remote(m.ctx, m.am, &mut self.rng.borrow_mut());
    }

    pub(super) fn exec(&self, t: Task) {
        self.tick.set(self.tick.get().wrapping_add(1));
        self.jobs.set(self.jobs.get() + 1);
        t.run(self);
        // A result for another PE leaves at once (job round-trip latency).
        if let Some(m) = &self.main
            && !self.sh.outbox.is_empty()
        {
            self.poll_main(m);
        }
    }

    /// Runs a job whose claim this worker won (from a deque slot, see `claim.rs`), unless
    /// the run was stopped (another PE failed): then the job is dropped unrun.
    pub(super) fn exec_claimed(&self, t: Task) {
        if self.sh.jobs.stopped() {
            return;
        }
        t.note_thief(LOCAL_THIEF + self.worker().index() as u64);
        self.exec(t);
    }

    /// Runs a job taken from the inbox.
    fn exec_inbox(&self, t: Task) {
        t.note_thief(LOCAL_THIEF + self.worker().index() as u64);
        self.exec(t);
    }

    /// One scheduling step: runs one job if there is one anywhere reachable. `hint` is the
    /// thief code of an awaited job (leapfrogging); `halves` says whether a PE-mate's
    /// `join` half may be taken too.
    pub(super) fn step(&self, hint: u64, remote: bool, halves: Halves) -> bool {
        let sh = &*self.sh;
        if let Some(m) = &self.main
            && self.tick.get().is_multiple_of(POLL_EVERY)
        {
            self.poll_main(m);
        }
        let w = self.worker();
        // The newest slot of the own deque, if it is a job (never a half: the own halves
        // belong to `join`s waiting below on this stack).
        if let Some(job) = w.pop_own_job() {
            // SAFETY: popped, so this is the slot's one run.
            unsafe { job.execute(w) };
            return true;
        }
        // Leapfrogging inside the PE: steal from the worker that runs the awaited job
        // (jobs only: its deque may hold halves of its frames below that job).
        if (LOCAL_THIEF..REMOTE_THIEF).contains(&hint)
            && w.steal_from((hint - LOCAL_THIEF) as usize, Take::Jobs)
        {
            sh.stats.add(Counter::LocalSteals, 1);
            return true;
        }
        if let Some(t) = sh.local.take_inbox() {
            self.exec_inbox(t);
            return true;
        }
        let n = sh.workers;
        if n > 1 {
            // Any slot of a PE-mate when idle; jobs only when waiting (see `Halves`).
            let take = match halves {
                Halves::Idle => Take::Any,
                Halves::Waiting => Take::Jobs,
            };
            let me = w.index();
            let start = self.rng.borrow_mut().below(n);
            for k in 0..n {
                let v = (start + k) % n;
                if v != me && w.steal_from(v, take) {
                    sh.stats.add(Counter::LocalSteals, 1);
                    return true;
                }
            }
        }
        // The whole PE looks idle: handle messages (they may bring jobs), then steal from
        // another PE (the awaited job's PE first).
        if let Some(m) = &self.main {
            self.poll_main(m);
            if let Some(t) = sh.local.take_inbox() {
                self.exec_inbox(t);
                return true;
            }
        }
        if hint >= REMOTE_THIEF {
            sh.remote.leap_to((hint - REMOTE_THIEF) as usize);
        }
        match &self.main {
            Some(m) if remote => self.request_remote(m),
            Some(_) => {}
            None => sh.remote.ask_later(),
        }
        false
    }

    /// Runs jobs until `st` is ready.
    pub(super) fn help_until<T>(&self, st: &State<T>) {
        // The newest jobs of the own deque first: the awaited job is usually the newest
        // (spawned last, awaited first), and popping its slot runs it without leaving a
        // claimed slot behind (a claim through the future would leave one, popped later
        // as an empty step, and a run of such waits fills the deque).
        let w = self.worker();
        while !st.is_ready()
            && let Some(job) = w.pop_own_job()
        {
            // SAFETY: popped, so this is the slot's one run.
            unsafe { job.execute(w) };
        }
        // Then the awaited job itself, wherever its slot is, if no one has claimed it:
        // it may sit behind a half this worker may not take (docs/one-deque.md).
        if !st.is_ready()
            && let Some(t) = st.claim.claim()
        {
            self.exec_claimed(t);
        }
        let mut backoff = idle_backoff();
        while !st.is_ready() {
            if self.sh.jobs.stopped() {
                future::stopped();
            }
            // A short grace before stealing from other PEs: a quick remote job (a round
            // trip) should not be slowed down by steal traffic.
            let hint = st.thief.load(Ordering::Relaxed);
            if self.step(hint, backoff.rounds() >= REMOTE_GRACE, Halves::Waiting) {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
    }

    /// The loop of a worker with nothing to wait for: runs jobs until the run stops.
    pub(super) fn top_loop(&self) {
        let mut backoff = idle_backoff();
        loop {
            if self.sh.jobs.stopped() {
                return;
            }
            if self.step(NO_THIEF, true, Halves::Idle) {
                backoff.reset();
                continue;
            }
            if let Some(m) = &self.main
                && self.sh.pe == 0
                && m.body_done.get()
            {
                self.sh.jobs.maybe_start_wave(m.ctx, m.am, self.sh.pes);
            }
            backoff.snooze();
        }
    }
}
