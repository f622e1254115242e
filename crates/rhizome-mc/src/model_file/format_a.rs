//! Reader for format A (`thesis-2014/*-rgs.bdd`): one node numbering across the file.

use std::collections::{HashMap, HashSet};

use super::cursor::Cursor;
use super::error::{Invalid, ModelError};
use super::nodes::{NodeTable, Record};
use super::{COMPLEMENT, Format, INDEX_MASK, MAX_STATE_BITS, StoredGroup, StoredModel, StoredSet};

/// Smallest possible `REL`: node count, root and `k`, 8 bytes each.
const MIN_REL_BYTES: u64 = 24;

pub(crate) fn parse(bytes: &[u8], name: &str) -> Result<StoredModel, ModelError> {
    let mut c = Cursor::new(bytes, name);

    let vs_off = c.pos();
    let vector_size = c.u64("vector_size")?;
    if vector_size == 0 || vector_size > u64::from(u32::MAX) {
        return Err(c.error_at(
            vs_off,
            Invalid::BadValue {
                what: "vector_size",
                value: i128::from(vector_size),
                reason: "must be between 1 and 2^32-1",
            },
        ));
    }
    let bits_off = c.pos();
    let bits = c.u64("bits_per_integer")?;
    if bits == 0 || bits > 64 {
        return Err(c.error_at(
            bits_off,
            Invalid::BadValue {
                what: "bits_per_integer",
                value: i128::from(bits),
                reason: "must be between 1 and 64",
            },
        ));
    }
    let total = vector_size * bits;
    if total > MAX_STATE_BITS {
        return Err(c.error_at(
            vs_off,
            Invalid::BadValue {
                what: "vector_size × bits_per_integer",
                value: i128::from(total),
                reason: "exceeds the 2^23 state bits the 24-bit variable field can number",
            },
        ));
    }
    // Both variable arrays, 4 bytes per entry each.
    let total = c.check_fits(vs_off, "state bit", total, 8)?;

    let mut state_vars = Vec::with_capacity(total);
    let mut position: HashMap<u32, usize> = HashMap::with_capacity(total);
    for p in 0..total {
        let off = c.pos();
        let v = c.u32("vars entry")?;
        check_var_width(&c, off, "vars", v)?;
        if position.insert(v, p).is_some() {
            return Err(c.error_at(
                off,
                Invalid::DuplicateVar {
                    what: "vars",
                    var: v,
                },
            ));
        }
        state_vars.push(v);
    }
    let mut prime_vars = Vec::with_capacity(total);
    let mut primes: HashSet<u32> = HashSet::with_capacity(total);
    for _ in 0..total {
        let off = c.pos();
        let v = c.u32("prime_vars entry")?;
        check_var_width(&c, off, "prime_vars", v)?;
        if position.contains_key(&v) || !primes.insert(v) {
            return Err(c.error_at(
                off,
                Invalid::DuplicateVar {
                    what: "prime_vars",
                    var: v,
                },
            ));
        }
        prime_vars.push(v);
    }

    let mut table = NodeTable::new(state_vars.iter().chain(prime_vars.iter()).copied());

    // Initial set.
    read_nodes(&mut c, &mut table, layout_a)?;
    let root = read_root(&mut c, &table, "initial set")?;
    let k = read_k(&mut c, vector_size, bits, 4, "set variable")?;
    let mut vars = Vec::with_capacity(k);
    let mut seen: HashSet<u32> = HashSet::with_capacity(k);
    for _ in 0..k {
        let off = c.pos();
        let v = c.u32("set vars entry")?;
        if !position.contains_key(&v) {
            return Err(c.error_at(
                off,
                Invalid::VarOutsideModel {
                    what: "initial set vars",
                    var: v,
                },
            ));
        }
        if !seen.insert(v) {
            return Err(c.error_at(
                off,
                Invalid::DuplicateVar {
                    what: "initial set vars",
                    var: v,
                },
            ));
        }
        vars.push(v);
    }
    vars.sort_unstable();
    table.check_domain(&c, root, &vars, || "initial set".to_string())?;
    let initial = StoredSet { root, vars };

    // Relations.
    let group_count = c.count("group count", "group", MIN_REL_BYTES)?;
    let mut groups = Vec::with_capacity(group_count);
    for g in 0..group_count {
        read_nodes(&mut c, &mut table, layout_a)?;
        let root = read_root(&mut c, &table, "relation")?;
        let k = read_k(&mut c, vector_size, bits, 8, "relation variable pair")?;
        let mut cur = Vec::with_capacity(k);
        let mut seen: HashSet<u32> = HashSet::with_capacity(k);
        for _ in 0..k {
            let off = c.pos();
            let v = c.u32("relation vars entry")?;
            if !position.contains_key(&v) {
                return Err(c.error_at(
                    off,
                    Invalid::VarOutsideModel {
                        what: "relation vars",
                        var: v,
                    },
                ));
            }
            if !seen.insert(v) {
                return Err(c.error_at(
                    off,
                    Invalid::DuplicateVar {
                        what: "relation vars",
                        var: v,
                    },
                ));
            }
            cur.push(v);
        }
        let mut pairs = Vec::with_capacity(k);
        for &v in &cur {
            let off = c.pos();
            let prime = c.u32("relation prime_vars entry")?;
            let expected = prime_vars[position[&v]];
            if prime != expected {
                return Err(c.error_at(
                    off,
                    Invalid::PrimeMismatch {
                        var: v,
                        prime,
                        expected,
                    },
                ));
            }
            pairs.push((v, prime));
        }
        pairs.sort_unstable();
        let cur_vars: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let next_vars: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        let mut domain: Vec<u32> = cur_vars.iter().chain(&next_vars).copied().collect();
        domain.sort_unstable();
        table.check_domain(&c, root, &domain, || format!("relation of group {g}"))?;
        groups.push(StoredGroup {
            relation: root,
            cur_vars,
            next_vars,
        });
    }

    if c.remaining() > 0 {
        return Err(c.error(Invalid::TrailingBytes {
            count: c.remaining() as u64,
        }));
    }

    Ok(StoredModel {
        format: Format::A,
        state_bits: vec![bits as u32; vector_size as usize],
        state_vars,
        prime_vars,
        nodes: table.nodes,
        initial,
        groups,
        reachable: None,
    })
}

fn check_var_width(c: &Cursor, off: u64, what: &'static str, v: u32) -> Result<(), ModelError> {
    // Node records hold the variable in 24 bits; a wider one could never be tested.
    if u64::from(v) >= 2 * MAX_STATE_BITS {
        return Err(c.error_at(
            off,
            Invalid::BadValue {
                what,
                value: i128::from(v),
                reason: "does not fit the 24-bit variable field of a node",
            },
        ));
    }
    Ok(())
}

/// A record layout: the two words of a 16-byte record as `(var, low, high)`, `high` with its
/// complement mark. Formats A and C share `NODES` blocks but not the layout.
pub(crate) type Layout = fn(u64, u64) -> (u32, u64, u64);

/// Format A's record: `high` and `var` in the first word, `low` and the mark in the second.
pub(crate) fn layout_a(w0: u64, w1: u64) -> (u32, u64, u64) {
    (
        (w0 >> 40) as u32,
        w1 & INDEX_MASK,
        (w0 & INDEX_MASK) | (w1 & COMPLEMENT),
    )
}

/// `NODES`: a count and that many 16-byte records, numbered on from the nodes before.
pub(crate) fn read_nodes(
    c: &mut Cursor,
    table: &mut NodeTable,
    layout: Layout,
) -> Result<(), ModelError> {
    let off = c.pos();
    let count = c.u64("node count")?;
    let count = c.check_fits(off, "node", count, 16)? as u64;
    let limit = table.len() + count;
    for _ in 0..count {
        let rec_off = c.pos();
        let (var, low, high) = layout(c.u64("node record")?, c.u64("node record")?);
        let rec = Record {
            offset: rec_off,
            own: table.len() + 1,
            var,
            low,
            high,
        };
        table.push(c, rec, 0, limit)?;
    }
    Ok(())
}

pub(crate) fn read_root(
    c: &mut Cursor,
    table: &NodeTable,
    what: &'static str,
) -> Result<u64, ModelError> {
    let off = c.pos();
    let raw = c.u64("root")?;
    table.root(c, off, what, raw, 0, table.len())
}

/// Reads `k` (integers of a projection) and checks that `k × bits` variables of
/// `bytes_per_var` bytes fit; returns `k × bits`.
fn read_k(
    c: &mut Cursor,
    vector_size: u64,
    bits: u64,
    bytes_per_var: u64,
    what: &'static str,
) -> Result<usize, ModelError> {
    let off = c.pos();
    let k = c.u64("projection size k")?;
    if k > vector_size {
        return Err(c.error_at(
            off,
            Invalid::BadValue {
                what: "projection size k",
                value: i128::from(k),
                reason: "exceeds vector_size",
            },
        ));
    }
    c.check_fits(off, what, k * bits, bytes_per_var)
}
