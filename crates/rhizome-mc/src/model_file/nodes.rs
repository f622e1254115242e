//! Shared node-table construction and checks for both formats.
//!
//! Both formats write nodes children-first; they differ only in whether indices are global
//! (format A) or local to a block (format B). A block is described by `base` (global index of
//! the node before the block's local index 1; 0 for format A) and `limit` (highest local
//! index that exists once the block is complete).

use super::cursor::Cursor;
use super::error::{Invalid, ModelError};
use std::collections::HashMap;

use super::{COMPLEMENT, INDEX_MASK, StoredNode};

/// Bits of a reference that are neither index nor complement mark.
pub(crate) const RESERVED: u64 = !(COMPLEMENT | INDEX_MASK);

/// Nodes read so far, with where each came from (for error messages).
pub(crate) struct NodeTable {
    pub(crate) nodes: Vec<StoredNode>,
    /// File offset of each node's record.
    offsets: Vec<u64>,
    /// Index of each node as written in the file (global for A, block-local for B).
    file_index: Vec<u64>,
    /// The model's BDD variables, sorted.
    vars: Vec<u32>,
    /// Scratch marks for traversals: `mark[i] == epoch` means visited in the current one.
    mark: Vec<u32>,
    epoch: u32,
}

/// One decoded node record, in the block's own numbering.
pub(crate) struct Record {
    pub(crate) offset: u64,
    /// Local index of this node (1-based).
    pub(crate) own: u64,
    pub(crate) var: u32,
    /// Local low index (never complemented by construction of both record layouts).
    pub(crate) low: u64,
    /// Local high reference (index plus complement mark).
    pub(crate) high: u64,
}

impl NodeTable {
    pub(crate) fn new(model_vars: impl IntoIterator<Item = u32>) -> Self {
        let mut vars: Vec<u32> = model_vars.into_iter().collect();
        vars.sort_unstable();
        NodeTable {
            nodes: Vec::new(),
            offsets: Vec::new(),
            file_index: Vec::new(),
            vars,
            mark: Vec::new(),
            epoch: 0,
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.nodes.len() as u64
    }

    fn is_model_var(&self, v: u32) -> bool {
        self.vars.binary_search(&v).is_ok()
    }

    /// Validates `rec` against the nodes before it and appends it.
    pub(crate) fn push(
        &mut self,
        cur: &Cursor,
        rec: Record,
        base: u64,
        limit: u64,
    ) -> Result<(), ModelError> {
        let err = |what| Err(cur.error_at(rec.offset, what));
        if !self.is_model_var(rec.var) {
            return err(Invalid::VarOutsideModel {
                what: "node record",
                var: rec.var,
            });
        }
        for (edge, child) in [("low", rec.low), ("high", rec.high & INDEX_MASK)] {
            if child == 0 {
                continue;
            }
            if child == rec.own {
                return err(Invalid::SelfReference {
                    node: rec.own,
                    edge,
                });
            }
            if child > limit {
                return err(Invalid::IndexOutOfRange {
                    node: rec.own,
                    edge,
                    child,
                    limit,
                });
            }
            if child > rec.own {
                return err(Invalid::ForwardReference {
                    node: rec.own,
                    edge,
                    child,
                });
            }
            let child_var = self.nodes[(base + child - 1) as usize].var;
            if child_var <= rec.var {
                return err(Invalid::NotOrdered {
                    node: rec.own,
                    var: rec.var,
                    edge,
                    child,
                    child_var,
                });
            }
        }
        let global = |i: u64| if i == 0 { 0 } else { base + i };
        self.nodes.push(StoredNode {
            var: rec.var,
            low: global(rec.low),
            high: global(rec.high & INDEX_MASK) | (rec.high & COMPLEMENT),
        });
        self.offsets.push(rec.offset);
        self.file_index.push(rec.own);
        Ok(())
    }

    /// Turns a root reference read at `offset` into a global reference.
    pub(crate) fn root(
        &self,
        cur: &Cursor,
        offset: u64,
        what: &'static str,
        raw: u64,
        base: u64,
        limit: u64,
    ) -> Result<u64, ModelError> {
        if raw & RESERVED != 0 {
            return Err(cur.error_at(offset, Invalid::ReservedBits { what, value: raw }));
        }
        let index = raw & INDEX_MASK;
        if index > limit {
            return Err(cur.error_at(
                offset,
                Invalid::RootOutOfRange {
                    what,
                    index,
                    available: limit,
                },
            ));
        }
        let global = if index == 0 { 0 } else { base + index };
        Ok(global | (raw & COMPLEMENT))
    }

    /// Checks that every node reachable from `root` tests a variable in `allowed`
    /// (sorted ascending). The error points at the first offending node's record.
    pub(crate) fn check_domain(
        &mut self,
        cur: &Cursor,
        root: u64,
        allowed: &[u32],
        bdd: impl Fn() -> String,
    ) -> Result<(), ModelError> {
        if self.mark.len() < self.nodes.len() {
            self.mark.resize(self.nodes.len(), 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Wrapped around: old marks could alias the new epoch.
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let mut stack = vec![root & INDEX_MASK];
        while let Some(index) = stack.pop() {
            if index == 0 {
                continue;
            }
            let i = (index - 1) as usize;
            if self.mark[i] == self.epoch {
                continue;
            }
            self.mark[i] = self.epoch;
            let n = self.nodes[i];
            if allowed.binary_search(&n.var).is_err() {
                return Err(cur.error_at(
                    self.offsets[i],
                    Invalid::VarOutsideBdd {
                        node: self.file_index[i],
                        var: n.var,
                        bdd: bdd(),
                    },
                ));
            }
            stack.push(n.low & INDEX_MASK);
            stack.push(n.high & INDEX_MASK);
        }
        Ok(())
    }

    /// Existentially quantifies every variable `>= first_bottom` out of the BDDs rooted at
    /// `roots`, whose nodes are the block starting after global index `base` (the last
    /// block; format C passes the whole table, base 0, and every root of the file).
    /// Those variables must lie below all others in the order (they do: callers pass a bound
    /// above every state variable), so quantification only turns each sub-BDD over them
    /// into the constant telling whether it is satisfiable; the nodes above are rebuilt
    /// reduced and canonical (uncomplemented low edges, no duplicates). The block is replaced
    /// by exactly the rebuilt nodes reachable from the new roots, children first, shared
    /// between the roots; returns the new roots.
    pub(crate) fn quantify_bottom(
        &mut self,
        base: u64,
        roots: &[u64],
        first_bottom: u32,
    ) -> Vec<u64> {
        let block_offset = self.offsets.get(base as usize).copied().unwrap_or(0);
        let old: Vec<StoredNode> = self.nodes.split_off(base as usize);
        self.offsets.truncate(base as usize);
        self.file_index.truncate(base as usize);
        let local = |r: u64| (r & INDEX_MASK) - base; // for a non-constant reference

        // Satisfiability of each bottom-only node and of its negation, children first.
        let mut sat = vec![(false, false); old.len()];
        let sat_of = |sat: &[(bool, bool)], r: u64| -> bool {
            let negated = r & COMPLEMENT != 0;
            if r & INDEX_MASK == 0 {
                return negated;
            }
            let (pos, neg) = sat[(local(r) - 1) as usize];
            if negated { neg } else { pos }
        };
        for (i, n) in old.iter().enumerate() {
            if n.var >= first_bottom {
                let pos = sat_of(&sat, n.low) || sat_of(&sat, n.high);
                let neg = sat_of(&sat, n.low ^ COMPLEMENT) || sat_of(&sat, n.high ^ COMPLEMENT);
                sat[i] = (pos, neg);
            }
        }

        // Rebuild the nodes above the bottom variables, post-order from the root. Negation
        // does not commute with quantification, so a node is rebuilt once per polarity in
        // which it is reached: `rebuilt[(i, neg)]` is the new reference of `∃ bottom. (¬)f_i`.
        let mut rebuilt: HashMap<(u64, bool), u64> = HashMap::new();
        let mut unique: HashMap<(u32, u64, u64), u64> = HashMap::new();
        let mut stack: Vec<(u64, bool)> = roots.iter().map(|&r| (r, false)).collect();
        while let Some((r, expanded)) = stack.pop() {
            if r & INDEX_MASK == 0 {
                continue;
            }
            let key = (local(r), r & COMPLEMENT != 0);
            let n = old[(key.0 - 1) as usize];
            if n.var >= first_bottom || rebuilt.contains_key(&key) {
                continue;
            }
            let flip = r & COMPLEMENT;
            if !expanded {
                stack.push((r, true));
                stack.push((n.high ^ flip, false));
                stack.push((n.low ^ flip, false));
                continue;
            }
            let low = Self::mapped(&old, &sat, &rebuilt, base, first_bottom, n.low ^ flip);
            let high = Self::mapped(&old, &sat, &rebuilt, base, first_bottom, n.high ^ flip);
            let new_ref = if low == high {
                low
            } else {
                let mark = low & COMPLEMENT;
                let node = (n.var, low ^ mark, high ^ mark);
                let index = *unique.entry(node).or_insert_with(|| {
                    self.nodes.push(StoredNode {
                        var: node.0,
                        low: node.1,
                        high: node.2,
                    });
                    self.offsets.push(block_offset);
                    self.file_index.push(self.nodes.len() as u64 - base);
                    self.nodes.len() as u64
                });
                index | mark
            };
            rebuilt.insert(key, new_ref);
        }
        roots
            .iter()
            .map(|&r| Self::mapped(&old, &sat, &rebuilt, base, first_bottom, r))
            .collect()
    }

    /// The rebuilt form of old reference `r` (see [`NodeTable::quantify_bottom`]).
    fn mapped(
        old: &[StoredNode],
        sat: &[(bool, bool)],
        rebuilt: &HashMap<(u64, bool), u64>,
        base: u64,
        first_bottom: u32,
        r: u64,
    ) -> u64 {
        let negated = r & COMPLEMENT != 0;
        let index = r & INDEX_MASK;
        if index == 0 {
            return r;
        }
        let i = index - base;
        if old[(i - 1) as usize].var >= first_bottom {
            let (pos, neg) = sat[(i - 1) as usize];
            let s = if negated { neg } else { pos };
            if s { COMPLEMENT } else { 0 }
        } else {
            rebuilt[&(i, negated)]
        }
    }
}
