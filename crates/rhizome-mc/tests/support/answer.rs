//! What a reachability run must answer whatever runs it (one PE, a table spread over
//! PEs, states sliced over them): states, levels, final nodes, deadlocks and the stored
//! check. Included by path by the tests that compare runs.

#![allow(dead_code)] // not every including test file needs every item

use num_bigint::BigUint;
use rhizome_mc::reach::{ReachOptions, ReachReport, StoredCheck};

/// What must not depend on how many PEs ran, or how.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub states: BigUint,
    pub levels: Option<usize>,
    pub nodes: usize,
    pub deadlocks: Option<BigUint>,
    pub check: Option<StoredCheck>,
}

pub fn answer(r: &ReachReport) -> Answer {
    Answer {
        states: r.states.clone(),
        levels: r.levels,
        nodes: r.nodes,
        deadlocks: r.deadlocks.as_ref().map(|d| d.count.clone()),
        check: r.stored_check.clone(),
    }
}

pub const WITH_DEADLOCKS: ReachOptions = ReachOptions {
    deadlocks: true,
    trace: false,
    count_nodes: false,
    watch: None,
};
