//! Nesting deadlocks of a worker that runs other work while it waits.
//!
//! A worker blocked in [`Future::get`] (or waiting for the thief of a `join` half) runs
//! other work on its own stack. That is only safe for work that cannot wait, directly or
//! through other workers, for a frame suspended lower on the same stack: such a frame can
//! resume only after everything above it has returned. The shapes here are the ones the
//! one-deque scheduler of issue 9 must survive (its first attempt hung on them): a `join`
//! half that waits for a job spawned before the `join` (allowed: its job spawned it) must
//! not be picked up by the worker that runs that job, nor by a worker running one of that
//! job's descendants (the chain through a third worker).
//!
//! The bodies steer the schedule with gates (a job blocks until the test opens its gate)
//! and with flags that say who started what; no assertion depends on timing, and every
//! world runs under a generous hang limit, so a deadlock fails the test instead of
//! hanging it. `docs/one-deque.md` says why these shapes and which rule each one checks.

use rhizome::World;
use rhizome::tasks::{Future, TaskCtx, Tasks};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// How long a world may run before the test calls it a hang.
const HANG_LIMIT: Duration = Duration::from_secs(60);
/// How long (in spins) a body gives another worker to make the unsafe move before it opens
/// the gate anyway: a correct scheduler never makes it, so the wait must end by itself.
const TEMPTATION_SPINS: u64 = 20_000_000;

/// Runs `body` on one PE with each number of workers in turn and checks that it returns
/// 42; fails the test if a world fails or does not finish within [`HANG_LIMIT`] (the stuck
/// threads are left behind).
fn run_with_hang_limit(name: &str, body: fn(&TaskCtx) -> u64, workers: &[usize]) {
    for &workers in workers {
        run_once_with_hang_limit(name, workers, body, 42);
    }
}

fn run_once_with_hang_limit(name: &str, workers: usize, body: fn(&TaskCtx) -> u64, want: u64) {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let r = World::builder()
                .pes(1)
                .workers(workers)
                .run(move |ctx| Tasks::new(ctx).run(ctx, body));
            let _ = tx.send(r.map_err(|e| e.to_string()));
        })
        .expect("cannot start the world's thread");
    match rx.recv_timeout(HANG_LIMIT) {
        Ok(Ok(out)) => assert_eq!(out, vec![want], "{name} with {workers} workers"),
        Ok(Err(e)) => panic!("{name} with {workers} workers failed: {e}"),
        Err(_) => panic!("{name} with {workers} workers hung (no result in {HANG_LIMIT:?})"),
    }
}

/// A gate a job can block on (through [`TaskCtx::block_on`], which runs other work while
/// it waits) until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<GateState>);

#[derive(Default)]
struct GateState {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Gate {
    fn open(&self) {
        self.0.open.store(true, Ordering::Release);
        if let Some(w) = self.0.waker.lock().unwrap().take() {
            w.wake();
        }
    }

    /// Blocks the calling job until the gate is open.
    fn pass(&self, t: &TaskCtx) {
        t.block_on(std::future::poll_fn(|cx: &mut Context<'_>| {
            if self.0.open.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            *self.0.waker.lock().unwrap() = Some(cx.waker().clone());
            if self.0.open.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
    }
}

/// Spins until `flag` is set (another worker started something the body waits for).
fn spin_until(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
}

/// Spins until `flag` or `other` is set.
fn spin_until_either(flag: &AtomicBool, other: &AtomicBool) {
    while !flag.load(Ordering::Acquire) && !other.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
}

/// Spins until `flag` is set or [`TEMPTATION_SPINS`] have passed.
fn spin_a_while_or_until(flag: &AtomicBool) {
    for _ in 0..TEMPTATION_SPINS {
        if flag.load(Ordering::Acquire) {
            return;
        }
        std::hint::spin_loop();
    }
}

/// What job `x` of a shape is given: the gate it blocks on (itself or through a job it
/// spawns), the flag it sets once the blocking work has started on a worker, and the flag
/// that says `b` ran on a worker other than the body's.
struct Shape {
    gate: Gate,
    started: Arc<AtomicBool>,
    b_elsewhere: Arc<AtomicBool>,
}

/// The frame every shape shares. The body spawns job `x` (run by `x_body`), then joins `a`
/// and `b`, where `b` waits for `x`. `a` waits until `x`'s blocking work has started on
/// another worker, gives that worker the chance to take `b` (until `b` ran on another
/// worker, or a while), then opens the gate. Returns 42.
fn shape(t: &TaskCtx, x_body: fn(&TaskCtx, &Shape) -> u64) -> u64 {
    let s = Arc::new(Shape {
        gate: Gate::default(),
        started: Arc::new(AtomicBool::new(false)),
        b_elsewhere: Arc::new(AtomicBool::new(false)),
    });
    let x: Future<u64> = t.spawn_local({
        let s = Arc::clone(&s);
        move |t| x_body(t, &s)
    });
    let me = t.worker_index();
    let (one, from_x) = t.join(
        |_| {
            spin_until_either(&s.started, &s.b_elsewhere);
            spin_a_while_or_until(&s.b_elsewhere);
            s.gate.open();
            1
        },
        |t| {
            if t.worker_index() != me {
                s.b_elsewhere.store(true, Ordering::Release);
            }
            x.get() + 1
        },
    );
    one + from_x
}

/// The direct case: `x` blocks on the gate. While the worker running `x` is blocked, the
/// only other work on the PE is `b`. If that worker takes `b`, `b` waits for `x`, which is
/// suspended below `b` on the same stack: deadlock.
fn x_blocks(t: &TaskCtx, s: &Shape) -> u64 {
    s.started.store(true, Ordering::Release);
    s.gate.pass(t);
    40
}

#[test]
fn a_worker_blocked_in_a_job_does_not_take_a_join_half_that_waits_for_that_job() {
    run_with_hang_limit("x_blocks", |t| shape(t, x_blocks), &[2, 3]);
}

/// The chain through a third worker: `x` spawns `y` and waits until another worker has
/// taken `y`, which blocks on the gate. If the worker blocked inside `y` takes `b`: `b`
/// waits for `x`, `x` waits for `y`, and `y` is suspended below `b` on that worker's
/// stack. That worker did not steal `y` from the worker that holds `b`, so a rule that
/// only keeps a worker from stealing back from its own victim does not prevent this.
fn x_waits_for_a_blocked_child(t: &TaskCtx, s: &Shape) -> u64 {
    let y = t.spawn_local({
        let (gate, started) = (s.gate.clone(), Arc::clone(&s.started));
        move |t| {
            started.store(true, Ordering::Release);
            gate.pass(t);
            30
        }
    });
    // Leave y to a third worker.
    spin_until(&s.started);
    y.get() + 10
}

#[test]
fn a_worker_blocked_in_a_descendant_does_not_take_a_join_half_that_waits_for_its_ancestor() {
    run_with_hang_limit(
        "x_waits_for_a_blocked_child",
        |t| shape(t, x_waits_for_a_blocked_child),
        &[3, 4],
    );
}

/// The same through a `join` inside the job: `x` joins `p` and `q`; another worker steals
/// `q`, which blocks on the gate, so `x`'s worker waits for its thief inside `join`. If
/// that wait takes any PE-mate's half rather than only its thief's, it takes `b`, which
/// waits for `x`, suspended below it.
fn x_joins_a_blocked_half(t: &TaskCtx, s: &Shape) -> u64 {
    let (p, q) = t.join(
        |_| {
            // Leave q to a third worker (unless an idle worker took b first: then there
            // may be no worker left to take q, and this worker runs it).
            spin_until_either(&s.started, &s.b_elsewhere);
            10
        },
        |t| {
            s.started.store(true, Ordering::Release);
            s.gate.pass(t);
            30
        },
    );
    p + q
}

#[test]
fn a_join_waiting_for_its_thief_does_not_take_a_half_that_waits_for_its_job() {
    run_with_hang_limit(
        "x_joins_a_blocked_half",
        |t| shape(t, x_joins_a_blocked_half),
        &[3, 4],
    );
}

// The shapes below are the ones a scheduler with one deque per worker (futures' jobs and
// `join` halves on the same deque, stolen oldest first) must survive besides the ones
// above: there a half can sit at the stealable end of a deque in front of jobs, a waiter
// may find the job it waits for only behind such a half, and the thief of an awaited job
// has halves of its own lower frames in its deque.

/// A `join` half waits for a job its job spawned before the `join`, on one worker too:
/// the job sits below the half in the worker's deque, and the half's frame did not spawn
/// it, so a scheduler where a frame pops only its own jobs must let the waiter run it.
fn half_waits_for_a_job_spawned_before_the_join(t: &TaskCtx) -> u64 {
    let x = t.spawn_local(|t| t.spawn_local(|_| 20).get() + 10);
    let (one, from_x) = t.join(|_| 1, |_| x.get() + 11);
    one + from_x
}

#[test]
fn a_join_half_waits_for_a_job_spawned_below_it() {
    run_with_hang_limit(
        "half_waits_for_a_job_spawned_before_the_join",
        half_waits_for_a_job_spawned_before_the_join,
        &[1, 2],
    );
}

/// What the leapfrogging and claiming shapes share: the awaited job's future, handed over
/// by the job that spawned it, and flags that say who started what.
#[derive(Default)]
struct Handover {
    future: Mutex<Option<Future<u64>>>,
    started: AtomicBool,
    b_elsewhere: AtomicBool,
}

impl Handover {
    fn publish(&self, f: &Future<u64>) {
        *self.future.lock().unwrap() = Some(f.clone());
    }

    /// Spins until the future is published, and returns it.
    fn receive(&self) -> Future<u64> {
        loop {
            if let Some(f) = self.future.lock().unwrap().clone() {
                return f;
            }
            std::hint::spin_loop();
        }
    }
}

/// Leapfrogging from a `get`: the body spawns `q` and joins `a` and `b`, where `b` waits
/// for `q`. The other worker takes `q`, which spawns the leaf `x` and waits for it; `a`
/// takes `x` (a leaf: anyone may wait for it), so `q` waits for a job whose thief is the
/// body's worker, whose deque holds `b`. If `q`'s worker leapfrogs there and takes `b` (a
/// half of a frame below `x`, not a descendant of `x`), `b` waits for `q`, suspended below
/// it. A rule that only keeps a waiting worker from its own victim (the first attempt's)
/// does not prevent this either: the leapfrog target is that victim.
fn waiter_leapfrogs_to_a_thief_with_a_half_below(t: &TaskCtx) -> u64 {
    let s = Arc::new(Handover::default());
    let q: Future<u64> = t.spawn_local({
        let s = Arc::clone(&s);
        move |t| {
            let x = t.spawn_local({
                let s = Arc::clone(&s);
                move |_| {
                    s.started.store(true, Ordering::Release);
                    spin_a_while_or_until(&s.b_elsewhere);
                    10
                }
            });
            s.publish(&x);
            // Leave x to the body's worker, so that it is the thief of x.
            spin_until(&s.started);
            x.get() + 20
        }
    });
    let me = t.worker_index();
    let (one, from_q) = t.join(
        |_| {
            let x = s.receive();
            x.get();
            1
        },
        |t| {
            if t.worker_index() != me {
                s.b_elsewhere.store(true, Ordering::Release);
            }
            q.get() + 11
        },
    );
    one + from_q
}

#[test]
fn a_waiter_leapfrogging_to_its_jobs_thief_takes_no_half_below_that_job() {
    run_with_hang_limit(
        "waiter_leapfrogs_to_a_thief_with_a_half_below",
        waiter_leapfrogs_to_a_thief_with_a_half_below,
        &[2],
    );
}

/// The awaited job behind a half: the body spawns `y` and joins `a` and `b` (`b` waits for
/// `y`); `a` spawns the leaf `z`, hands it to `y` and spins until `z` has run, so only
/// `y`'s worker can run it. In a deque that is stolen oldest first, `b` is in front of
/// `z`, and `y`'s worker waits, so it may not take `b` (it waits for `y`, below it). It
/// must reach `z` past `b` (claim the job it waits for) or the body spins forever.
fn waiter_finds_its_job_behind_a_half(t: &TaskCtx) -> u64 {
    let s = Arc::new(Handover::default());
    let y: Future<u64> = t.spawn_local({
        let s = Arc::clone(&s);
        move |_| s.receive().get() + 20
    });
    let (one, from_y) = t.join(
        |t| {
            let z = t.spawn_local({
                let s = Arc::clone(&s);
                move |_| {
                    s.started.store(true, Ordering::Release);
                    10
                }
            });
            s.publish(&z);
            spin_until(&s.started);
            1
        },
        |_| y.get() + 11,
    );
    one + from_y
}

#[test]
fn a_waiter_reaches_its_job_behind_a_join_half_it_may_not_take() {
    run_with_hang_limit(
        "waiter_finds_its_job_behind_a_half",
        waiter_finds_its_job_behind_a_half,
        &[2, 3],
    );
}
