//! Format C: a tiny file written by [`try_write_format_c`], then one field at a time broken.

use super::*;

/// x0 ∨ x2 over two 1-bit integers, one group setting x0' (relation x0'), reachable set
/// x0 ∨ x2. Offsets in the written bytes: header [0, 4, 8]; initial set: count [12], three
/// model nodes [20, 36, 52], the state cube (x2 [68], x0 [84]), root [100], k [108], vars
/// [116]; group count [124]; relation: count [128], its cube (x0' [136], x0 [152]), root
/// [168], vars [176]; has_reachable [184]; reachable set: count [188], root [196], k [204],
/// vars [212]; end [220].
fn tiny() -> StoredModel {
    // The default format-B tiny file is that model, nodes x2, x0 ? true : x2, x0'.
    let b = parse_model(&B::default().bytes(), "b", None).unwrap();
    StoredModel {
        format: Format::C,
        reachable: Some(b.initial.clone()),
        ..b
    }
}

fn tiny_bytes() -> Vec<u8> {
    try_write_format_c(&tiny()).unwrap()
}

/// The tiny file with the 8 bytes at `offset` replaced by `value`.
fn with_u64(offset: usize, value: u64) -> Vec<u8> {
    let mut bytes = tiny_bytes();
    bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
    bytes
}

/// The tiny file with the 4 bytes at `offset` replaced by `value`.
fn with_i32(offset: usize, value: i32) -> Vec<u8> {
    let mut bytes = tiny_bytes();
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
    bytes
}

#[test]
fn tiny_file_reads_back_with_its_reachable_set() {
    let bytes = tiny_bytes();
    assert_eq!(bytes.len(), 220);
    assert_eq!(detect_format(&bytes), Some(Format::C));
    let m = parse_model(&bytes, "tiny.bdd", None).unwrap();
    m.validate().unwrap();
    // The cubes' nodes are gone; the model's own are kept, in the order first reached.
    assert_eq!(m.nodes.len(), 3);
    let t = tiny();
    assert!(same_function(&t, t.initial.root, &m, m.initial.root));
    assert!(same_function(&t, 3, &m, m.groups[0].relation));
    let stored = m.reachable.as_ref().unwrap();
    assert_eq!(stored.vars, [0, 2]);
    assert!(same_function(&t, 2, &m, stored.root));
    assert_eq!(parse_model(&bytes, "t", Some(Format::C)).unwrap(), m);
    // Without a stored set the flag is 0 and the file ends there.
    let none = try_write_format_c(&StoredModel {
        reachable: None,
        ..tiny()
    })
    .unwrap();
    assert_eq!(none.len(), 188);
    assert_eq!(parse_model(&none, "t", None).unwrap().reachable, None);
}

#[test]
fn truncated_everywhere_gives_one_line() {
    let bytes = tiny_bytes();
    for cut in 0..bytes.len() {
        for forced in [None, Some(Format::C)] {
            let e = parse_model(&bytes[..cut], "cut.bdd", forced).unwrap_err();
            let s = e.to_string();
            let offset = e.offset().unwrap();
            assert!(offset <= cut as u64, "{s}");
            assert!(s.starts_with(&format!("cut.bdd: byte {offset}: ")), "{s}");
            assert!(!s.contains('\n'), "{s}");
        }
    }
    let mut long = bytes.clone();
    long.push(0);
    assert_eq!(fails(&long, None, 220), Invalid::TrailingBytes { count: 1 });
}

/// The field a [`Invalid::BadValue`] at `offset` names (anything else fails the test).
fn bad_value(bytes: &[u8], offset: u64) -> &'static str {
    match fails(bytes, Some(Format::C), offset) {
        Invalid::BadValue { what, .. } => what,
        other => panic!("{other:?}"),
    }
}

#[test]
fn header_fields_are_checked() {
    let c = Some(Format::C);
    assert_eq!(bad_value(&with_i32(0, 0), 0), "vector_size");
    assert_eq!(bad_value(&with_i32(4, 65), 4), "bits_per_integer");
    assert_eq!(bad_value(&with_i32(8, -1), 8), "action_bits");
    // 2^20 integers of 8 bits: within the variable field, far beyond the bytes present.
    let mut big = with_i32(0, 1 << 20);
    big[4..8].copy_from_slice(&8i32.to_le_bytes());
    assert!(matches!(
        fails(&big, c, 0),
        Invalid::CountTooLarge {
            what: "state bit",
            ..
        }
    ));
    let mut huge = with_i32(0, i32::MAX);
    huge[4..8].copy_from_slice(&64i32.to_le_bytes());
    assert_eq!(bad_value(&huge, 0), "vector_size × bits_per_integer");
    assert_eq!(bad_value(&with_i32(124, -2), 124), "group count");
    assert_eq!(bad_value(&with_i32(184, 2), 184), "has_reachable");
    // With the flag at 0, the stored set is data after the end.
    assert!(matches!(
        fails(&with_i32(184, 0), c, 188),
        Invalid::TrailingBytes { count: 32 }
    ));
}

/// What is wrong with the tiny file whose `u64` at `field` is `value`, found at `offset`.
fn wrong(field: usize, value: u64, offset: u64) -> Invalid {
    fails(&with_u64(field, value), Some(Format::C), offset)
}

#[test]
fn sets_must_be_on_the_whole_vector() {
    assert_eq!(bad_value(&with_u64(108, 1), 108), "set integer count k");
    // vars = node 4, the cube of x2 alone.
    let partial = |what| Invalid::PartialSet {
        what,
        vars: 1,
        expected: 2,
    };
    assert_eq!(wrong(116, 4, 116), partial("initial set"));
    assert_eq!(wrong(212, 4, 212), partial("reachable set"));
}

#[test]
fn vars_must_be_cubes() {
    let reason = |field, value| match wrong(field, value, field as u64) {
        Invalid::NotACube { reason, .. } => reason,
        other => panic!("{other:?}"),
    };
    // Node 2 is x0 ? true : x2: its low edge is not false.
    assert!(reason(116, 2).contains("node 2 has a low edge other than false"));
    assert!(reason(116, 0).contains("ends in false"));
    assert!(reason(116, 5 | C).contains("complemented"));
    let out_of_range = wrong(116, 99, 116);
    assert!(matches!(out_of_range, Invalid::RootOutOfRange { .. }));
    let reserved = wrong(176, 1 << 50, 176);
    assert!(matches!(reserved, Invalid::ReservedBits { .. }));
}

#[test]
fn relations_are_on_pairs_of_their_cube() {
    // vars = node 6, the cube of x0' alone: a next variable without its current one.
    assert_eq!(wrong(176, 6, 176), Invalid::UnpairedVar { var: 1 });
    // A state cube (x0, x2) has neither next variable.
    assert_eq!(wrong(176, 5, 176), Invalid::UnpairedVar { var: 0 });
    // Relation x2, on the cube of x0 and x0': x2 is outside the relation's variables; and
    // the initial set x0', on the state cube.
    let outside = |node, var, bdd: &str| Invalid::VarOutsideBdd {
        node,
        var,
        bdd: bdd.to_string(),
    };
    assert_eq!(wrong(168, 1, 20), outside(1, 2, "relation of group 0"));
    assert_eq!(wrong(100, 3, 52), outside(3, 1, "initial set"));
}

/// A one-bit model written by hand: the relation is x0' ∧ a0 (a0 = variable 1000000, an
/// action label), its cube x0 x0'; then the reachable set true.
fn with_action_label(action_bits: i32) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [1, 1, action_bits] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    // Initial set: node 1 = x0 (also the state cube); root ¬x0, k 1, vars 1.
    let words: &[u64] = &[1, C, 0, 1 | C, 1, 1];
    words
        .iter()
        .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    out.extend_from_slice(&1i32.to_le_bytes());
    // Relation: node 2 = a0, node 3 = x0' ? a0 : false, node 4 = x0' (cube tail), node 5 =
    // x0 ∧ x0' (the cube); root 3, vars 5.
    let words: &[u64] = &[4, C, 1_000_000 << 40, 2, 1 << 40, C, 1 << 40, 4, 0, 3, 5];
    words
        .iter()
        .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    out.extend_from_slice(&1i32.to_le_bytes());
    let words: &[u64] = &[0, C, 1, 1];
    words
        .iter()
        .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    out
}

#[test]
fn action_labels_are_quantified() {
    let m = parse_model(&with_action_label(1), "labels.bdd", None).unwrap();
    m.validate().unwrap();
    assert_eq!(m.format, Format::C);
    let relation = m.groups[0].relation;
    for x in 0..4u32 {
        let assign = |v: u32| x >> v & 1 == 1;
        // ∃ a0. x0' ∧ a0 is x0'.
        assert_eq!(eval(&m.nodes, 0, relation, assign), x >> 1 & 1 == 1);
    }
    assert!(m.nodes.iter().all(|n| n.var < 1_000_000));
    assert_eq!(m.reachable.unwrap().root, C);
    // Without a declared action bit the variable is not the model's.
    assert!(matches!(
        fails(&with_action_label(0), None, 72),
        Invalid::VarOutsideModel { var: 1_000_000, .. }
    ));
}

#[test]
fn the_writer_refuses_what_format_c_cannot_say() {
    let mut m = tiny();
    m.state_bits = vec![1, 2];
    m.state_vars = vec![0, 2, 4];
    m.prime_vars = vec![1, 3, 5];
    m.initial.vars = vec![0, 2, 4];
    m.reachable = None;
    m.validate().unwrap();
    assert!(try_write_format_c(&m).unwrap_err().0.contains("same width"));
    let mut m = tiny();
    m.initial = StoredSet {
        root: 1,
        vars: vec![2],
    };
    assert!(
        try_write_format_c(&m)
            .unwrap_err()
            .0
            .contains("all state variables")
    );
    let mut m = tiny();
    m.state_vars = vec![0, 4];
    m.prime_vars = vec![1, 5];
    m.nodes[0].var = 4;
    m.initial.vars = vec![0, 4];
    m.reachable = None;
    m.validate().unwrap();
    assert!(try_write_format_c(&m).unwrap_err().0.contains("2p"));
}
