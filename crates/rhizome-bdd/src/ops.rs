//! The recursive BDD operations, run on the fork-join pool.
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

use crate::dist::{Distribution, SubOp};
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;
use rhizome::pool::Worker;
use std::collections::HashMap;

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

    #[inline]
    fn cached(&self, k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
        self.cache.get(k0, k1, k2)
    }

    #[inline]
    fn store(&self, k0: u64, k1: u64, k2: u64, r: Bdd) -> Bdd {
        if r != Bdd::INVALID {
            self.cache.put(k0, k1, k2, r);
        }
        r
    }

    /// Conjunction.
    pub fn and(&self, a: Bdd, b: Bdd) -> Bdd {
        if a == Bdd::FALSE || b == Bdd::FALSE || a == !b {
            return Bdd::FALSE;
        }
        if a == Bdd::TRUE || a == b {
            return b;
        }
        if b == Bdd::TRUE {
            return a;
        }
        let (a, b) = if a.0 < b.0 { (a, b) } else { (b, a) };
        if self.full() {
            return Bdd::INVALID;
        }
        if let Some(r) = self.cached(a.0 | OP_AND, b.0, 0) {
            return r;
        }
        let (va, a0, a1) = self.node(a);
        let (vb, b0, b1) = self.node(b);
        let v = va.min(vb);
        let (a0, a1) = self.split(a, va, a0, a1, v);
        let (b0, b1) = self.split(b, vb, b0, b1, v);
        let (lo, hi) = match self.spread([SubOp::And(a0.0, b0.0), SubOp::And(a1.0, b1.0)]) {
            Some([lo, hi]) => (lo, hi),
            None => self.join(|c| c.and(a0, b0), |c| c.and(a1, b1)),
        };
        let r = self.make(v, lo, hi);
        self.store(a.0 | OP_AND, b.0, 0, r)
    }

    /// Disjunction.
    #[inline]
    pub fn or(&self, a: Bdd, b: Bdd) -> Bdd {
        let r = self.and(!a, !b);
        if r == Bdd::INVALID { r } else { !r }
    }

    /// `a ∧ ¬b`.
    #[inline]
    pub fn diff(&self, a: Bdd, b: Bdd) -> Bdd {
        self.and(a, !b)
    }

    /// `a → b`.
    #[inline]
    pub fn implies(&self, a: Bdd, b: Bdd) -> Bdd {
        self.or(!a, b)
    }

    /// `a ↔ b`.
    #[inline]
    pub fn equiv(&self, a: Bdd, b: Bdd) -> Bdd {
        let r = self.xor(a, b);
        if r == Bdd::INVALID { r } else { !r }
    }

    /// Exclusive or.
    pub fn xor(&self, a: Bdd, b: Bdd) -> Bdd {
        if a == Bdd::FALSE {
            return b;
        }
        if b == Bdd::FALSE {
            return a;
        }
        if a == Bdd::TRUE {
            return !b;
        }
        if b == Bdd::TRUE {
            return !a;
        }
        if a == b {
            return Bdd::FALSE;
        }
        if a == !b {
            return Bdd::TRUE;
        }
        // xor(¬a, b) = ¬xor(a, b): strip both marks, remember the parity.
        let neg = a.is_complemented() != b.is_complemented();
        let (a, b) = (a.regular(), b.regular());
        let (a, b) = if a.0 < b.0 { (a, b) } else { (b, a) };
        if self.full() {
            return Bdd::INVALID;
        }
        let r = match self.cached(a.0 | OP_XOR, b.0, 0) {
            Some(r) => r,
            None => {
                let (va, a0, a1) = self.node(a);
                let (vb, b0, b1) = self.node(b);
                let v = va.min(vb);
                let (a0, a1) = self.split(a, va, a0, a1, v);
                let (b0, b1) = self.split(b, vb, b0, b1, v);
                let (lo, hi) = match self.spread([SubOp::Xor(a0.0, b0.0), SubOp::Xor(a1.0, b1.0)]) {
                    Some([lo, hi]) => (lo, hi),
                    None => self.join(|c| c.xor(a0, b0), |c| c.xor(a1, b1)),
                };
                let r = self.make(v, lo, hi);
                self.store(a.0 | OP_XOR, b.0, 0, r)
            }
        };
        if r == Bdd::INVALID { r } else { r.not_if(neg) }
    }

    /// If-then-else: `(f ∧ g) ∨ (¬f ∧ h)`.
    pub fn ite(&self, f: Bdd, g: Bdd, h: Bdd) -> Bdd {
        if f == Bdd::TRUE {
            return g;
        }
        if f == Bdd::FALSE {
            return h;
        }
        // Replace operands equal to f by constants.
        let g = if g == f {
            Bdd::TRUE
        } else if g == !f {
            Bdd::FALSE
        } else {
            g
        };
        let h = if h == f {
            Bdd::FALSE
        } else if h == !f {
            Bdd::TRUE
        } else {
            h
        };
        if g == h {
            return g;
        }
        if g == Bdd::TRUE && h == Bdd::FALSE {
            return f;
        }
        if g == Bdd::FALSE && h == Bdd::TRUE {
            return !f;
        }
        // Two-operand cases go to and/xor, which have better cache sharing.
        if h == Bdd::FALSE {
            return self.and(f, g);
        }
        if g == Bdd::FALSE {
            return self.and(!f, h);
        }
        if g == Bdd::TRUE {
            return self.or(f, h);
        }
        if h == Bdd::TRUE {
            return self.implies(f, g);
        }
        if g == !h {
            return self.equiv(f, g);
        }
        // Normalise: f regular (swap branches), g regular (complement the result).
        let (f, g, h) = if f.is_complemented() {
            (!f, h, g)
        } else {
            (f, g, h)
        };
        let neg = g.is_complemented();
        let (g, h) = (g.not_if(neg), h.not_if(neg));
        if self.full() {
            return Bdd::INVALID;
        }
        let r = match self.cached(f.0 | OP_ITE, g.0, h.0) {
            Some(r) => r,
            None => {
                let (vf, f0, f1) = self.node(f);
                let (vg, g0, g1) = self.node(g);
                let (vh, h0, h1) = self.node(h);
                let v = vf.min(vg).min(vh);
                let (f0, f1) = self.split(f, vf, f0, f1, v);
                let (g0, g1) = self.split(g, vg, g0, g1, v);
                let (h0, h1) = self.split(h, vh, h0, h1, v);
                let subs = [SubOp::Ite(f0.0, g0.0, h0.0), SubOp::Ite(f1.0, g1.0, h1.0)];
                let (lo, hi) = match self.spread(subs) {
                    Some([lo, hi]) => (lo, hi),
                    None => self.join(|c| c.ite(f0, g0, h0), |c| c.ite(f1, g1, h1)),
                };
                let r = self.make(v, lo, hi);
                self.store(f.0 | OP_ITE, g.0, h.0, r)
            }
        };
        if r == Bdd::INVALID { r } else { r.not_if(neg) }
    }

    /// Drops the variables of `cube` above `v` (cubes are chains of high edges).
    #[inline]
    fn skip_vars(&self, mut cube: Bdd, v: u32) -> (u32, Bdd) {
        loop {
            let (cv, _, rest) = self.node(cube);
            if cv >= v {
                return (cv, cube);
            }
            cube = rest;
        }
    }

    /// `∃ vars. f`, with `vars` a cube.
    pub fn exists(&self, f: Bdd, vars: Bdd) -> Bdd {
        if f.is_const() {
            return f;
        }
        if self.full() {
            return Bdd::INVALID;
        }
        let (vf, f0, f1) = self.node(f);
        let (cv, vars) = self.skip_vars(vars, vf);
        if vars == Bdd::TRUE {
            return f;
        }
        if let Some(r) = self.cached(f.0 | OP_EXISTS, vars.0, 0) {
            return r;
        }
        let r = if cv == vf {
            let rest = self.node(vars).2;
            let (lo, hi) = self.exists_pair(f0, f1, rest);
            check!(lo);
            check!(hi);
            self.or(lo, hi)
        } else {
            let (lo, hi) = self.exists_pair(f0, f1, vars);
            self.make(vf, lo, hi)
        };
        self.store(f.0 | OP_EXISTS, vars.0, 0, r)
    }

    /// `exists(f0, vars)` and `exists(f1, vars)`, forked.
    #[inline]
    fn exists_pair(&self, f0: Bdd, f1: Bdd, vars: Bdd) -> (Bdd, Bdd) {
        match self.spread([SubOp::Exists(f0.0, vars.0), SubOp::Exists(f1.0, vars.0)]) {
            Some([lo, hi]) => (lo, hi),
            None => self.join(|c| c.exists(f0, vars), |c| c.exists(f1, vars)),
        }
    }

    /// `and_exists(a0, b0, vars)` and `and_exists(a1, b1, vars)`, forked.
    #[inline]
    fn and_exists_pair(&self, (a0, b0): (Bdd, Bdd), (a1, b1): (Bdd, Bdd), vars: Bdd) -> (Bdd, Bdd) {
        let subs = [
            SubOp::AndExists(a0.0, b0.0, vars.0),
            SubOp::AndExists(a1.0, b1.0, vars.0),
        ];
        match self.spread(subs) {
            Some([lo, hi]) => (lo, hi),
            None => self.join(
                |c| c.and_exists(a0, b0, vars),
                |c| c.and_exists(a1, b1, vars),
            ),
        }
    }

    /// `∀ vars. f`, with `vars` a cube.
    pub fn forall(&self, f: Bdd, vars: Bdd) -> Bdd {
        let r = self.exists(!f, vars);
        if r == Bdd::INVALID { r } else { !r }
    }

    /// Relational product `∃ vars. a ∧ b`.
    pub fn and_exists(&self, a: Bdd, b: Bdd, vars: Bdd) -> Bdd {
        if a == Bdd::FALSE || b == Bdd::FALSE || a == !b {
            return Bdd::FALSE;
        }
        if a == Bdd::TRUE && b == Bdd::TRUE {
            return Bdd::TRUE;
        }
        if a == Bdd::TRUE || a == b {
            return self.exists(b, vars);
        }
        if b == Bdd::TRUE {
            return self.exists(a, vars);
        }
        let (a, b) = if a.0 < b.0 { (a, b) } else { (b, a) };
        if self.full() {
            return Bdd::INVALID;
        }
        let (va, a0, a1) = self.node(a);
        let (vb, b0, b1) = self.node(b);
        let v = va.min(vb);
        let (cv, vars) = self.skip_vars(vars, v);
        if vars == Bdd::TRUE {
            return self.and(a, b);
        }
        if let Some(r) = self.cached(a.0 | OP_AND_EXISTS, b.0, vars.0) {
            return r;
        }
        let (a0, a1) = self.split(a, va, a0, a1, v);
        let (b0, b1) = self.split(b, vb, b0, b1, v);
        let r = if cv == v {
            let rest = self.node(vars).2;
            let (lo, hi) = self.and_exists_pair((a0, b0), (a1, b1), rest);
            check!(lo);
            check!(hi);
            self.or(lo, hi)
        } else {
            let (lo, hi) = self.and_exists_pair((a0, b0), (a1, b1), vars);
            self.make(v, lo, hi)
        };
        self.store(a.0 | OP_AND_EXISTS, b.0, vars.0, r)
    }

    /// The four cofactors of relation `r` on the pair `(x, x + 1)`: `[r00, r01, r10, r11]`
    /// where the first digit is `x`, the second `x + 1`.
    #[inline]
    fn pair_cofactors(&self, r: Bdd, x: u32) -> [Bdd; 4] {
        let (vr, r0, r1) = self.node(r);
        let (r0, r1) = self.split(r, vr, r0, r1, x);
        let (v0, r00, r01) = self.node(r0);
        let (r00, r01) = self.split(r0, v0, r00, r01, x + 1);
        let (v1, r10, r11) = self.node(r1);
        let (r10, r11) = self.split(r1, v1, r10, r11, x + 1);
        [r00, r01, r10, r11]
    }

    /// Successors of `s` under `r` (see [`Manager::relnext`](crate::Manager::relnext)).
    pub fn relnext(&self, s: Bdd, r: Bdd, vars: Bdd) -> Bdd {
        self.rel_image::<false>(s, r, vars)
    }

    /// Predecessors of `s` under `r` (see [`Manager::relprev`](crate::Manager::relprev)).
    pub fn relprev(&self, s: Bdd, r: Bdd, vars: Bdd) -> Bdd {
        self.rel_image::<true>(s, r, vars)
    }

    /// Successors (`BACKWARD = false`) or predecessors (`true`) of `s` under `r`: one
    /// recursion, in which `s` pairs with the relation's `x` cofactors going forward and
    /// with its `x'` cofactors going backward. A const parameter, so each direction
    /// compiles to its own hot loop.
    pub(crate) fn rel_image<const BACKWARD: bool>(&self, s: Bdd, r: Bdd, vars: Bdd) -> Bdd {
        if s == Bdd::FALSE || r == Bdd::FALSE {
            return Bdd::FALSE;
        }
        if s == Bdd::TRUE && r == Bdd::TRUE {
            return Bdd::TRUE;
        }
        if self.full() {
            return Bdd::INVALID;
        }
        let (vs, s0, s1) = self.node(s);
        let x = vs.min(self.var(r)) & !1;
        let (cv, vars) = self.skip_vars(vars, x);
        if vars == Bdd::TRUE {
            // Past the relation's variables: r is a constant here (true, as false is done).
            return s;
        }
        let op = if BACKWARD { OP_RELPREV } else { OP_RELNEXT };
        if let Some(res) = self.cached(s.0 | op, r.0, vars.0) {
            return res;
        }
        let (s0, s1) = self.split(s, vs, s0, s1, x);
        let res = if cv == x {
            // The pair (x, x') is in the relation's domain. Forward, the new value of x is
            // x' and s speaks of x; backward, s speaks of x' and the result of x.
            let rest = self.node(self.node(vars).2).2;
            let [r00, r01, r10, r11] = self.pair_cofactors(r, x);
            let (r01, r10) = if BACKWARD { (r10, r01) } else { (r01, r10) };
            let sub = |s: Bdd, r: Bdd| SubOp::rel_image(BACKWARD, s.0, r.0, rest.0);
            let subs = [sub(s0, r00), sub(s1, r10), sub(s0, r01), sub(s1, r11)];
            let [a, b, c, d] = match self.spread(subs) {
                Some(four) => four,
                None => {
                    let ((a, b), (c, d)) = self.join(
                        |c| {
                            c.join(
                                |c| c.rel_image::<BACKWARD>(s0, r00, rest),
                                |c| c.rel_image::<BACKWARD>(s1, r10, rest),
                            )
                        },
                        |c| {
                            c.join(
                                |c| c.rel_image::<BACKWARD>(s0, r01, rest),
                                |c| c.rel_image::<BACKWARD>(s1, r11, rest),
                            )
                        },
                    );
                    [a, b, c, d]
                }
            };
            for t in [a, b, c, d] {
                check!(t);
            }
            let (lo, hi) = match self.spread([SubOp::Or(a.0, b.0), SubOp::Or(c.0, d.0)]) {
                Some([lo, hi]) => (lo, hi),
                None => self.join(|k| k.or(a, b), |k| k.or(c, d)),
            };
            self.make(x, lo, hi)
        } else {
            let subs = [
                SubOp::rel_image(BACKWARD, s0.0, r.0, vars.0),
                SubOp::rel_image(BACKWARD, s1.0, r.0, vars.0),
            ];
            let (lo, hi) = match self.spread(subs) {
                Some([lo, hi]) => (lo, hi),
                None => self.join(
                    |c| c.rel_image::<BACKWARD>(s0, r, vars),
                    |c| c.rel_image::<BACKWARD>(s1, r, vars),
                ),
            };
            self.make(x, lo, hi)
        };
        self.store(s.0 | op, r.0, vars.0, res)
    }

    fn op_key(id: u64) -> u64 {
        ((id + OP_DYNAMIC_BASE) << 40) & OP_MASK
    }

    /// `f` with variable `v` replaced by `g`; `id` separates the cache entries of
    /// different calls.
    pub(crate) fn compose(&self, f: Bdd, v: u32, g: Bdd, id: u64) -> Bdd {
        if self.full() {
            return Bdd::INVALID;
        }
        let (vf, f0, f1) = self.node(f);
        if vf > v {
            return f;
        }
        if vf == v {
            return self.ite(g, f1, f0);
        }
        let key = Self::op_key(id);
        if let Some(r) = self.cached(f.0 | key, 0, 0) {
            return r;
        }
        let (lo, hi) = self.join(|c| c.compose(f0, v, g, id), |c| c.compose(f1, v, g, id));
        check!(lo);
        check!(hi);
        let lit = check!(self.make(vf, Bdd::FALSE, Bdd::TRUE));
        let r = self.ite(lit, hi, lo);
        self.store(f.0 | key, 0, 0, r)
    }

    /// `f` with variables renamed by `map`.
    pub(crate) fn rename(&self, f: Bdd, map: &HashMap<u32, u32>, id: u64) -> Bdd {
        if f.is_const() {
            return f;
        }
        if self.full() {
            return Bdd::INVALID;
        }
        let key = Self::op_key(id);
        if let Some(r) = self.cached(f.0 | key, 0, 0) {
            return r;
        }
        let (vf, f0, f1) = self.node(f);
        let (lo, hi) = self.join(|c| c.rename(f0, map, id), |c| c.rename(f1, map, id));
        check!(lo);
        check!(hi);
        let to = map.get(&vf).copied().unwrap_or(vf);
        let lit = check!(self.make(to, Bdd::FALSE, Bdd::TRUE));
        let r = self.ite(lit, hi, lo);
        self.store(f.0 | key, 0, 0, r)
    }
}
