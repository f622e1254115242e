//! `chaining`: every group's image is added to the set at once.

use super::image::{Way, step_op};
use super::progress::Run;
use crate::model::Model;
use rhizome_bdd::{BddError, Manager, NodeStore, OpCache};

/// `chaining`: every group's image is added at once, until a sweep adds nothing.
pub(super) fn chaining_levels<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    run: &mut Run<'_, S, C>,
) -> Result<(), BddError> {
    loop {
        run.next_level();
        let mut front = m.root(run.visited.get());
        for g in &model.groups {
            let img = step_op(m, model, g, front.get(), Way::Forward)?;
            let img = m.root(img);
            let u = m.or(front.get(), img.get())?;
            front.set(u);
        }
        let grown = front.get() != run.visited.get();
        run.visited.set(front.get());
        run.record(m, model, None, grown);
        if !grown {
            return Ok(());
        }
    }
}
