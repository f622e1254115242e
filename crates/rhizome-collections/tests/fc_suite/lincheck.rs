//! A linearizability checker for stack, queue and set histories: Wing and Gong's search with
//! Lowe's memoization of (operations linearized, abstract state).
//!
//! Written here because no maintained crate checks a recorded history against a
//! sequential specification without also running the program under its own scheduler
//! (`loom`, `shuttle` and `lincheck`-style crates generate the executions themselves;
//! here the executions are the runtime's, across PEs and processes).

use std::collections::{HashSet, VecDeque};

/// One completed operation: invoked and answered at these global clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub invoked: u64,
    pub answered: u64,
    pub call: Call,
}

/// What an operation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Push(u64),
    /// A pop and the value it returned.
    Pop(Option<u64>),
    /// A set's insert of a key.
    Insert(u64),
    /// A set's lookup of a key, and whether it was found.
    Lookup(u64, bool),
}

/// The structure the history is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spec {
    Stack,
    Queue,
    /// Its state: the keys present, in increasing order.
    Set,
}

impl Spec {
    /// The state after `call`, if `call` may happen in `state`.
    fn step(self, state: &VecDeque<u64>, call: Call) -> Option<VecDeque<u64>> {
        let mut next = state.clone();
        match call {
            Call::Push(v) => next.push_back(v),
            Call::Pop(want) => {
                let got = match self {
                    Spec::Stack => next.pop_back(),
                    _ => next.pop_front(),
                };
                if got != want {
                    return None;
                }
            }
            Call::Insert(k) => {
                if let Err(at) = state.binary_search(&k) {
                    next.insert(at, k);
                }
            }
            Call::Lookup(k, found) if state.binary_search(&k).is_ok() != found => return None,
            Call::Lookup(..) => {}
        }
        Some(next)
    }
}

/// Whether some order of `history` respects real time (an operation answered before
/// another was invoked comes first) and is a legal sequential run of `spec` from empty.
pub fn linearizable(spec: Spec, history: &[Event]) -> bool {
    assert!(
        history.len() <= 128,
        "the checker's set of linearized operations is a u128"
    );
    let all = if history.len() == 128 {
        u128::MAX
    } else {
        (1u128 << history.len()) - 1
    };
    let mut seen = HashSet::new();
    search(spec, history, 0, VecDeque::new(), all, &mut seen)
}

fn search(
    spec: Spec,
    history: &[Event],
    done: u128,
    state: VecDeque<u64>,
    all: u128,
    seen: &mut HashSet<(u128, VecDeque<u64>)>,
) -> bool {
    if done == all {
        return true;
    }
    if !seen.insert((done, state.clone())) {
        return false;
    }
    let left = || (0..history.len()).filter(move |&i| done & (1 << i) == 0);
    // An operation can go next only if none left was answered before it was invoked.
    let first_answer = left()
        .map(|i| history[i].answered)
        .min()
        .expect("some left");
    left()
        .filter(|&i| history[i].invoked < first_answer)
        .any(|i| {
            spec.step(&state, history[i].call)
                .is_some_and(|next| search(spec, history, done | 1 << i, next, all, seen))
        })
}
