//! `chaining`: every group's image is added to the set at once.

use super::image::{Way, step_op};
use super::progress::Run;
use crate::model::Model;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache};

/// `chaining`: every group's image is added at once, until a sweep adds nothing.
pub(super) fn chaining_levels<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    run: &mut Run<'_, S, C>,
) -> Result<(), BddError> {
    loop {
        run.next_level();
        let swept = sweep(m, model, run.visited.get())?;
        let grown = swept != run.visited.get();
        run.visited.set(swept);
        run.record(m, model, None, grown);
        if !grown {
            return Ok(());
        }
    }
}

/// One sweep of chaining from `set` (rooted by the caller): `set` with every group's
/// image added in turn, each group seeing what the earlier ones added. A sweep
/// distributes over union (the sweep of `A ∪ B` is the union of the sweeps of `A` and
/// `B`), so the sliced exploration sweeps each slice on its own (`sliced.rs`).
pub(super) fn sweep<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    set: Bdd,
) -> Result<Bdd, BddError> {
    let mut front = m.root(set);
    for g in &model.groups {
        let img = step_op(m, model, g, front.get(), Way::Forward)?;
        let img = m.root(img);
        let u = m.or(front.get(), img.get())?;
        front.set(u);
    }
    Ok(front.get())
}
