//! The invariants of a [`StoredModel`], checked for models built or changed in memory (the
//! readers guarantee them for what they return).

use std::collections::{HashMap, HashSet};

use super::error::ModelInvariantError;
use super::{COMPLEMENT, INDEX_MASK, MAX_STATE_BITS, StoredModel, nodes};

impl StoredModel {
    /// Checks every invariant the readers guarantee, for a model built or changed in memory:
    /// layout lengths, distinct variables, children-first nodes with ordered variables and
    /// uncomplemented low edges, roots in range, sets (initial and stored reachable) and
    /// groups on valid variables (a group's `next_vars[i]` the model's copy of
    /// `cur_vars[i]`, both ascending by `cur_vars`), and each BDD's nodes testing only that
    /// BDD's variables.
    pub fn validate(&self) -> Result<(), ModelInvariantError> {
        let fail = |s: String| Err(ModelInvariantError(s));
        if self.state_bits.is_empty() {
            return fail("no state integers".into());
        }
        if let Some(b) = self.state_bits.iter().find(|&&b| b == 0 || b > 64) {
            return fail(format!("state integer with {b} bits (must be 1..=64)"));
        }
        let total: u64 = self.state_bits.iter().map(|&b| u64::from(b)).sum();
        if total > MAX_STATE_BITS {
            return fail(format!("{total} state bits exceed 2^23"));
        }
        if self.state_vars.len() as u64 != total || self.prime_vars.len() as u64 != total {
            return fail(format!(
                "{} state vars and {} prime vars for {total} state bits",
                self.state_vars.len(),
                self.prime_vars.len()
            ));
        }
        let mut position = HashMap::new();
        for (p, &v) in self.state_vars.iter().chain(&self.prime_vars).enumerate() {
            if u64::from(v) >= 2 * MAX_STATE_BITS {
                return fail(format!("variable {v} exceeds the 24-bit variable field"));
            }
            if position.insert(v, p).is_some() {
                return fail(format!("variable {v} used twice"));
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let own = i as u64 + 1;
            if !position.contains_key(&n.var) {
                return fail(format!("node {own}: var {} is not a model variable", n.var));
            }
            if n.low & COMPLEMENT != 0 {
                return fail(format!("node {own}: low edge is complemented"));
            }
            for (edge, r) in [("low", n.low), ("high", n.high)] {
                if r & nodes::RESERVED != 0 {
                    return fail(format!(
                        "node {own}: {edge} reference has reserved bits set"
                    ));
                }
                let c = r & INDEX_MASK;
                if c == 0 {
                    continue;
                }
                if c >= own {
                    return fail(format!(
                        "node {own}: {edge} child {c} is not written before it"
                    ));
                }
                let cv = self.nodes[(c - 1) as usize].var;
                if cv <= n.var {
                    return fail(format!(
                        "node {own} (var {}): {edge} child {c} has var {cv}, not below it",
                        n.var
                    ));
                }
            }
        }
        let total = self.total_bits();
        let is_cur = |v: &u32| position.get(v).is_some_and(|&p| p < total);
        let check_root = |what: &str, r: u64| {
            if r & nodes::RESERVED != 0 || r & INDEX_MASK > self.nodes.len() as u64 {
                return fail(format!("{what}: root {r:#x} out of range"));
            }
            Ok(())
        };
        let ascending = |vs: &[u32]| vs.windows(2).all(|w| w[0] < w[1]);

        let sets = [
            ("initial set", Some(&self.initial)),
            ("reachable set", self.reachable.as_ref()),
        ];
        for (what, set) in sets {
            let Some(set) = set else { continue };
            check_root(what, set.root)?;
            if !ascending(&set.vars) || !set.vars.iter().all(is_cur) {
                return fail(format!("{what}: vars not ascending current-state vars"));
            }
            self.check_domain(what, set.root, &set.vars)?;
        }
        for (g, grp) in self.groups.iter().enumerate() {
            let what = format!("group {g}");
            check_root(&what, grp.relation)?;
            if !ascending(&grp.cur_vars)
                || !grp.cur_vars.iter().all(is_cur)
                || grp.cur_vars.len() != grp.next_vars.len()
            {
                return fail(format!("{what}: cur_vars not ascending current-state vars"));
            }
            for (c, n) in grp.cur_vars.iter().zip(&grp.next_vars) {
                let expected = self.prime_vars[position[c]];
                if *n != expected {
                    return fail(format!(
                        "{what}: next var {n} of var {c} should be {expected}"
                    ));
                }
            }
            let mut domain: Vec<u32> = grp.cur_vars.iter().chain(&grp.next_vars).copied().collect();
            domain.sort_unstable();
            self.check_domain(&what, grp.relation, &domain)?;
        }
        Ok(())
    }

    fn check_domain(
        &self,
        what: &str,
        root: u64,
        sorted: &[u32],
    ) -> Result<(), ModelInvariantError> {
        let mut seen = HashSet::new();
        let mut stack = vec![root & INDEX_MASK];
        while let Some(i) = stack.pop() {
            if i == 0 || !seen.insert(i) {
                continue;
            }
            let n = self.nodes[(i - 1) as usize];
            if sorted.binary_search(&n.var).is_err() {
                return Err(ModelInvariantError(format!(
                    "{what}: node {i} tests var {} outside its variables",
                    n.var
                )));
            }
            stack.push(n.low & INDEX_MASK);
            stack.push(n.high & INDEX_MASK);
        }
        Ok(())
    }
}
