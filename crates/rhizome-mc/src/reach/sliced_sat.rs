//! Sliced saturation: each rank saturates its slice of the states, and the states that
//! leave a slice travel to their owner in rounds.
//!
//! After the split (`sliced.rs` sweeps every rank's whole set alike until then, to
//! choose it) each rank saturates its slice as one PE saturates (`saturation.rs`), with
//! every group, but each group that writes a split variable (`split_writers.rs` reads
//! this from its relation) restricted to its transitions that keep the split variables:
//! those keep a state in its slice. The *crossing* groups, whole, are then applied once
//! to the states the round added since their images were last taken; the image is cut by
//! slice and exchanged in one all-to-all (`slice_exchange::exchange`), each rank ORs what falls
//! in its slice into its set, and one allgather of counts (`slice_exchange::agree`) says whether
//! any rank found a state it had not: then every rank saturates again (the results of
//! earlier rounds are found in the operation cache: every round uses the same cache key
//! space), else the union of the slices is the least fixpoint under every group, one
//! PE's reachable set. A slice starts from its initial states rather than from what the
//! sweeps found; the rounds are as many as the longest chain of slice changes a state
//! needs, which the choice of the split variables keeps short.

use super::image::par_image;
use super::progress::Run;
use super::saturation::saturate_set;
use super::slice_exchange::{agree, exchange};
use super::sliced::{LevelError, Sliced};
use super::split_writers::Writers;
use crate::model::{Group, Model};
use num_bigint::BigUint;
use rhizome::Ctx;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, Root};

/// Saturates this rank's slice of the visited states of `run` in rounds, as the module
/// describes, until no rank finds a new state; without a split (one rank), one
/// saturation under every group. Collective: every rank calls it after the same split.
pub(super) fn saturate_slices<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    state: &mut Sliced,
    run: &mut Run<'_, S, C>,
) -> Result<(), LevelError> {
    let watch = run.watch.clone();
    let op = m.fresh_op_id();
    let Some(split) = &state.split else {
        let all: Vec<&Group> = model.groups.iter().collect();
        let r = saturate_set(m, &all, run.visited.get(), watch.as_deref(), op)?;
        run.visited.set(r);
        return Ok(());
    };
    // Every rank classifies the groups alike: the same relations, the same split.
    // A failure here is this rank's: it is told to the others at the first exchange.
    let writers = state.writers.as_ref().expect("read at the split");
    let me = ctx.my_pe();
    super::timeline::mark(me, || "sat: classify".into());
    let classified = classify(m, model, writers, &split.vars);
    let none = (Vec::new(), Vec::new(), Vec::new());
    let (within, crossing, _held) = classified.as_ref().unwrap_or(&none);
    let local: Vec<&Group> = within.iter().collect();
    // Each slice saturates from its initial states, not from the states the sweeps
    // before the split found: a saturation from many scattered states recurses into many
    // distinct branches (collision.5: 23 s from the set of the 11th sweep, against 3.5 s
    // from the initial states, for the same fixpoint).
    let mine = split.slices[ctx.my_pe()].get();
    let started = m
        .and(model.initial, mine)
        .map(|start| run.visited.set(start));
    // The states whose crossing images have been taken.
    let mut applied = m.root(Bdd::FALSE);
    loop {
        // This rank's round: its slice saturated under the local groups, then the
        // crossing images of what that added since the last round.
        let mut round = || -> Result<Bdd, LevelError> {
            if let Err(e) = classified.as_ref().and(started.as_ref()) {
                return Err(LevelError::Bdd(e.clone()));
            }
            super::timeline::mark(me, || "sat: round saturate".into());
            let sat = saturate_set(m, &local, run.visited.get(), watch.as_deref(), op)?;
            run.visited.set(sat);
            super::timeline::mark(me, || {
                format!("sat: saturated, {} nodes", m.node_count(sat))
            });
            let fresh = m.diff(sat, applied.get())?;
            applied.set(sat);
            if fresh == Bdd::FALSE || crossing.is_empty() {
                return Ok(Bdd::FALSE);
            }
            let fresh = m.root(fresh);
            let f = fresh.get();
            Ok(m.run(&[f], |c| par_image(c, crossing, f))?)
        };
        let found = round();
        super::timeline::mark(me, || "sat: crossing image done".into());
        let split = state.split.as_ref().expect("split above");
        let got = exchange(ctx, m, split, found, &mut state.bytes_sent);
        let new = got.and_then(|g| Ok(m.diff(g, run.visited.get())?));
        super::timeline::mark(me, || "sat: exchanged".into());
        let (new, total, _) = match agree(ctx, m, model, state, new) {
            Ok(a) => a,
            Err(e) => break Err(e),
        };
        super::timeline::mark(me, || format!("sat: agreed, {total} new states"));
        if total == BigUint::ZERO {
            break Ok(());
        }
        match m.or(run.visited.get(), new) {
            Ok(u) => run.visited.set(u),
            Err(e) => break Err(LevelError::Bdd(e)),
        }
    }
}

/// The groups as a slice sees them: every group with its transitions that change a split
/// variable taken out (the others as they are), and the groups that write a split
/// variable, whole; with the roots that keep the restricted relations alive.
#[allow(clippy::type_complexity)]
fn classify<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    writers: &Writers,
    split_vars: &[u32],
) -> Result<(Vec<Group>, Vec<Group>, Vec<Root>), BddError> {
    let mut within = Vec::with_capacity(model.groups.len());
    let mut crossing = Vec::new();
    let mut held = Vec::new();
    for (g, group) in model.groups.iter().enumerate() {
        let mut keep = m.root(group.relation);
        for &v in split_vars {
            if !writers.writes(model, v, g) {
                continue;
            }
            let at = group
                .cur_vars
                .iter()
                .position(|&x| x == v)
                .expect("a written variable is the group's");
            let (x, x_next) = (m.ithvar(v), m.ithvar(group.next_vars[at]));
            let changed = m.xor(x, x_next)?;
            let kept = m.and(keep.get(), !changed)?;
            keep.set(kept);
        }
        if keep.get() != group.relation {
            crossing.push(group.clone());
        }
        within.push(Group {
            relation: keep.get(),
            ..group.clone()
        });
        held.push(keep);
    }
    Ok((within, crossing, held))
}
