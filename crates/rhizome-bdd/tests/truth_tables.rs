//! BDD operations checked against truth tables on random formulas (property tests).

// Rows are assignments (bit patterns), not just indices into the tables.
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use rhizome_bdd::{Bdd, Config, Manager};

const VARS: u32 = 6;
const ROWS: usize = 1 << VARS;

/// A random formula over variables 0..VARS.
#[derive(Debug, Clone)]
enum Expr {
    Var(u32),
    Const(bool),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Xor(Box<Expr>, Box<Expr>),
    Ite(Box<Expr>, Box<Expr>, Box<Expr>),
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (0..VARS).prop_map(Expr::Var),
        any::<bool>().prop_map(Expr::Const)
    ];
    leaf.prop_recursive(6, 64, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Xor(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone(), inner).prop_map(|(a, b, c)| Expr::Ite(
                Box::new(a),
                Box::new(b),
                Box::new(c)
            )),
        ]
    })
}

type Table = [bool; ROWS];

fn table(e: &Expr) -> Table {
    let mut t = [false; ROWS];
    for (row, out) in t.iter_mut().enumerate() {
        *out = eval(e, row);
    }
    t
}

fn eval(e: &Expr, row: usize) -> bool {
    match e {
        Expr::Var(v) => row >> v & 1 == 1,
        Expr::Const(c) => *c,
        Expr::Not(a) => !eval(a, row),
        Expr::And(a, b) => eval(a, row) && eval(b, row),
        Expr::Or(a, b) => eval(a, row) || eval(b, row),
        Expr::Xor(a, b) => eval(a, row) != eval(b, row),
        Expr::Ite(a, b, c) => {
            if eval(a, row) {
                eval(b, row)
            } else {
                eval(c, row)
            }
        }
    }
}

fn build(m: &mut Manager, e: &Expr) -> Bdd {
    match e {
        Expr::Var(v) => m.ithvar(*v),
        Expr::Const(c) => {
            if *c {
                Bdd::TRUE
            } else {
                Bdd::FALSE
            }
        }
        Expr::Not(a) => !build(m, a),
        Expr::And(a, b) => {
            let (a, b) = (build(m, a), build(m, b));
            m.and(a, b).unwrap()
        }
        Expr::Or(a, b) => {
            let (a, b) = (build(m, a), build(m, b));
            m.or(a, b).unwrap()
        }
        Expr::Xor(a, b) => {
            let (a, b) = (build(m, a), build(m, b));
            m.xor(a, b).unwrap()
        }
        Expr::Ite(a, b, c) => {
            let (a, b, c) = (build(m, a), build(m, b), build(m, c));
            m.ite(a, b, c).unwrap()
        }
    }
}

fn bdd_table(m: &Manager, f: Bdd) -> Table {
    let mut t = [false; ROWS];
    for (row, out) in t.iter_mut().enumerate() {
        *out = m.eval(f, |v| row >> v & 1 == 1);
    }
    t
}

fn manager() -> Manager {
    Manager::with_config(Config {
        workers: 2,
        initial_nodes: 1 << 12,
        max_nodes: 1 << 16,
        ..Config::default()
    })
}

fn all_vars() -> Vec<u32> {
    (0..VARS).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn operations_match_truth_tables(e in expr()) {
        let mut m = manager();
        let f = build(&mut m, &e);
        let t = table(&e);
        prop_assert_eq!(bdd_table(&m, f), t);
        let count = t.iter().filter(|&&b| b).count();
        prop_assert_eq!(m.satcount(f, &all_vars()), count.into());
        match m.pick_one(f) {
            None => prop_assert_eq!(count, 0),
            Some(path) => {
                let row = path.iter().filter(|p| p.1).fold(0usize, |r, p| r | 1 << p.0);
                prop_assert!(t[row], "picked assignment does not satisfy f");
            }
        }
    }

    #[test]
    fn fewer_nodes_agrees_with_node_counts(a in expr(), b in expr()) {
        let mut m = manager();
        let (fa, fb) = (build(&mut m, &a), build(&mut m, &b));
        let (na, nb) = (m.node_count(fa), m.node_count(fb));
        prop_assert_eq!(m.fewer_nodes(fa, fb), na < nb);
        prop_assert_eq!(m.fewer_nodes(fb, fa), nb < na);
        prop_assert_eq!(m.node_count_many(&[fa, fb]) >= na.max(nb), true);
    }

    #[test]
    fn canonical_equal_functions_are_equal_edges(a in expr(), b in expr()) {
        let mut m = manager();
        let (fa, fb) = (build(&mut m, &a), build(&mut m, &b));
        prop_assert_eq!(fa == fb, table(&a) == table(&b));
        let diff = m.diff(fa, fb).unwrap();
        let imp = m.implies(fa, fb).unwrap();
        let eqv = m.equiv(fa, fb).unwrap();
        let (ta, tb) = (table(&a), table(&b));
        for row in 0..ROWS {
            let v = |v: u32| row >> v & 1 == 1;
            prop_assert_eq!(m.eval(diff, v), ta[row] && !tb[row]);
            prop_assert_eq!(m.eval(imp, v), !ta[row] || tb[row]);
            prop_assert_eq!(m.eval(eqv, v), ta[row] == tb[row]);
        }
    }

    #[test]
    fn quantifiers_match_truth_tables(a in expr(), b in expr(), qmask in 0u32..(1 << VARS)) {
        let mut m = manager();
        let (fa, fb) = (build(&mut m, &a), build(&mut m, &b));
        let qvars: Vec<u32> = (0..VARS).filter(|v| qmask >> v & 1 == 1).collect();
        let cube = m.cube(&qvars).unwrap();
        let ex = m.exists(fa, cube).unwrap();
        let fa_ = m.forall(fa, cube).unwrap();
        let ae = m.and_exists(fa, fb, cube).unwrap();
        let (ta, tb) = (table(&a), table(&b));
        let qm = qmask as usize;
        for row in 0..ROWS {
            // all rows that agree with `row` outside the quantified variables
            let others = (0..ROWS).filter(|r| r & !qm == row & !qm);
            let (mut any, mut all, mut any_and) = (false, true, false);
            for r in others {
                any |= ta[r];
                all &= ta[r];
                any_and |= ta[r] && tb[r];
            }
            let v = |v: u32| row >> v & 1 == 1;
            prop_assert_eq!(m.eval(ex, v), any);
            prop_assert_eq!(m.eval(fa_, v), all);
            prop_assert_eq!(m.eval(ae, v), any_and);
        }
    }

    #[test]
    fn compose_and_rename_match_truth_tables(a in expr(), g in expr(), v in 0..VARS, perm in Just(()).prop_perturb(|_, mut rng| {
        let mut p: Vec<u32> = (0..VARS).collect();
        for i in (1..p.len()).rev() {
            let j = (rng.next_u32() as usize) % (i + 1);
            p.swap(i, j);
        }
        p
    })) {
        let mut m = manager();
        let (fa, fg) = (build(&mut m, &a), build(&mut m, &g));
        let c = m.compose(fa, v, fg).unwrap();
        let map: Vec<(u32, u32)> = (0..VARS).map(|i| (i, perm[i as usize])).collect();
        let r = m.rename(fa, &map).unwrap();
        let (ta, tg) = (table(&a), table(&g));
        for row in 0..ROWS {
            let gv = tg[row];
            let row_c = if gv { row | 1 << v } else { row & !(1 << v) };
            prop_assert_eq!(m.eval(c, |x| row >> x & 1 == 1), ta[row_c]);
            // rename: r(y) = a(x) where y[perm[i]] = x[i]
            let mut renamed_row = 0usize;
            for i in 0..VARS {
                if row >> perm[i as usize] & 1 == 1 {
                    renamed_row |= 1 << i;
                }
            }
            prop_assert_eq!(m.eval(r, |x| row >> x & 1 == 1), ta[renamed_row]);
        }
    }
}

/// Successor and predecessor images on interleaved variables, against explicit sets:
/// state bits 0..3 are variables 0,2,4; next-state copies 1,3,5.
#[test]
fn relnext_and_relprev_match_explicit_images() {
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::default();
    runner
        .run(
            &(any::<u8>(), any::<u64>(), 0u32..8),
            |(set_bits, rel_bits, domain)| {
                let mut m = manager();
                let bits = 3u32;
                // domain: which state bits the relation speaks of
                let dom: Vec<u32> = (0..bits).filter(|b| domain >> b & 1 == 1).collect();
                let nd = dom.len() as u32;
                let states = |x: usize| -> Vec<(u32, bool)> {
                    (0..bits).map(|b| (2 * b, x >> b & 1 == 1)).collect()
                };
                // S: a set of states over 3 bits (8 states)
                let mut s = Bdd::FALSE;
                for x in 0..8usize {
                    if set_bits >> x & 1 == 1 {
                        let mut c = Bdd::TRUE;
                        for (v, val) in states(x) {
                            let lit = m.ithvar(v);
                            c = m.and(c, if val { lit } else { !lit }).unwrap();
                        }
                        s = m.or(s, c).unwrap();
                    }
                }
                // R: pairs (x_dom, x'_dom) chosen by rel_bits
                let combos = 1usize << (2 * nd);
                let mut r = Bdd::FALSE;
                let mut pairs = Vec::new();
                for k in 0..combos.min(64) {
                    if rel_bits >> k & 1 == 1 {
                        let (cur, nxt) = (k & ((1 << nd) - 1), k >> nd);
                        pairs.push((cur, nxt));
                        let mut c = Bdd::TRUE;
                        for (i, &b) in dom.iter().enumerate() {
                            let x = m.ithvar(2 * b);
                            let xp = m.ithvar(2 * b + 1);
                            let xl = if cur >> i & 1 == 1 { x } else { !x };
                            let xpl = if nxt >> i & 1 == 1 { xp } else { !xp };
                            c = m.and(c, xl).unwrap();
                            c = m.and(c, xpl).unwrap();
                        }
                        r = m.or(r, c).unwrap();
                    }
                }
                let vars: Vec<u32> = dom.iter().flat_map(|&b| [2 * b, 2 * b + 1]).collect();
                let cube = m.cube(&vars).unwrap();
                let next = m.relnext(s, r, cube).unwrap();
                let prev = m.relprev(s, r, cube).unwrap();
                let project = |x: usize| {
                    dom.iter()
                        .enumerate()
                        .fold(0, |a, (i, &b)| a | ((x >> b & 1) << i))
                };
                let replace = |x: usize, v: usize| {
                    dom.iter()
                        .enumerate()
                        .fold(x, |a, (i, &b)| (a & !(1 << b)) | ((v >> i & 1) << b))
                };
                let in_s = |x: usize| set_bits >> x & 1 == 1;
                for y in 0..8usize {
                    let expect_next = (0..8usize).any(|x| {
                        in_s(x)
                            && pairs
                                .iter()
                                .any(|&(c, n)| c == project(x) && replace(x, n) == y)
                    });
                    let expect_prev = pairs
                        .iter()
                        .any(|&(c, n)| c == project(y) && in_s(replace(y, n)));
                    let val = |v: u32| y >> (v / 2) & 1 == 1;
                    prop_assert_eq!(m.eval(next, val), expect_next, "relnext at {}", y);
                    prop_assert_eq!(m.eval(prev, val), expect_prev, "relprev at {}", y);
                }
                Ok(())
            },
        )
        .unwrap();
}
