//! Naive Fibonacci: the fork-join benchmark, on the pool ([`fib`] with `Worker::fork`,
//! [`fib_join`] with `Worker::join`) and as a job of the tasks layer ([`Fib`]).

use rhizome::pool::{Forked, Worker};
use rhizome::tasks::{Job, TaskCtx};
use serde::{Deserialize, Serialize};

/// `fib(n)` sequentially, by the doubly recursive definition.
pub fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

/// `fib(n)` on the fork-join pool, one fork per internal call of the recursion (no
/// cutoff: this measures the fork-join path), like Lace's `pfib` with one `SPAWN`/`SYNC`
/// per call.
///
/// Shaped as gcc compiles `pfib`, so that the comparison measures the fork-join path and
/// not the compilers: the leaf test is inlined into the caller (`fib_node` is the rest;
/// gcc's partial inlining splits `pfib_CALL` the same way, LLVM does not split
/// functions); the half that is forked is `fib(n - 1)`, the one Lace spawns, so a thief
/// takes the larger half; and when that half comes back unstolen it is the next turn of
/// a loop, not a second recursive call (gcc turns `pfib`'s `SYNC` and the inline call
/// it makes into that loop; LLVM does not, as the half's frame escapes to the deque).
/// The tree of forks and what a thief can take are those of `join`.
pub fn fib(w: &Worker, n: u64) -> u64 {
    fib_or_leaf(w, n)
}

#[inline(always)]
fn fib_or_leaf(w: &Worker, n: u64) -> u64 {
    if n < 2 { n } else { fib_node(w, n) }
}

/// `fib(n)` for `n >= 2`: an internal node of the recursion and, while the forked
/// half comes back, its descendants `n - 1`, `n - 2`, ... Private, so that its recursive
/// calls are direct calls rather than calls through the GOT.
#[inline(never)]
fn fib_node(w: &Worker, mut n: u64) -> u64 {
    let mut sum = 0;
    loop {
        // `move`: `n` is captured by value, so it is not spilled to the frame before the
        // leaf test.
        let (a, b) = w.fork(
            move |w| fib_or_leaf(w, n - 2),
            move |w| fib_or_leaf(w, n - 1),
        );
        sum += a;
        match b {
            // Not stolen: run `fib(n - 1)` here, as the next turn.
            Forked::Back(_) => n -= 1,
            Forked::Stolen(b) => return sum + b,
        }
        if n < 2 {
            return sum + n;
        }
    }
}

/// `fib(n)` on the fork-join pool with plain [`Worker::join`]: one `join` per internal
/// call, both halves run as calls (`fib(n - 1)` forked, the half Lace spawns), the leaf
/// test inlined into the caller as in [`fib`]. It measures `join` itself, against Lace's
/// `SPAWN`/`CALL`/`SYNC`, where [`fib`] measures `fork`'s loop.
pub fn fib_join(w: &Worker, n: u64) -> u64 {
    fib_join_or_leaf(w, n)
}

#[inline(always)]
fn fib_join_or_leaf(w: &Worker, n: u64) -> u64 {
    if n < 2 { n } else { fib_join_node(w, n) }
}

/// `fib(n)` for `n >= 2` with one `join`. Private, so that its recursive calls are direct.
#[inline(never)]
fn fib_join_node(w: &Worker, n: u64) -> u64 {
    // `move`: `n` is captured by value, so it is not spilled to the frame before the
    // leaf test.
    let (a, b) = w.join(
        move |w| fib_join_or_leaf(w, n - 2),
        move |w| fib_join_or_leaf(w, n - 1),
    );
    a + b
}

/// `fib(n)` as futures: spawns `fib(n - 1)`, computes `fib(n - 2)` itself; sequential
/// below `cutoff`.
#[derive(Serialize, Deserialize)]
pub struct Fib {
    /// Which Fibonacci number.
    pub n: u64,
    /// Below this `n` the job computes sequentially.
    pub cutoff: u64,
}

impl Fib {
    /// The job for `fib(self.n - k)`, with the same cutoff.
    fn smaller(&self, k: u64) -> Fib {
        Fib {
            n: self.n - k,
            cutoff: self.cutoff,
        }
    }
}

impl Job for Fib {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.n < self.cutoff.max(2) {
            return fib_seq(self.n);
        }
        let a = t.spawn(self.smaller(1));
        let b = self.smaller(2).run(t);
        a.get() + b
    }
}
