//! Substitution: composing a function into a variable, and renaming variables. Each
//! call has its own operation id, so cache entries of different substitutions never mix.

use super::OpCtx;
use crate::edge::Bdd;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;
use std::collections::HashMap;

impl<S: NodeStore, C: OpCache> OpCtx<'_, S, C> {
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
