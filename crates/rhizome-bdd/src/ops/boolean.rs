//! The Boolean connectives: and (with or, diff, implies and equiv derived from it by
//! complement edges), xor, and if-then-else.

use super::{OP_AND, OP_ITE, OP_XOR, OpCtx};
use crate::dist::SubOp;
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;

impl<S: NodeStore, C: OpCache> OpCtx<'_, S, C> {
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
        self.binary_step(OP_AND, a, b, SubOp::And, |c, x, y| c.and(x, y))
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
            None => self.binary_step(OP_XOR, a, b, SubOp::Xor, |c, x, y| c.xor(x, y)),
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

    /// The recursive step of the binary operation `op` on `a` and `b` (neither terminal,
    /// not in the cache): both operands' cofactors on their top variable, the two halves
    /// forked (`sub` is the operation as a spread job, `rec` the operation itself), the
    /// node made and cached.
    #[inline]
    fn binary_step(
        &self,
        op: u64,
        a: Bdd,
        b: Bdd,
        sub: fn(u64, u64) -> SubOp,
        rec: impl Fn(&OpCtx<'_, S, C>, Bdd, Bdd) -> Bdd + Copy + Send,
    ) -> Bdd {
        let (va, a0, a1) = self.node(a);
        let (vb, b0, b1) = self.node(b);
        let v = va.min(vb);
        let (a0, a1) = self.split(a, va, a0, a1, v);
        let (b0, b1) = self.split(b, vb, b0, b1, v);
        let (lo, hi) = match self.spread([sub(a0.0, b0.0), sub(a1.0, b1.0)]) {
            Some([lo, hi]) => (lo, hi),
            None => self.join(move |c| rec(c, a0, b0), move |c| rec(c, a1, b1)),
        };
        let r = self.make(v, lo, hi);
        self.store(a.0 | op, b.0, 0, r)
    }
}
