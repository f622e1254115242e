//! Sendable `join` halves (`Worker::join_sendable`): a fork-join recursion whose halves
//! carry a description another PE can run, stolen across PEs without being spawned as jobs.

use rhizome::Ctx;
use rhizome::pool::Worker;
use rhizome::tasks::{Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};

/// Registers the job types of this file.
pub fn register(t: &Tasks) {
    t.register::<SendTree>();
}

/// A tree of `join_sendable` of depth `0`; its output is the number of leaves and the set
/// of PEs that ran them (bit `pe`).
#[derive(Clone, Copy, Serialize, Deserialize)]
struct SendTree(u32);

impl SendTree {
    fn grow(self, w: &Worker, pe: usize) -> (u64, u64) {
        let Some(d) = self.0.checked_sub(1) else {
            // Some work per leaf, so that a thief finds the owner still busy.
            let x = (0..500u64).fold(0, |a, i| a ^ std::hint::black_box(i));
            std::hint::black_box(x);
            return (1, 1 << pe);
        };
        let ((la, ma), (lb, mb)) = w.join_sendable(
            |w| SendTree(d).grow(w, pe),
            |w| SendTree(d).grow(w, pe),
            SendTree(d),
        );
        (la + lb, ma | mb)
    }
}

impl Job for SendTree {
    type Output = (u64, u64);
    fn run(self, t: &TaskCtx) -> (u64, u64) {
        self.grow(t.worker(), t.my_pe())
    }
}

/// Sendable halves forked by PE 0's body reach every PE (the other PEs' steal requests
/// take them from PE 0's deque), and every tree has all its leaves, each counted once.
/// PE 0 grows trees in one run until every PE has run a leaf (scheduling decides who
/// does, not the test).
pub fn sendable_halves_reach_every_pe(ctx: &Ctx) {
    const DEPTH: u32 = 12;
    let tasks = Tasks::new(ctx);
    register(&tasks);
    let all = (1u64 << ctx.num_pes()) - 1;
    let (trees, seen) = tasks.run(ctx, |t| {
        if t.my_pe() != 0 {
            return (0, 0);
        }
        super::repeat_until_all_seen(all, |tree| {
            let (leaves, mask) = SendTree(DEPTH).grow(t.worker(), 0);
            assert_eq!(leaves, 1 << DEPTH, "tree {tree}");
            mask
        })
    });
    let missing = all & !seen;
    assert!(
        ctx.my_pe() != 0 || missing == 0,
        "after {trees} trees, PEs {missing:#b} never ran a sendable half"
    );
}
