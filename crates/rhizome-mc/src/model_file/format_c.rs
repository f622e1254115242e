//! Reader for format C (`spin17-beem/*.bdd`, written by Sylvan 1.x `mc` for the SPIN 2017
//! distributed checker): format A's one node numbering across the file, format B's fixed
//! variables (state bit `p` is `2p`, its copy `2p+1`) and action labels, variable sets given
//! as cubes, and the reachable states stored after the relations.

use super::cursor::Cursor;
use super::error::{Invalid, ModelError};
use super::format_a::{read_nodes, read_root};
use super::format_b::{FIRST_ACTION_VAR, read_action_bits};
use super::nodes::NodeTable;
use super::{COMPLEMENT, Format, INDEX_MASK, MAX_STATE_BITS, StoredGroup, StoredModel, StoredSet};

/// Smallest possible `REL`: node count, root and vars, 8 bytes each.
const MIN_REL_BYTES: u64 = 24;

/// Format C's record: `high` with its mark in the first word, `var` and `low` in the second.
fn layout_c(a: u64, b: u64) -> (u32, u64, u64) {
    (
        (b >> 40) as u32,
        b & INDEX_MASK,
        a & (INDEX_MASK | COMPLEMENT),
    )
}

pub(crate) fn parse(bytes: &[u8], name: &str) -> Result<StoredModel, ModelError> {
    let mut c = Cursor::new(bytes, name);
    let vector_size = c.i32_in("vector_size", 1..=i32::MAX, "must be at least 1")?;
    let bits = c.i32_in("bits_per_integer", 1..=64, "must be between 1 and 64")?;
    let total = vector_size as u64 * bits as u64;
    if total > MAX_STATE_BITS {
        return Err(c.error_at(
            0,
            Invalid::BadValue {
                what: "vector_size × bits_per_integer",
                value: i128::from(total),
                reason: "exceeds the 2^23 state bits the 24-bit variable field can number",
            },
        ));
    }
    let action_bits = read_action_bits(&mut c, total)?;
    // The initial set's cube holds one 16-byte record per state bit: a bound on `total`
    // from the bytes present, before anything of that size is allocated.
    let total = c.check_fits(0, "state bit", total, 16)? as u32;
    let state_vars: Vec<u32> = (0..total).map(|p| 2 * p).collect();
    let action_vars = (0..action_bits as u32).map(|i| FIRST_ACTION_VAR + i);
    let mut table = NodeTable::new((0..2 * total).chain(action_vars.clone()));
    let sets = SetShape {
        vector_size: vector_size as u64,
        state_vars: &state_vars,
    };

    let initial = sets.read(&mut c, &mut table, "initial set")?;
    let group_count = c.count("group count", "relation", MIN_REL_BYTES)?;
    let mut groups = Vec::with_capacity(group_count);
    for g in 0..group_count {
        read_nodes(&mut c, &mut table, layout_c)?;
        let relation = read_root(&mut c, &table, "relation")?;
        let vars_off = c.pos();
        let vars = read_cube(&mut c, &table, "relation")?;
        // Every current variable comes with its next-state copy and the reverse: `relnext`
        // quantifies the one and renames the other.
        if let Some(&var) = vars
            .iter()
            .find(|&&v| v >= 2 * total || vars.binary_search(&(v ^ 1)).is_err())
        {
            return Err(c.error_at(vars_off, Invalid::UnpairedVar { var }));
        }
        let domain: Vec<u32> = vars.iter().copied().chain(action_vars.clone()).collect();
        table.check_domain(&c, relation, &domain, || format!("relation of group {g}"))?;
        let cur_vars: Vec<u32> = vars.iter().copied().filter(|v| v % 2 == 0).collect();
        groups.push(StoredGroup {
            relation,
            next_vars: cur_vars.iter().map(|v| v + 1).collect(),
            cur_vars,
        });
    }
    let reachable = match c.i32_in("has_reachable", 0..=1, "must be 0 or 1")? {
        1 => Some(sets.read(&mut c, &mut table, "reachable set")?),
        _ => None,
    };
    if c.remaining() > 0 {
        return Err(c.error(Invalid::TrailingBytes {
            count: c.remaining() as u64,
        }));
    }

    // The action label says which transition fired; reachability ignores it, as Sylvan's
    // relnext skips every relation variable outside the cube. One rebuild over the whole
    // table also drops the cubes' nodes, so every node kept belongs to a set or relation.
    let first_bottom = if action_bits > 0 {
        FIRST_ACTION_VAR
    } else {
        u32::MAX // no variable is that large: the rebuild only compacts
    };
    let roots: Vec<u64> = std::iter::once(initial.root)
        .chain(groups.iter().map(|g| g.relation))
        .chain(reachable.iter().map(|s| s.root))
        .collect();
    let mut roots = table.quantify_bottom(0, &roots, first_bottom).into_iter();
    let mut next_root = || roots.next().expect("one root per BDD");
    let initial = StoredSet {
        root: next_root(),
        ..initial
    };
    for g in &mut groups {
        g.relation = next_root();
    }
    let reachable = reachable.map(|s| StoredSet {
        root: next_root(),
        ..s
    });
    Ok(StoredModel {
        format: Format::C,
        state_bits: vec![bits as u32; vector_size as usize],
        prime_vars: state_vars.iter().map(|v| v + 1).collect(),
        state_vars,
        nodes: table.nodes,
        initial,
        groups,
        reachable,
    })
}

/// What a format-C `SET` must be: on the whole state vector (`k = vector_size`, the cube
/// all current-state variables), as Sylvan's `mc` writes its initial and reachable sets.
struct SetShape<'a> {
    vector_size: u64,
    state_vars: &'a [u32],
}

impl SetShape<'_> {
    /// `SET`: `NODES`, the root, `k` and the cube of the set's variables.
    fn read(
        &self,
        c: &mut Cursor,
        table: &mut NodeTable,
        what: &'static str,
    ) -> Result<StoredSet, ModelError> {
        read_nodes(c, table, layout_c)?;
        let root = read_root(c, table, what)?;
        let k_off = c.pos();
        let k = c.u64("set integer count k")?;
        if k != self.vector_size {
            return Err(c.error_at(
                k_off,
                Invalid::BadValue {
                    what: "set integer count k",
                    value: i128::from(k),
                    reason: "must equal vector_size (format-C sets are on the whole vector)",
                },
            ));
        }
        let vars_off = c.pos();
        let vars = read_cube(c, table, what)?;
        if vars != self.state_vars {
            return Err(c.error_at(
                vars_off,
                Invalid::PartialSet {
                    what,
                    vars: vars.len() as u64,
                    expected: self.state_vars.len() as u64,
                },
            ));
        }
        table.check_domain(c, root, &vars, || what.to_string())?;
        Ok(StoredSet { root, vars })
    }
}

/// A `vars` field: a reference to a cube of positive literals, a chain of nodes whose low
/// edges are `false` and whose last high edge is `true`. Returns its variables, ascending
/// (the table's ordering check makes every chain ascend).
fn read_cube(
    c: &mut Cursor,
    table: &NodeTable,
    what: &'static str,
) -> Result<Vec<u32>, ModelError> {
    let off = c.pos();
    let raw = c.u64("vars reference")?;
    let not_a_cube = |reason: String| {
        c.error_at(
            off,
            Invalid::NotACube {
                what,
                value: raw,
                reason,
            },
        )
    };
    let mut r = table.root(c, off, what, raw, 0, table.len())?;
    let mut vars = Vec::new();
    while r != COMPLEMENT {
        let index = r & INDEX_MASK;
        if index == 0 {
            return Err(not_a_cube("a path ends in false".into()));
        }
        if r & COMPLEMENT != 0 {
            return Err(not_a_cube(format!(
                "the edge to node {index} is complemented"
            )));
        }
        let n = table.nodes[(index - 1) as usize];
        if n.low != 0 {
            return Err(not_a_cube(format!(
                "node {index} has a low edge other than false"
            )));
        }
        vars.push(n.var);
        r = n.high;
    }
    Ok(vars)
}

/// Format C starts `int vector_size, int bits, int action_bits`, then the initial set's
/// `size_t count` and `count` 16-byte records, then `size_t root, size_t k` with `k` equal to
/// `vector_size`, then the `vars` cube: a reference to one of those records, which must be at
/// least `vector_size * bits` of them (one per variable of the cube). Every file the reader
/// accepts has this signature. In format B the same bytes are `int` fields (`state_bits`,
/// `action_bits`, the set's `k`, ...), which would have to form a node count that exactly
/// lands on a copy of `vector_size` and a valid cube further on. That can still happen by
/// chance, so [`parse_model`](super::parse_model) lets the format-B reader have a detected
/// format-C file that the format-C reader refuses and the format-B reader accepts.
pub(crate) fn has_signature(bytes: &[u8]) -> bool {
    let u64_at = |at: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        Some(u64::from_le_bytes(
            bytes.get(at..at.checked_add(8)?)?.try_into().ok()?,
        ))
    };
    let int_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
    };
    let (Some(vector_size), Some(bits), Some(action_bits), Some(count)) =
        (int_at(0), int_at(4), int_at(8), u64_at(12))
    else {
        return false;
    };
    let Some(k_at) = count
        .checked_mul(16)
        .and_then(|records| records.checked_add(12 + 8 + 8))
    else {
        return false;
    };
    let cube_vars = u64::from(vector_size.unsigned_abs()) * u64::from(bits.unsigned_abs());
    vector_size > 0
        && bits > 0
        && action_bits >= 0
        && count >= cube_vars
        && u64_at(k_at) == Some(vector_size as u64)
        && k_at
            .checked_add(8)
            .and_then(u64_at)
            .is_some_and(|vars| (1..=count).contains(&vars))
}
