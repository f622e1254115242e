//! The byte encoding of BDDs (`Manager::encode`, `Manager::decode`): random functions
//! encoded in one manager and decoded in another are the same functions (same counts,
//! same node counts, and back in the first manager the very same edges); corrupt input
//! is an error, never a panic.

use proptest::prelude::*;
use rhizome_bdd::{Bdd, CodecError, Manager};

/// Variables the random functions range over (spread out, as a model's current-state
/// variables are).
const VARS: [u32; 10] = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18];

/// How a literal is folded into the function so far.
#[derive(Debug, Clone, Copy)]
enum Fold {
    And,
    Or,
    Xor,
}

/// A function built by folding literals: `f = ((lit0 op1 lit1) op2 lit2) ...`, each step
/// negated or not.
#[derive(Debug, Clone)]
struct Folds(Vec<(Fold, usize, bool, bool)>);

fn folds() -> impl Strategy<Value = Folds> {
    let fold = prop_oneof![Just(Fold::And), Just(Fold::Or), Just(Fold::Xor)];
    prop::collection::vec((fold, 0..VARS.len(), any::<bool>(), any::<bool>()), 0..40)
        .prop_map(Folds)
}

fn build(m: &mut Manager, f: &Folds) -> Bdd {
    let mut acc = m.root(Bdd::FALSE);
    for &(fold, v, positive, negate) in &f.0 {
        let x = m.ithvar(VARS[v]);
        let lit = if positive { x } else { !x };
        let next = match fold {
            Fold::And => m.and(acc.get(), lit),
            Fold::Or => m.or(acc.get(), lit),
            Fold::Xor => m.xor(acc.get(), lit),
        }
        .unwrap();
        acc.set(if negate { !next } else { next });
    }
    acc.get()
}

/// A manager whose slots are taken by other nodes first, so that the same function gets
/// other slots than in a fresh one.
fn cluttered() -> Manager {
    let mut m = Manager::new(2);
    let mut keep = m.root(Bdd::FALSE);
    for v in [1u32, 3, 5, 7] {
        let x = m.ithvar(v);
        let y = m.xor(keep.get(), x).unwrap();
        keep.set(y);
    }
    std::mem::forget(keep);
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn decoding_gives_the_same_functions_in_another_manager(a in folds(), b in folds()) {
        let mut one = Manager::new(1);
        let f = build(&mut one, &a);
        let f = one.root(f);
        let g = build(&mut one, &b);
        let g = one.root(g);
        let roots = [f.get(), g.get(), !g.get(), Bdd::TRUE];
        let bytes = one.encode(&roots);
        let mut two = cluttered();
        let got = two.decode(&bytes).unwrap();
        prop_assert_eq!(got.len(), 4);
        for (&want, &have) in roots.iter().zip(&got) {
            prop_assert_eq!(one.satcount(want, &VARS), two.satcount(have, &VARS));
            prop_assert_eq!(one.node_count(want), two.node_count(have));
        }
        prop_assert_eq!(got[2], !got[1]);
        prop_assert_eq!(got[3], Bdd::TRUE);
        prop_assert_eq!(two.node_count_many(&got), one.node_count_many(&roots));
        // Back in the first manager: canonical, so the very same edges.
        let back = two.encode(&got);
        let again = one.decode(&back).unwrap();
        prop_assert_eq!(&again[..], &roots[..]);
    }

    #[test]
    fn every_truncation_and_many_flipped_bytes_are_errors_not_panics(
        a in folds(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
    ) {
        let mut one = Manager::new(1);
        let f = build(&mut one, &a);
        let f = one.root(f);
        let bytes = one.encode(&[f.get()]);
        let mut two = Manager::new(1);
        for cut in 0..bytes.len() {
            let r = two.decode(&bytes[..cut]);
            prop_assert!(matches!(r, Err(CodecError::Corrupt(_))), "cut at {}: {:?}", cut, r);
        }
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert!(matches!(two.decode(&longer), Err(CodecError::Corrupt(_))));
        let mut bad = bytes.clone();
        for (at, x) in flips {
            let i = at.index(bad.len());
            bad[i] ^= x;
        }
        // A flipped byte may still spell a valid (other) encoding; it must never panic,
        // and what it decodes to is a well-formed BDD of the receiving manager.
        if let Ok(got) = two.decode(&bad) {
            let _ = two.node_count_many(&got);
        }
    }
}

#[test]
fn the_rules_of_the_format_are_enforced() {
    let corrupt = |bytes: &[u8], needle: &str| {
        let mut m = Manager::new(1);
        match m.decode(bytes) {
            Err(CodecError::Corrupt(why)) => assert!(why.contains(needle), "{why}"),
            other => panic!("{bytes:?}: {other:?}"),
        }
    };
    corrupt(b"XZB1\x00\x00", "RZB1");
    // One node whose child is itself (position 1 of a list of 1).
    corrupt(b"RZB1\x01\x01\x04\x02\x00\x02", "not an earlier one");
    // Two nodes, the parent's variable (6) below its child's (4): out of order.
    corrupt(b"RZB1\x02\x01\x04\x00\x01\x06\x00\x02\x04", "not below it");
    corrupt(b"RZB1\x01\x01\x04\x01\x01\x02", "two equal children");
    corrupt(b"RZB1\x01\x01\x80\x80\x80\x04\x00\x01\x02", "beyond");
    corrupt(b"RZB1\xff\xff\xff\xff\x0f\x00\x00", "cannot fit");
    corrupt(b"RZB1\x00\x01\x04", "names node 2");
    // The well-formed versions decode: x4 and its negation.
    let mut m = Manager::new(1);
    let got = m.decode(b"RZB1\x01\x02\x04\x00\x01\x02\x03").unwrap();
    let x = m.ithvar(4);
    assert_eq!(got, vec![x, !x]);
}
