//! `bfs` and `par`: level by level, the images of a level group by group or all in one
//! parallel operation; over several PEs, all in one operation whose images are dealt to
//! the PEs whole.

use super::Strategy;
use super::image::{Way, par_image, step_op};
use super::progress::Run;
use crate::model::Model;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache};

/// `bfs` and `par`: level by level until a level finds no new state.
pub(super) fn bfs_levels<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    run: &mut Run<'_, S, C>,
) -> Result<(), BddError> {
    let mut front = m.root(model.initial);
    loop {
        run.next_level();
        let v = image_source(m, front.get(), run.visited.get());
        let new = successors(m, model, strategy, v, run.visited.get())?;
        if new == Bdd::FALSE {
            run.record(m, model, Some(Bdd::FALSE), false);
            return Ok(());
        }
        front.set(new);
        let u = m.or(run.visited.get(), new)?;
        run.visited.set(u);
        run.record(m, model, Some(new), true);
    }
}

/// What a level takes the image of: the frontier `front` or the whole visited set
/// `visited`, whichever BDD is smaller. Both have the same successors outside `visited`
/// (every successor of an older state is visited already), so the levels and the result
/// are the thesis' (new = image(new) minus visited). Which is smaller depends on the
/// model: the visited set is often smoother (Sylvan images it always), the frontier
/// sometimes far smaller.
pub(super) fn image_source<S: NodeStore, C: OpCache>(
    m: &Manager<S, C>,
    front: Bdd,
    visited: Bdd,
) -> Bdd {
    if m.fewer_nodes(front, visited) {
        front
    } else {
        visited
    }
}

/// The successors of `v` (rooted by the caller) under every group that are not in `seen`
/// (rooted too): one level's new states when `v` holds the frontier (or all visited
/// states) and `seen` the visited ones. `bfs`, `par` and the sliced exploration
/// (`sliced.rs`, where `seen` is one rank's slice) all take their levels from here.
pub(super) fn successors<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    v: Bdd,
    seen: Bdd,
) -> Result<Bdd, BddError> {
    if model.interleaved && m.spread_jobs().is_some() {
        // Over several PEs, one operation whose images (one per group) are dealt
        // whole to the PEs: the same set as group by group, without cutting every
        // image into sub-calls that cross PEs.
        let rels: Vec<(Bdd, Bdd)> = model.groups.iter().map(|g| (g.relation, g.vars)).collect();
        m.run(&[v, seen], |c| {
            let succ = c.rel_image_union(v, &rels, false);
            c.diff(succ, seen)
        })
    } else if strategy == Strategy::Par {
        let groups = &model.groups;
        m.run(&[v, seen], |c| {
            let succ = par_image(c, groups, v);
            c.diff(succ, seen)
        })
    } else {
        let mut succ = m.root(Bdd::FALSE);
        for g in &model.groups {
            let img = step_op(m, model, g, v, Way::Forward)?;
            let img = m.root(img);
            let u = m.or(succ.get(), img.get())?;
            succ.set(u);
        }
        m.diff(succ.get(), seen)
    }
}
