//! Fork-join inside jobs: `join` recursion (the shape of a BDD operation) run by jobs that
//! are stolen across PEs, and `join` mixed with `spawn` / `get` in one job.

use rhizome::Ctx;
use rhizome::pool::Worker;
use rhizome::tasks::{Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};

/// Registers the job types of this file.
pub fn register(t: &Tasks) {
    t.register::<Spread>().register::<ForkSpawn>();
}

/// A fork-join tree of depth `0` on the pool's `join`; its output is the number of leaves
/// and the set of workers that ran them (bit `pe * workers + worker`).
#[derive(Serialize, Deserialize)]
struct Spread(u32);

impl Job for Spread {
    type Output = (u64, u64);
    fn run(self, t: &TaskCtx) -> (u64, u64) {
        fn tree(w: &Worker, pe: usize, depth: u32) -> (u64, u64) {
            if depth == 0 {
                // Some work per leaf, so that a thief finds the owner still busy.
                let x = (0..2_000u64).fold(0, |a, i| a ^ std::hint::black_box(i));
                std::hint::black_box(x);
                return (1, 1 << (pe * w.workers() + w.index()));
            }
            let ((la, ma), (lb, mb)) =
                w.join(|w| tree(w, pe, depth - 1), |w| tree(w, pe, depth - 1));
            (la + lb, ma | mb)
        }
        tree(t.worker(), t.my_pe(), self.0)
    }
}

/// Fork-join work in jobs spawned on PE 0 reaches every worker of every PE: jobs are
/// stolen across PEs, and their `join` halves by PE-mates. PE 0 spawns batches of jobs in
/// one run until every worker has run a leaf (scheduling decides who does, not the test;
/// one run, so that no worker sleeps between batches); each batch's count is checked.
/// The batches stop at a generous hang limit, not at a fixed count: on one core a
/// background worker may get no time slice for thousands of batches.
pub fn fork_join_in_jobs_reaches_every_worker(ctx: &Ctx) {
    const JOBS: u64 = 16;
    const DEPTH: u32 = 6;
    const HANG_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);
    let tasks = Tasks::new(ctx);
    register(&tasks);
    let all = (1u64 << (ctx.num_pes() * ctx.workers())) - 1;
    let (batches, seen) = tasks.run(ctx, |t| {
        let mut seen = 0u64;
        if t.my_pe() != 0 {
            return (0, seen);
        }
        let start = std::time::Instant::now();
        let mut batch = 0;
        while start.elapsed() < HANG_LIMIT {
            batch += 1;
            let fs: Vec<_> = (0..JOBS).map(|_| t.spawn(Spread(DEPTH))).collect();
            let (leaves, mask) = fs
                .iter()
                .map(|f| f.get())
                .fold((0, 0), |(l, m), (a, b)| (l + a, m | b));
            assert_eq!(leaves, JOBS << DEPTH, "batch {batch}");
            seen |= mask;
            if seen == all {
                break;
            }
        }
        (batch, seen)
    });
    if ctx.my_pe() == 0 {
        assert_eq!(
            seen,
            all,
            "after {batches} batches, workers {:#b} never ran fork-join work",
            all & !seen
        );
    }
}

/// `4^depth`, spread over futures, `join` halves and closures in every shape: a job spawned
/// in the first half of a `join` and awaited after it, one spawned before the `join` and
/// awaited in its second half, a closure spawned and awaited inside a half.
#[derive(Serialize, Deserialize)]
struct ForkSpawn(u32);

impl Job for ForkSpawn {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        let Some(d) = self.0.checked_sub(1) else {
            return 1;
        };
        let early = t.spawn(ForkSpawn(d));
        let ((here, spawned), there) = t.join(
            |t| {
                let f = t.spawn(ForkSpawn(d));
                (ForkSpawn(d).run(t), f)
            },
            |t| early.get() + t.spawn_local(move |t| ForkSpawn(d).run(t)).get(),
        );
        here + spawned.get() + there
    }
}

/// `join` and `spawn` / `get` mixed in one job give the right answer, run after run.
pub fn join_and_futures_mixed_in_one_job(ctx: &Ctx) {
    const DEPTH: u32 = 5;
    let tasks = Tasks::new(ctx);
    register(&tasks);
    for round in 0..10 {
        let n = tasks.run(ctx, |t| {
            (t.my_pe() == round % t.num_pes()).then(|| t.spawn(ForkSpawn(DEPTH)).get())
        });
        if ctx.my_pe() == round % ctx.num_pes() {
            assert_eq!(n, Some(4u64.pow(DEPTH)), "round {round}");
        }
    }
}
