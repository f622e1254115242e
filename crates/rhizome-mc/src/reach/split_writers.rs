//! Choosing the split variables of the sliced saturation and chaining by the transition
//! groups that write them.
//!
//! A group that never changes a split variable keeps every state in its slice, so a
//! rank saturates its slice under those groups alone, with no message; only the groups
//! that write a split variable (the *crossing* groups) move states between slices, and
//! each of them costs the exchanges of states that `sliced_sat.rs` makes. Whether a group
//! writes a variable is read from its relation exactly: `R ∧ (x ≠ x')` is empty when
//! every transition keeps `x`. Saturation applies the groups of the highest top
//! variables in its outermost fixpoint, once a round, as the sliced saturation applies
//! the crossing groups between its rounds, and the groups of lower tops deep inside its
//! recursion, on every branch: a slice that lacks such a group's slice-changing steps
//! needs a round for each of them (collision.5 split on a bit that one deep group flips at
//! every step: 4 rounds in 50 s and not done, against 5 s in all for a bit written only
//! by groups of the first 11 of 53). And every successor that leaves its slice is a state
//! mailed and saturated again on its owner: resistance.1 split by a bit that almost half
//! of the successors flip sent 96 MiB in 3.8 s, split by a bit of the same depth that
//! few flip, 14 MiB in 1.4 s. So the rule, greedy over the split bits: among the variables
//! whose cut keeps the parts balanced (the smallest part at least a quarter of the
//! largest, in nodes of the visited set), those whose writers are the least deep in
//! saturation's order ([`Writers::depth`]); of these, in the order of the split rule of
//! bfs (`split.rs`: the smallest largest part, then the smallest total, then the earlier
//! variable), the first whose crossing groups move at most one in 8 ([`HEAVY_CROSSING`])
//! of the visited set's successors out of their slice, or the first if every one moves
//! more. The crossing is counted only for the candidates that the cheaper criteria rank
//! first (images cost more than cuts). Where no variable cuts the set in balanced parts,
//! bfs's rule decides alone.

use super::image::{Way, step_op};
use super::split::{Split, choose_split_by, shared, slice_cube};
use crate::model::{Group, Model};
use rhizome::Ctx;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, Root};

/// A part counts as balanced if it has at least `1 / BALANCE` of the largest part's nodes.
const BALANCE: usize = 4;

/// Which groups write which state variables: `writes[i][g]` for state variable `i` (in
/// state-vector order) and group `g` (in model order).
pub(super) struct Writers {
    writes: Vec<Vec<bool>>,
}

impl Writers {
    /// Reads from every group's relation which state variables it may change.
    pub(super) fn of<S: NodeStore, C: OpCache>(
        m: &mut Manager<S, C>,
        model: &Model,
    ) -> Result<Writers, BddError> {
        let mut writes = vec![vec![false; model.groups.len()]; model.state_vars.len()];
        for (i, (&x, &x_next)) in model.state_vars.iter().zip(&model.prime_vars).enumerate() {
            for (g, group) in model.groups.iter().enumerate() {
                let Some(at) = group.cur_vars.iter().position(|&v| v == x) else {
                    continue; // the group leaves x alone
                };
                // The group's own copy of x (the model's for interleaved models).
                let next = group.next_vars.get(at).copied().unwrap_or(x_next);
                let (a, b) = (m.ithvar(x), m.ithvar(next));
                let changed = m.xor(a, b)?;
                let moves = m.and(group.relation, changed)?;
                writes[i][g] = moves != Bdd::FALSE;
            }
        }
        Ok(Writers { writes })
    }

    /// Whether group `g` writes one of the state variables `vars`.
    pub(super) fn crosses(&self, model: &Model, vars: &[u32], g: usize) -> bool {
        vars.iter().any(|&v| self.writes(model, v, g))
    }

    /// Whether group `g` writes state variable `v`.
    pub(super) fn writes(&self, model: &Model, v: u32, g: usize) -> bool {
        model
            .state_vars
            .iter()
            .position(|&x| x == v)
            .is_some_and(|i| self.writes[i][g])
    }

    /// How deep in saturation's order the groups that write one of `vars` reach: the
    /// number of groups whose top variable is not below the deepest writer's.
    fn depth(&self, model: &Model, vars: &[u32]) -> usize {
        let top = |g: usize| {
            model.groups[g]
                .cur_vars
                .iter()
                .min()
                .copied()
                .unwrap_or(u32::MAX)
        };
        let deepest = (0..model.groups.len())
            .filter(|&g| self.crosses(model, vars, g))
            .map(top)
            .max();
        deepest.map_or(0, |d| {
            (0..model.groups.len()).filter(|&g| top(g) <= d).count()
        })
    }
}

/// Chooses `k` split variables of `set` (rooted by the caller) by the module's rule and
/// builds the `2^k` slices. Collective: every rank of `ctx` passes the same set.
pub(super) fn choose_split_by_writers<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    writers: &Writers,
    set: Bdd,
    k: u32,
) -> Result<Split, BddError> {
    let mut images: Option<f64> = None;
    choose_split_by(
        ctx,
        m,
        &model.state_vars,
        set,
        k,
        |vars, sizes| {
            let largest = sizes.iter().copied().max().unwrap_or(0);
            let smallest = sizes.iter().copied().min().unwrap_or(0);
            let unbalanced = smallest * BALANCE < largest;
            let depth = if unbalanced {
                0
            } else {
                writers.depth(model, vars)
            };
            ((unbalanced, depth), (largest, sizes.iter().sum::<usize>()))
        },
        |m, &(unbalanced, _), vars, parts| {
            if unbalanced {
                return Ok(true);
            }
            let all = match images {
                Some(n) => n,
                None => *images.insert(image_states(ctx, m, model, set)?),
            };
            Ok(crossing_states(m, model, writers, vars, parts)? <= HEAVY_CROSSING * all)
        },
    )
}

/// A split whose crossing groups move more than this fraction of the visited set's
/// successors out of their slice gives way to a lighter one of the same depth. One in 8:
/// resistance.1's heavy bit moves 47% of them, at.5's 16% and at.6's 20%, and the lighter
/// bits that replaced them were 1.3x to 2.8x faster on 2 PEs; schedule_world.3.8's 11%
/// bit was faster than its replacement at 1%, which the threshold keeps (see
/// docs/measurements.md).
const HEAVY_CROSSING: f64 = 0.125;

/// The number of successors of `set` under every group (summed over the groups), the
/// images shared by the ranks of `ctx` ([`shared`]; the sum in group order, so every
/// rank gets the same figure). Collective.
fn image_states<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    set: Bdd,
) -> Result<f64, BddError> {
    let per_group = shared(ctx, model.groups.len(), |g| {
        let i = step_op(m, model, &model.groups[g], set, Way::Forward)?;
        Ok(m.satcount_approx(i, &model.state_vars))
    })?;
    Ok(per_group.iter().sum())
}

/// The number of successors of `parts` (the visited set cut by `vars`, in slice order)
/// that leave their part's slice, summed over the groups that write one of `vars`.
fn crossing_states<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    writers: &Writers,
    vars: &[u32],
    parts: &[Root],
) -> Result<f64, BddError> {
    let crossing: Vec<&Group> = (model.groups.iter().enumerate())
        .filter(|&(gi, _)| writers.crosses(model, vars, gi))
        .map(|(_, g)| g)
        .collect();
    let mut n = 0.0;
    for (p, part) in parts.iter().enumerate() {
        let cube = slice_cube(m, vars, vars.len() as u32, p)?;
        for &g in &crossing {
            let i = step_op(m, model, g, part.get(), Way::Forward)?;
            let i = m.root(i);
            let out = m.and(i.get(), !cube.get())?;
            n += m.satcount_approx(out, &model.state_vars);
        }
    }
    Ok(n)
}
