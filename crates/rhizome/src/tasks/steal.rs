//! Where an idle worker finds work besides the workers' deques (the pool's, stolen from in
//! `schedule.rs`): the PE's inbox of jobs received from other PEs, and other PEs, asked by
//! messages (remote stealing, one job or half of the stealable ones per request, taken
//! from the workers' deques), with leapfrogging to the PE that runs an awaited job.

use super::Shared;
use super::claim::claim_slot;
use super::job::{Pinned, Task};
use super::stats::Counter;
use super::wire::{Msg, Packet, Wire, send_msg};
use super::worker::current_worker;
use crate::pool::Export;
use crate::rng::XorShift64;
use crate::world::{Am, Ctx};
use crossbeam_deque::{Injector, Steal};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How many jobs a PE gives away for one steal request from another PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StealPolicy {
    /// The oldest stealable job.
    One,
    /// Half of the stealable jobs (at least one, at most 64), oldest first.
    Half,
}

/// Most jobs given away for one steal-many request.
const MAX_BATCH: usize = 64;
/// The pause before the next steal request after one empty answer; it doubles with every
/// further empty answer in a row, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_micros(1);
/// The longest pause between steal requests of a PE that other PEs keep answering with
/// nothing: a few steal round trips, short beside any run worth stealing for.
const MAX_PAUSE: Duration = Duration::from_micros(64);
/// `Remote::leap_hint` when no awaited job runs on another PE.
const NO_HINT: usize = usize::MAX;

/// The jobs of one PE besides the workers' deques (which are the pool's: one per worker,
/// shared with `join` halves): the inbox, and which task workers are taken in a run.
pub(super) struct Local {
    /// Which task worker indices are in use: a thread becomes worker `i` only while it
    /// holds `i` (a background thread between two runs may still work for the last one).
    lent: Mutex<Vec<bool>>,
    /// Jobs received from other PEs, or pinned here: any worker of the PE takes them.
    pub(super) inbox: Injector<Task>,
}

impl Local {
    pub(super) fn new(workers: usize) -> Local {
        Local {
            lent: Mutex::new(vec![false; workers]),
            inbox: Injector::new(),
        }
    }

    /// Takes task worker index `i` for this thread; false if another thread has it.
    pub(super) fn lend(&self, i: usize) -> bool {
        let mut lent = self.lent.lock().unwrap_or_else(|e| e.into_inner());
        !std::mem::replace(&mut lent[i], true)
    }

    /// Gives task worker index `i` back.
    pub(super) fn give_back(&self, i: usize) {
        self.lent.lock().unwrap_or_else(|e| e.into_inner())[i] = false;
    }

    pub(super) fn take_inbox(&self) -> Option<Task> {
        match self.inbox.steal() {
            Steal::Success(t) => Some(t),
            _ => None,
        }
    }
}

/// The state of stealing from other PEs.
pub(super) struct Remote {
    policy: Mutex<StealPolicy>,
    /// A worker other than the main thread found the PE idle: the main thread should ask.
    hungry: AtomicBool,
    /// A steal request is on its way; at most one at a time.
    request_out: AtomicBool,
    asking: Mutex<Asking>,
    /// The PE that runs a job some worker waits for: ask it first (leapfrogging).
    leap_hint: AtomicUsize,
    /// Whether PE 0 sends its first stealable jobs to the other PEs.
    sharing: AtomicBool,
    /// The PE the initial sharing sends the next job to (`usize::MAX`: not sharing).
    share_next: AtomicUsize,
}

impl Remote {
    pub(super) fn new() -> Remote {
        Remote {
            policy: Mutex::new(StealPolicy::One),
            hungry: AtomicBool::new(false),
            request_out: AtomicBool::new(false),
            asking: Mutex::new(Asking::default()),
            leap_hint: AtomicUsize::new(NO_HINT),
            sharing: AtomicBool::new(true),
            share_next: AtomicUsize::new(usize::MAX),
        }
    }

    pub(super) fn set_policy(&self, p: StealPolicy) {
        *self.policy.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }

    pub(super) fn set_sharing(&self, on: bool) {
        self.sharing.store(on, Ordering::Relaxed);
    }

    /// Forgets the last run; PE `pe` starts the initial sharing if it is PE 0.
    pub(super) fn reset(&self, pe: usize) {
        self.hungry.store(false, Ordering::Relaxed);
        self.request_out.store(false, Ordering::Relaxed);
        *self.asking() = Asking::default();
        self.leap_hint.store(NO_HINT, Ordering::Relaxed);
        let first = if pe == 0 && self.sharing.load(Ordering::Relaxed) {
            1
        } else {
            usize::MAX
        };
        self.share_next.store(first, Ordering::Relaxed);
    }

    /// The PE (of `pes`) that the next spawned job goes to in the initial sharing, if any.
    #[inline]
    pub(super) fn share_target(&self, pes: usize) -> Option<usize> {
        if self.share_next.load(Ordering::Relaxed) >= pes {
            return None;
        }
        let p = self.share_next.fetch_add(1, Ordering::Relaxed);
        (p < pes).then_some(p)
    }

    /// A worker without the context found nothing: the main thread asks at its next poll.
    pub(super) fn ask_later(&self) {
        self.hungry.store(true, Ordering::Relaxed);
    }

    /// Whether a worker asked for a request since the last call.
    pub(super) fn take_hungry(&self) -> bool {
        self.hungry.swap(false, Ordering::Relaxed)
    }

    /// The awaited job runs on PE `pe`: the next request goes there.
    pub(super) fn leap_to(&self, pe: usize) {
        self.leap_hint.store(pe, Ordering::Relaxed);
    }

    fn asking(&self) -> std::sync::MutexGuard<'_, Asking> {
        self.asking.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// When the main thread may send the next steal request, and when it sent the one out.
///
/// An idle PE asks again as soon as an answer comes back, so two PEs that have little to
/// give (a job round trip between them, a phase where one computes a job that spawns
/// nothing stealable) would answer each other's requests without pause, and every answer
/// delays the messages that matter (the job itself, its value). After an empty answer the
/// PE waits a moment before it asks again, twice as long after each further empty answer
/// (from [`FIRST_PAUSE`] to [`MAX_PAUSE`]); a request that brings jobs ends the pauses.
#[derive(Default)]
struct Asking {
    /// When the request that is out was sent.
    sent: Option<Instant>,
    /// Empty answers in a row.
    empty: u32,
    /// No request before this time.
    not_before: Option<Instant>,
}

impl Asking {
    /// Whether a request may go now; if so, it is noted as sent.
    fn may_send(&mut self) -> bool {
        let now = Instant::now();
        if self.not_before.is_some_and(|t| now < t) {
            return false;
        }
        self.sent = Some(now);
        true
    }

    /// The answer came, with `jobs` jobs: the request's latency if it brought some.
    fn answered(&mut self, jobs: u64) -> Option<Duration> {
        let sent = self.sent.take();
        if jobs > 0 {
            self.empty = 0;
            self.not_before = None;
            return sent.map(|t| t.elapsed());
        }
        let pause = pause_after(self.empty);
        self.empty = self.empty.saturating_add(1);
        self.not_before = Some(Instant::now() + pause);
        None
    }
}

/// The pause after an empty answer that follows `empty` empty answers in a row.
fn pause_after(empty: u32) -> Duration {
    FIRST_PAUSE
        .saturating_mul(1 << empty.min(16))
        .min(MAX_PAUSE)
}

impl Shared {
    /// The main thread: asks another PE for work, unless a request is out already.
    pub(super) fn request_remote(&self, ctx: &Ctx, am: Am<Packet>, rng: &mut XorShift64) {
        let r = &self.remote;
        if self.pes < 2 || r.request_out.load(Ordering::Acquire) || !r.asking().may_send() {
            return;
        }
        let hint = r.leap_hint.swap(NO_HINT, Ordering::Relaxed);
        let victim = if hint != NO_HINT && hint != self.pe && hint < self.pes {
            hint
        } else {
            let v = rng.below(self.pes - 1);
            if v >= self.pe { v + 1 } else { v }
        };
        r.request_out.store(true, Ordering::Release);
        self.stats.add(Counter::StealRequests, 1);
        let many = *r.policy.lock().unwrap_or_else(|e| e.into_inner()) == StealPolicy::Half;
        send_msg(
            ctx,
            am,
            victim,
            &Msg::StealReq {
                thief: self.pe as u32,
                many,
            },
        );
        ctx.flush();
    }

    /// Answers PE `thief`'s steal request with what can leave this PE.
    ///
    /// The jobs come from the workers' deques, oldest first, the main thread's own too
    /// (through the thieves' path: it answers between jobs). A sendable half
    /// (`Worker::join_sendable`) goes as a job of its description; a deque whose oldest
    /// shared slot is a plain `join` half gives nothing (those never leave the PE). Jobs in the inbox
    /// (received from other PEs, or pinned here) are not given away again: a stolen job
    /// runs on its thief, so jobs cannot bounce between PEs.
    pub(super) fn answer_steal(&self, ctx: &Ctx, am: Am<Packet>, thief: u32, many: bool) {
        let mut tasks = Vec::new();
        let mut keep = Vec::new();
        // Outside a run (late requests drained after it) there is nothing to give.
        if let Some(me) = current_worker().filter(|t| std::ptr::eq(&*t.sh, self)) {
            let w = me.worker();
            let want = if many {
                (w.shared_estimate() / 2).clamp(1, MAX_BATCH)
            } else {
                1
            };
            'victims: for v in 0..self.workers {
                while tasks.len() < want {
                    let job = match w.steal_for_export(v) {
                        Some(Export::Job(job)) => job,
                        Some(Export::Half(half)) => {
                            tasks.push(self.export_half(half));
                            continue;
                        }
                        None => continue 'victims,
                    };
                    // SAFETY: a job slot of this layer, won by this thread alone.
                    // Claimed first by a waiter: it runs there.
                    let Some(t) = (unsafe { claim_slot(job) }) else {
                        continue;
                    };
                    match t.export(self, thief as usize) {
                        Ok(w) => tasks.push(w),
                        Err(t) => keep.push(t),
                    }
                }
                break;
            }
        }
        for t in keep {
            self.local.inbox.push(t);
        }
        send_msg(
            ctx,
            am,
            thief as usize,
            &Msg::Transfer { reply: true, tasks },
        );
    }

    /// Jobs from another PE: the answer to our steal request (`reply`), or shared at start.
    pub(super) fn receive_transfer(&self, reply: bool, tasks: Vec<Wire>) {
        let n = tasks.len() as u64;
        for w in tasks {
            self.local.inbox.push(self.decoders.decode(w, self.pe));
        }
        if !reply {
            self.stats.add(Counter::SharedIn, n);
            return;
        }
        let latency = self.remote.asking().answered(n);
        if n > 0 {
            if let Some(t) = latency {
                self.stats.add(Counter::StealLatencyNs, t.as_nanos() as u64);
            }
            self.stats.add(Counter::StealSuccesses, 1);
            self.stats.add(Counter::RemoteSteals, n);
        }
        self.remote.request_out.store(false, Ordering::Release);
    }

    /// A job sent with `async_on`: it stays here, it is not given to thieves.
    pub(super) fn receive_run(&self, task: Wire) {
        let t = self.decoders.decode(task, self.pe);
        self.stats.add(Counter::RemoteRuns, 1);
        self.local.inbox.push(Box::new(Pinned(t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_answers_double_the_pause_up_to_the_limit_and_jobs_end_it() {
        let pauses: Vec<u128> = (0..9).map(|k| pause_after(k).as_micros()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 64, 64, 64]);
        assert_eq!(pause_after(u32::MAX), MAX_PAUSE);
        let mut a = Asking::default();
        assert!(a.may_send(), "the first request goes at once");
        assert_eq!(a.answered(0), None);
        assert_eq!(a.empty, 1);
        assert!(a.not_before.is_some());
        a.answered(0);
        assert_eq!(a.empty, 2);
        a.sent = Some(Instant::now());
        assert!(
            a.answered(3).is_some(),
            "a request that brought jobs has a latency"
        );
        assert_eq!((a.empty, a.not_before), (0, None));
        assert!(a.may_send(), "jobs came: no pause before the next request");
    }
}
