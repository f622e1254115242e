//! The recursive BDD operations, run on the fork-join pool: the context they run in
//! (this file), and the operations by kind (`boolean.rs`, `quantify.rs`, `relational.rs`,
//! `substitute.rs`).
//!
//! Every operation follows the same shape (as in Sylvan): terminal cases, normalisation of
//! the operands (so equivalent calls share a cache entry), an operation-cache lookup, the
//! two cofactor sub-problems forked with `join`, `make` of the result, a cache store.
//! A full node table makes `make` return [`Bdd::INVALID`]; every operation passes it up
//! at once (`is_full` is checked on entry too), and [`Manager::run`](crate::Manager::run)
//! collects, grows the table and runs the operation again, which finds its finished
//! sub-results in the cache.
//!
//! The operations see only the node store, the cache and the worker: the manager, which
//! owns those and runs operations, depends on this module, not the other way round.

use crate::dist::Distribution;
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;
use rhizome::pool::Worker;

const OP_AND: u64 = 1 << 40;
const OP_XOR: u64 = 2 << 40;
const OP_ITE: u64 = 3 << 40;
const OP_EXISTS: u64 = 4 << 40;
const OP_AND_EXISTS: u64 = 5 << 40;
const OP_RELNEXT: u64 = 6 << 40;
const OP_RELPREV: u64 = 7 << 40;
/// Operations with a per-call identity (compose, rename) take ids from here up; the id
/// lands in bits 40..62 of the first key word.
const OP_DYNAMIC_BASE: u64 = 64;
const OP_MASK: u64 = ((1 << 23) - 1) << 40;

/// Variable number given to the constants: below every real variable.
const TERMINAL_VAR: u32 = u32::MAX;

/// `make` outside of a context: the canonical node `(var, low, high)`.
#[inline]
pub(crate) fn make<S: NodeStore>(store: &S, slot: usize, var: u32, low: Bdd, high: Bdd) -> Bdd {
    if low == Bdd::INVALID || high == Bdd::INVALID {
        return Bdd::INVALID;
    }
    if low == high {
        return low;
    }
    // Canonical form: the low edge is never complemented; a complemented low edge is
    // pushed up to the edge pointing at the node.
    let c = low.is_complemented();
    match store.find_or_put(slot, var, low.not_if(c), high.not_if(c)) {
        Some(i) => Bdd(i).not_if(c),
        None => Bdd::INVALID,
    }
}

/// The context of a running operation: the manager's node store and cache, and the worker
/// thread running it. Obtained from [`Manager::run`](crate::Manager::run); its methods are
/// the BDD operations, callable in parallel through [`OpCtx::join`]. (Named apart from
/// `rhizome::Ctx`, the context of a processing element.)
pub struct OpCtx<'a, S: NodeStore, C: OpCache> {
    pub(crate) store: &'a S,
    pub(crate) cache: &'a C,
    pub(crate) w: &'a Worker,
    /// Forks above this call (the recursion depth), for the cutoff of `dist`.
    pub(crate) depth: u32,
    /// How the operation spreads over the PEs, if it does (see `dist::spread`).
    pub(crate) dist: Option<&'a Distribution>,
}

macro_rules! check {
    ($e:expr) => {{
        let r = $e;
        if r == Bdd::INVALID {
            return Bdd::INVALID;
        }
        r
    }};
}

// After `check!`, which the operations use.
mod boolean;
mod quantify;
mod relational;
mod substitute;

impl<'a, S: NodeStore, C: OpCache> OpCtx<'a, S, C> {
    #[inline]
    pub(crate) fn new(
        store: &'a S,
        cache: &'a C,
        w: &'a Worker,
        dist: Option<&'a Distribution>,
    ) -> OpCtx<'a, S, C> {
        OpCtx {
            store,
            cache,
            w,
            depth: 0,
            dist,
        }
    }

    /// Runs `a` and `b`, possibly in parallel on two workers.
    #[inline]
    pub fn join<RA: Send, RB: Send>(
        &self,
        a: impl FnOnce(&OpCtx<'_, S, C>) -> RA + Send,
        b: impl FnOnce(&OpCtx<'_, S, C>) -> RB + Send,
    ) -> (RA, RB) {
        let (store, cache) = (self.store, self.cache);
        if !S::SPREADS {
            // The closures capture what they did before spreading existed: a fork on a
            // store of one PE costs no more for it.
            return self.w.join(
                move |w| a(&OpCtx::new(store, cache, w, None)),
                move |w| b(&OpCtx::new(store, cache, w, None)),
            );
        }
        let (dist, depth) = (self.dist, self.depth + 1);
        self.w.join(
            move |w| {
                a(&OpCtx {
                    store,
                    cache,
                    w,
                    depth,
                    dist,
                })
            },
            move |w| {
                b(&OpCtx {
                    store,
                    cache,
                    w,
                    depth,
                    dist,
                })
            },
        )
    }

    /// Whether the operation is being abandoned because the node table filled up: the
    /// results computed now are discarded and [`Manager::run`](crate::Manager::run) runs the operation again
    /// after a collection (sub-results finished before, memoised in the cache, are found
    /// again). Long user-written operations should return early when it holds.
    #[inline]
    pub fn aborted(&self) -> bool {
        self.full()
    }

    /// `(var, low, high)` of `f` with its complement pushed into the children; `None` for
    /// the constants or when [`aborted`](OpCtx::aborted) (then `f` may be a placeholder).
    #[inline]
    pub fn top(&self, f: Bdd) -> Option<(u32, Bdd, Bdd)> {
        if f.is_const() || self.full() {
            None
        } else {
            Some(self.node(f))
        }
    }

    /// Looks up a result memoised by a user-written operation: `op` from
    /// [`Manager::fresh_op_id`](crate::Manager::fresh_op_id) (one per operation kind), `a` and `b` its arguments.
    #[inline]
    pub fn memo_get(&self, op: u64, a: Bdd, b: u64) -> Option<Bdd> {
        self.cached(a.0 | Self::op_key(op), b, 1)
    }

    /// Memoises a result of a user-written operation (see [`memo_get`](OpCtx::memo_get)).
    #[inline]
    pub fn memo_put(&self, op: u64, a: Bdd, b: u64, result: Bdd) -> Bdd {
        self.store(a.0 | Self::op_key(op), b, 1, result)
    }

    /// The node `(var, low, high)`, canonical.
    #[inline]
    pub fn make(&self, var: u32, low: Bdd, high: Bdd) -> Bdd {
        make(self.store, self.w.index(), var, low, high)
    }

    /// The conjunction of the positive literals of `vars` (in any order, duplicates
    /// ignored): the form in which quantification takes a variable set.
    pub fn cube(&self, vars: &[u32]) -> Bdd {
        let mut vs = vars.to_vec();
        vs.sort_unstable();
        vs.dedup();
        vs.iter()
            .rev()
            .fold(Bdd::TRUE, |f, &v| self.make(v, Bdd::FALSE, f))
    }

    #[inline]
    fn full(&self) -> bool {
        self.store.is_full()
    }

    /// `(var, low, high)` of `f` with its complement pushed down; constants give
    /// `(TERMINAL_VAR, f, f)`.
    #[inline]
    fn node(&self, f: Bdd) -> (u32, Bdd, Bdd) {
        if f.is_const() {
            return (TERMINAL_VAR, f, f);
        }
        let (v, l, h) = self.store.node(f.index());
        let c = f.is_complemented();
        (v, l.not_if(c), h.not_if(c))
    }

    #[inline]
    fn var(&self, f: Bdd) -> u32 {
        if f.is_const() {
            TERMINAL_VAR
        } else {
            self.store.node(f.index()).0
        }
    }

    /// Cofactors of `f` on variable `v`, where `v` is at or above `f`'s top variable.
    #[inline]
    fn split(&self, f: Bdd, fv: u32, f0: Bdd, f1: Bdd, v: u32) -> (Bdd, Bdd) {
        if fv == v { (f0, f1) } else { (f, f) }
    }

    // Always inlined (with the caches' lookups and the node reads): an operation reads
    // its operands' nodes after the lookup, and only inline does the CPU issue those
    // reads while the lookup's cache miss is outstanding. The distributed store and
    // cache made these calls large enough for the compiler to keep them out of line,
    // which cost a third on one PE (collision.5 `sat`: 2.3 s against 1.7 s).
    #[inline(always)]
    fn cached(&self, k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
        self.cache.get(k0, k1, k2)
    }

    #[inline(always)]
    fn store(&self, k0: u64, k1: u64, k2: u64, r: Bdd) -> Bdd {
        if r != Bdd::INVALID {
            self.cache.put(k0, k1, k2, r);
        }
        r
    }

    /// The first key word's operation bits of the substitution with id `id`.
    fn op_key(id: u64) -> u64 {
        ((id + OP_DYNAMIC_BASE) << 40) & OP_MASK
    }
}
