//! Quantification: exists and forall over a cube of variables, and the conjunction
//! fused with existential quantification (`and_exists`, the relational product).

use super::{OP_AND_EXISTS, OP_EXISTS, OpCtx};
use crate::dist::SubOp;
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;

impl<S: NodeStore, C: OpCache> OpCtx<'_, S, C> {
    /// Drops the variables of `cube` above `v` (cubes are chains of high edges).
    #[inline]
    pub(super) fn skip_vars(&self, mut cube: Bdd, v: u32) -> (u32, Bdd) {
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
}
