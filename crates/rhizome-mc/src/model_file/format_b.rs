//! Reader for format B (`ltsmin-2017/*.bdd`): one `DD` block per BDD, local numbering.

use std::collections::BTreeSet;

use super::cursor::Cursor;
use super::error::{Invalid, ModelError};
use super::nodes::{NodeTable, Record};
use super::{
    COMPLEMENT, Format, INDEX_MASK, MAX_STATE_BITS, ReadWrite, StoredGroup, StoredModel, StoredSet,
};

/// LTSmin numbers action-label bit `i` as BDD variable `1000000 + i`, below every state
/// variable; relations may test them.
pub(crate) const FIRST_ACTION_VAR: u32 = 1_000_000;
/// Bit 62 of a record's first word marks a leaf.
const LEAF: u64 = 1 << 62;
/// Smallest possible `PROJ` plus `DD`: two counts, a node count, a root count and a root.
const MIN_GROUP_BYTES: u64 = 4 + 4 + 8 + 4 + 8;

pub(crate) fn parse(bytes: &[u8], name: &str) -> Result<StoredModel, ModelError> {
    parse_with(bytes, name, true)
}

/// `quantify_actions: false` keeps action-label nodes in the relations (for tests that
/// check the quantification against the file's own BDDs).
pub(crate) fn parse_with(
    bytes: &[u8],
    name: &str,
    quantify_actions: bool,
) -> Result<StoredModel, ModelError> {
    parse_full(bytes, name, quantify_actions).map(|(model, _)| model)
}

/// The model and each group's read and write projections (integer indices in file
/// order), which the [`StoredModel`] merges into one variable set.
pub(crate) fn parse_full(
    bytes: &[u8],
    name: &str,
    quantify_actions: bool,
) -> Result<(StoredModel, Vec<ReadWrite>), ModelError> {
    let mut c = Cursor::new(bytes, name);

    let vs_off = c.pos();
    let vector_size = c.i32_in("vector_size", 1..=i32::MAX, "must be at least 1")?;
    let vector_size = c.check_fits(vs_off, "state integer", vector_size as u64, 4)?;
    let mut state_bits = Vec::with_capacity(vector_size);
    let mut first_bit = Vec::with_capacity(vector_size);
    let mut total: u64 = 0;
    for _ in 0..vector_size {
        let off = c.pos();
        let b = c.i32_in("state_bits entry", 1..=64, "must be between 1 and 64")?;
        first_bit.push(total as u32);
        total += b as u64;
        if total > MAX_STATE_BITS {
            return Err(c.error_at(
                off,
                Invalid::BadValue {
                    what: "total state bits",
                    value: i128::from(total),
                    reason: "exceeds the 2^23 state bits the 24-bit variable field can number",
                },
            ));
        }
        state_bits.push(b as u32);
    }
    let action_bits = read_action_bits(&mut c, total)?;
    let total = total as u32;
    let action_vars: Vec<u32> = (0..action_bits as u32)
        .map(|i| FIRST_ACTION_VAR + i)
        .collect();
    let state_vars: Vec<u32> = (0..total).map(|p| 2 * p).collect();
    let prime_vars: Vec<u32> = (0..total).map(|p| 2 * p + 1).collect();
    let cur_of = |ints: &BTreeSet<usize>| -> Vec<u32> {
        ints.iter()
            .flat_map(|&i| {
                let first = first_bit[i];
                (0..state_bits[i]).map(move |j| 2 * (first + j))
            })
            .collect()
    };
    let mut table = NodeTable::new((0..2 * total).chain(action_vars.iter().copied()));

    // Initial set.
    let k_off = c.pos();
    let k = c.i32("set integer count")?;
    let vars = if k == -1 {
        state_vars.clone()
    } else {
        if k < 0 || k as usize > vector_size {
            return Err(c.error_at(
                k_off,
                Invalid::BadValue {
                    what: "set integer count",
                    value: i128::from(k),
                    reason: "must be -1 or between 0 and vector_size",
                },
            ));
        }
        let k = c.check_fits(k_off, "set integer", k as u64, 4)?;
        let mut ints = BTreeSet::new();
        for _ in 0..k {
            let i = read_int_index(&mut c, vector_size, "set integer")?;
            ints.insert(i);
        }
        cur_of(&ints)
    };
    let (root, _) = read_dd(&mut c, &mut table, "initial set")?;
    table.check_domain(&c, root, &vars, || "initial set".to_string())?;
    let initial = StoredSet { root, vars };

    // Projections, then relations.
    let group_count = c.count("group count", "group", MIN_GROUP_BYTES)?;
    let mut projections = Vec::with_capacity(group_count);
    let mut read_write = Vec::with_capacity(group_count);
    for _ in 0..group_count {
        let r_off = c.pos();
        let r_k = read_proj_len(&mut c, vector_size, "r_k")?;
        let w_off = c.pos();
        let w_k = read_proj_len(&mut c, vector_size, "w_k")?;
        c.check_fits(r_off, "r_proj entry", r_k as u64, 4)?;
        c.check_fits(w_off, "r_proj and w_proj entry", (r_k + w_k) as u64, 4)?;
        let mut ints = BTreeSet::new();
        let mut rw = ReadWrite::default();
        for _ in 0..r_k {
            let i = read_int_index(&mut c, vector_size, "r_proj entry")?;
            ints.insert(i);
            rw.read.push(i);
        }
        for _ in 0..w_k {
            let i = read_int_index(&mut c, vector_size, "w_proj entry")?;
            ints.insert(i);
            rw.write.push(i);
        }
        projections.push(ints);
        read_write.push(rw);
    }
    let mut groups = Vec::with_capacity(group_count);
    for (g, ints) in projections.iter().enumerate() {
        let (mut root, base) = read_dd(&mut c, &mut table, "relation")?;
        let cur_vars = cur_of(ints);
        let next_vars: Vec<u32> = cur_vars.iter().map(|v| v + 1).collect();
        let mut domain: Vec<u32> = cur_vars
            .iter()
            .chain(&next_vars)
            .chain(&action_vars)
            .copied()
            .collect();
        domain.sort_unstable();
        table.check_domain(&c, root, &domain, || format!("relation of group {g}"))?;
        // The action label says which transition fired; reachability ignores it, exactly as
        // Sylvan's relnext skips variables outside the relation's state variables.
        if quantify_actions
            && table.nodes[base as usize..]
                .iter()
                .any(|n| n.var >= FIRST_ACTION_VAR)
        {
            root = table.quantify_bottom(base, &[root], FIRST_ACTION_VAR)[0];
        }
        groups.push(StoredGroup {
            relation: root,
            cur_vars,
            next_vars,
        });
    }
    // Whatever follows (reachable states, labels) is not part of the model.

    let model = StoredModel {
        format: Format::B,
        state_bits,
        state_vars,
        prime_vars,
        nodes: table.nodes,
        initial,
        groups,
        reachable: None,
    };
    Ok((model, read_write))
}

/// `action_bits` (formats B and C): at most 64, and 0 when the `2 × state_bits` state
/// variables would reach the first action variable.
pub(crate) fn read_action_bits(c: &mut Cursor, state_bits: u64) -> Result<i32, ModelError> {
    let off = c.pos();
    let action_bits = c.i32_in("action_bits", 0..=64, "must be between 0 and 64")?;
    if action_bits > 0 && 2 * state_bits > u64::from(FIRST_ACTION_VAR) {
        return Err(c.error_at(
            off,
            Invalid::BadValue {
                what: "action_bits",
                value: i128::from(action_bits),
                reason: "must be 0 when state variables reach the action variables at 1000000",
            },
        ));
    }
    Ok(action_bits)
}

fn read_int_index(
    c: &mut Cursor,
    vector_size: usize,
    what: &'static str,
) -> Result<usize, ModelError> {
    // `vector_size` came from an `i32`, so the last index fits one.
    let last = vector_size as i32 - 1;
    let i = c.i32_in(
        what,
        0..=last,
        "is not an integer index of the state vector",
    )?;
    Ok(i as usize)
}

fn read_proj_len(
    c: &mut Cursor,
    vector_size: usize,
    what: &'static str,
) -> Result<usize, ModelError> {
    let n = c.i32_in(
        what,
        0..=vector_size as i32,
        "must be between 0 and vector_size",
    )?;
    Ok(n as usize)
}

/// `DD`: a count, records with block-local 1-based indices, a root count (must be 1) and the
/// root. Returns the root as a global reference, and the global index before the block.
fn read_dd(
    c: &mut Cursor,
    table: &mut NodeTable,
    what: &'static str,
) -> Result<(u64, u64), ModelError> {
    let off = c.pos();
    let count = c.u64("DD node count")?;
    let count = c.check_fits(off, "DD node", count, 16)? as u64;
    let base = table.len();
    for own in 1..=count {
        let rec_off = c.pos();
        let a = c.u64("DD node record")?;
        let b = c.u64("DD node record")?;
        if a & LEAF != 0 {
            return Err(c.error_at(rec_off, Invalid::LeafRecord { node: own }));
        }
        let rec = Record {
            offset: rec_off,
            own,
            var: (b >> 40) as u32,
            low: b & INDEX_MASK,
            high: a & (INDEX_MASK | COMPLEMENT),
        };
        table.push(c, rec, base, count)?;
    }
    let n_off = c.pos();
    let n = c.i32("DD root count")?;
    if n != 1 {
        return Err(c.error_at(
            n_off,
            Invalid::RootCount {
                count: i64::from(n),
            },
        ));
    }
    let r_off = c.pos();
    let raw = c.u64("DD root")?;
    Ok((table.root(c, r_off, what, raw, base, count)?, base))
}
