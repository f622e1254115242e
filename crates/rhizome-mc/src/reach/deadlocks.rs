//! Deadlocks: the reachable states in which no group is enabled.

use super::trace::{TraceStep, shortest_trace};
use crate::model::Model;
use num_bigint::BigUint;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache};
use std::time::Instant;

/// Deadlock states found.
#[derive(Debug, Clone)]
pub struct Deadlocks {
    /// How many reachable states enable no group.
    pub count: BigUint,
    /// One of them as a state vector (one integer per state variable).
    pub example: Option<Vec<u64>>,
    /// With [`ReachOptions::trace`](super::ReachOptions::trace): a shortest path from an initial state to `example`.
    pub trace: Option<Vec<TraceStep>>,
    /// Seconds spent finding the trace (included in [`ReachReport::seconds`](super::ReachReport::seconds)).
    pub trace_seconds: f64,
}

/// Reachable states in which no group is enabled; with `trace`, a shortest path to one.
pub(super) fn find_deadlocks<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    reachable: Bdd,
    trace: bool,
) -> Result<Deadlocks, BddError> {
    let mut enabled = m.root(Bdd::FALSE);
    for g in &model.groups {
        let e = if model.interleaved {
            m.relprev(Bdd::TRUE, g.relation, g.vars)?
        } else {
            let next = m.cube(&g.next_vars)?;
            let next = m.root(next);
            m.exists(g.relation, next.get())?
        };
        let e = m.root(e);
        let u = m.or(enabled.get(), e.get())?;
        enabled.set(u);
    }
    let dead = m.diff(reachable, enabled.get())?;
    drop(enabled);
    let count = m.satcount(dead, &model.state_vars);
    let example = m.pick_one(dead).map(|a| model.state_vector(&a));
    let started = Instant::now();
    let trace = match (&example, trace) {
        (Some(target), true) => Some(shortest_trace(m, model, reachable, target)?),
        _ => None,
    };
    Ok(Deadlocks {
        count,
        example,
        trace,
        trace_seconds: started.elapsed().as_secs_f64(),
    })
}
