//! Format C: a tiny file written by [`try_write_format_c`], then one field at a time broken.

use super::*;

/// x0 ∨ x2 over two 1-bit integers, one group setting x0' (relation x0'), reachable set
/// x0 ∨ x2. Offsets in the written bytes: header [0, 4, 8]; initial set: count [12], three
/// model nodes [20, 36, 52], the state cube (x2 [68], x0 [84]), root [100], k [108], vars
/// [116]; group count [124]; relation: count [128], its cube (x0' [136], x0 [152]), root
/// [168], vars [176]; has_reachable [184]; reachable set: count [188], root [196], k [204],
/// vars [212]; end [220].
fn tiny() -> StoredModel {
    StoredModel {
        format: Format::C,
        state_bits: vec![1, 1],
        state_vars: vec![0, 2],
        prime_vars: vec![1, 3],
        nodes: vec![
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
        ],
        initial: StoredSet {
            root: 2,
            vars: vec![0, 2],
        },
        groups: vec![StoredGroup {
            relation: 3,
            cur_vars: vec![0],
            next_vars: vec![1],
        }],
        reachable: Some(StoredSet {
            root: 2,
            vars: vec![0, 2],
        }),
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

#[test]
fn header_fields_are_checked() {
    let c = Some(Format::C);
    assert!(matches!(
        fails(&with_i32(0, 0), c, 0),
        Invalid::BadValue {
            what: "vector_size",
            ..
        }
    ));
    assert!(matches!(
        fails(&with_i32(4, 65), c, 4),
        Invalid::BadValue {
            what: "bits_per_integer",
            ..
        }
    ));
    assert!(matches!(
        fails(&with_i32(8, -1), c, 8),
        Invalid::BadValue {
            what: "action_bits",
            ..
        }
    ));
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
    assert!(matches!(fails(&huge, c, 0), Invalid::BadValue { .. }));
    assert!(matches!(
        fails(&with_i32(124, -2), c, 124),
        Invalid::BadValue {
            what: "group count",
            ..
        }
    ));
    assert!(matches!(
        fails(&with_i32(184, 2), c, 184),
        Invalid::BadValue {
            what: "has_reachable",
            ..
        }
    ));
    // With the flag at 0, the stored set is data after the end.
    assert!(matches!(
        fails(&with_i32(184, 0), c, 188),
        Invalid::TrailingBytes { count: 32 }
    ));
}

#[test]
fn sets_must_be_on_the_whole_vector() {
    let c = Some(Format::C);
    assert!(matches!(
        fails(&with_u64(108, 1), c, 108),
        Invalid::BadValue {
            what: "set integer count k",
            ..
        }
    ));
    // vars = node 4, the cube of x2 alone.
    assert!(matches!(
        fails(&with_u64(116, 4), c, 116),
        Invalid::PartialSet {
            vars: 1,
            expected: 2,
            ..
        }
    ));
    assert!(matches!(
        fails(&with_u64(212, 4), c, 212),
        Invalid::PartialSet { .. }
    ));
}

#[test]
fn vars_must_be_cubes() {
    let c = Some(Format::C);
    let reason = |bytes: &[u8], offset| match fails(bytes, c, offset) {
        Invalid::NotACube { reason, .. } => reason,
        other => panic!("{other:?}"),
    };
    // Node 2 is x0 ? true : x2: its low edge is not false.
    assert!(reason(&with_u64(116, 2), 116).contains("node 2 has a low edge other than false"));
    assert!(reason(&with_u64(116, 0), 116).contains("ends in false"));
    assert!(reason(&with_u64(116, 5 | C), 116).contains("complemented"));
    assert!(matches!(
        fails(&with_u64(116, 99), c, 116),
        Invalid::RootOutOfRange { .. }
    ));
    assert!(matches!(
        fails(&with_u64(176, 1 << 50), c, 176),
        Invalid::ReservedBits { .. }
    ));
}

#[test]
fn relations_are_on_pairs_of_their_cube() {
    let c = Some(Format::C);
    // vars = node 6, the cube of x0' alone: a next variable without its current one.
    assert_eq!(
        fails(&with_u64(176, 6), c, 176),
        Invalid::UnpairedVar { var: 1 }
    );
    // A state cube (x0, x2) has neither next variable.
    assert_eq!(
        fails(&with_u64(176, 5), c, 176),
        Invalid::UnpairedVar { var: 0 }
    );
    // Relation x2, on the cube of x0 and x0': x2 is outside the relation's variables.
    assert!(matches!(
        fails(&with_u64(168, 1), c, 20),
        Invalid::VarOutsideBdd {
            node: 1,
            var: 2,
            ..
        }
    ));
    // The sets may not test next-state variables either.
    assert!(matches!(
        fails(&with_u64(100, 3), c, 52),
        Invalid::VarOutsideBdd { node: 3, .. }
    ));
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
