//! One BDD of a model taken out on its own, for keeping it without the whole model.

use std::collections::HashMap;

use super::{COMPLEMENT, INDEX_MASK, StoredModel, StoredNode};

/// A BDD detached from its model: the nodes reachable from `root`, children first
/// (`nodes[i]` has index `i + 1`), and the root in that numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBdd {
    /// The nodes, children first.
    pub nodes: Vec<StoredNode>,
    /// The root reference (index plus complement mark).
    pub root: u64,
}

impl StoredModel {
    /// The BDD rooted at `root` with only its own nodes, in their model order.
    ///
    /// ```
    /// use rhizome_mc::model_file::{StoredModel, StoredNode, COMPLEMENT};
    /// # use rhizome_mc::model_file::{Format, StoredSet};
    /// let x2 = StoredNode { var: 2, low: 0, high: COMPLEMENT };
    /// let x0 = StoredNode { var: 0, low: 0, high: COMPLEMENT };
    /// let model = StoredModel {
    ///     nodes: vec![x2, x0],
    ///     # format: Format::C, state_bits: vec![1, 1], state_vars: vec![0, 2],
    ///     # prime_vars: vec![1, 3], initial: StoredSet { root: 2, vars: vec![0, 2] },
    ///     # groups: vec![], reachable: None,
    ///     // ...
    /// };
    /// let not_x0 = model.extract(2 | COMPLEMENT);
    /// assert_eq!(not_x0.nodes, vec![x0]);
    /// assert_eq!(not_x0.root, 1 | COMPLEMENT);
    /// ```
    pub fn extract(&self, root: u64) -> StoredBdd {
        let mut keep = Vec::new();
        let mut stack = vec![root & INDEX_MASK];
        let mut index: HashMap<u64, u64> = HashMap::new();
        while let Some(i) = stack.pop() {
            if i == 0 || index.insert(i, 0).is_some() {
                continue;
            }
            keep.push(i);
            let n = self.nodes[(i - 1) as usize];
            stack.extend([n.low & INDEX_MASK, n.high & INDEX_MASK]);
        }
        // Children have smaller indices: increasing order is children first.
        keep.sort_unstable();
        for (k, &i) in keep.iter().enumerate() {
            index.insert(i, k as u64 + 1);
        }
        let map = |r: u64| match r & INDEX_MASK {
            0 => r,
            i => index[&i] | (r & COMPLEMENT),
        };
        StoredBdd {
            nodes: keep
                .iter()
                .map(|&i| {
                    let n = self.nodes[(i - 1) as usize];
                    StoredNode {
                        var: n.var,
                        low: map(n.low),
                        high: map(n.high),
                    }
                })
                .collect(),
            root: map(root),
        }
    }
}
