//! Counterexample traces: a shortest path from an initial state to a given state.

use super::image::{Way, image, par_preimage, step_op};
use crate::model::Model;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, Root};

/// One state of a counterexample trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceStep {
    /// The transition group (index into [`Model::groups`]) taken from the previous
    /// state; `None` for the first, initial state.
    pub group: Option<usize>,
    /// The full state vector.
    pub state: Vec<u64>,
}

/// The BDD of the one state `vector`.
fn state_bdd<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    vector: &[u64],
) -> Result<Bdd, BddError> {
    let mut literals: Vec<(u32, bool)> = Vec::with_capacity(model.state_vars.len());
    let mut bit = 0usize;
    for (&w, &x) in model.state_bits.iter().zip(vector) {
        for j in 0..w as usize {
            // The first bit of an integer is its most significant (see `state_vector`).
            let value = (x >> (w as usize - 1 - j)) & 1 == 1;
            literals.push((model.state_vars[bit + j], value));
        }
        bit += w as usize;
    }
    // Built bottom-up: the deepest variable first.
    literals.sort_by_key(|&(v, _)| std::cmp::Reverse(v));
    m.run(&[], |c| {
        literals.iter().fold(Bdd::TRUE, |below, &(v, value)| {
            if value {
                c.make(v, Bdd::FALSE, below)
            } else {
                c.make(v, below, Bdd::FALSE)
            }
        })
    })
}

/// One state of a non-empty set of states, as a full vector. Variables the set leaves
/// free are 0: the vector is in the set all the same.
fn some_state<S: NodeStore, C: OpCache>(
    m: &Manager<S, C>,
    model: &Model,
    set: Bdd,
) -> Option<Vec<u64>> {
    m.pick_one(set).map(|a| model.state_vector(&a))
}

/// A shortest path from an initial state to `target` (a reachable state).
///
/// Searched backwards, for every strategy alike: rings of the states at distance 0, 1,
/// 2, ... from `target` (predecessors within `reachable`, each ring without the earlier
/// ones) until a ring meets the initial states; then forwards from an initial state in
/// that ring, each step to a successor in the next ring closer to `target`. The rings
/// start from one state and stay small where the forward levels of a BFS would be the
/// whole frontier, and saturation, which has no levels, needs no second exploration.
pub(super) fn shortest_trace<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    reachable: Bdd,
    target: &[u64],
) -> Result<Vec<TraceStep>, BddError> {
    // Everything the search keeps is rooted here until it returns, also on an error.
    let mut pins: Vec<Root> = Vec::new();
    // The value first: it is computed (borrowing `m` mutably) before `m` is lent again.
    let mut pin = |b: Bdd, m: &Manager<S, C>| {
        pins.push(m.root(b));
        b
    };
    let t = state_bdd(m, model, target)?;
    let mut rings = vec![pin(t, m)];
    let mut seen = t;
    let first = loop {
        let last = *rings.last().expect("the target's ring");
        let meet = m.and(last, model.initial)?;
        if meet != Bdd::FALSE {
            break pin(meet, m);
        }
        let ring = if model.interleaved {
            // One operation for the whole step: the groups' pre-images in parallel.
            let groups = &model.groups;
            m.run(&[last, reachable, seen], |c| {
                let pre = par_preimage(c, groups, last);
                let within = c.and(pre, reachable);
                c.diff(within, seen)
            })?
        } else {
            let mut pre = Bdd::FALSE;
            for g in &model.groups {
                let p = pin(step_op(m, model, g, last, Way::Backward)?, m);
                pre = pin(m.or(pre, p)?, m);
            }
            let within = pin(m.and(pre, reachable)?, m);
            m.diff(within, seen)?
        };
        let ring = pin(ring, m);
        assert!(
            ring != Bdd::FALSE,
            "the deadlock example is reachable, so some ring meets the initial states"
        );
        seen = pin(m.or(seen, ring)?, m);
        rings.push(ring);
    };
    let start = some_state(m, model, first).expect("a non-empty set has a state");
    let mut cur = pin(state_bdd(m, model, &start)?, m);
    let mut steps = vec![TraceStep {
        group: None,
        state: start,
    }];
    for &ring in rings.iter().rev().skip(1) {
        let mut step = None;
        if model.interleaved {
            // One operation for every group's successors of the one state `cur`.
            let groups = &model.groups;
            let hits = m.run_many(&[cur, ring], |c| {
                groups
                    .iter()
                    .map(|g| {
                        let img = image(c, g, cur);
                        c.and(img, ring)
                    })
                    .collect()
            })?;
            step = hits
                .iter()
                .position(|&h| h != Bdd::FALSE)
                .map(|i| (i, some_state(m, model, hits[i]).expect("non-empty")));
        } else {
            for (i, g) in model.groups.iter().enumerate() {
                let img = pin(step_op(m, model, g, cur, Way::Forward)?, m);
                let hit = m.and(img, ring)?;
                if hit != Bdd::FALSE {
                    step = Some((i, some_state(m, model, hit).expect("non-empty")));
                    break;
                }
            }
        }
        let (group, state) =
            step.expect("every state of a ring has a successor in the next ring to the target");
        cur = pin(state_bdd(m, model, &state)?, m);
        steps.push(TraceStep {
            group: Some(group),
            state,
        });
    }
    Ok(steps)
}
