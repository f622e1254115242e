//! Readers and a writer for the symbolic model files (BEEM models exported as BDDs by LTSmin).
//!
//! Three binary formats occur, all described in `docs/model-files.md`:
//!
//! * **Format A** (`thesis-2014/*-rgs.bdd`): one node numbering runs across the whole file;
//!   explicit current/next-state variable arrays.
//! * **Format B** (`ltsmin-2017/*.bdd`): each BDD is a `DD` block with its own 1-based
//!   numbering; state bit `p` is variable `2p`, its next-state copy `2p+1`.
//! * **Format C** (`spin17-beem/*.bdd`, Sylvan 1.x `mc`): format A's one numbering with
//!   format B's variables; a BDD's variables are given as a cube, and the file stores its
//!   reachable states ([`StoredModel::reachable`]).
//!
//! All are read into one representation, [`StoredModel`], whose `nodes` vector gives every
//! node of the file a single index (format-B blocks are renumbered by the count of nodes
//! read before them; format C keeps only the nodes of its sets and relations, not those of
//! its cubes). References are 64-bit words: bits 0..39 index (1-based, 0 = `false`),
//! bit 63 complement mark ([`COMPLEMENT`]); so `COMPLEMENT` alone is `true`.
//!
//! # Format detection
//!
//! [`detect_format`] looks at the 32-bit word at byte 4. In format A it is the high half of
//! the `u64` `vector_size`, which the reader requires to be below 2^32, so it is zero in
//! every file format A accepts. In format B it is `state_bits[0]`, which the reader requires
//! to be at least 1 (and `vector_size` must be at least 1, so that word always is a
//! `state_bits` entry). Hence: zero means A, non-zero means B, and no file is accepted
//! under one format while detection picks the other. A file shorter than 8 bytes cannot be
//! classified and is an error.
//!
//! A non-zero word is format C instead when the bytes also carry format C's signature: the
//! `size_t` node count at byte 12, and after that many 16-byte records the initial set's
//! `size_t k` equal to the `int vector_size` at byte 0, then a `vars` cube among those
//! records. Every file the format-C reader accepts has it (its sets must be on the whole
//! vector). The signature is a heuristic a format-B file can meet by chance (a generated
//! one did), so a file detected as C that the format-C reader refuses and the strict
//! format-B reader accepts is format B; if both refuse it, the format-C error is reported.
//!
//! # LDD files
//!
//! LTSmin also exports the same models as list decision diagrams (`.ldd`). Their header,
//! `int vector_size, int -1, size_t node_count`, puts `-1` where format A has zero and
//! format B a bit count of at least 1, so [`is_ldd`] tells them apart by content, and
//! [`parse_model`] refuses them with [`Invalid::LddNotRead`], naming the formats it reads.
//!
//! # Format B specifics
//!
//! * Group variables are the union of `r_proj` and `w_proj`: every bit `j` of integer `i` at
//!   global state-bit position `p` contributes current variable `2p` and next variable
//!   `2p+1`. The initial set with `k = -1` is on all current-state variables, otherwise on
//!   those of the listed integers.
//! * **Action labels.** LTSmin also encodes, below all state variables, which transition
//!   fired: action-label bit `i` (of the header's `action_bits`) is BDD variable
//!   `1000000 + i`, and each relation ends in such nodes. Reachability ignores them (Sylvan's
//!   `relnext` existentially quantifies every relation variable outside the state
//!   variables), so the reader does the same once, on reading: each relation that tests
//!   action variables is replaced by `∃ actions. R`, rebuilt reduced and canonical in its
//!   block. A [`StoredModel`] therefore only ever holds state variables, and a format-B
//!   rewrite ([`write_format_b`]) has `action_bits = 0`. A file whose state variables would
//!   reach 1000000 cannot declare action bits; a set may not test action variables.
//! * Everything after the last relation (reachable states, labels) is ignored.
//!
//! # Format C specifics
//!
//! * Sets (initial and reachable) must be on the whole state vector (`k = vector_size`,
//!   the cube all current-state variables), as Sylvan's `mc` writes them; a group's cube
//!   must hold its variables in pairs `2p`, `2p+1`. A relation node that tests a state
//!   variable outside its cube is refused like any node outside its BDD's variables (the
//!   specification would quantify it; no file does that, and a reader that silently did
//!   could hide a broken export).
//! * Action labels are quantified as in format B, in one rebuild of the whole table after
//!   reading (nodes may be shared between BDDs, so no block can be rebuilt on its own).
//! * `has_reachable` must be 0 or 1; nothing may follow the reachable set.
//!
//! # Validation
//!
//! Reading never panics and never allocates from an unchecked count: every count is checked
//! against the bytes remaining before anything is reserved. Every problem is a
//! [`ModelError`] displayed as `"<file>: byte <offset>: <what is wrong>"`. Refused:
//! truncation; negative or absurd counts and sizes (`vector_size`, bits, `k`, group
//! counts, projection lengths, integer indices); a node child that is the node itself, lies
//! ahead of it, or lies beyond the block; a child whose variable is not greater than its
//! parent's; a format-B leaf record; a root out of range or with reserved bits 40..62 set; a
//! format-B `DD` with a root count other than 1; a variable outside the model (including a
//! node's; format-B action variables count only in relations); duplicated variables; a
//! format-A relation whose prime variable is not the model's next-state copy of its current
//! variable; a node reachable from a BDD's root that tests a variable outside that BDD's
//! declared variables; trailing bytes in formats A and C; a format-C `vars` reference that
//! is not a cube of positive literals, a set not on the whole vector, an unpaired relation
//! variable.
//! A complemented low edge cannot be expressed by either record layout (the one
//! complement bit belongs to the high edge); [`StoredModel::validate`] checks it for models
//! built in memory. Unused record bits (format A: bits 40..62 of the second word; format B:
//! bits 40..61 of the first; format C: bits 40..62 of the first) are ignored, as the specification leaves them unused.
//!
//! # Example
//!
//! ```
//! use rhizome_mc::model_file::{parse_model, write_format_b, Format, COMPLEMENT};
//! # use rhizome_mc::model_file::{StoredModel, StoredNode, StoredSet, StoredGroup};
//! // One 1-bit integer; initial set {x = 0}; one group that sets x' = 1.
//! let model = StoredModel {
//!     format: Format::B,
//!     state_bits: vec![1],
//!     state_vars: vec![0],
//!     prime_vars: vec![1],
//!     nodes: vec![
//!         StoredNode { var: 0, low: 0, high: COMPLEMENT }, // 1: x (so 1|COMPLEMENT is "not x")
//!         StoredNode { var: 1, low: 0, high: COMPLEMENT }, // 2: x'
//!     ],
//!     initial: StoredSet { root: 1 | COMPLEMENT, vars: vec![0] },
//!     groups: vec![StoredGroup { relation: 2, cur_vars: vec![0], next_vars: vec![1] }],
//!     reachable: None,
//! };
//! let bytes = write_format_b(&model);
//! let back = parse_model(&bytes, "example.bdd", None).unwrap();
//! assert_eq!(back, model);
//! ```

mod cursor;
mod error;
mod format_a;
mod format_b;
mod format_c;
mod nodes;
mod subgraph;
mod validate;
mod write;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::Path;

pub use error::{Invalid, ModelError, ModelInvariantError};
pub use subgraph::StoredBdd;
pub use write::{try_write_format_a, try_write_format_b, try_write_format_c, write_format_b};

/// Complement mark of a reference (bit 63).
pub const COMPLEMENT: u64 = 1 << 63;
/// Index bits of a reference (bits 0..39).
pub const INDEX_MASK: u64 = (1 << 40) - 1;

/// Node records hold the variable in 24 bits, and each state bit needs two variables.
pub(crate) const MAX_STATE_BITS: u64 = 1 << 23;

/// The three on-disk formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `thesis-2014/*-rgs.bdd`: global node numbering, explicit variable arrays.
    A,
    /// `ltsmin-2017/*.bdd`: one `DD` block per BDD, local numbering, variables `2p`/`2p+1`.
    B,
    /// `spin17-beem/*.bdd` (Sylvan 1.x `mc`, the SPIN 2017 distributed checker): global
    /// numbering, variables `2p`/`2p+1` named by cubes, a stored reachable set.
    C,
}

/// A stored node; `low`/`high` are references into the model's ONE node numbering
/// (index = bits 0..39, 1-based, 0 = false; bit 63 = complement). `low` never complemented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StoredNode {
    /// The BDD variable tested.
    pub var: u32,
    /// Reference followed when the variable is 0 (never complemented).
    pub low: u64,
    /// Reference followed when the variable is 1.
    pub high: u64,
}

/// A set of states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSet {
    /// Root reference.
    pub root: u64,
    /// Current-state BDD vars the set is defined on, ascending.
    pub vars: Vec<u32>,
}

/// One transition group: a relation on a subset of the state bits (a projection); bits
/// outside it are left unchanged by the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredGroup {
    /// Root reference of the relation BDD over `cur_vars` and `next_vars`.
    pub relation: u64,
    /// Current-state BDD vars of the group (ascending).
    pub cur_vars: Vec<u32>,
    /// `next_vars[i]` is the next-state copy of `cur_vars[i]`.
    pub next_vars: Vec<u32>,
}

/// A model file's contents: state layout, all nodes, initial set and transition groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredModel {
    /// The format it was read from.
    pub format: Format,
    /// Bits of each state integer.
    pub state_bits: Vec<u32>,
    /// Current-state BDD var of each state bit, in state-vector order.
    pub state_vars: Vec<u32>,
    /// Next-state BDD var of each state bit.
    pub prime_vars: Vec<u32>,
    /// `nodes[i]` has index `i+1`; children-first (a node refers only to smaller indices).
    pub nodes: Vec<StoredNode>,
    /// The initial states.
    pub initial: StoredSet,
    /// The transition groups, in file order.
    pub groups: Vec<StoredGroup>,
    /// The reachable states, if the file stores them (format C; formats A and B cannot).
    pub reachable: Option<StoredSet>,
}

/// Reads and parses a model file, detecting its format.
///
/// Errors name the path as given.
pub fn read_model(path: &Path) -> Result<StoredModel, ModelError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ModelError::Io {
        file: name.clone(),
        source,
    })?;
    parse_model(&bytes, &name, None)
}

/// Parses a model file's bytes. `name` is used in error messages; `format` forces a format
/// (`None` detects it with [`detect_format`]).
pub fn parse_model(
    bytes: &[u8],
    name: &str,
    format: Option<Format>,
) -> Result<StoredModel, ModelError> {
    let forced = format.is_some();
    // No forced format makes an LDD file readable: say what it is rather than which of
    // its fields a BDD reader rejects.
    if is_ldd(bytes) {
        return Err(ModelError::Invalid {
            file: name.to_string(),
            offset: 0,
            what: Invalid::LddNotRead,
        });
    }
    let format = match format.or_else(|| detect_format(bytes)) {
        Some(f) => f,
        None => {
            return Err(ModelError::Invalid {
                file: name.to_string(),
                offset: 0,
                what: Invalid::TooShortToDetect {
                    len: bytes.len() as u64,
                },
            });
        }
    };
    match format {
        Format::A => format_a::parse(bytes, name),
        Format::B => format_b::parse(bytes, name),
        Format::C => match format_c::parse(bytes, name) {
            // The signature is a guess that a format-B file can meet by chance (its `int`
            // fields read as format C's counts); the strict B reader then decides.
            Err(e) if !forced => format_b::parse(bytes, name).map_err(|_| e),
            read => read,
        },
    }
}

/// Guesses the format from the file's header (see the module documentation for why this is
/// unambiguous for every file the readers accept); `None` if fewer than 8 bytes.
pub fn detect_format(bytes: &[u8]) -> Option<Format> {
    let word = bytes.get(4..8)?;
    if word == [0, 0, 0, 0] {
        Some(Format::A)
    } else if format_c::has_signature(bytes) {
        Some(Format::C)
    } else {
        Some(Format::B)
    }
}

/// Whether the bytes are an LTSmin list-decision-diagram (LDD) model (`.ldd`, written by
/// `pins2lts-sym --vset=ldd`): `int vector_size`, the initial set's `int k` (-1: the full
/// vector), then the set as Sylvan serialises an LDD: `size_t count`, `count` 16-byte node
/// records, `size_t root` (1-based past the two terminals, so at most `count + 1`). The
/// `-1` at byte 4 alone rules out both BDD formats (format A has zero there, format B a
/// bit count of at least 1); the node count and root make the guess specific.
pub fn is_ldd(bytes: &[u8]) -> bool {
    let int_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |at: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        Some(u64::from_le_bytes(
            bytes.get(at..at.checked_add(8)?)?.try_into().ok()?,
        ))
    };
    let (Some(vector_size), Some(-1), Some(count)) = (int_at(0), int_at(4), u64_at(8)) else {
        return false;
    };
    let root = count
        .checked_mul(16)
        .and_then(|records| records.checked_add(16))
        .and_then(u64_at);
    vector_size > 0 && root.is_some_and(|r| r <= count.saturating_add(1))
}

/// Which state integers a transition group reads and which it writes, as a format-B file
/// declares them (`r_proj`, `w_proj`); `rhizome reach --print-matrix` shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadWrite {
    /// Integers the group reads, ascending.
    pub read: Vec<usize>,
    /// Integers the group writes, ascending.
    pub write: Vec<usize>,
}

/// The read and write projections of every group of a format-B file, in file order;
/// `None` for formats that do not store them (format A lists only the union).
pub fn read_write_projections(
    bytes: &[u8],
    name: &str,
    format: Option<Format>,
) -> Result<Option<Vec<ReadWrite>>, ModelError> {
    let model = parse_model(bytes, name, format)?;
    Ok(match model.format {
        Format::B => Some(format_b::parse_full(bytes, name, false)?.1),
        _ => None,
    })
}

impl StoredModel {
    /// Number of state integers.
    pub fn vector_size(&self) -> usize {
        self.state_bits.len()
    }

    /// Total number of state bits.
    pub fn total_bits(&self) -> usize {
        self.state_vars.len()
    }

    /// The node a reference points at (`None` for the constants).
    pub fn node(&self, reference: u64) -> Option<&StoredNode> {
        let index = reference & INDEX_MASK;
        if index == 0 {
            None
        } else {
            self.nodes.get((index - 1) as usize)
        }
    }

    /// Number of distinct nodes reachable from `root` (constants not counted).
    pub fn reachable_nodes(&self, root: u64) -> usize {
        let mut seen = HashSet::new();
        let mut stack = vec![root & INDEX_MASK];
        while let Some(i) = stack.pop() {
            if i == 0 || !seen.insert(i) {
                continue;
            }
            if let Some(n) = self.nodes.get((i - 1) as usize) {
                stack.push(n.low & INDEX_MASK);
                stack.push(n.high & INDEX_MASK);
            }
        }
        seen.len()
    }
}

/// Whether reference `ra` of model `a` and reference `rb` of model `b` have the same shape:
/// same complement marks, same variables, same-shaped children, everywhere. Same shape implies
/// the same Boolean function; for reduced BDDs (as in the model files) the converse holds
/// too. Used to compare a model with its rewrite in another numbering.
pub fn same_function(a: &StoredModel, ra: u64, b: &StoredModel, rb: u64) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![(ra, rb)];
    while let Some((x, y)) = stack.pop() {
        if x & COMPLEMENT != y & COMPLEMENT {
            return false;
        }
        let (x, y) = (x & INDEX_MASK, y & INDEX_MASK);
        if !seen.insert((x, y)) {
            continue;
        }
        match (a.node(x), b.node(y)) {
            (None, None) if x == 0 && y == 0 => {}
            (Some(nx), Some(ny)) if nx.var == ny.var => {
                stack.push((nx.low, ny.low));
                stack.push((nx.high, ny.high));
            }
            _ => return false,
        }
    }
    true
}
