//! The images of a transition relation over interleaved current/next variable pairs:
//! `relnext` (successors) and `relprev` (predecessors), Sylvan's specialised
//! operations, which need no renaming afterwards.

use super::{OP_RELNEXT, OP_RELPREV, OpCtx};
use crate::dist::SubOp;
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;

impl<S: NodeStore, C: OpCache> OpCtx<'_, S, C> {
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

    /// The union of the successors (`backward` false) or predecessors (true) of `s` under
    /// every relation of `rels`, each a `(relation, vars)` pair as [`relnext`](Self::relnext)
    /// takes them: one image per transition group, all in one operation. On one PE the
    /// images fork in halves on the pool; on a manager that spreads its operations over
    /// the PEs ([`Manager::spread_over`](crate::Manager::spread_over)) each image runs
    /// whole on one PE, dealt out as PEs become free (`dist/deal.rs`), which costs far
    /// fewer messages than cutting every image into sub-calls.
    ///
    /// ```
    /// use rhizome_bdd::{Bdd, Manager};
    /// let mut m = Manager::new(1);
    /// // Two variables x0 (current 0, next 1) and x1 (current 2, next 3); group a sets
    /// // x0, group b sets x1.
    /// let (a, b) = (m.ithvar(1), m.ithvar(3));
    /// let (va, vb) = (m.cube(&[0, 1]).unwrap(), m.cube(&[2, 3]).unwrap());
    /// let (x0, x2) = (m.ithvar(0), m.ithvar(2));
    /// let none = m.run(&[x0, x2], |c| c.and(!x0, !x2)).unwrap();
    /// let succ = m.run(&[a, b, va, vb, none], |c| c.rel_image_union(none, &[(a, va), (b, vb)], false)).unwrap();
    /// assert_eq!(m.satcount(succ, &[0, 2]), 2u32.into());
    /// ```
    pub fn rel_image_union(&self, s: Bdd, rels: &[(Bdd, Bdd)], backward: bool) -> Bdd {
        let parts: Vec<SubOp> = rels
            .iter()
            .map(|&(r, vars)| SubOp::rel_image(backward, s.0, r.0, vars.0))
            .collect();
        if let Some(u) = self.deal(&parts) {
            return u;
        }
        self.rel_union_here(s, rels, backward)
    }

    /// [`rel_image_union`](Self::rel_image_union) on this PE, forked in halves.
    fn rel_union_here(&self, s: Bdd, rels: &[(Bdd, Bdd)], backward: bool) -> Bdd {
        match rels {
            [] => Bdd::FALSE,
            &[(r, vars)] if backward => self.rel_image::<true>(s, r, vars),
            &[(r, vars)] => self.rel_image::<false>(s, r, vars),
            _ => {
                let (a, b) = rels.split_at(rels.len() / 2);
                let (x, y) = self.join(
                    |c| c.rel_union_here(s, a, backward),
                    |c| c.rel_union_here(s, b, backward),
                );
                check!(x);
                check!(y);
                self.or(x, y)
            }
        }
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
}
