//! Images and pre-images under the transition groups: inside an operation, as whole
//! operations (with the fallback for models whose next variables are not interleaved),
//! and over all groups in parallel.

use crate::model::{Group, Model};
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, OpCtx};

/// The image of `s` under one group, inside an operation.
pub(super) fn image<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, g: &Group, s: Bdd) -> Bdd {
    c.relnext(s, g.relation, g.vars)
}

/// Which way a step goes: to the successors or to the predecessors.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    Forward,
    Backward,
}

/// The successors (or predecessors) of `s`, rooted by the caller, under one group, as its
/// own operation, with the fallback for models whose next variables are not interleaved
/// with the current ones.
pub(super) fn step_op<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    g: &Group,
    s: Bdd,
    way: Way,
) -> Result<Bdd, BddError> {
    match (way, model.interleaved) {
        (Way::Forward, true) => m.relnext(s, g.relation, g.vars),
        (Way::Backward, true) => m.relprev(s, g.relation, g.vars),
        (Way::Forward, false) => {
            let t = m.and_exists(s, g.relation, g.cur_cube)?;
            let t = m.root(t);
            m.rename(t.get(), &pairs(&g.next_vars, &g.cur_vars))
        }
        (Way::Backward, false) => {
            // Only the group's variables move to their next copies: the others are what
            // the relation leaves unchanged, and stay as current variables in the result.
            let primed = m.rename(s, &pairs(&g.cur_vars, &g.next_vars))?;
            let primed = m.root(primed);
            let next_cube = m.cube(&g.next_vars)?;
            let next_cube = m.root(next_cube);
            m.and_exists(primed.get(), g.relation, next_cube.get())
        }
    }
}

/// The renaming `from[i] -> to[i]`, as [`Manager::rename`] takes it.
fn pairs(from: &[u32], to: &[u32]) -> Vec<(u32, u32)> {
    from.iter().copied().zip(to.iter().copied()).collect()
}

/// Union of the images of `s` under `groups`, forked in halves.
pub(super) fn par_image<S: NodeStore, C: OpCache>(
    c: &OpCtx<'_, S, C>,
    groups: &[Group],
    s: Bdd,
) -> Bdd {
    par_union(c, groups, s, &|c, g, s| image(c, g, s))
}

/// Union of the pre-images of `s` under `groups`, forked in halves.
pub(super) fn par_preimage<S: NodeStore, C: OpCache>(
    c: &OpCtx<'_, S, C>,
    groups: &[Group],
    s: Bdd,
) -> Bdd {
    par_union(c, groups, s, &|c, g, s| c.relprev(s, g.relation, g.vars))
}

/// Union of `step(g, s)` over `groups`, the halves forked so they run on different workers.
fn par_union<S, C, F>(c: &OpCtx<'_, S, C>, groups: &[Group], s: Bdd, step: &F) -> Bdd
where
    S: NodeStore,
    C: OpCache,
    F: Fn(&OpCtx<'_, S, C>, &Group, Bdd) -> Bdd + Sync,
{
    match groups {
        [] => Bdd::FALSE,
        [g] => step(c, g, s),
        _ => {
            let (a, b) = groups.split_at(groups.len() / 2);
            let (x, y) = c.join(|c| par_union(c, a, s, step), |c| par_union(c, b, s, step));
            c.or(x, y)
        }
    }
}
