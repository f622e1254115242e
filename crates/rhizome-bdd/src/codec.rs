//! A compact byte encoding of BDDs, to move them between managers that share no memory
//! (another rank's, or a file's).
//!
//! Edges name nodes by the manager's table slots, which mean nothing in another manager,
//! so [`Manager::encode`] writes the nodes reachable from some roots as a list of their
//! own, children before parents, each child named by its position in the list, and
//! [`Manager::decode`] makes them again with [`OpCtx::make`](crate::OpCtx::make) in the
//! receiving manager, where they come out canonical: the same functions, the same node
//! count. Sliced reachability sends a level's states to the rank that owns them this way.
//!
//! The format, every number an unsigned LEB128 varint (7 bits a byte, low bits first):
//!
//! ```text
//! "RZB1"                    magic and version, 4 bytes
//! n                         number of nodes
//! r                         number of roots
//! n times: var low high     a node: its variable and its two children
//! r times: edge             the roots
//! ```
//!
//! An edge is `2 * position + complement`: position 0 is the constant `false` (so `1` is
//! `true`), position `i >= 1` the `i`-th node of the list, which must come before the
//! node that names it. Nodes are listed by variable, deepest first, so a list of a few
//! thousand nodes of one level differs in small numbers only.
//!
//! Decoding trusts nothing: a wrong magic, a number that overflows, a child that is not
//! an earlier node, a child whose variable is not below its parent's, a node whose two
//! children are equal, a variable beyond the table's range, a count larger than the
//! bytes could hold, or bytes left over are each a [`CodecError::Corrupt`] naming the
//! problem, never a panic, and nothing is made in the manager before the whole input
//! has been checked.

use crate::count::Walk;
use crate::edge::Bdd;
use crate::manager::{BddError, Manager};
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;

/// The first bytes of every encoding: format name and version.
const MAGIC: &[u8; 4] = b"RZB1";

/// Variables the node table can hold: a node keeps its variable in 23 bits.
const MAX_VAR: u32 = (1 << 23) - 1;

/// The fewest bytes a node takes: three one-byte numbers.
const MIN_NODE_BYTES: usize = 3;

/// Why [`Manager::decode`] gave no BDDs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The bytes are not an encoding this module wrote.
    #[error("corrupt BDD encoding: {0}")]
    Corrupt(String),
    /// The nodes do not fit in the receiving manager's table.
    #[error(transparent)]
    Bdd(#[from] BddError),
}

/// A node as listed in an encoding: variable and children as list edges.
#[derive(Clone, Copy)]
struct ListedNode {
    var: u32,
    low: u64,
    high: u64,
}

impl<S: NodeStore, C: OpCache> Manager<S, C> {
    /// The BDDs `roots`, with every node they reach, as bytes that
    /// [`decode`](Manager::decode) turns into the same functions in any manager (see the
    /// module's documentation for the format).
    ///
    /// ```
    /// use rhizome_bdd::Manager;
    /// let (mut a, mut b) = (Manager::new(1), Manager::new(1));
    /// let (x, y) = (a.ithvar(0), a.ithvar(4));
    /// let f = a.xor(x, y).unwrap();
    /// let bytes = a.encode(&[f, !f]);
    /// let got = b.decode(&bytes).unwrap();
    /// assert_eq!(got[1], !got[0]);
    /// assert_eq!(b.satcount(got[0], &[0, 4]), 2u32.into());
    /// assert_eq!(b.node_count(got[0]), a.node_count(f));
    /// ```
    pub fn encode(&self, roots: &[Bdd]) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(roots, &mut out);
        out
    }

    /// [`encode`](Manager::encode), appended to `out`: a caller that frames the encoding
    /// (a marker byte before it, say) writes the frame first and the encoding after it,
    /// with no copy.
    ///
    /// ```
    /// use rhizome_bdd::Manager;
    /// let (mut a, mut b) = (Manager::new(1), Manager::new(1));
    /// let f = a.ithvar(2);
    /// let mut framed = vec![0u8];
    /// a.encode_into(&[f], &mut framed);
    /// assert_eq!(&framed[1..], &a.encode(&[f])[..]);
    /// assert_eq!(b.decode(&framed[1..]).unwrap().len(), 1);
    /// ```
    pub fn encode_into(&self, roots: &[Bdd], out: &mut Vec<u8>) {
        let mut walk = Walk::new(roots.iter().copied());
        while walk.step(self) {}
        // Deepest variable first: every child (whose variable is larger) is listed before
        // its parents. Ties by slot, so that one manager always writes the same bytes.
        let mut listed: Vec<(u32, u64)> = walk
            .seen
            .iter()
            .map(|&i| (self.store.node(i).0, i))
            .collect();
        listed.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let position: std::collections::HashMap<u64, u64> = listed
            .iter()
            .enumerate()
            .map(|(k, &(_, i))| (i, k as u64 + 1))
            .collect();
        let edge = |b: Bdd| -> u64 {
            let at = if b.is_const() {
                0
            } else {
                position[&b.index()]
            };
            2 * at + u64::from(b.is_complemented())
        };
        out.reserve(4 + listed.len() * 8);
        out.extend_from_slice(MAGIC);
        put_varint(out, listed.len() as u64);
        put_varint(out, roots.len() as u64);
        for &(var, i) in &listed {
            let (_, low, high) = self.store.node(i);
            put_varint(out, u64::from(var));
            put_varint(out, edge(low));
            put_varint(out, edge(high));
        }
        for &r in roots {
            put_varint(out, edge(r));
        }
    }

    /// The BDDs that [`encode`](Manager::encode) wrote into `bytes`, made in this manager
    /// (unrooted: root them before the next operation). The input is checked whole before
    /// any node is made; a full table is collected or grown as in any operation.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Vec<Bdd>, CodecError> {
        let (nodes, roots) = parse(bytes)?;
        let made = self.run_many(&[], |c| {
            let mut table: Vec<Bdd> = Vec::with_capacity(nodes.len() + 1);
            table.push(Bdd::FALSE);
            let edge = |table: &[Bdd], e: u64| table[(e / 2) as usize].not_if(e % 2 == 1);
            for n in &nodes {
                if c.aborted() {
                    // The table is full: `run_many` collects, grows and decodes again.
                    return Vec::new();
                }
                table.push(c.make(n.var, edge(&table, n.low), edge(&table, n.high)));
            }
            roots.iter().map(|&r| edge(&table, r)).collect()
        })?;
        Ok(made)
    }
}

/// The nodes and roots of an encoding, every rule of the format checked.
fn parse(bytes: &[u8]) -> Result<(Vec<ListedNode>, Vec<u64>), CodecError> {
    let corrupt = |what: String| CodecError::Corrupt(what);
    let mut input = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| corrupt("it does not start with RZB1".into()))?;
    let n = get_varint(&mut input, "the node count")?;
    let r = get_varint(&mut input, "the root count")?;
    // Every node takes three bytes at least and every root one: a count the remaining
    // bytes cannot hold is refused before anything is allocated for it.
    let room = input.len() as u64;
    if n.saturating_mul(MIN_NODE_BYTES as u64).saturating_add(r) > room {
        return Err(corrupt(format!(
            "{n} nodes and {r} roots cannot fit in {room} bytes"
        )));
    }
    let mut nodes: Vec<ListedNode> = Vec::with_capacity(n as usize);
    // The variable of each list position (position 0, the constant, below every node).
    let mut vars: Vec<u32> = Vec::with_capacity(n as usize + 1);
    vars.push(u32::MAX);
    for k in 1..=n {
        let var = get_varint(&mut input, "a variable")?;
        if var > u64::from(MAX_VAR) {
            return Err(corrupt(format!(
                "node {k} has variable {var}, beyond {MAX_VAR}"
            )));
        }
        let var = var as u32;
        let low = get_varint(&mut input, "a low edge")?;
        let high = get_varint(&mut input, "a high edge")?;
        for (side, e) in [("low", low), ("high", high)] {
            let at = e / 2;
            if at >= k {
                return Err(corrupt(format!(
                    "node {k}'s {side} child is node {at}, not an earlier one"
                )));
            }
            if vars[at as usize] <= var {
                return Err(corrupt(format!(
                    "node {k} (variable {var}) has a {side} child of variable {}, not below it",
                    vars[at as usize]
                )));
            }
        }
        if low == high {
            return Err(corrupt(format!("node {k} has two equal children")));
        }
        vars.push(var);
        nodes.push(ListedNode { var, low, high });
    }
    let mut roots = Vec::with_capacity(r as usize);
    for _ in 0..r {
        let e = get_varint(&mut input, "a root")?;
        if e / 2 > n {
            return Err(corrupt(format!("a root names node {}, of {n}", e / 2)));
        }
        roots.push(e);
    }
    if !input.is_empty() {
        return Err(corrupt(format!("{} bytes after the roots", input.len())));
    }
    Ok((nodes, roots))
}

/// Appends `x` as an unsigned LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Takes an unsigned LEB128 varint from the front of `input`; `what` names it in the
/// error when the input ends inside it or it does not fit in 64 bits.
fn get_varint(input: &mut &[u8], what: &str) -> Result<u64, CodecError> {
    let mut x = 0u64;
    for (k, &b) in input.iter().enumerate() {
        let shift = 7 * k as u32;
        if shift > 63 || (shift == 63 && b > 1) {
            return Err(CodecError::Corrupt(format!("{what} overflows 64 bits")));
        }
        x |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            *input = &input[k + 1..];
            return Ok(x);
        }
    }
    Err(CodecError::Corrupt(format!("the input ends inside {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_their_edges() {
        for x in [0, 1, 127, 128, 16383, 16384, u64::MAX - 1, u64::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, x);
            let mut s = v.as_slice();
            assert_eq!(get_varint(&mut s, "x").unwrap(), x);
            assert!(s.is_empty());
        }
        // Eleven bytes, or a tenth byte above 1, do not fit in 64 bits.
        let mut s: &[u8] = &[0xff; 11];
        assert!(get_varint(&mut s, "x").is_err());
        let mut s: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(get_varint(&mut s, "x").is_err());
    }
}
