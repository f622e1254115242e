//! Futures over a cluster work-stealing scheduler: one interface for jobs that run on this
//! PE and jobs that run on another (seed: "A Unified Futures Interface"; scheduler: thesis
//! ch. 4, hierarchical private-deque work stealing with leapfrogging).
//!
//! # Model
//! [`Tasks::new`] (collective) sets up the scheduler of a PE; [`Tasks::run`] (collective)
//! runs a body on every PE as the first job of that PE and returns once every job started
//! anywhere, transitively, has completed. Inside, jobs create futures:
//!
//! - [`TaskCtx::spawn`] (`async` in the paper; `async` is a Rust keyword) starts a
//!   serializable [`Job`]; it may run on this PE or be stolen by another;
//! - [`TaskCtx::spawn_local`] starts a closure; it stays on this PE (any of its workers);
//! - [`TaskCtx::async_on`] runs a job on a given PE;
//! - [`make_future`] makes a ready future.
//!
//! [`Future::get`] blocks (a blocked worker runs other jobs meanwhile), futures are
//! `.await`able, clonable, and serializable, so they can be passed into jobs that run
//! elsewhere. A panic in a job is stored in its future and raised again in whoever calls
//! `get` ([`Future::try_get`] returns it as a [`JobError`]).
//!
//! ```
//! use rhizome::World;
//! use rhizome::tasks::{Job, TaskCtx, Tasks};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Fib(u64);
//!
//! impl Job for Fib {
//!     type Output = u64;
//!     fn run(self, t: &TaskCtx) -> u64 {
//!         if self.0 < 10 {
//!             return (1..=self.0).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
//!         }
//!         let a = t.spawn(Fib(self.0 - 1)); // may be stolen by another PE
//!         let b = Fib(self.0 - 2).run(t);
//!         a.get() + b
//!     }
//! }
//!
//! let out = World::builder().pes(2).run(|ctx| {
//!     let tasks = Tasks::new(ctx);
//!     tasks.register::<Fib>();
//!     tasks.run(ctx, |t| (t.my_pe() == 0).then(|| t.spawn(Fib(25)).get()))
//! }).unwrap();
//! assert_eq!(out[0], Some(75025));
//! ```
//!
//! # Scheduler
//! Every worker thread of a PE has a deque: it pushes and pops its own jobs at one end
//! (newest first); idle workers of the same PE steal the oldest job of another worker.
//! Only when the whole PE is out of work does it steal from another PE: its main thread
//! sends a steal request, and the victim's main thread answers at its next poll point
//! with one job (steal-one) or half of its stealable jobs (steal-many), encoded, or with
//! nothing. No lock and no remote memory access is involved: the deques are private to
//! their PE (request/transfer through messages). A worker waiting for a future steals
//! first from the worker or PE that runs the awaited job (leapfrogging). A stolen job's
//! result travels back to the owner of its future in a message. At the start of a run
//! PE 0 sends its first stealable jobs to the other PEs (initial work-sharing phase).
//!
//! Termination: each PE counts the jobs it created and the jobs it owns that completed.
//! Once its body is done and it is idle, PE 0 collects the sums in waves of messages;
//! two consecutive equal waves with created = completed mean every job has completed
//! (the four-counter method), and PE 0 tells everyone to stop.
//!
//! # Blocking and deadlock
//! A worker blocked in `get` runs other jobs *on its own stack* (there are no green
//! threads), as the job stacks of the unified-futures paper do. This is deadlock-free for
//! fork-join use: a job waits only for futures of jobs it spawned itself (directly or
//! through its descendants), for ready futures, or for *leaf* jobs (jobs that never wait).
//! A job that waits for any other future can deadlock: the awaited job may itself be
//! blocked below the waiter on the same worker's stack (e.g. job `A` waits for a future of
//! job `B`, `B` spawned children and waits for them, and a worker blocked in `B` picks up
//! `A`). The body of [`Tasks::run`] may wait for anything. To pass a non-leaf future into
//! other jobs, wait for it in a common ancestor first, or pass the value instead.
//!
//! Messages are handled by the PE's main thread (the one holding the [`Ctx`]) whenever it
//! is between jobs, when it spawns, and when it waits; a job that computes for long
//! without spawning can call [`TaskCtx::poll`] so steal requests are answered.

mod future;

pub use future::{Future, JobError, make_future};

use crate::world::{AbortUnwind, Am, Ctx};
use crossbeam_channel::{Receiver, Sender};
use crossbeam_deque::{Injector, Steal, Stealer, Worker as Deque};
use future::{Export, Fulfiller, LOCAL_THIEF, NO_THIEF, REMOTE_THIEF, State, encode_result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// A unit of work that may run on any PE: a serializable value with a `run` method.
///
/// Derive `Serialize` and `Deserialize` (serde) and register the type on every PE with
/// [`Tasks::register`]. The output travels back to the owner of the future when the job
/// ran elsewhere.
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    /// The job's result.
    type Output: Serialize + DeserializeOwned + Send + 'static;
    /// Does the work; `t` spawns sub-jobs and gives the PE's identity.
    fn run(self, t: &TaskCtx) -> Self::Output;
}

/// Marker payload: the run was stopped (another PE failed); waiting code unwinds.
struct Stopped;

/// How many jobs a PE gives away for one steal request from another PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StealPolicy {
    /// The oldest stealable job.
    One,
    /// Half of the stealable jobs (at least one, at most 64), oldest first.
    Half,
}

/// Counters of one PE's scheduler over one [`Tasks::run`].
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

/// A job encoded for another PE: its type, the owner of its future, and its bytes.
#[derive(Serialize, Deserialize)]
struct Wire {
    kind: u64,
    owner: u32,
    id: u64,
    // Encoded as one block: plain serde writes and reads a `Vec<u8>` byte by byte, which
    // made a megabyte job cost milliseconds to pass on.
    #[serde(with = "serde_bytes")]
    bytes: Vec<u8>,
}

/// The scheduler's messages between PEs.
#[derive(Serialize, Deserialize)]
enum Msg {
    StealReq {
        thief: u32,
        many: bool,
    },
    Transfer {
        reply: bool,
        tasks: Vec<Wire>,
    },
    Run {
        task: Wire,
    },
    Value {
        id: u64,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    Subscribe {
        id: u64,
        pe: u32,
        sub: u64,
    },
    CountReq {
        wave: u64,
    },
    CountRep {
        wave: u64,
        created: u64,
        completed: u64,
    },
    Stop,
}

/// A job in a deque, type-erased.
trait TaskObj: Send {
    fn run(self: Box<Self>, w: &TaskCtx);
    /// Encodes the job for PE `thief`; gives it back if it must stay on this PE.
    fn export(self: Box<Self>, sh: &Shared, thief: usize) -> Result<Wire, Task>;
    /// Records who runs the job (leapfrogging hint for its waiter).
    fn note_thief(&self, code: u64);
}
type Task = Box<dyn TaskObj>;

type Decoder = fn(&[u8], u32, u64) -> Task;

#[derive(Default)]
struct AtomicStats {
    local_steals: AtomicU64,
    remote_steals: AtomicU64,
    steal_requests: AtomicU64,
    steal_successes: AtomicU64,
    shared_in: AtomicU64,
    steal_latency_ns: AtomicU64,
    remote_runs: AtomicU64,
    jobs_run: AtomicU64,
}

#[derive(Default)]
struct Wave {
    seq: u64,
    active: bool,
    waiting: usize,
    sums: (u64, u64),
    previous: Option<(u64, u64)>,
    last: Option<Instant>,
}

/// The scheduler state of one PE, shared by its worker threads and its message handler.
pub(crate) struct Shared {
    pe: usize,
    pes: usize,
    workers: usize,
    policy: Mutex<StealPolicy>,
    sharing: AtomicBool,
    stealers: Box<[Stealer<Task>]>,
    deques: Mutex<Vec<Option<Deque<Task>>>>,
    injector: Injector<Task>,
    out_tx: Sender<(usize, Msg)>,
    out_rx: Receiver<(usize, Msg)>,
    pending: Mutex<HashMap<u64, (Fulfiller, bool)>>,
    exports: Mutex<HashMap<u64, Export>>,
    imports: Mutex<HashMap<(u32, u64), Arc<dyn std::any::Any + Send + Sync>>>,
    decoders: RwLock<HashMap<u64, Decoder>>,
    next_id: AtomicU64,
    created: AtomicU64,
    completed: AtomicU64,
    stop: AtomicBool,
    hungry: AtomicBool,
    request_out: AtomicBool,
    request_time: Mutex<Option<Instant>>,
    leap_hint: AtomicUsize,
    share_next: AtomicUsize,
    wave: Mutex<Wave>,
    stats: AtomicStats,
    rng: AtomicU64,
}

const NO_HINT: usize = usize::MAX;
/// How often the main thread handles messages while it has local work (in scheduler steps).
const POLL_EVERY: u32 = 2;
/// The least time between two termination waves.
const WAVE_GAP: Duration = Duration::from_micros(20);
/// Idle steps a waiting worker makes before it asks other PEs for work.
const REMOTE_GRACE: u32 = 32;
/// Most jobs given away for one steal-many request.
const MAX_BATCH: usize = 64;

thread_local! {
    static SHARED: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    static WORKER: Cell<*const TaskCtx> = const { Cell::new(std::ptr::null()) };
}

fn current_shared() -> Option<Arc<Shared>> {
    SHARED.with(|s| s.borrow().clone())
}

fn current_worker<'a>() -> Option<&'a TaskCtx> {
    let p = WORKER.with(|w| w.get());
    // SAFETY: WORKER is set by `TaskCtx::enter` to a worker that lives on this thread's
    // stack for the whole time the pointer is set (reset by the guard before the worker
    // is dropped), and the returned reference is used only within calls made while that
    // worker runs (a job's `get`), never stored.
    unsafe { p.as_ref() }
}

fn kind_of<J: 'static>() -> u64 {
    // FNV-1a of the type name: the same on every PE of one program, whatever the
    // registration order.
    std::any::type_name::<J>()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

impl Shared {
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn outbox_sender(&self) -> Sender<(usize, Msg)> {
        self.out_tx.clone()
    }

    fn post(&self, pe: usize, m: Msg) {
        let _ = self.out_tx.send((pe, m));
    }

    /// Registers a slot for a value that arrives in a `Value` message; `task` says the
    /// value is the result of a job this PE owns (it completes the job for termination).
    fn add_pending(&self, f: Fulfiller, task: bool) -> u64 {
        let id = self.next_id();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (f, task));
        id
    }

    fn random(&self, n: usize) -> usize {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        (x % n as u64) as usize
    }

    fn stealable(&self) -> usize {
        self.stealers.iter().map(|s| s.len()).sum::<usize>()
    }

    /// Takes the oldest job of any local worker deque for a thief from another PE. Jobs in
    /// the injector (received from other PEs, or pinned here) are not given away again:
    /// a stolen job runs on its thief, so jobs cannot bounce between PEs.
    fn steal_any(&self) -> Option<Task> {
        loop {
            let mut retry = false;
            for s in self.stealers.iter() {
                match s.steal() {
                    Steal::Success(t) => return Some(t),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    fn decode(&self, w: Wire) -> Task {
        let d = self
            .decoders
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&w.kind)
            .copied();
        let Some(d) = d else {
            panic!(
                "rhizome: PE {} received a job of a type it has not registered (Tasks::register must be called on every PE)",
                self.pe
            )
        };
        d(&w.bytes, w.owner, w.id)
    }

    /// Handles one scheduler message (on the main thread).
    fn handle(&self, ctx: &Ctx, am: Am<Packet>, m: Msg) {
        match m {
            Msg::StealReq { thief, many } => {
                let avail = self.stealable();
                let want = if many {
                    (avail / 2).clamp(1, MAX_BATCH)
                } else {
                    1
                };
                let mut tasks = Vec::new();
                let mut keep = Vec::new();
                let mut tries = avail + want;
                while tasks.len() < want && tries > 0 {
                    tries -= 1;
                    let Some(t) = self.steal_any() else { break };
                    match t.export(self, thief as usize) {
                        Ok(w) => tasks.push(w),
                        Err(t) => keep.push(t),
                    }
                }
                for t in keep {
                    self.injector.push(t);
                }
                send_msg(
                    ctx,
                    am,
                    thief as usize,
                    &Msg::Transfer { reply: true, tasks },
                );
            }
            Msg::Transfer { reply, tasks } => {
                let n = tasks.len() as u64;
                for w in tasks {
                    let t = self.decode(w);
                    self.injector.push(t);
                }
                if reply {
                    if n > 0 {
                        let t0 = self
                            .request_time
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .take();
                        if let Some(t0) = t0 {
                            self.stats
                                .steal_latency_ns
                                .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                        }
                        self.stats.steal_successes.fetch_add(1, Ordering::Relaxed);
                        self.stats.remote_steals.fetch_add(n, Ordering::Relaxed);
                    }
                    self.request_out.store(false, Ordering::Release);
                } else {
                    self.stats.shared_in.fetch_add(n, Ordering::Relaxed);
                }
            }
            Msg::Run { task } => {
                let t = self.decode(task);
                self.stats.remote_runs.fetch_add(1, Ordering::Relaxed);
                // A job sent with `async_on` stays here: it is not given to thieves.
                self.injector.push(Box::new(Pinned(t)));
            }
            Msg::Value { id, bytes } => {
                let entry = self
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                let Some((f, task)) = entry else {
                    panic!(
                        "rhizome: PE {} received a value for an unknown future",
                        self.pe
                    )
                };
                f(&bytes);
                if task {
                    self.completed.fetch_add(1, Ordering::Release);
                }
            }
            Msg::Subscribe { id, pe, sub } => {
                let exports = self.exports.lock().unwrap_or_else(|e| e.into_inner());
                let Some(e) = exports.get(&id) else {
                    panic!("rhizome: PE {} asked for an unknown exported future", pe)
                };
                e.subscribe(self, pe, sub);
            }
            Msg::CountReq { wave } => {
                let completed = self.completed.load(Ordering::Acquire);
                let created = self.created.load(Ordering::Acquire);
                send_msg(
                    ctx,
                    am,
                    0,
                    &Msg::CountRep {
                        wave,
                        created,
                        completed,
                    },
                );
            }
            Msg::CountRep {
                wave,
                created,
                completed,
            } => {
                let mut w = self.wave.lock().unwrap_or_else(|e| e.into_inner());
                if w.active && w.seq == wave {
                    w.sums.0 += created;
                    w.sums.1 += completed;
                    w.waiting -= 1;
                    if w.waiting == 0 {
                        self.end_wave(ctx, am, &mut w);
                    }
                }
            }
            Msg::Stop => self.stop.store(true, Ordering::Release),
        }
    }

    /// PE 0: starts a termination wave if none runs and the last one is old enough.
    fn maybe_start_wave(&self, ctx: &Ctx, am: Am<Packet>) {
        let mut w = self.wave.lock().unwrap_or_else(|e| e.into_inner());
        if w.active || w.last.is_some_and(|t| t.elapsed() < WAVE_GAP) {
            return;
        }
        w.seq += 1;
        w.active = true;
        w.last = Some(Instant::now());
        // Completed before created: a job completing after this read was created before.
        let completed = self.completed.load(Ordering::Acquire);
        let created = self.created.load(Ordering::Acquire);
        w.sums = (created, completed);
        w.waiting = self.pes - 1;
        if w.waiting == 0 {
            self.end_wave(ctx, am, &mut w);
            return;
        }
        let seq = w.seq;
        drop(w);
        for pe in 1..self.pes {
            send_msg(ctx, am, pe, &Msg::CountReq { wave: seq });
        }
        ctx.flush();
    }

    fn end_wave(&self, ctx: &Ctx, am: Am<Packet>, w: &mut Wave) {
        w.active = false;
        let sums = w.sums;
        if sums.0 == sums.1 && w.previous == Some(sums) {
            for pe in 1..self.pes {
                send_msg(ctx, am, pe, &Msg::Stop);
            }
            ctx.flush();
            self.stop.store(true, Ordering::Release);
        }
        w.previous = Some(sums);
    }
}

fn send_msg(ctx: &Ctx, am: Am<Packet>, pe: usize, m: &Msg) {
    ctx.send_encoded(pe, am, |out| encode_packet(m, out));
}

/// A scheduler message on the wire: postcard bytes after a length prefix, written straight
/// into the aggregation buffer and decoded straight from the receive buffer (jobs and
/// values can be megabytes, and every copy is on a steal's critical path).
struct Packet(Msg);

fn encode_packet(m: &Msg, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut buf = postcard::to_extend(m, std::mem::take(out)).expect("scheduler messages encode");
    let n = (buf.len() - at - 8) as u64;
    buf[at..at + 8].copy_from_slice(&n.to_le_bytes());
    *out = buf;
}

impl crate::Message for Packet {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_packet(&self.0, out);
    }
    fn decode(input: &mut &[u8]) -> Self {
        let n = u64::decode(input) as usize;
        assert!(
            input.len() >= n,
            "rhizome: scheduler message truncated ({n} bytes announced, {} left)",
            input.len()
        );
        let (head, tail) = input.split_at(n);
        *input = tail;
        Packet(postcard::from_bytes(head).expect("scheduler messages decode"))
    }
}

/// A job whose future lives on this PE, or on PE `owner` under `id`.
enum Dest<T> {
    Local(Arc<State<T>>),
    Remote { owner: u32, id: u64 },
}

struct JobTask<J: Job> {
    job: J,
    dest: Dest<J::Output>,
}

/// Runs `f`, turning a panic into a `JobError` (but letting a stop unwind on).
fn catch<R>(f: impl FnOnce() -> R) -> Result<R, future::JobError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        if p.is::<Stopped>() || p.is::<AbortUnwind>() {
            resume_unwind(p)
        }
        future::JobError::from_panic(&*p)
    })
}

impl<J: Job> TaskObj for JobTask<J> {
    fn run(self: Box<Self>, w: &TaskCtx) {
        let JobTask { job, dest } = *self;
        let r = catch(|| job.run(w));
        match dest {
            Dest::Local(st) => {
                st.fulfill(r);
                w.sh.completed.fetch_add(1, Ordering::Release);
            }
            Dest::Remote { owner, id } => w.sh.post(
                owner as usize,
                Msg::Value {
                    id,
                    bytes: encode_result(&r),
                },
            ),
        }
    }

    fn export(self: Box<Self>, sh: &Shared, thief: usize) -> Result<Wire, Task> {
        let JobTask { job, dest } = *self;
        let (owner, id) = match dest {
            Dest::Local(st) => {
                st.thief
                    .store(REMOTE_THIEF + thief as u64, Ordering::Relaxed);
                let id = sh.add_pending(future::remote_fulfiller(st), true);
                (sh.pe as u32, id)
            }
            Dest::Remote { owner, id } => (owner, id),
        };
        let bytes = match postcard::to_stdvec(&job) {
            Ok(b) => b,
            Err(e) => panic!(
                "rhizome: job {} could not be encoded: {e}",
                std::any::type_name::<J>()
            ),
        };
        Ok(Wire {
            kind: kind_of::<J>(),
            owner,
            id,
            bytes,
        })
    }

    fn note_thief(&self, code: u64) {
        if let Dest::Local(st) = &self.dest {
            st.thief.store(code, Ordering::Relaxed);
        }
    }
}

fn decode_job<J: Job>(bytes: &[u8], owner: u32, id: u64) -> Task {
    match postcard::from_bytes::<J>(bytes) {
        Ok(job) => Box::new(JobTask {
            job,
            dest: Dest::Remote { owner, id },
        }),
        Err(e) => panic!(
            "rhizome: job {} could not be decoded: {e}",
            std::any::type_name::<J>()
        ),
    }
}

/// A closure job: never leaves its PE.
struct LocalTask<F, T> {
    f: F,
    state: Arc<State<T>>,
}

impl<F: FnOnce(&TaskCtx) -> T + Send + 'static, T: Send + 'static> TaskObj for LocalTask<F, T> {
    fn run(self: Box<Self>, w: &TaskCtx) {
        let LocalTask { f, state } = *self;
        let r = catch(|| f(w));
        state.fulfill(r);
        w.sh.completed.fetch_add(1, Ordering::Release);
    }
    fn export(self: Box<Self>, _: &Shared, _: usize) -> Result<Wire, Task> {
        Err(self)
    }
    fn note_thief(&self, code: u64) {
        self.state.thief.store(code, Ordering::Relaxed);
    }
}

/// A job that must stay on this PE (sent here with `async_on`).
struct Pinned(Task);

impl TaskObj for Pinned {
    fn run(self: Box<Self>, w: &TaskCtx) {
        self.0.run(w)
    }
    fn export(self: Box<Self>, _: &Shared, _: usize) -> Result<Wire, Task> {
        Err(self)
    }
    fn note_thief(&self, code: u64) {
        self.0.note_thief(code)
    }
}

/// The task scheduler of one PE. See the [module documentation](self).
pub struct Tasks {
    sh: Arc<Shared>,
    am: Am<Packet>,
    stats: Cell<Stats>,
}

impl Tasks {
    /// Collective: sets up the scheduler on this PE with [`Ctx::workers`] worker threads
    /// (the PE's main thread is one of them) and registers its message handler.
    pub fn new(ctx: &Ctx) -> Tasks {
        let workers = ctx.workers().max(1);
        let deques: Vec<Deque<Task>> = (0..workers).map(|_| Deque::new_lifo()).collect();
        let stealers = deques.iter().map(|d| d.stealer()).collect();
        let (out_tx, out_rx) = crossbeam_channel::unbounded();
        let sh = Arc::new(Shared {
            pe: ctx.my_pe(),
            pes: ctx.num_pes(),
            workers,
            policy: Mutex::new(StealPolicy::One),
            sharing: AtomicBool::new(true),
            stealers,
            deques: Mutex::new(deques.into_iter().map(Some).collect()),
            injector: Injector::new(),
            out_tx,
            out_rx,
            pending: Mutex::new(HashMap::new()),
            exports: Mutex::new(HashMap::new()),
            imports: Mutex::new(HashMap::new()),
            decoders: RwLock::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            created: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            hungry: AtomicBool::new(false),
            request_out: AtomicBool::new(false),
            request_time: Mutex::new(None),
            leap_hint: AtomicUsize::new(NO_HINT),
            share_next: AtomicUsize::new(usize::MAX),
            wave: Mutex::new(Wave::default()),
            stats: AtomicStats::default(),
            rng: AtomicU64::new(0x9E37_79B9_7F4A_7C15 ^ (ctx.my_pe() as u64 + 1) << 17),
        });
        let sh2 = Arc::clone(&sh);
        let am_cell: Rc<Cell<Option<Am<Packet>>>> = Rc::new(Cell::new(None));
        let am_cell2 = Rc::clone(&am_cell);
        let am = ctx.register(move |ctx: &Ctx, Packet(m): Packet| {
            let am = am_cell2.get().expect("registered before any message");
            sh2.handle(ctx, am, m);
        });
        am_cell.set(Some(am));
        Tasks {
            sh,
            am,
            stats: Cell::new(Stats::default()),
        }
    }

    /// Makes job type `J` known on this PE, so jobs of this type sent by other PEs can be
    /// decoded. Call it on every PE for every job type that may cross PEs, before
    /// [`Tasks::run`] (the order does not matter; repeating it is harmless).
    pub fn register<J: Job>(&self) -> &Self {
        self.sh
            .decoders
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kind_of::<J>(), decode_job::<J>);
        self
    }

    /// How many jobs a PE gives a thief from another PE (default [`StealPolicy::One`]).
    pub fn set_steal_policy(&self, p: StealPolicy) -> &Self {
        *self.sh.policy.lock().unwrap_or_else(|e| e.into_inner()) = p;
        self
    }

    /// Whether PE 0 sends its first stealable jobs to the other PEs (default on).
    pub fn set_initial_sharing(&self, on: bool) -> &Self {
        self.sh.sharing.store(on, Ordering::Relaxed);
        self
    }

    /// The counters of the last [`Tasks::run`] on this PE.
    pub fn stats(&self) -> Stats {
        self.stats.get()
    }

    /// Collective: runs `body` on this PE as a job (the other workers and PEs steal from
    /// it), then schedules jobs until every job created in this run, on any PE, has
    /// completed; returns the body's result. A panic in the body propagates (and stops
    /// the whole world, like any panic of a PE).
    pub fn run<R>(&self, ctx: &Ctx, body: impl FnOnce(&TaskCtx) -> R) -> R {
        assert!(
            ctx.my_pe() == self.sh.pe && ctx.num_pes() == self.sh.pes,
            "rhizome: Tasks::run with the context of another PE"
        );
        assert!(
            current_worker().is_none(),
            "rhizome: Tasks::run cannot be nested"
        );
        let sh = &self.sh;
        sh.stop.store(false, Ordering::Relaxed);
        sh.hungry.store(false, Ordering::Relaxed);
        sh.request_out.store(false, Ordering::Relaxed);
        sh.leap_hint.store(NO_HINT, Ordering::Relaxed);
        sh.created.store(0, Ordering::Relaxed);
        sh.completed.store(0, Ordering::Relaxed);
        *sh.wave.lock().unwrap_or_else(|e| e.into_inner()) = Wave::default();
        sh.share_next.store(
            if sh.pe == 0 && sh.sharing.load(Ordering::Relaxed) {
                1
            } else {
                usize::MAX
            },
            Ordering::Relaxed,
        );
        let s = &sh.stats;
        for c in [
            &s.local_steals,
            &s.remote_steals,
            &s.steal_requests,
            &s.steal_successes,
            &s.shared_in,
            &s.steal_latency_ns,
            &s.remote_runs,
            &s.jobs_run,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        // Every PE is ready before anyone sends scheduler messages.
        ctx.barrier();
        let mut deques = std::mem::take(&mut *sh.deques.lock().unwrap_or_else(|e| e.into_inner()));
        assert_eq!(deques.len(), sh.workers, "rhizome: Tasks::run re-entered");
        let r = std::thread::scope(|scope| {
            let _stop = StopGuard(sh);
            let mut handles = Vec::new();
            for (i, d) in deques.iter_mut().enumerate().skip(1) {
                let d = d.take().expect("deque present");
                let sh = Arc::clone(sh);
                let h = std::thread::Builder::new()
                    .name(format!("rhizome-task-{}-{i}", sh.pe))
                    .stack_size(64 << 20)
                    .spawn_scoped(scope, move || {
                        let w = TaskCtx {
                            sh,
                            index: i,
                            deque: d,
                            main: None,
                            tick: Cell::new(0),
                            jobs: Cell::new(0),
                        };
                        let g = w.enter();
                        // A stop while waiting (another PE failed) unwinds to here.
                        let _ = catch_unwind(AssertUnwindSafe(|| w.top_loop()));
                        drop(g);
                        w.sh.stats
                            .jobs_run
                            .fetch_add(w.jobs.get(), Ordering::Relaxed);
                        (i, w.deque)
                    })
                    .expect("cannot start a task worker");
                handles.push(h);
            }
            let main = TaskCtx {
                sh: Arc::clone(sh),
                index: 0,
                deque: deques[0].take().expect("deque present"),
                main: Some(MainCtx {
                    // SAFETY: only the lifetime is erased: `main` and every reference to
                    // it (the WORKER thread-local, reset by the guard) end inside this
                    // scope, while `ctx` is borrowed for the whole call.
                    ctx: unsafe { &*(ctx as *const Ctx) },
                    am: self.am,
                    body_done: Cell::new(false),
                }),
                tick: Cell::new(0),
                jobs: Cell::new(1),
            };
            let g = main.enter();
            sh.created.fetch_add(1, Ordering::Relaxed);
            let r = body(&main);
            sh.completed.fetch_add(1, Ordering::Release);
            if let Some(m) = &main.main {
                m.body_done.set(true);
            }
            main.top_loop();
            drop(g);
            sh.stats
                .jobs_run
                .fetch_add(main.jobs.get(), Ordering::Relaxed);
            deques[0] = Some(main.deque);
            for h in handles {
                let (i, d) = h.join().expect("task workers do not panic");
                deques[i] = Some(d);
            }
            r
        });
        *sh.deques.lock().unwrap_or_else(|e| e.into_inner()) = deques;
        // Drain replies to late steal requests and subscriptions, on every PE.
        SHARED.with(|s| *s.borrow_mut() = Some(Arc::clone(sh)));
        ctx.finish(|| ());
        SHARED.with(|s| *s.borrow_mut() = None);
        while let Ok((pe, m)) = sh.out_rx.try_recv() {
            // Values for subscriptions no one waits for any more.
            drop((pe, m));
        }
        sh.exports.lock().unwrap_or_else(|e| e.into_inner()).clear();
        sh.imports.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.stats.set(Stats {
            jobs_run: s.jobs_run.load(Ordering::Relaxed),
            local_steals: s.local_steals.load(Ordering::Relaxed),
            remote_steals: s.remote_steals.load(Ordering::Relaxed),
            steal_requests: s.steal_requests.load(Ordering::Relaxed),
            steal_successes: s.steal_successes.load(Ordering::Relaxed),
            shared_in: s.shared_in.load(Ordering::Relaxed),
            steal_latency_ns: s.steal_latency_ns.load(Ordering::Relaxed),
            remote_runs: s.remote_runs.load(Ordering::Relaxed),
        });
        r
    }
}

/// Sets the stop flag when the run ends, also by unwinding, so worker threads leave.
struct StopGuard<'a>(&'a Shared);
impl Drop for StopGuard<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Release);
    }
}

/// What only the PE's main thread has: the context for messages.
struct MainCtx {
    ctx: &'static Ctx,
    am: Am<Packet>,
    body_done: Cell<bool>,
}

/// The worker a job runs on: spawns sub-jobs, and tells where it runs.
pub struct TaskCtx {
    sh: Arc<Shared>,
    index: usize,
    deque: Deque<Task>,
    main: Option<MainCtx>,
    tick: Cell<u32>,
    jobs: Cell<u64>,
}

struct EnterGuard;
impl Drop for EnterGuard {
    fn drop(&mut self) {
        WORKER.with(|w| w.set(std::ptr::null()));
        SHARED.with(|s| *s.borrow_mut() = None);
    }
}

impl TaskCtx {
    fn enter(&self) -> EnterGuard {
        WORKER.with(|w| w.set(self));
        SHARED.with(|s| *s.borrow_mut() = Some(Arc::clone(&self.sh)));
        EnterGuard
    }

    /// This PE's number.
    pub fn my_pe(&self) -> usize {
        self.sh.pe
    }
    /// Number of PEs.
    pub fn num_pes(&self) -> usize {
        self.sh.pes
    }
    /// This worker's index within its PE (0 is the PE's main thread).
    pub fn worker_index(&self) -> usize {
        self.index
    }
    /// Worker threads of this PE.
    pub fn workers(&self) -> usize {
        self.sh.workers
    }

    /// Starts `job`; it runs on this worker later, or on another worker or PE that steals
    /// it. (`async` in the unified-futures paper.)
    pub fn spawn<J: Job>(&self, job: J) -> Future<J::Output> {
        let st = Arc::new(State::new());
        self.sh.created.fetch_add(1, Ordering::Relaxed);
        let task: Task = Box::new(JobTask {
            job,
            dest: Dest::Local(Arc::clone(&st)),
        });
        self.push(task);
        Future::from_state(st)
    }

    /// Starts closure `f`; it runs on some worker of this PE.
    pub fn spawn_local<T: Send + 'static>(
        &self,
        f: impl FnOnce(&TaskCtx) -> T + Send + 'static,
    ) -> Future<T> {
        let st = Arc::new(State::new());
        self.sh.created.fetch_add(1, Ordering::Relaxed);
        self.deque.push(Box::new(LocalTask {
            f,
            state: Arc::clone(&st),
        }));
        self.maybe_poll();
        Future::from_state(st)
    }

    /// Runs `job` on PE `pe` (on any worker there; it is not stolen away from `pe`).
    pub fn async_on<J: Job>(&self, pe: usize, job: J) -> Future<J::Output> {
        assert!(
            pe < self.sh.pes,
            "rhizome: async_on PE {pe}, but there are {} PEs",
            self.sh.pes
        );
        let st = Arc::new(State::new());
        self.sh.created.fetch_add(1, Ordering::Relaxed);
        if pe == self.sh.pe {
            self.deque.push(Box::new(Pinned(Box::new(JobTask {
                job,
                dest: Dest::Local(Arc::clone(&st)),
            }))));
        } else {
            st.thief.store(REMOTE_THIEF + pe as u64, Ordering::Relaxed);
            let id = self
                .sh
                .add_pending(future::remote_fulfiller(Arc::clone(&st)), true);
            let bytes = postcard::to_stdvec(&job).unwrap_or_else(|e| {
                panic!(
                    "rhizome: job {} could not be encoded: {e}",
                    std::any::type_name::<J>()
                )
            });
            self.sh.post(
                pe,
                Msg::Run {
                    task: Wire {
                        kind: kind_of::<J>(),
                        owner: self.sh.pe as u32,
                        id,
                        bytes,
                    },
                },
            );
            if let Some(m) = &self.main {
                self.poll_main(m);
            }
        }
        Future::from_state(st)
    }

    /// Lets the PE answer messages (steal requests, values) now; call it now and then in
    /// a job that computes for long without spawning. Cheap; a no-op on workers other
    /// than the PE's main thread.
    pub fn poll(&self) {
        if let Some(m) = &self.main {
            self.poll_main(m);
        }
    }

    /// Drives a [`std::future::Future`] (e.g. an `async` block that `.await`s futures of
    /// jobs) to completion on this worker, running other jobs while it is pending.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        use std::task::{Context, Poll, Wake, Waker};
        struct Flag(AtomicBool);
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::Release);
            }
        }
        let flag = Arc::new(Flag(AtomicBool::new(true)));
        let waker = Waker::from(Arc::clone(&flag));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        loop {
            if flag.0.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
            } else {
                if self.sh.stop.load(Ordering::Acquire) {
                    future::stopped();
                }
                if !self.step(NO_THIEF, true) {
                    std::hint::spin_loop();
                }
            }
        }
    }

    #[inline]
    fn push(&self, task: Task) {
        let sh = &*self.sh;
        if sh.share_next.load(Ordering::Relaxed) < sh.pes {
            let p = sh.share_next.fetch_add(1, Ordering::Relaxed);
            if p < sh.pes {
                match task.export(sh, p) {
                    Ok(w) => {
                        sh.post(
                            p,
                            Msg::Transfer {
                                reply: false,
                                tasks: vec![w],
                            },
                        );
                        self.poll();
                        return;
                    }
                    Err(t) => {
                        self.deque.push(t);
                        return;
                    }
                }
            }
        }
        self.deque.push(task);
        self.maybe_poll();
    }

    #[inline]
    fn maybe_poll(&self) {
        if let Some(m) = &self.main {
            let t = self.tick.get().wrapping_add(1);
            self.tick.set(t);
            if t.is_multiple_of(POLL_EVERY) {
                self.poll_main(m);
            }
        }
    }

    /// Sends queued messages and runs the handlers of received ones.
    fn poll_main(&self, m: &MainCtx) {
        let ctx = m.ctx;
        let mut sent = false;
        while let Ok((pe, msg)) = self.sh.out_rx.try_recv() {
            send_msg(ctx, m.am, pe, &msg);
            sent = true;
        }
        let n = ctx.progress();
        if sent || n > 0 {
            ctx.flush();
        }
        if self.sh.hungry.swap(false, Ordering::Relaxed) {
            self.request_remote(m);
        }
    }

    fn request_remote(&self, m: &MainCtx) {
        let sh = &*self.sh;
        if sh.pes < 2 || sh.request_out.load(Ordering::Acquire) {
            return;
        }
        let hint = sh.leap_hint.swap(NO_HINT, Ordering::Relaxed);
        let victim = if hint != NO_HINT && hint != sh.pe && hint < sh.pes {
            hint
        } else {
            let v = sh.random(sh.pes - 1);
            if v >= sh.pe { v + 1 } else { v }
        };
        sh.request_out.store(true, Ordering::Release);
        *sh.request_time.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        sh.stats.steal_requests.fetch_add(1, Ordering::Relaxed);
        let many = *sh.policy.lock().unwrap_or_else(|e| e.into_inner()) == StealPolicy::Half;
        send_msg(
            m.ctx,
            m.am,
            victim,
            &Msg::StealReq {
                thief: sh.pe as u32,
                many,
            },
        );
        m.ctx.flush();
    }

    fn exec(&self, t: Task) {
        self.tick.set(self.tick.get().wrapping_add(1));
        self.jobs.set(self.jobs.get() + 1);
        t.run(self);
        // A result for another PE leaves at once (job round-trip latency).
        if let Some(m) = &self.main
            && !self.sh.out_rx.is_empty()
        {
            self.poll_main(m);
        }
    }

    /// One scheduling step: runs one job if there is one anywhere reachable. `hint` is the
    /// thief code of an awaited job (leapfrogging).
    fn step(&self, hint: u64, remote: bool) -> bool {
        let sh = &*self.sh;
        if let Some(m) = &self.main
            && self.tick.get().is_multiple_of(POLL_EVERY)
        {
            self.poll_main(m);
        }
        if let Some(t) = self.deque.pop() {
            self.exec(t);
            return true;
        }
        // Leapfrogging inside the PE: steal from the worker that runs the awaited job.
        if (LOCAL_THIEF..REMOTE_THIEF).contains(&hint) {
            let w = (hint - LOCAL_THIEF) as usize;
            if w != self.index
                && let Some(s) = sh.stealers.get(w)
                && let Steal::Success(t) = s.steal()
            {
                sh.stats.local_steals.fetch_add(1, Ordering::Relaxed);
                t.note_thief(LOCAL_THIEF + self.index as u64);
                self.exec(t);
                return true;
            }
        }
        if let Steal::Success(t) = sh.injector.steal() {
            t.note_thief(LOCAL_THIEF + self.index as u64);
            self.exec(t);
            return true;
        }
        let n = sh.workers;
        if n > 1 {
            let start = sh.random(n);
            for k in 0..n {
                let v = (start + k) % n;
                if v == self.index {
                    continue;
                }
                if let Steal::Success(t) = sh.stealers[v].steal() {
                    sh.stats.local_steals.fetch_add(1, Ordering::Relaxed);
                    t.note_thief(LOCAL_THIEF + self.index as u64);
                    self.exec(t);
                    return true;
                }
            }
        }
        // The whole PE looks idle: handle messages (they may bring jobs), then steal from
        // another PE (the awaited job's PE first).
        if let Some(m) = &self.main {
            self.poll_main(m);
            if let Steal::Success(t) = sh.injector.steal() {
                t.note_thief(LOCAL_THIEF + self.index as u64);
                self.exec(t);
                return true;
            }
        }
        if hint >= REMOTE_THIEF {
            sh.leap_hint
                .store((hint - REMOTE_THIEF) as usize, Ordering::Relaxed);
        }
        match &self.main {
            Some(m) if remote => self.request_remote(m),
            Some(_) => {}
            None => sh.hungry.store(true, Ordering::Relaxed),
        }
        false
    }

    /// Runs jobs until `st` is ready.
    fn help_until<T>(&self, st: &State<T>) {
        let mut idle = 0u32;
        while !st.is_ready() {
            if self.sh.stop.load(Ordering::Acquire) {
                future::stopped();
            }
            // A short grace before stealing from other PEs: a quick remote job (a round
            // trip) should not be slowed down by steal traffic.
            if self.step(st.thief.load(Ordering::Relaxed), idle >= REMOTE_GRACE) {
                idle = 0;
            } else {
                idle = backoff(idle);
            }
        }
    }

    /// The loop of a worker with nothing to wait for: runs jobs until the run stops.
    fn top_loop(&self) {
        let mut idle = 0u32;
        loop {
            if self.sh.stop.load(Ordering::Acquire) {
                return;
            }
            if self.step(NO_THIEF, true) {
                idle = 0;
                continue;
            }
            if let Some(m) = &self.main
                && self.sh.pe == 0
                && m.body_done.get()
            {
                self.sh.maybe_start_wave(m.ctx, m.am);
            }
            idle = backoff(idle);
        }
    }
}

/// Idle steps a worker spins, then yields, before it naps between steps.
const IDLE_SPINS: u32 = 64;
const IDLE_YIELDS: u32 = 2048;
/// A nap of a long-idle worker: short enough for steal latency, long enough to leave
/// the core to busy threads when the machine is oversubscribed.
const IDLE_NAP: Duration = Duration::from_micros(20);

fn backoff(idle: u32) -> u32 {
    if idle < IDLE_SPINS {
        std::hint::spin_loop();
    } else if idle < IDLE_YIELDS {
        std::thread::yield_now();
    } else {
        std::thread::sleep(IDLE_NAP);
    }
    idle.saturating_add(1)
}
