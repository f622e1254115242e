//! One hand-made tiny file per validation rule, and the action-label quantification.

use super::*;

mod format_c;

const C: u64 = COMPLEMENT;

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Format-A node record `(w0, w1)` for `var ? high : low`.
fn na(var: u64, low: u64, high: u64) -> (u64, u64) {
    ((high & INDEX_MASK) | (var << 40), low | (high & C))
}

struct ARel {
    nodes: Vec<(u64, u64)>,
    root: u64,
    k: u64,
    vars: Vec<u32>,
    primes: Vec<u32>,
}

/// A format-A file, every field editable. The default (offsets in brackets):
/// vector_size 2 [0], bits 1 [8], vars [0, 2] [16], prime_vars [1, 3] [24];
/// set: count [32], node 1 = x2 [40], node 2 = x0 ? true : x2 [56], root 2 [72], k 2 [80],
/// vars [0, 2] [88]; groups 1 [96]; relation: count [100], node 3 = x0' [108], root 3 [124],
/// k 1 [132], vars [0] [140], primes [1] [144]; end [148].
struct A {
    vs: u64,
    bits: u64,
    vars: Vec<u32>,
    primes: Vec<u32>,
    set_nodes: Vec<(u64, u64)>,
    set_count: Option<u64>,
    set_root: u64,
    set_k: u64,
    set_vars: Vec<u32>,
    groups: Option<i32>,
    rels: Vec<ARel>,
    trailing: Vec<u8>,
}

impl Default for A {
    fn default() -> Self {
        A {
            vs: 2,
            bits: 1,
            vars: vec![0, 2],
            primes: vec![1, 3],
            set_nodes: vec![na(2, 0, C), na(0, 1, C)],
            set_count: None,
            set_root: 2,
            set_k: 2,
            set_vars: vec![0, 2],
            groups: None,
            rels: vec![ARel {
                nodes: vec![na(1, 0, C)],
                root: 3,
                k: 1,
                vars: vec![0],
                primes: vec![1],
            }],
            trailing: vec![],
        }
    }
}

impl A {
    fn bytes(&self) -> Vec<u8> {
        let mut o = Vec::new();
        put64(&mut o, self.vs);
        put64(&mut o, self.bits);
        self.vars.iter().for_each(|&v| put32(&mut o, v));
        self.primes.iter().for_each(|&v| put32(&mut o, v));
        put64(
            &mut o,
            self.set_count.unwrap_or(self.set_nodes.len() as u64),
        );
        for &(w0, w1) in &self.set_nodes {
            put64(&mut o, w0);
            put64(&mut o, w1);
        }
        put64(&mut o, self.set_root);
        put64(&mut o, self.set_k);
        self.set_vars.iter().for_each(|&v| put32(&mut o, v));
        put32(&mut o, self.groups.unwrap_or(self.rels.len() as i32) as u32);
        for r in &self.rels {
            put64(&mut o, r.nodes.len() as u64);
            for &(w0, w1) in &r.nodes {
                put64(&mut o, w0);
                put64(&mut o, w1);
            }
            put64(&mut o, r.root);
            put64(&mut o, r.k);
            r.vars.iter().for_each(|&v| put32(&mut o, v));
            r.primes.iter().for_each(|&v| put32(&mut o, v));
        }
        o.extend_from_slice(&self.trailing);
        o
    }
}

/// Format-B record `(a, b)` for `var ? high : low` (block-local indices).
fn nb(var: u64, low: u64, high: u64) -> (u64, u64) {
    (high, low | (var << 40))
}

#[derive(Clone)]
struct Dd {
    recs: Vec<(u64, u64)>,
    roots: Vec<u64>,
}

fn dd(recs: Vec<(u64, u64)>, root: u64) -> Dd {
    Dd {
        recs,
        roots: vec![root],
    }
}

/// A format-B file. The default (offsets in brackets): vector_size 2 [0], state_bits [1, 1]
/// [4], action_bits 0 [12], set k -1 [16]; set DD: count [20], node 1 = x2 [28],
/// node 2 = x0 ? true : x2 [44], root count [60], root 2 [64]; groups 1 [72]; projection
/// r_k 1 [76], w_k 1 [80], r_proj [0] [84], w_proj [0] [88]; relation DD: count [92],
/// node 1 = x0' [100], root count [116], root 1 [120]; end [128].
struct B {
    vs: i32,
    bits: Vec<i32>,
    action_bits: i32,
    set_k: i32,
    set_proj: Vec<i32>,
    set_dd: Dd,
    groups: Option<i32>,
    projs: Vec<(Vec<i32>, Vec<i32>)>,
    rels: Vec<Dd>,
    trailing: Vec<u8>,
}

impl Default for B {
    fn default() -> Self {
        B {
            vs: 2,
            bits: vec![1, 1],
            action_bits: 0,
            set_k: -1,
            set_proj: vec![],
            set_dd: dd(vec![nb(2, 0, C), nb(0, 1, C)], 2),
            groups: None,
            projs: vec![(vec![0], vec![0])],
            rels: vec![dd(vec![nb(1, 0, C)], 1)],
            trailing: vec![],
        }
    }
}

impl B {
    fn bytes(&self) -> Vec<u8> {
        let mut o = Vec::new();
        let i = |o: &mut Vec<u8>, v: i32| put32(o, v as u32);
        let put_dd = |o: &mut Vec<u8>, d: &Dd| {
            put64(o, d.recs.len() as u64);
            for &(a, b) in &d.recs {
                put64(o, a);
                put64(o, b);
            }
            put32(o, d.roots.len() as u32);
            d.roots.iter().for_each(|&r| put64(o, r));
        };
        i(&mut o, self.vs);
        self.bits.iter().for_each(|&b| i(&mut o, b));
        i(&mut o, self.action_bits);
        i(&mut o, self.set_k);
        self.set_proj.iter().for_each(|&p| i(&mut o, p));
        put_dd(&mut o, &self.set_dd);
        i(&mut o, self.groups.unwrap_or(self.projs.len() as i32));
        for (r, w) in &self.projs {
            i(&mut o, r.len() as i32);
            i(&mut o, w.len() as i32);
            r.iter().chain(w).for_each(|&p| i(&mut o, p));
        }
        for d in &self.rels {
            put_dd(&mut o, d);
        }
        o.extend_from_slice(&self.trailing);
        o
    }
}

/// Parses and expects an error at `offset`; returns what is wrong.
fn fails(bytes: &[u8], format: Option<Format>, offset: u64) -> Invalid {
    match parse_model(bytes, "tiny.bdd", format) {
        Ok(m) => panic!("parsed: {m:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("tiny.bdd: byte {offset}: ")),
                "{msg}"
            );
            assert!(!msg.contains('\n'));
            e.invalid().unwrap().clone()
        }
    }
}

#[test]
fn default_tiny_files_parse() {
    let a = parse_model(&A::default().bytes(), "a", None).unwrap();
    let b = parse_model(&B::default().bytes(), "b", None).unwrap();
    assert_eq!(a.format, Format::A);
    assert_eq!(b.format, Format::B);
    let nodes = vec![
        StoredNode {
            var: 2,
            low: 0,
            high: C,
        },
        StoredNode {
            var: 0,
            low: 1,
            high: C,
        },
        StoredNode {
            var: 1,
            low: 0,
            high: C,
        },
    ];
    for m in [&a, &b] {
        assert_eq!(m.state_bits, [1, 1]);
        assert_eq!(m.state_vars, [0, 2]);
        assert_eq!(m.prime_vars, [1, 3]);
        assert_eq!(m.nodes, nodes);
        assert_eq!(
            m.initial,
            StoredSet {
                root: 2,
                vars: vec![0, 2]
            }
        );
        assert_eq!(
            m.groups,
            [StoredGroup {
                relation: 3,
                cur_vars: vec![0],
                next_vars: vec![1]
            }]
        );
        m.validate().unwrap();
    }
    assert_eq!(A::default().bytes().len(), 148);
    assert_eq!(B::default().bytes().len(), 128);
}

#[test]
fn detection_and_override() {
    assert_eq!(detect_format(&A::default().bytes()), Some(Format::A));
    assert_eq!(detect_format(&B::default().bytes()), Some(Format::B));
    assert_eq!(detect_format(&[1, 0, 0, 0, 0, 0, 0]), None);
    let what = fails(&[1, 0, 0], None, 0);
    assert_eq!(what, Invalid::TooShortToDetect { len: 3 });
    // Forcing the wrong format fails cleanly.
    assert!(parse_model(&A::default().bytes(), "x", Some(Format::B)).is_err());
    assert!(parse_model(&B::default().bytes(), "x", Some(Format::A)).is_err());
}

#[test]
fn a_truncated_everywhere() {
    let bytes = A::default().bytes();
    for cut in 0..bytes.len() {
        let e = parse_model(&bytes[..cut], "t", Some(Format::A)).unwrap_err();
        assert!(e.offset().unwrap() <= cut as u64, "{e}");
    }
    let what = fails(&bytes[..60], None, 32);
    assert!(matches!(
        what,
        Invalid::CountTooLarge {
            what: "node",
            count: 2,
            ..
        }
    ));
    let what = fails(&bytes[..146], None, 132);
    assert!(matches!(
        what,
        Invalid::CountTooLarge {
            count: 1,
            elem_size: 8,
            available: 6,
            ..
        }
    ));
    let what = fails(&bytes[..76], None, 72);
    assert!(matches!(
        what,
        Invalid::Truncated {
            needed: 8,
            available: 4,
            ..
        }
    ));
}

#[test]
fn a_trailing_bytes() {
    let a = A {
        trailing: vec![0],
        ..A::default()
    };
    assert_eq!(
        fails(&a.bytes(), None, 148),
        Invalid::TrailingBytes { count: 1 }
    );
}

#[test]
fn a_absurd_header() {
    // 2^32 integers: detection would say B, so force A.
    let a = A {
        vs: 1 << 32,
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), Some(Format::A), 0),
        Invalid::BadValue {
            what: "vector_size",
            ..
        }
    ));
    let a = A {
        vs: 0,
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 0),
        Invalid::BadValue {
            what: "vector_size",
            ..
        }
    ));
    let a = A {
        bits: 0,
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 8),
        Invalid::BadValue {
            what: "bits_per_integer",
            ..
        }
    ));
    // 2^20 integers of 8 bits would be 32 MiB of variable arrays: refused before allocating.
    let a = A {
        vs: 1 << 20,
        bits: 8,
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 0),
        Invalid::CountTooLarge {
            what: "state bit",
            ..
        }
    ));
}

#[test]
fn a_absurd_node_count() {
    let a = A {
        set_count: Some(u64::MAX / 2),
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 32),
        Invalid::CountTooLarge { what: "node", .. }
    ));
}

#[test]
fn a_negative_group_count() {
    let a = A {
        groups: Some(-1),
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 96),
        Invalid::BadValue {
            what: "group count",
            value: -1,
            ..
        }
    ));
    let a = A {
        groups: Some(1 << 30),
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 96),
        Invalid::CountTooLarge { what: "group", .. }
    ));
}

#[test]
fn a_self_forward_and_out_of_range() {
    let mut a = A::default();
    a.set_nodes[0] = na(2, 1, C);
    assert_eq!(
        fails(&a.bytes(), None, 40),
        Invalid::SelfReference {
            node: 1,
            edge: "low"
        }
    );
    a.set_nodes[0] = na(2, 0, 2 | C);
    assert_eq!(
        fails(&a.bytes(), None, 40),
        Invalid::ForwardReference {
            node: 1,
            edge: "high",
            child: 2
        }
    );
    a.set_nodes[0] = na(2, 7, C);
    assert_eq!(
        fails(&a.bytes(), None, 40),
        Invalid::IndexOutOfRange {
            node: 1,
            edge: "low",
            child: 7,
            limit: 2
        }
    );
    // A relation node may not point into a later relation either.
    let mut a = A::default();
    a.rels[0].nodes[0] = na(1, 4, C);
    assert!(matches!(
        fails(&a.bytes(), None, 108),
        Invalid::IndexOutOfRange {
            child: 4,
            limit: 3,
            ..
        }
    ));
}

#[test]
fn a_not_ordered() {
    let mut a = A::default();
    a.set_nodes[1] = na(2, 1, C);
    assert_eq!(
        fails(&a.bytes(), None, 56),
        Invalid::NotOrdered {
            node: 2,
            var: 2,
            edge: "low",
            child: 1,
            child_var: 2
        }
    );
}

#[test]
fn a_roots() {
    let a = A {
        set_root: 3,
        ..A::default()
    };
    assert_eq!(
        fails(&a.bytes(), None, 72),
        Invalid::RootOutOfRange {
            what: "initial set",
            index: 3,
            available: 2
        }
    );
    let a = A {
        set_root: 2 | (1 << 50),
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 72),
        Invalid::ReservedBits { .. }
    ));
    let mut a = A::default();
    a.rels[0].root = 4;
    assert!(matches!(
        fails(&a.bytes(), None, 124),
        Invalid::RootOutOfRange { index: 4, .. }
    ));
}

#[test]
fn a_variables() {
    let mut a = A::default();
    a.set_nodes[0] = na(5, 0, C);
    assert_eq!(
        fails(&a.bytes(), None, 40),
        Invalid::VarOutsideModel {
            what: "node record",
            var: 5
        }
    );
    let a = A {
        vars: vec![0, 0],
        ..A::default()
    };
    assert_eq!(
        fails(&a.bytes(), None, 20),
        Invalid::DuplicateVar {
            what: "vars",
            var: 0
        }
    );
    let a = A {
        primes: vec![1, 2],
        ..A::default()
    };
    assert_eq!(
        fails(&a.bytes(), None, 28),
        Invalid::DuplicateVar {
            what: "prime_vars",
            var: 2
        }
    );
    let a = A {
        set_vars: vec![1, 2],
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 88),
        Invalid::VarOutsideModel { var: 1, .. }
    ));
    let a = A {
        set_k: 3,
        ..A::default()
    };
    assert!(matches!(
        fails(&a.bytes(), None, 80),
        Invalid::BadValue {
            what: "projection size k",
            ..
        }
    ));
    let mut a = A::default();
    a.rels[0].primes = vec![3];
    assert_eq!(
        fails(&a.bytes(), None, 144),
        Invalid::PrimeMismatch {
            var: 0,
            prime: 3,
            expected: 1
        }
    );
}

#[test]
fn a_node_outside_its_bdd() {
    // x2' is a model variable but not one of group 0's.
    let mut a = A::default();
    a.rels[0].nodes[0] = na(3, 0, C);
    assert!(matches!(
        fails(&a.bytes(), None, 108),
        Invalid::VarOutsideBdd {
            node: 3,
            var: 3,
            ..
        }
    ));
    // The set may not test next-state variables.
    let mut a = A::default();
    a.set_nodes[0] = na(3, 0, C);
    assert!(matches!(
        fails(&a.bytes(), None, 40),
        Invalid::VarOutsideBdd { var: 3, .. }
    ));
}

#[test]
fn a_relation_may_share_earlier_nodes() {
    let mut a = A::default();
    a.rels[0] = ARel {
        nodes: vec![],
        root: 2 | C,
        k: 2,
        vars: vec![2, 0],
        primes: vec![3, 1],
    };
    let m = parse_model(&a.bytes(), "a", None).unwrap();
    assert_eq!(m.nodes.len(), 2);
    assert_eq!(
        m.groups[0],
        StoredGroup {
            relation: 2 | C,
            cur_vars: vec![0, 2],
            next_vars: vec![1, 3]
        }
    );
}

#[test]
fn b_truncated_everywhere_and_trailing_ignored() {
    let bytes = B::default().bytes();
    for cut in 0..bytes.len() {
        let e = parse_model(&bytes[..cut], "t", Some(Format::B)).unwrap_err();
        assert!(e.offset().unwrap() <= cut as u64, "{e}");
    }
    let with_tail = B {
        trailing: vec![1, 2, 3, 4, 5],
        ..B::default()
    };
    assert_eq!(
        parse_model(&with_tail.bytes(), "t", None).unwrap(),
        parse_model(&bytes, "t", None).unwrap()
    );
}

#[test]
fn b_bad_header() {
    let b = B {
        vs: -1,
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 0),
        Invalid::BadValue {
            what: "vector_size",
            value: -1,
            ..
        }
    ));
    let b = B {
        vs: 1 << 28,
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 0),
        Invalid::CountTooLarge { .. }
    ));
    // A zero-bit integer: byte 4 is then zero, so detection says A; force B.
    let b = B {
        bits: vec![0, 1],
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), Some(Format::B), 4),
        Invalid::BadValue {
            what: "state_bits entry",
            ..
        }
    ));
    let b = B {
        action_bits: -3,
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 12),
        Invalid::BadValue {
            what: "action_bits",
            ..
        }
    ));
    let b = B {
        set_k: -2,
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 16),
        Invalid::BadValue { .. }
    ));
    let b = B {
        groups: Some(-5),
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 72),
        Invalid::BadValue {
            what: "group count",
            ..
        }
    ));
    let b = B {
        groups: Some(1000),
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 72),
        Invalid::CountTooLarge { what: "group", .. }
    ));
    let b = B {
        projs: vec![(vec![0], vec![2])],
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 88),
        Invalid::BadValue {
            what: "w_proj entry",
            ..
        }
    ));
}

#[test]
fn b_set_projection() {
    let b = B {
        set_k: 1,
        set_proj: vec![1],
        set_dd: dd(vec![nb(2, 0, C)], 1 | C),
        ..B::default()
    };
    let m = parse_model(&b.bytes(), "b", None).unwrap();
    assert_eq!(
        m.initial,
        StoredSet {
            root: 1 | C,
            vars: vec![2]
        }
    );
    // The set's node tests x2 only; on integer 0 alone it is out of place.
    let b = B {
        set_k: 1,
        set_proj: vec![0],
        set_dd: dd(vec![nb(2, 0, C)], 1),
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 32),
        Invalid::VarOutsideBdd { var: 2, .. }
    ));
    let b = B {
        set_k: 1,
        set_proj: vec![2],
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 20),
        Invalid::BadValue {
            what: "set integer",
            ..
        }
    ));
}

#[test]
fn b_records() {
    let mut b = B::default();
    b.set_dd.recs[0].0 |= 1 << 62;
    assert_eq!(fails(&b.bytes(), None, 28), Invalid::LeafRecord { node: 1 });
    let mut b = B::default();
    b.set_dd.recs[0] = nb(2, 1, C);
    assert_eq!(
        fails(&b.bytes(), None, 28),
        Invalid::SelfReference {
            node: 1,
            edge: "low"
        }
    );
    b.set_dd.recs[0] = nb(2, 0, 2);
    assert!(matches!(
        fails(&b.bytes(), None, 28),
        Invalid::ForwardReference { child: 2, .. }
    ));
    let mut b = B::default();
    b.rels[0].recs[0] = nb(1, 2, C);
    // Local numbering: the relation block has 1 node, whatever came before.
    assert!(matches!(
        fails(&b.bytes(), None, 100),
        Invalid::IndexOutOfRange {
            child: 2,
            limit: 1,
            ..
        }
    ));
    let mut b = B::default();
    b.set_dd.recs[1] = nb(3, 1, C);
    assert!(matches!(
        fails(&b.bytes(), None, 44),
        Invalid::NotOrdered {
            var: 3,
            child_var: 2,
            ..
        }
    ));
    let mut b = B::default();
    b.set_dd.recs[0] = nb(4, 0, C);
    assert!(matches!(
        fails(&b.bytes(), None, 28),
        Invalid::VarOutsideModel { var: 4, .. }
    ));
}

#[test]
fn b_roots() {
    let mut b = B::default();
    b.set_dd.roots = vec![2, 2];
    assert_eq!(fails(&b.bytes(), None, 60), Invalid::RootCount { count: 2 });
    b.set_dd.roots = vec![];
    assert_eq!(fails(&b.bytes(), None, 60), Invalid::RootCount { count: 0 });
    let mut b = B::default();
    b.set_dd.roots = vec![3];
    assert!(matches!(
        fails(&b.bytes(), None, 64),
        Invalid::RootOutOfRange {
            index: 3,
            available: 2,
            ..
        }
    ));
    let mut b = B::default();
    b.rels[0].roots = vec![1 | (1 << 45)];
    assert!(matches!(
        fails(&b.bytes(), None, 120),
        Invalid::ReservedBits { .. }
    ));
}

#[test]
fn b_relation_vars() {
    // x2' belongs to integer 1, not in group 0's projection.
    let mut b = B::default();
    b.rels[0] = dd(vec![nb(3, 0, C)], 1);
    assert!(matches!(
        fails(&b.bytes(), None, 100),
        Invalid::VarOutsideBdd { var: 3, .. }
    ));
    // With integer 1 written as well, it is fine: the union of r_proj and w_proj counts.
    b.projs = vec![(vec![0], vec![1])];
    let m = parse_model(&b.bytes(), "b", None).unwrap();
    assert_eq!(m.groups[0].cur_vars, [0, 2]);
    assert_eq!(m.groups[0].next_vars, [1, 3]);
}

#[test]
fn b_action_labels_are_quantified() {
    // Relation x0' ∧ a0, where a0 = variable 1000000 is an action-label bit.
    let rel = dd(vec![nb(1_000_000, 0, C), nb(1, 0, 1)], 2);
    let b = B {
        action_bits: 1,
        rels: vec![rel.clone()],
        ..B::default()
    };
    let m = parse_model(&b.bytes(), "b", None).unwrap();
    assert_eq!(
        m.nodes[2..],
        [StoredNode {
            var: 1,
            low: 0,
            high: C
        }]
    );
    assert_eq!(m.groups[0].relation, 3);
    m.validate().unwrap();
    // Without declared action bits that variable is foreign.
    let b = B {
        rels: vec![rel],
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 100),
        Invalid::VarOutsideModel { var: 1_000_000, .. }
    ));
    // And a set may not test it.
    let b = B {
        action_bits: 1,
        set_dd: dd(vec![nb(1_000_000, 0, C)], 1),
        ..B::default()
    };
    assert!(matches!(
        fails(&b.bytes(), None, 28),
        Invalid::VarOutsideBdd { .. }
    ));
}

/// Evaluates reference `r` over `nodes` (indices relative to `base`) under `assign`.
fn eval(nodes: &[StoredNode], base: u64, r: u64, assign: impl Fn(u32) -> bool) -> bool {
    let mut negated = r & C != 0;
    let mut i = r & INDEX_MASK;
    while i != 0 {
        let n = nodes[(i - base - 1) as usize];
        let next = if assign(n.var) { n.high } else { n.low };
        negated ^= next & C != 0;
        i = next & INDEX_MASK;
    }
    negated
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 300, failure_persistence: None, ..Default::default()
    })]

    /// Random relations over x0, x0', x2, x2' and two action bits, with complement edges:
    /// the parsed relation must be `∃ a0 a1. R` (checked on the full truth table) and
    /// canonical (no redundant or duplicate node, low edges uncomplemented).
    #[test]
    fn action_quantification_is_exists(seed in proptest::prelude::any::<u64>()) {
        let mut s = seed | 1;
        let mut rnd = |n: u64| { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s % n };
        let vars = [0u64, 1, 2, 3, 1_000_000, 1_000_001];
        let mut recs: Vec<(u64, StoredNode)> = Vec::new(); // (local index, node)
        for k in 0..1 + rnd(12) {
            let var = vars[rnd(vars.len() as u64) as usize];
            let below: Vec<u64> = recs.iter().filter(|(_, n)| u64::from(n.var) > var).map(|(i, _)| *i).collect();
            let child = |rnd: &mut dyn FnMut(u64) -> u64| {
                if below.is_empty() || rnd(3) == 0 { 0 } else { below[rnd(below.len() as u64) as usize] }
            };
            let low = child(&mut rnd);
            let high = child(&mut rnd) | if rnd(2) == 0 { 0 } else { C };
            recs.push((k + 1, StoredNode { var: var as u32, low, high }));
        }
        let root = recs.len() as u64 | if rnd(2) == 0 { 0 } else { C };
        let raw: Vec<StoredNode> = recs.iter().map(|(_, n)| *n).collect();
        let rel = dd(raw.iter().map(|n| nb(n.var.into(), n.low, n.high)).collect(), root);
        let b = B { action_bits: 2, projs: vec![(vec![0, 1], vec![])], rels: vec![rel], ..B::default() };
        let m = parse_model(&b.bytes(), "q", None).unwrap();
        m.validate().unwrap();
        let got = &m.nodes[2..];
        let rel_root = m.groups[0].relation;
        for x in 0..16u32 {
            let state = |v: u32| x >> v & 1 == 1;
            let expect = (0..4u32).any(|a| eval(&raw, 0, root, |v| if v >= 1_000_000 { a >> (v - 1_000_000) & 1 == 1 } else { state(v) }));
            proptest::prop_assert_eq!(eval(got, 2, rel_root, state), expect);
        }
        if raw.iter().any(|n| n.var >= 1_000_000) {
            let mut seen = std::collections::HashSet::new();
            for n in got {
                proptest::prop_assert!(n.var < 4 && n.low & C == 0 && n.low != n.high);
                proptest::prop_assert!(seen.insert(*n));
            }
            proptest::prop_assert_eq!(m.reachable_nodes(rel_root), got.len());
        } else {
            // Nothing to quantify: the block is kept as written, renumbered after the set.
            let shift = |r: u64| if r & INDEX_MASK == 0 { r } else { r + 2 };
            let renumbered: Vec<StoredNode> = raw
                .iter()
                .map(|n| StoredNode { var: n.var, low: shift(n.low), high: shift(n.high) })
                .collect();
            proptest::prop_assert_eq!(got, &renumbered[..]);
        }
    }
}

#[test]
fn validate_and_writers_refuse_bad_models() {
    let good = parse_model(&B::default().bytes(), "b", None).unwrap();
    let mut m = good.clone();
    m.nodes[1].low = 1 | C;
    assert!(
        m.validate()
            .unwrap_err()
            .0
            .contains("low edge is complemented")
    );
    assert!(try_write_format_b(&m).is_err());
    assert!(try_write_format_a(&m).is_err());
    let mut m = good.clone();
    m.nodes[1].low = 2;
    assert!(m.validate().is_err());
    let mut m = good.clone();
    m.initial.root = 9;
    assert!(m.validate().is_err());
    let mut m = good.clone();
    m.groups[0].next_vars = vec![3];
    assert!(m.validate().is_err());
    // Format B fixes the variable numbering.
    let mut m = good.clone();
    m.state_vars = vec![0, 4];
    m.prime_vars = vec![1, 5];
    m.nodes[0].var = 4;
    m.initial.vars = vec![0, 4];
    m.validate().unwrap();
    assert!(try_write_format_b(&m).is_err());
    // Format B names whole integers; a 2-bit integer with a group on one bit cannot be said.
    let mut m = good.clone();
    m.state_bits = vec![2];
    assert!(
        try_write_format_b(&m)
            .unwrap_err()
            .0
            .contains("whole state integers")
    );
    // ...and format A has one width for all integers.
    let mut m = good;
    m.state_bits = vec![1];
    m.state_vars = vec![0];
    m.prime_vars = vec![1];
    assert!(m.validate().is_err());
}

#[test]
fn writers_round_trip_the_tiny_models() {
    let a = parse_model(&A::default().bytes(), "a", None).unwrap();
    // All nodes go into the first block, so the bytes differ but the model does not.
    let a_bytes = try_write_format_a(&a).unwrap();
    assert_eq!(a_bytes.len(), A::default().bytes().len());
    assert_eq!(parse_model(&a_bytes, "a", None).unwrap(), a);
    let b = parse_model(&B::default().bytes(), "b", None).unwrap();
    assert_eq!(write_format_b(&b), B::default().bytes());
    let b_of_a = parse_model(&write_format_b(&a), "b", None).unwrap();
    assert_eq!(b_of_a, b);
}

/// The shared model directory (`$RHIZOME_MODELS`, else `../shared/models`).
#[path = "../../tests/support/models.rs"]
mod models;
use models::required_models_dir;

/// On the real format-B files with action labels, each parsed relation agrees with
/// `∃ actions. R` of the file's own relation, on random paths of R (true and false ones)
/// completed with random values.
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn real_action_quantification_agrees_with_the_file() {
    let dir = required_models_dir();
    let mut checked = 0;
    for name in ["anderson.4.bdd", "bakery.4.bdd", "collision.4.bdd"] {
        let path = dir.join("ltsmin-2017").join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let raw = format_b::parse_with(&bytes, name, false).unwrap();
        let m = parse_model(&bytes, name, None).unwrap();
        let action_bits = 1u32; // all three files declare one action bit
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let action_nodes = raw
            .nodes
            .iter()
            .filter(|n| n.var >= format_b::FIRST_ACTION_VAR)
            .count();
        assert!(action_nodes > 0, "{name} has action-label nodes");
        assert!(m.nodes.iter().all(|n| n.var < format_b::FIRST_ACTION_VAR));
        for (g, (rg, mg)) in raw.groups.iter().zip(&m.groups).enumerate() {
            assert_eq!(rg.cur_vars, mg.cur_vars);
            for _ in 0..200 {
                // A random path from the root fixes some variables; the rest are random.
                let mut fixed = std::collections::HashMap::new();
                let mut r = rg.relation;
                while let Some(n) = raw.node(r) {
                    let bit = rnd() & 1 == 1;
                    fixed.insert(n.var, bit);
                    let next = if bit { n.high } else { n.low };
                    r = (next & INDEX_MASK) | ((r ^ next) & C);
                }
                let noise = rnd();
                let state = |v: u32| fixed.get(&v).copied().unwrap_or(noise >> (v % 64) & 1 == 1);
                let expect = (0..1u32 << action_bits).any(|a| {
                    eval(&raw.nodes, 0, rg.relation, |v| {
                        if v >= format_b::FIRST_ACTION_VAR {
                            a >> (v - format_b::FIRST_ACTION_VAR) & 1 == 1
                        } else {
                            state(v)
                        }
                    })
                });
                assert_eq!(
                    eval(&m.nodes, 0, mg.relation, state),
                    expect,
                    "{name} group {g}"
                );
                checked += 1;
            }
        }
    }
    println!("{checked} relation evaluations agree");
}

#[test]
fn ldd_files_are_recognised_by_content_and_bdd_files_are_not() {
    // int vector_size, int k = -1, size_t count, count 16-byte records, size_t root.
    let ldd = |count: u64, root: u64| {
        let mut o = Vec::new();
        put32(&mut o, 3);
        put32(&mut o, -1i32 as u32);
        put64(&mut o, count);
        for _ in 0..count {
            put64(&mut o, 0);
            put64(&mut o, 0);
        }
        put64(&mut o, root);
        o
    };
    assert!(is_ldd(&ldd(1, 2)));
    assert!(matches!(fails(&ldd(2, 3), None, 0), Invalid::LddNotRead));
    // Forcing a BDD format does not make it readable either.
    assert!(matches!(
        fails(&ldd(2, 3), Some(Format::B), 0),
        Invalid::LddNotRead
    ));
    // A root beyond the nodes, or a truncated node list, is not the LDD layout: the BDD
    // reader's own error stands.
    assert!(!is_ldd(&ldd(1, 7)));
    assert!(!is_ldd(&ldd(4, 2)[..40]));
    // A format-B file whose first bit count is -1 is a broken BDD file, not an LDD one.
    let b = B {
        bits: vec![-1, 1],
        ..B::default()
    };
    assert!(!is_ldd(&b.bytes()));
    assert!(matches!(
        fails(&b.bytes(), None, 4),
        Invalid::BadValue {
            what: "state_bits entry",
            ..
        }
    ));
    // Every BDD file the readers accept is no LDD file.
    assert!(!is_ldd(&B::default().bytes()));
    parse_model(&B::default().bytes(), "tiny.bdd", None).unwrap();
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn the_shared_ldd_files_and_only_they_are_detected_as_ldd() {
    let dir = required_models_dir();
    let mut seen = 0;
    for entry in std::fs::read_dir(dir.join("ltsmin-2017")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let is_ldd_name = path.extension().is_some_and(|e| e == "ldd");
        assert_eq!(is_ldd(&bytes), is_ldd_name, "{}", path.display());
        seen += is_ldd_name as usize;
    }
    assert!(seen > 0, "no .ldd file in the shared models");
}

#[test]
fn read_write_projections_are_the_files() {
    let b = B {
        vs: 2,
        bits: vec![1, 1],
        projs: vec![(vec![0], vec![1])],
        rels: vec![dd(vec![nb(3, 0, C)], 1)],
        ..B::default()
    };
    let rw = read_write_projections(&b.bytes(), "tiny.bdd", None).unwrap();
    assert_eq!(
        rw,
        Some(vec![ReadWrite {
            read: vec![0],
            write: vec![1]
        }])
    );
}
