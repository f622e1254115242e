//! Writers: format B (one `DD` block per BDD, local numbering), format A (one numbering)
//! and format C (one numbering, cubes, the reachable set).

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
    require_standard_vars(model, "B")?;
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
    let bits = uniform_width(model, "A")?;
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

/// Writes `model` as format-C bytes: every node in the initial set's `NODES` block (model
/// order), followed by the cube of the state variables; each relation's block holds only
/// its cube; the reachable set, when the model has one, reuses the state cube. `action_bits`
/// is 0. Reading the result gives the same BDDs (the reader drops the cubes' nodes).
///
/// Errors if the model is invalid ([`StoredModel::validate`]), does not use the variables
/// `2p`/`2p+1` (as format B), has integers of different widths (as format A), or has a set
/// not on the whole state vector (format C's sets always are).
pub fn try_write_format_c(model: &StoredModel) -> Result<Vec<u8>, ModelInvariantError> {
    model.validate()?;
    require_standard_vars(model, "C")?;
    let bits = uniform_width(model, "C")?;
    let sets = std::iter::once(&model.initial).chain(&model.reachable);
    if sets.into_iter().any(|s| s.vars != model.state_vars) {
        return Err(ModelInvariantError(
            "format C requires every set to be on all state variables".into(),
        ));
    }
    let mut out = Vec::new();
    for v in [model.vector_size() as u32, bits, 0] {
        put_u32(&mut out, v);
    }
    // A cube of `vars` written as records after the `written` nodes before it; returns its
    // records and its reference.
    let cube = |vars: &[u32], written: u64| {
        let mut records = Vec::with_capacity(vars.len());
        let mut next = COMPLEMENT; // true
        for (k, &v) in vars.iter().rev().enumerate() {
            records.push([next, u64::from(v) << 40]);
            next = written + k as u64 + 1;
        }
        (records, if vars.is_empty() { COMPLEMENT } else { next })
    };
    let (state_cube, state_ref) = cube(&model.state_vars, model.nodes.len() as u64);
    put_u64(&mut out, (model.nodes.len() + state_cube.len()) as u64);
    for n in &model.nodes {
        put_u64(&mut out, n.high);
        put_u64(&mut out, n.low | (u64::from(n.var) << 40));
    }
    let put_records = |out: &mut Vec<u8>, records: &[[u64; 2]]| {
        for word in records.iter().flatten() {
            put_u64(out, *word);
        }
    };
    put_records(&mut out, &state_cube);
    let k = model.vector_size() as u64;
    for word in [model.initial.root, k, state_ref] {
        put_u64(&mut out, word);
    }
    put_i32(&mut out, model.groups.len() as i32);
    let mut written = (model.nodes.len() + state_cube.len()) as u64;
    for grp in &model.groups {
        let mut vars: Vec<u32> = grp.cur_vars.iter().chain(&grp.next_vars).copied().collect();
        vars.sort_unstable();
        let (records, vars_ref) = cube(&vars, written);
        written += records.len() as u64;
        put_u64(&mut out, records.len() as u64);
        put_records(&mut out, &records);
        put_u64(&mut out, grp.relation);
        put_u64(&mut out, vars_ref);
    }
    put_i32(&mut out, i32::from(model.reachable.is_some()));
    if let Some(set) = &model.reachable {
        for word in [0, set.root, k, state_ref] {
            put_u64(&mut out, word);
        }
    }
    Ok(out)
}

/// Formats B and C fix the variables: state bit `p` is `2p`, its next-state copy `2p+1`.
fn require_standard_vars(model: &StoredModel, format: &str) -> Result<(), ModelInvariantError> {
    let standard = model
        .state_vars
        .iter()
        .zip(&model.prime_vars)
        .enumerate()
        .all(|(p, (&c, &n))| c as usize == 2 * p && n as usize == 2 * p + 1);
    if !standard {
        return Err(ModelInvariantError(format!(
            "format {format} requires state bit p to be variable 2p and its next-state copy 2p+1"
        )));
    }
    Ok(())
}

/// Formats A and C have one `bits_per_integer`: the width of every state integer.
fn uniform_width(model: &StoredModel, format: &str) -> Result<u32, ModelInvariantError> {
    let bits = model.state_bits[0];
    if model.state_bits.iter().any(|&b| b != bits) {
        return Err(ModelInvariantError(format!(
            "format {format} requires every state integer to have the same width"
        )));
    }
    Ok(bits)
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

/// One `DD` block: the nodes reachable from `root`, renumbered 1, 2, … in model order.
fn put_dd(out: &mut Vec<u8>, model: &StoredModel, root: u64) {
    let bdd = model.extract(root);
    put_u64(out, bdd.nodes.len() as u64);
    for n in &bdd.nodes {
        put_u64(out, n.high);
        put_u64(out, n.low | (u64::from(n.var) << 40));
    }
    put_i32(out, 1);
    put_u64(out, bdd.root);
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
