//! A model loaded into a BDD manager: initial states and a partitioned transition relation.

use crate::model_file::{
    COMPLEMENT, Format, INDEX_MASK, StoredBdd, StoredGroup, StoredModel, StoredNode, StoredSet,
};
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, Root};
use std::collections::HashMap;
use std::sync::Arc;

/// One transition group: a relation over the current and next copies of a few state
/// variables; all other state variables keep their values.
#[derive(Debug, Clone)]
pub struct Group {
    /// The relation `R(x, x')` over the group's variables.
    pub relation: Bdd,
    /// The cube of the group's current and next variables (what `relnext` takes).
    pub vars: Bdd,
    /// The cube of the group's current variables.
    pub cur_cube: Bdd,
    /// Current-state variables of the group.
    pub cur_vars: Vec<u32>,
    /// Next-state variables, `next_vars[i]` the copy of `cur_vars[i]`.
    pub next_vars: Vec<u32>,
}

/// A model whose BDDs live in a [`Manager`]: the model holds [`Root`]s of them, so they
/// survive collections while the model (or a clone) lives.
#[derive(Debug, Clone)]
pub struct Model {
    /// A name for reports (file name or generator).
    pub name: String,
    /// Bits of each state integer.
    pub state_bits: Vec<u32>,
    /// Current-state variable of each state bit, in state-vector order.
    pub state_vars: Vec<u32>,
    /// Next-state variable of each state bit.
    pub prime_vars: Vec<u32>,
    /// The initial states.
    pub initial: Bdd,
    /// The transition groups.
    pub groups: Vec<Group>,
    /// Whether every next variable is its current variable plus one, and current
    /// variables are even: then `relnext` renames on the fly; otherwise images take a
    /// relational product and a rename.
    pub interleaved: bool,
    /// The reachable states the model file stores (format C), kept outside the manager
    /// until a run is checked against them ([`crate::reach::ReachReport::stored_check`]),
    /// so that they take no table space while the states are explored.
    pub stored_reachable: Option<Arc<StoredBdd>>,
    /// Keeps `initial` and every group's BDDs alive (only held: dropped, it releases them).
    _roots: Vec<Root>,
}

impl Model {
    /// Builds a model from its parts, rooting its BDDs in `m` (`initial` and the
    /// relations are rooted before anything that could collect them).
    pub fn new<S: NodeStore, C: OpCache>(
        m: &mut Manager<S, C>,
        name: String,
        state_bits: Vec<u32>,
        state_vars: Vec<u32>,
        prime_vars: Vec<u32>,
        initial: Bdd,
        groups: Vec<(Bdd, Vec<u32>, Vec<u32>)>,
    ) -> Result<Model, BddError> {
        let mut roots: Vec<Root> = std::iter::once(initial)
            .chain(groups.iter().map(|g| g.0))
            .map(|b| m.root(b))
            .collect();
        let mut gs = Vec::with_capacity(groups.len());
        for (relation, cur_vars, next_vars) in groups {
            let all: Vec<u32> = cur_vars.iter().chain(&next_vars).copied().collect();
            // Each cube is rooted as soon as it exists: making the next may collect.
            let vars = m.cube(&all)?;
            roots.push(m.root(vars));
            let cur_cube = m.cube(&cur_vars)?;
            roots.push(m.root(cur_cube));
            gs.push(Group {
                relation,
                vars,
                cur_cube,
                cur_vars,
                next_vars,
            });
        }
        let interleaved = state_vars
            .iter()
            .zip(&prime_vars)
            .all(|(&c, &p)| c % 2 == 0 && p == c + 1)
            && gs.iter().all(|g| {
                g.cur_vars
                    .iter()
                    .zip(&g.next_vars)
                    .all(|(&c, &p)| c % 2 == 0 && p == c + 1)
            });
        Ok(Model {
            name,
            state_bits,
            state_vars,
            prime_vars,
            initial,
            groups: gs,
            interleaved,
            stored_reachable: None,
            _roots: roots,
        })
    }

    /// Loads a stored model into `m`.
    pub fn from_stored<S: NodeStore, C: OpCache>(
        m: &mut Manager<S, C>,
        name: String,
        s: &StoredModel,
    ) -> Result<Model, BddError> {
        let roots: Vec<u64> = std::iter::once(s.initial.root)
            .chain(s.groups.iter().map(|g| g.relation))
            .collect();
        let loaded = load_nodes(m, &s.nodes, &roots)?;
        let initial = loaded[0];
        // A set defined on part of the vector leaves the other integers unconstrained,
        // which is what its BDD already says.
        let groups = s
            .groups
            .iter()
            .zip(&loaded[1..])
            .map(|(g, &relation)| (relation, g.cur_vars.clone(), g.next_vars.clone()))
            .collect::<Vec<_>>();
        // No operation runs before `Model::new` roots what was loaded.
        let mut model = Model::new(
            m,
            name,
            s.state_bits.clone(),
            s.state_vars.clone(),
            s.prime_vars.clone(),
            initial,
            groups,
        )?;
        model.stored_reachable = s.reachable.as_ref().map(|r| Arc::new(s.extract(r.root)));
        Ok(model)
    }

    /// The model as stored nodes (format-B conventions: the vars of a group are the
    /// union of its integers), for writing to a file.
    pub fn to_stored<S: NodeStore, C: OpCache>(&self, m: &Manager<S, C>) -> StoredModel {
        let mut nodes: Vec<StoredNode> = Vec::new();
        let mut index: HashMap<u64, u64> = HashMap::new();
        let mut export = |root: Bdd| -> u64 {
            // Children first, iteratively (deep BDDs must not overflow the stack).
            let mut stack = vec![(root.index(), false)];
            while let Some((i, expanded)) = stack.pop() {
                if i == 0 || index.contains_key(&i) {
                    continue;
                }
                let (var, lo, hi) = m.node(Bdd::from_raw(i)).expect("internal node");
                if !expanded {
                    stack.push((i, true));
                    stack.push((lo.index(), false));
                    stack.push((hi.index(), false));
                    continue;
                }
                let r = |b: Bdd| -> u64 {
                    let base = if b.index() == 0 { 0 } else { index[&b.index()] };
                    base | if b.is_complemented() { COMPLEMENT } else { 0 }
                };
                nodes.push(StoredNode {
                    var,
                    low: r(lo),
                    high: r(hi),
                });
                index.insert(i, nodes.len() as u64);
            }
            let base = if root.index() == 0 {
                0
            } else {
                index[&root.index()]
            };
            base | if root.is_complemented() {
                COMPLEMENT
            } else {
                0
            }
        };
        let initial = StoredSet {
            root: export(self.initial),
            vars: self.state_vars.clone(),
        };
        let groups = self
            .groups
            .iter()
            .map(|g| StoredGroup {
                relation: export(g.relation),
                cur_vars: g.cur_vars.clone(),
                next_vars: g.next_vars.clone(),
            })
            .collect();
        StoredModel {
            format: Format::B,
            state_bits: self.state_bits.clone(),
            state_vars: self.state_vars.clone(),
            prime_vars: self.prime_vars.clone(),
            nodes,
            initial,
            groups,
            reachable: None,
        }
    }

    /// Number of state bits.
    pub fn bits(&self) -> usize {
        self.state_vars.len()
    }

    /// A state vector (one integer per state variable) from an assignment of state
    /// variables (`(var, value)` pairs, others false).
    pub fn state_vector(&self, assignment: &[(u32, bool)]) -> Vec<u64> {
        let value: HashMap<u32, bool> = assignment.iter().copied().collect();
        let mut out = Vec::with_capacity(self.state_bits.len());
        let mut bit = 0usize;
        for &w in &self.state_bits {
            let mut x = 0u64;
            for j in 0..w as usize {
                // The first bit of an integer is its most significant (as LTSmin writes it).
                x <<= 1;
                if value
                    .get(&self.state_vars[bit + j])
                    .copied()
                    .unwrap_or(false)
                {
                    x |= 1;
                }
            }
            out.push(x);
            bit += w as usize;
        }
        out
    }
}

/// Loads a BDD kept outside the manager (such as [`Model::stored_reachable`]) into `m`.
pub fn load_stored_bdd<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    bdd: &StoredBdd,
) -> Result<Bdd, BddError> {
    Ok(load_nodes(m, &bdd.nodes, &[bdd.root])?[0])
}

/// Makes `nodes` (children first, `nodes[i]` index `i + 1`) in `m` and returns the BDDs of
/// `roots`, unrooted: the caller roots them before its next operation.
fn load_nodes<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    nodes: &[StoredNode],
    roots: &[u64],
) -> Result<Vec<Bdd>, BddError> {
    // All nodes are made in one operation: if the table fills up, the partial load is
    // collected and the whole load runs again in a larger table.
    m.run_many(&[], |c| {
        let mut table: Vec<Bdd> = Vec::with_capacity(nodes.len() + 1);
        table.push(Bdd::FALSE);
        let edge = |table: &[Bdd], r: u64| -> Bdd {
            let b = table[(r & INDEX_MASK) as usize];
            if r & COMPLEMENT != 0 { !b } else { b }
        };
        for n in nodes {
            if c.aborted() {
                // The table is full: `run_many` collects, grows and loads again.
                return Vec::new();
            }
            table.push(c.make(n.var, edge(&table, n.low), edge(&table, n.high)));
        }
        roots.iter().map(|&r| edge(&table, r)).collect()
    })
}
