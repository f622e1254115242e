//! Workloads and checks shared by the test files (each includes this with `mod support`).
#![allow(dead_code)]

use num_bigint::BigUint;
use rhizome_bdd::{Bdd, Config, Manager, NodeStore, OpCache, OpCtx};

/// Variables of the random formulas.
pub const VARS: u32 = 22;

/// A random 3-CNF formula over `VARS` variables: clauses as (variable, negated) triples.
pub fn formula(seed: u64, clauses: usize) -> Vec<[(u32, bool); 3]> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..clauses)
        .map(|_| [(); 3].map(|_| ((next() % VARS as u64) as u32, next() & 1 == 1)))
        .collect()
}

/// The conjunction of `clauses`, halves in parallel: one operation whose intermediate
/// BDDs are far larger than its result.
pub fn cnf<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, clauses: &[[(u32, bool); 3]]) -> Bdd {
    match clauses {
        [] => Bdd::TRUE,
        [clause] => clause.iter().fold(Bdd::FALSE, |acc, &(v, neg)| {
            let lit = c.make(v, Bdd::FALSE, Bdd::TRUE);
            c.or(acc, if neg { !lit } else { lit })
        }),
        _ => {
            let (a, b) = clauses.split_at(clauses.len() / 2);
            let (x, y) = c.join(|c| cnf(c, a), |c| cnf(c, b));
            c.and(x, y)
        }
    }
}

/// Also xors the formula with a shifted copy of itself, so results share sub-results
/// (cache hits across operations) and intermediate nodes die between operations.
pub fn workload<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, seed: u64) -> Bdd {
    let f = formula(seed, 60);
    let g: Vec<_> = f
        .iter()
        .map(|cl| cl.map(|(v, n)| ((v + 1) % VARS, n)))
        .collect();
    let (a, b) = c.join(|c| cnf(c, &f), |c| cnf(c, &g));
    c.xor(a, b)
}

pub fn all_vars() -> Vec<u32> {
    (0..VARS).collect()
}

/// No two nodes below `roots` are the same `(var, low, high)`: the unique table holds
/// every node once, whatever collections kept or freed (a kept copy of a node that lost
/// an insertion race would break this).
pub fn assert_nodes_unique<S: NodeStore, C: OpCache>(m: &Manager<S, C>, roots: &[Bdd]) {
    let mut seen = std::collections::HashMap::new();
    let mut stack: Vec<Bdd> = roots.to_vec();
    while let Some(f) = stack.pop() {
        if f.is_const() {
            continue;
        }
        let index = f.index();
        // The node itself, without the edge's complement pushed into it.
        let (v, lo, hi) = m.node(Bdd::from_raw(index)).unwrap();
        match seen.insert((v, lo, hi), index) {
            Some(other) => assert_eq!(other, index, "node {v} stored twice"),
            None => stack.extend([lo, hi]),
        }
    }
}

/// Satcounts of the workload for `seeds`, in a table that never collects.
pub fn reference(seeds: &[u64]) -> Vec<BigUint> {
    let mut m = Manager::with_config(Config {
        workers: 2,
        initial_nodes: 1 << 22,
        max_nodes: 1 << 22,
        ..Config::default()
    });
    let mut roots = Vec::new();
    let counts = seeds
        .iter()
        .map(|&s| {
            let f = m.run(&[], |c| workload(c, s)).unwrap();
            roots.push(m.root(f));
            m.satcount(f, &all_vars())
        })
        .collect();
    assert_eq!(m.stats().collections, 0, "the reference must not collect");
    counts
}

/// Builds the workload of every seed twice, the first results kept by roots: each
/// satcount must be `expect`'s, and each rebuilt result the same edge as the first
/// (canonicity across collections: no stale cache entry or reused slot crept in), with
/// every node stored once. `what` names the setting in failure messages.
pub fn build_twice<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    seeds: &[u64],
    expect: &[BigUint],
    what: &str,
) {
    let mut kept = Vec::new();
    let mut guards = Vec::new();
    for round in 0..2 {
        for (i, &s) in seeds.iter().enumerate() {
            let f = m.run(&[], |c| workload(c, s)).unwrap();
            assert_eq!(m.satcount(f, &all_vars()), expect[i], "seed {s}, {what}");
            if round == 0 {
                guards.push(m.root(f));
                kept.push(f);
            } else {
                assert_eq!(f, kept[i], "seed {s}, {what}: rebuilt after collections");
            }
        }
    }
    assert_nodes_unique(m, &kept);
}
