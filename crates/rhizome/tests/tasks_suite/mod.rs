//! SPMD test bodies for futures and cluster work stealing (`rhizome::tasks`), shared by
//! `cargo test` (`tests/tasks.rs`: local transport, 1/2/4 PEs, 1/2 workers per PE) and by
//! `examples/tasks_tests.rs` (any transport, e.g. under `mpirun -np 4`).
//!
//! Each body runs on every PE of one world with that PE's context and panics on failure; a
//! panic on one PE fails the whole run. PEs share no process memory under MPI, so what a
//! check needs from other PEs travels through collectives (`gather`, `allgather`). No
//! timing assertions.

use rhizome::Ctx;
use rhizome::tasks::{Future, Job, JobError, StealPolicy, TaskCtx, Tasks, make_future};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod fork_join;
pub mod sendable;

/// A named test body.
pub type Test = (&'static str, fn(&Ctx));

/// Every test, in the order the example runs them.
pub const TESTS: &[Test] = &[
    ("fib_is_right_everywhere", fib_is_right_everywhere),
    (
        "every_job_runs_exactly_once_under_heavy_stealing",
        every_job_runs_exactly_once_under_heavy_stealing,
    ),
    (
        "futures_passed_between_pes_in_any_order",
        futures_passed_between_pes_in_any_order,
    ),
    (
        "async_on_runs_where_asked_and_futures_cross_pes",
        async_on_runs_where_asked_and_futures_cross_pes,
    ),
    ("errors_reach_the_waiter", errors_reach_the_waiter),
    ("many_outstanding_futures", many_outstanding_futures),
    ("await_and_make_future", await_and_make_future),
    ("repeated_runs_and_idle_pes", repeated_runs_and_idle_pes),
    (
        "stress_mixed_closures_and_jobs",
        stress_mixed_closures_and_jobs,
    ),
    ("a_future_outlives_its_run", a_future_outlives_its_run),
    (
        "fork_join_in_jobs_reaches_every_worker",
        fork_join::fork_join_in_jobs_reaches_every_worker,
    ),
    (
        "join_and_futures_mixed_in_one_job",
        fork_join::join_and_futures_mixed_in_one_job,
    ),
    (
        "sendable_halves_reach_every_pe",
        sendable::sendable_halves_reach_every_pe,
    ),
];

/// Runs `round(i)` for `i = 1, 2, ...`, each returning a set of who took part (bits), until
/// every bit of `all` was seen or a minute has passed (a hang limit: who takes part is up
/// to the scheduling); the rounds run and the bits seen.
pub fn repeat_until_all_seen(all: u64, mut round: impl FnMut(u32) -> u64) -> (u32, u64) {
    const HANG_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);
    let start = std::time::Instant::now();
    let (mut rounds, mut seen) = (0, 0u64);
    while seen != all && start.elapsed() < HANG_LIMIT {
        rounds += 1;
        seen |= round(rounds);
    }
    (rounds, seen)
}

/// A scheduler for this PE with every job type of the suite registered.
pub fn tasks(ctx: &Ctx) -> Tasks {
    let t = Tasks::new(ctx);
    t.register::<Fib>()
        .register::<Tree>()
        .register::<Chain>()
        .register::<Boom>()
        .register::<WhereAmI>()
        .register::<AddOne>()
        .register::<Sum>()
        .register::<Leaf>()
        .register::<Mixed>();
    t
}

#[derive(Serialize, Deserialize)]
pub struct Fib(pub u64);
impl Job for Fib {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.0 < 2 {
            return self.0;
        }
        let a = t.spawn(Fib(self.0 - 1));
        let b = Fib(self.0 - 2).run(t);
        a.get() + b
    }
}

/// Fibonacci computed sequentially: a job that waits for nothing, so its future may be
/// awaited by any job (see "Blocking and deadlock" in the tasks module docs).
#[derive(Serialize, Deserialize)]
struct Leaf(u64);
impl Job for Leaf {
    type Output = u64;
    fn run(self, _t: &TaskCtx) -> u64 {
        let (mut a, mut b) = (0u64, 1u64);
        for _ in 0..self.0 {
            (a, b) = (b, a + b);
        }
        a
    }
}

fn fib_is_right_everywhere(ctx: &Ctx) {
    let tasks = tasks(ctx);
    for policy in [StealPolicy::One, StealPolicy::Half] {
        tasks.set_steal_policy(policy);
        let r = tasks.run(ctx, |t| (t.my_pe() == 0).then(|| t.spawn(Fib(18)).get()));
        let want = (ctx.my_pe() == 0).then_some(2584);
        assert_eq!(r, want, "{policy:?}");
    }
}

/// The job ids each PE ran, keyed by (run tag, PE): PEs of one process (local transport,
/// or several test worlds at once under `cargo test`) share this table but never a key.
static RAN: Mutex<BTreeMap<(u64, usize), Vec<u64>>> = Mutex::new(BTreeMap::new());
/// Source of run tags; only PE 0's counter is used (it broadcasts the tag).
static TAG: AtomicU64 = AtomicU64::new(1);

/// A tree of jobs: node `id` has children `2id` and `2id+1` while `id < limit`; every
/// node records that it ran, and where. Returns the number of nodes.
#[derive(Serialize, Deserialize)]
struct Tree {
    tag: u64,
    id: u64,
    limit: u64,
}
impl Job for Tree {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        RAN.lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((self.tag, t.my_pe()))
            .or_default()
            .push(self.id);
        if self.id >= self.limit {
            // A little work so thieves get a chance.
            let mut x = self.id;
            for _ in 0..200 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            return 1 + (x == 42) as u64;
        }
        let kids: Vec<Future<u64>> = [2 * self.id, 2 * self.id + 1]
            .into_iter()
            .map(|id| {
                t.spawn(Tree {
                    tag: self.tag,
                    id,
                    limit: self.limit,
                })
            })
            .collect();
        1 + kids.iter().map(|f| f.get()).sum::<u64>()
    }
}

fn every_job_runs_exactly_once_under_heavy_stealing(ctx: &Ctx) {
    let pes = ctx.num_pes();
    let me = ctx.my_pe();
    let limit = 1u64 << 11;
    let tasks = tasks(ctx);
    for policy in [StealPolicy::One, StealPolicy::Half] {
        let tag = ctx.broadcast(
            if me == 0 {
                TAG.fetch_add(1, Ordering::Relaxed)
            } else {
                0
            },
            0,
        );
        tasks.set_steal_policy(policy);
        let n = tasks.run(ctx, |t| {
            (t.my_pe() == 0).then(|| t.spawn(Tree { tag, id: 1, limit }).get())
        });
        let ran_here = RAN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(tag, me))
            .unwrap_or_default();
        let jobs_run = tasks.stats().jobs_run;
        // Every job this PE ran is a tree node, but for the body.
        assert_eq!(
            jobs_run,
            ran_here.len() as u64 + 1,
            "PE {me}, {policy:?}: jobs_run counts the nodes it ran and the body"
        );
        let Some(all) = ctx.gather((ran_here, jobs_run), 0) else {
            assert_eq!(n, None);
            continue;
        };
        assert_eq!(n, Some(2 * limit - 1), "{policy:?}");
        let mut ids: Vec<u64> = all
            .iter()
            .flat_map(|(ids, _)| ids.iter().copied())
            .collect();
        ids.sort_unstable();
        // Sorted and equal to 1..2*limit: every id ran, and none twice (here or elsewhere).
        assert_eq!(ids, (1..2 * limit).collect::<Vec<_>>(), "{policy:?}");
        let total: u64 = all.iter().map(|(_, j)| j).sum();
        assert_eq!(total, 2 * limit - 1 + pes as u64, "{policy:?}");
        if pes > 1 {
            // The initial work-sharing phase gives PE 1 a job, so PE 1 ran some.
            assert!(!all[1].0.is_empty(), "{policy:?}: no job ran on PE 1");
        }
    }
}

/// Relay `k` runs on some PE, asks the next PE for relay `k - 1` and adds `k`; relay 0
/// reads `base`, a future made on the first PE that travels along the whole chain.
#[derive(Serialize, Deserialize)]
struct Chain {
    k: u64,
    base: Future<u64>,
}
impl Job for Chain {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.k == 0 {
            return self.base.get();
        }
        let next = (t.my_pe() + 1) % t.num_pes();
        let f = t.async_on(
            next,
            Chain {
                k: self.k - 1,
                base: self.base,
            },
        );
        f.get() + self.k
    }
}

fn futures_passed_between_pes_in_any_order(ctx: &Ctx) {
    let tasks = tasks(ctx);
    let r = tasks.run(ctx, |t| {
        let base: Future<u64> = t.spawn_local(|_| 1000);
        let all: Vec<Future<u64>> = (1..=12u64)
            .map(|k| {
                let pe = (k as usize * 7 + t.my_pe()) % t.num_pes();
                t.async_on(
                    pe,
                    Chain {
                        k,
                        base: base.clone(),
                    },
                )
            })
            .collect();
        // Read them newest first, then oldest first: same values.
        let backwards: Vec<u64> = all.iter().rev().map(|f| f.get()).collect();
        let forwards: Vec<u64> = all.iter().map(|f| f.get()).collect();
        (backwards, forwards)
    });
    let (mut backwards, forwards) = r;
    backwards.reverse();
    assert_eq!(backwards, forwards);
    for (i, s) in forwards.iter().enumerate() {
        let k = i as u64 + 1;
        assert_eq!(*s, 1000 + k * (k + 1) / 2);
    }
}

#[derive(Serialize, Deserialize)]
struct WhereAmI;
impl Job for WhereAmI {
    type Output = (u64, u64);
    fn run(self, t: &TaskCtx) -> (u64, u64) {
        (t.my_pe() as u64, t.worker_index() as u64)
    }
}

#[derive(Serialize, Deserialize)]
struct AddOne(Future<u64>);
impl Job for AddOne {
    type Output = u64;
    fn run(self, _t: &TaskCtx) -> u64 {
        self.0.get() + 1
    }
}

fn async_on_runs_where_asked_and_futures_cross_pes(ctx: &Ctx) {
    let tasks = tasks(ctx);
    tasks.run(ctx, |t| {
        let n = t.num_pes();
        let me = t.my_pe();
        // Every PE asks every PE, several times.
        let fs: Vec<(usize, Future<(u64, u64)>)> = (0..4 * n)
            .map(|i| (i % n, t.async_on(i % n, WhereAmI)))
            .collect();
        for (pe, f) in fs {
            assert_eq!(f.get().0, pe as u64);
        }
        // A future made here, read by a job on the next PE, while still pending. (A
        // leaf: a job that waits may only await its own descendants or leaves.)
        let slow = t.spawn(Leaf(15));
        let next = (me + 1) % n;
        let g = t.async_on(next, AddOne(slow.clone()));
        let h = t.async_on(next, AddOne(make_future(41)));
        assert_eq!(g.get(), 611);
        assert_eq!(h.get(), 42);
        assert_eq!(slow.get(), 610);
    });
}

/// Panics at depth 0; above, waits for its child (so the panic travels up through `get`).
#[derive(Serialize, Deserialize)]
pub struct Boom(pub u64);
impl Job for Boom {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.0 == 0 {
            panic!("boom at the leaf");
        }
        // The child's panic reaches this job's waiter through `get`.
        t.spawn(Boom(self.0 - 1)).get() + 1
    }
}

fn errors_reach_the_waiter(ctx: &Ctx) {
    let tasks = tasks(ctx);
    tasks.run(ctx, |t| {
        let n = t.num_pes();
        let direct = t.spawn(Boom(0));
        let nested = t.spawn(Boom(5));
        let remote = t.async_on((t.my_pe() + 1) % n, Boom(3));
        let local = t.spawn_local(|_| -> u64 { panic!("closure failed") });
        let fine = t.spawn(Fib(10));
        for f in [&direct, &nested, &remote] {
            let e: JobError = f.try_get().unwrap_err();
            assert!(e.0.contains("boom at the leaf"), "{e}");
        }
        assert!(local.try_get().unwrap_err().0.contains("closure failed"));
        assert_eq!(fine.get(), 55);
    });
}

#[derive(Serialize, Deserialize)]
struct Sum(Vec<Future<u64>>);
impl Job for Sum {
    type Output = u64;
    fn run(self, _t: &TaskCtx) -> u64 {
        self.0.iter().map(|f| f.get()).sum()
    }
}

fn many_outstanding_futures(ctx: &Ctx) {
    let tasks = tasks(ctx);
    let r = tasks.run(ctx, |t| {
        let fs: Vec<Future<u64>> = (0..5000u64).map(|i| t.spawn(Leaf(i % 12))).collect();
        let locals: Vec<Future<u64>> = (0..2000u64).map(|i| t.spawn_local(move |_| i)).collect();
        // Ready checks never block.
        let _ = fs.iter().filter(|f| f.is_ready()).count();
        let expect: u64 = (0..5000u64)
            .map(|i| {
                let (mut a, mut b) = (0u64, 1u64);
                for _ in 0..i % 12 {
                    (a, b) = (b, a + b);
                }
                a
            })
            .sum();
        // Half of them summed by a job elsewhere.
        let n = t.num_pes();
        let half = t.async_on((t.my_pe() + 1) % n, Sum(fs[..2500].to_vec()));
        let rest: u64 = fs[2500..].iter().map(|f| f.get()).sum();
        assert_eq!(half.get() + rest, expect);
        assert_eq!(locals.iter().map(|f| f.get()).sum::<u64>(), 1999 * 2000 / 2);
        t.my_pe()
    });
    assert_eq!(r, ctx.my_pe());
}

fn await_and_make_future(ctx: &Ctx) {
    let tasks = tasks(ctx);
    tasks.run(ctx, |t| {
        let a = t.spawn(Fib(12));
        let b = make_future(6u64);
        let c = t.spawn_local(|t| t.spawn(Fib(5)).get());
        let v = t.block_on(async { a.clone().await + b.clone().await + c.await });
        assert_eq!(v, 144 + 6 + 5);
        assert!(a.is_ready() && b.is_ready());
    });
}

fn repeated_runs_and_idle_pes(ctx: &Ctx) {
    let tasks = tasks(ctx);
    for round in 0..5u64 {
        // Only one PE has work in each round; the others steal or idle.
        let busy = (round as usize) % ctx.num_pes();
        let r = tasks.run(ctx, |t| (t.my_pe() == busy).then(|| t.spawn(Fib(14)).get()));
        assert_eq!(r.is_some(), ctx.my_pe() == busy);
        if let Some(v) = r {
            assert_eq!(v, 377);
        }
    }
    // A run with no jobs at all terminates too.
    tasks.run(ctx, |_| ());
}

/// Jobs that may cross PEs and closures that may not, mixed in one tree, with steal-many:
/// the victim must keep the closures (put back) and give away only serializable jobs.
#[derive(Serialize, Deserialize)]
struct Mixed(u32);
impl Job for Mixed {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.0 == 0 {
            return 1;
        }
        let d = self.0 - 1;
        let a = t.spawn(Mixed(d));
        let b = t.spawn_local(move |t| Mixed(d).run(t) + 1);
        let c = t.spawn(Mixed(d));
        a.get() + b.get() + c.get()
    }
}

fn stress_mixed_closures_and_jobs(ctx: &Ctx) {
    // Nodes at depth k: 3^k; the closure adds one per internal node's middle child.
    fn expect(d: u32) -> u64 {
        if d == 0 { 1 } else { 3 * expect(d - 1) + 1 }
    }
    let tasks = tasks(ctx);
    tasks.set_steal_policy(StealPolicy::Half);
    let mut out = Vec::new();
    for _ in 0..3 {
        out.push(tasks.run(ctx, |t| t.spawn(Mixed(7)).get()));
    }
    assert_eq!(out, vec![expect(7); 3], "PE {}", ctx.my_pe());
}

fn a_future_outlives_its_run(ctx: &Ctx) {
    let tasks = tasks(ctx);
    let f = tasks.run(ctx, |t| {
        let f = t.spawn(Leaf(9));
        // Exported in this run (its export table is cleared at the end).
        let n = t.num_pes();
        assert_eq!(t.async_on((t.my_pe() + 1) % n, AddOne(f.clone())).get(), 35);
        f
    });
    assert!(f.is_ready());
    let g = tasks.run(ctx, |t| {
        let n = t.num_pes();
        t.async_on((t.my_pe() + 1) % n, AddOne(f.clone())).get()
    });
    assert_eq!(g, 35);
}
