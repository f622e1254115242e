//! End-to-end check of the readers against the published state counts: an explicit-state
//! breadth-first search that evaluates the stored BDDs directly (no BDD package involved)
//! must find exactly the oracle's number of reachable states. This pins down the variable
//! mapping, the group projections, the complement-edge semantics and the action-label
//! quantification of format B. Only models small enough for explicit search are used.
//!
//! Model files are located by `build.rs` (`$RHIZOME_MODELS`, else `../shared/models`
//! beside the repository); without them the tests are reported as ignored.

#[path = "support/models.rs"]
mod models;

use models::required_models_dir;
use std::collections::{HashMap, HashSet};

use rhizome_mc::model_file::{COMPLEMENT, INDEX_MASK, StoredModel, read_model};

/// One variable of a BDD's domain, in order: which state bit it is, and whether it is a
/// current-state variable (fixed by the source state) or a next-state one (chosen).
#[derive(Clone, Copy)]
struct Slot {
    var: u32,
    bit: u32,
    current: bool,
}

/// Calls `emit(t)` for every state `t` such that `r` is true on the assignment taking
/// current-state slots from `s` and next-state slots (or, with `free_current`, all slots)
/// from `t`; bits of `t` outside those slots are those of `s`.
fn successors(
    m: &StoredModel,
    r: u64,
    slots: &[Slot],
    s: u128,
    t: u128,
    free_current: bool,
    emit: &mut dyn FnMut(u128),
) {
    let Some((slot, rest)) = slots.split_first() else {
        // Every domain variable is assigned, so r is a constant here.
        assert!(
            r & INDEX_MASK == 0,
            "BDD tests a variable outside its domain"
        );
        if r & COMPLEMENT != 0 {
            emit(t);
        }
        return;
    };
    let node = m.node(r).filter(|n| n.var == slot.var);
    for b in [false, true] {
        if slot.current && !free_current && (s >> slot.bit & 1 == 1) != b {
            continue;
        }
        let next = match node {
            Some(n) => (if b { n.high } else { n.low }) ^ (r & COMPLEMENT),
            None => r,
        };
        if next == 0 {
            continue; // false: nothing below
        }
        let t = if slot.current && !free_current {
            t
        } else {
            (t & !(1 << slot.bit)) | (u128::from(b) << slot.bit)
        };
        successors(m, next, rest, s, t, free_current, emit);
    }
}

/// Explicit BFS; returns (reachable states, BFS levels until no new state, the last empty
/// level included). States are bit vectors packed in a u128.
fn explicit_reachability(m: &StoredModel) -> (usize, usize) {
    assert!(m.total_bits() <= 128);
    let mut slot_of: HashMap<u32, Slot> = HashMap::new();
    for (bit, (&c, &n)) in m.state_vars.iter().zip(&m.prime_vars).enumerate() {
        let bit = bit as u32;
        slot_of.insert(
            c,
            Slot {
                var: c,
                bit,
                current: true,
            },
        );
        slot_of.insert(
            n,
            Slot {
                var: n,
                bit,
                current: false,
            },
        );
    }
    let mut all = m.state_vars.clone();
    all.sort_unstable();
    assert_eq!(
        m.initial.vars, all,
        "the oracle runs need sets on the full vector"
    );
    let set_slots: Vec<Slot> = all.iter().map(|v| slot_of[v]).collect();
    let mut initial = Vec::new();
    successors(m, m.initial.root, &set_slots, 0, 0, true, &mut |t| {
        initial.push(t)
    });
    let group_slots: Vec<Vec<Slot>> = m
        .groups
        .iter()
        .map(|g| {
            let mut d: Vec<u32> = g.cur_vars.iter().chain(&g.next_vars).copied().collect();
            d.sort_unstable();
            d.iter().map(|v| slot_of[v]).collect()
        })
        .collect();
    let mut visited: HashSet<u128> = initial.iter().copied().collect();
    let mut frontier = initial;
    let mut levels = 0;
    loop {
        levels += 1;
        let mut next_frontier = Vec::new();
        for &s in &frontier {
            for (g, slots) in m.groups.iter().zip(&group_slots) {
                successors(m, g.relation, slots, s, s, false, &mut |t| {
                    if visited.insert(t) {
                        next_frontier.push(t);
                    }
                });
            }
        }
        if next_frontier.is_empty() {
            return (visited.len(), levels);
        }
        frontier = next_frontier;
    }
}

/// Checks one published state count (docs/model-files.md names the sources).
fn check(file: &str, states: usize, published_levels: Option<usize>) {
    let dir = required_models_dir();
    let path = dir.join(file);
    if !path.exists() {
        println!("{file}: absent, skipped");
        return;
    }
    let m = read_model(&path).unwrap_or_else(|e| panic!("{e}"));
    let (found, levels) = explicit_reachability(&m);
    println!("{file}: {found} states, {levels} BFS levels");
    assert_eq!(found, states, "{file}");
    if let Some(l) = published_levels {
        assert_eq!(levels, l, "{file}");
    }
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn oracle_ltsmin_2017() {
    check("ltsmin-2017/anderson.4.bdd", 29_641, None);
    check("ltsmin-2017/bakery.4.bdd", 157_003, None);
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[cfg_attr(
    all(has_models, debug_assertions),
    ignore = "minutes in a debug build: run with --release"
)]
#[test]
fn oracle_anderson_1_8() {
    check("thesis-2014/anderson.1.8-rgs.bdd", 352_664, Some(1_293));
}
