//! Writers: format B (one `DD` block per BDD, local numbering) and format A (one numbering).

use std::collections::HashMap;

use super::error::ModelInvariantError;
use super::{COMPLEMENT, INDEX_MASK, StoredModel};

/// Writes `model` as valid format-B bytes: one `DD` block per BDD holding exactly the nodes
/// reachable from its root, in increasing model index (so children first), renumbered
/// 1, 2, … within the block. `action_bits` is written as 0; nothing follows the relations.
///
/// Reading the result gives back `model` exactly when `model` was read from a format-B file
/// (whose blocks hold only reachable nodes), and otherwise the same BDDs in the format-B
/// numbering.
///
/// # Panics
///
/// If the model cannot be expressed in format B; see [`try_write_format_b`] for the
/// conditions and a non-panicking variant.
pub fn write_format_b(model: &StoredModel) -> Vec<u8> {
    match try_write_format_b(model) {
        Ok(bytes) => bytes,
        Err(e) => panic!("model cannot be written in format B: {e}"),
    }
}

/// Like [`write_format_b`], but returns an error if the model is invalid
/// ([`StoredModel::validate`]), does not use format B's fixed variables (state bit `p` is
/// `2p`, its copy `2p+1`), or has a set or group whose variables are not all bits of whole
/// state integers (format B names integers, not bits).
pub fn try_write_format_b(model: &StoredModel) -> Result<Vec<u8>, ModelInvariantError> {
    model.validate()?;
    let standard = model
        .state_vars
        .iter()
        .zip(&model.prime_vars)
        .enumerate()
        .all(|(p, (&c, &n))| c as usize == 2 * p && n as usize == 2 * p + 1);
    if !standard {
        return Err(ModelInvariantError(
            "format B requires state bit p to be variable 2p and its next-state copy 2p+1".into(),
        ));
    }
    let vector_size = model.vector_size();
    let mut out = Vec::new();
    put_i32(&mut out, vector_size as i32);
    for &b in &model.state_bits {
        put_i32(&mut out, b as i32);
    }
    put_i32(&mut out, 0);

    if model.initial.vars == model.state_vars {
        put_i32(&mut out, -1);
    } else {
        let ints = whole_integers(model, &model.initial.vars, "initial set")?;
        put_i32(&mut out, ints.len() as i32);
        for i in ints {
            put_i32(&mut out, i as i32);
        }
    }
    put_dd(&mut out, model, model.initial.root);

    put_i32(&mut out, model.groups.len() as i32);
    for (g, grp) in model.groups.iter().enumerate() {
        let ints = whole_integers(model, &grp.cur_vars, &format!("group {g}"))?;
        // The union of r_proj and w_proj is all that is kept; write it as both.
        for _ in 0..2 {
            put_i32(&mut out, ints.len() as i32);
        }
        for _ in 0..2 {
            for &i in &ints {
                put_i32(&mut out, i as i32);
            }
        }
    }
    for grp in &model.groups {
        put_dd(&mut out, model, grp.relation);
    }
    Ok(out)
}

/// Writes `model` as format-A bytes: every node in the initial set's `NODES` block (in model
/// order, so reading gives the same `nodes`), empty blocks for the relations.
///
/// Errors if the model is invalid ([`StoredModel::validate`]), its integers do not all have
/// the same width (format A has one `bits_per_integer`), or a set or group has a variable
/// count that is not a multiple of that width.
pub fn try_write_format_a(model: &StoredModel) -> Result<Vec<u8>, ModelInvariantError> {
    model.validate()?;
    let bits = model.state_bits[0];
    if model.state_bits.iter().any(|&b| b != bits) {
        return Err(ModelInvariantError(
            "format A requires every state integer to have the same width".into(),
        ));
    }
    let k_of = |n: usize, what: &str| {
        if n.is_multiple_of(bits as usize) {
            Ok((n / bits as usize) as u64)
        } else {
            Err(ModelInvariantError(format!(
                "{what}: {n} variables is not a multiple of {bits} bits"
            )))
        }
    };
    let mut out = Vec::new();
    put_u64(&mut out, model.vector_size() as u64);
    put_u64(&mut out, u64::from(bits));
    for &v in model.state_vars.iter().chain(&model.prime_vars) {
        put_u32(&mut out, v);
    }
    put_u64(&mut out, model.nodes.len() as u64);
    for n in &model.nodes {
        put_u64(&mut out, (n.high & INDEX_MASK) | (u64::from(n.var) << 40));
        put_u64(&mut out, n.low | (n.high & COMPLEMENT));
    }
    put_u64(&mut out, model.initial.root);
    put_u64(&mut out, k_of(model.initial.vars.len(), "initial set")?);
    for &v in &model.initial.vars {
        put_u32(&mut out, v);
    }
    put_i32(&mut out, model.groups.len() as i32);
    for (g, grp) in model.groups.iter().enumerate() {
        put_u64(&mut out, 0);
        put_u64(&mut out, grp.relation);
        put_u64(&mut out, k_of(grp.cur_vars.len(), &format!("group {g}"))?);
        for &v in grp.cur_vars.iter().chain(&grp.next_vars) {
            put_u32(&mut out, v);
        }
    }
    Ok(out)
}

/// The integers whose bits are exactly `vars` (sorted current-state vars `2p`).
fn whole_integers(
    model: &StoredModel,
    vars: &[u32],
    what: &str,
) -> Result<Vec<usize>, ModelInvariantError> {
    let mut ints = Vec::new();
    let mut expected = Vec::with_capacity(vars.len());
    let mut first = 0u32;
    for (i, &b) in model.state_bits.iter().enumerate() {
        if vars.binary_search(&(2 * first)).is_ok() {
            ints.push(i);
            expected.extend((first..first + b).map(|p| 2 * p));
        }
        first += b;
    }
    if expected != vars {
        return Err(ModelInvariantError(format!(
            "{what}: variables are not all bits of whole state integers"
        )));
    }
    Ok(ints)
}

fn put_dd(out: &mut Vec<u8>, model: &StoredModel, root: u64) {
    let mut reach: Vec<u64> = Vec::new();
    let mut local: HashMap<u64, u64> = HashMap::new();
    let mut stack = vec![root & INDEX_MASK];
    while let Some(i) = stack.pop() {
        if i == 0 || local.insert(i, 0).is_some() {
            continue;
        }
        reach.push(i);
        let n = model.nodes[(i - 1) as usize];
        stack.push(n.low & INDEX_MASK);
        stack.push(n.high & INDEX_MASK);
    }
    // Children have smaller model indices, so increasing order is children-first.
    reach.sort_unstable();
    for (k, &i) in reach.iter().enumerate() {
        local.insert(i, k as u64 + 1);
    }
    let map = |r: u64| {
        let i = r & INDEX_MASK;
        let l = if i == 0 { 0 } else { local[&i] };
        l | (r & COMPLEMENT)
    };
    put_u64(out, reach.len() as u64);
    for &i in &reach {
        let n = model.nodes[(i - 1) as usize];
        put_u64(out, map(n.high));
        put_u64(out, map(n.low) | (u64::from(n.var) << 40));
    }
    put_i32(out, 1);
    put_u64(out, map(root));
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
