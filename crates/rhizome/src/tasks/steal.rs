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
use std::time::Instant;

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
    request_time: Mutex<Option<Instant>>,
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
            request_time: Mutex::new(None),
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
}

impl Shared {
    /// The main thread: asks another PE for work, unless a request is out already.
    pub(super) fn request_remote(&self, ctx: &Ctx, am: Am<Packet>, rng: &mut XorShift64) {
        let r = &self.remote;
        if self.pes < 2 || r.request_out.load(Ordering::Acquire) {
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
        *r.request_time.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
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
        if n > 0 {
            let t0 = self
                .remote
                .request_time
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(t0) = t0 {
                self.stats
                    .add(Counter::StealLatencyNs, t0.elapsed().as_nanos() as u64);
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
