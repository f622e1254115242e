//! Errors of the model-file readers.

/// What is wrong at a given place of a model file.
///
/// Node indices in these messages are the ones written in the file: global for format A,
/// local to the `DD` block for format B, global for format C.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// The file ends in the middle of a field.
    #[error("truncated file: {what} needs {needed} bytes, only {available} left")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the file.
        available: u64,
    },
    /// A count announces more data than the rest of the file holds.
    #[error("{what} count {count} needs {count}×{elem_size} bytes but only {available} are left")]
    CountTooLarge {
        /// The counted thing.
        what: &'static str,
        /// The count read.
        count: u64,
        /// Bytes per element.
        elem_size: u64,
        /// Bytes left in the file.
        available: u64,
    },
    /// A count or size is negative or outside its meaningful range.
    #[error("{what} is {value}, {reason}")]
    BadValue {
        /// The field.
        what: &'static str,
        /// The value read (signed so negative `int`s print as such).
        value: i128,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A format-C `vars` reference is not a cube of positive literals (a chain of nodes
    /// whose low edges are `false`, ending in `true`).
    #[error("{what} vars reference {value:#x} is not a cube of positive literals: {reason}")]
    NotACube {
        /// Which BDD's variables.
        what: &'static str,
        /// The reference read.
        value: u64,
        /// What breaks the cube shape.
        reason: String,
    },
    /// A format-C set is not defined on the whole state vector.
    #[error(
        "{what} is on {vars} variables, but a format-C set must be on all {expected} current-state variables (k = vector_size)"
    )]
    PartialSet {
        /// Which set.
        what: &'static str,
        /// Variables in its cube.
        vars: u64,
        /// Current-state variables of the model.
        expected: u64,
    },
    /// A format-C relation's cube holds a state variable without its partner (current
    /// `2p` without next `2p+1`, or the reverse) or a variable that is not a state variable.
    #[error(
        "relation vars: variable {var} is not one of a current/next pair 2p, 2p+1 of the model's state variables"
    )]
    UnpairedVar {
        /// The variable.
        var: u32,
    },
    /// The file is an LTSmin list-decision-diagram model, not a BDD model.
    #[error(
        "this is an LDD file (LTSmin list decision diagrams, `.ldd`), not a BDD model: rhizome reads BDD model files, formats A (thesis-2014 `-rgs.bdd`), B (LTSmin/Sylvan `bddmc` `.bdd`) and C (Sylvan 1.x `mc` / SPIN 2017 `.bdd`); use the `.bdd` file of the same model"
    )]
    LddNotRead,
    /// The file is too short to tell format A from format B.
    #[error("file too short ({len} bytes) to detect its format")]
    TooShortToDetect {
        /// Length of the file.
        len: u64,
    },
    /// A node's child is the node itself.
    #[error("node {node}: {edge} edge refers to the node itself")]
    SelfReference {
        /// The node.
        node: u64,
        /// `"low"` or `"high"`.
        edge: &'static str,
    },
    /// A node's child is written after the node (children must come first).
    #[error("node {node}: {edge} edge refers forward to node {child}")]
    ForwardReference {
        /// The node.
        node: u64,
        /// `"low"` or `"high"`.
        edge: &'static str,
        /// The child index.
        child: u64,
    },
    /// A node's child index is beyond every node of the block.
    #[error("node {node}: {edge} edge refers to node {child}, but only {limit} nodes exist")]
    IndexOutOfRange {
        /// The node.
        node: u64,
        /// `"low"` or `"high"`.
        edge: &'static str,
        /// The child index.
        child: u64,
        /// Highest valid index.
        limit: u64,
    },
    /// A low edge carries the complement mark (canonical form forbids it).
    #[error("node {node}: low edge is complemented")]
    ComplementedLow {
        /// The node.
        node: u64,
    },
    /// A format-B record is a leaf (bit 62 of its first word); these files hold none.
    #[error("node {node}: leaf record (bit 62 set), not supported in a BDD")]
    LeafRecord {
        /// The node.
        node: u64,
    },
    /// A child's variable is not greater than its parent's.
    #[error(
        "node {node} (var {var}): {edge} child {child} has var {child_var}, not below it in the order"
    )]
    NotOrdered {
        /// The node.
        node: u64,
        /// Its variable.
        var: u32,
        /// `"low"` or `"high"`.
        edge: &'static str,
        /// The child index.
        child: u64,
        /// The child's variable.
        child_var: u32,
    },
    /// A root reference names a node that does not exist.
    #[error("{what} root refers to node {index}, but only {available} nodes exist")]
    RootOutOfRange {
        /// Which BDD.
        what: &'static str,
        /// The index.
        index: u64,
        /// Highest valid index.
        available: u64,
    },
    /// A reference has bits set outside the index (0..39) and the complement mark (63).
    #[error("{what} reference {value:#x} has reserved bits 40..62 set")]
    ReservedBits {
        /// Which reference.
        what: &'static str,
        /// The raw word.
        value: u64,
    },
    /// A format-B `DD` block has a root count other than 1.
    #[error("DD block has {count} roots, expected exactly 1")]
    RootCount {
        /// The count read.
        count: i64,
    },
    /// A variable that is not one of the model's BDD variables.
    #[error("{what}: variable {var} is not one of the model's variables")]
    VarOutsideModel {
        /// Where it occurs.
        what: &'static str,
        /// The variable.
        var: u32,
    },
    /// A node of a BDD tests a variable outside the BDD's declared variables.
    #[error("node {node} tests variable {var}, which is not among the variables of the {bdd}")]
    VarOutsideBdd {
        /// The node.
        node: u64,
        /// Its variable.
        var: u32,
        /// Which BDD (e.g. `"initial set"`, `"relation of group 3"`).
        bdd: String,
    },
    /// A variable occurs twice where each must be distinct.
    #[error("{what}: variable {var} occurs more than once")]
    DuplicateVar {
        /// Where.
        what: &'static str,
        /// The variable.
        var: u32,
    },
    /// A format-A relation pairs a current-state var with the wrong next-state var.
    #[error(
        "relation var {var} is paired with prime var {prime}, but the model pairs it with {expected}"
    )]
    PrimeMismatch {
        /// Current-state var.
        var: u32,
        /// Next-state var given.
        prime: u32,
        /// Next-state var the model declares.
        expected: u32,
    },
    /// Bytes after the last relation of a format-A file, or after the reachable set of a
    /// format-C file.
    #[error("{count} trailing bytes after the end of the model")]
    TrailingBytes {
        /// How many.
        count: u64,
    },
}

/// An error reading a model file.
///
/// Displayed as one line: `"<file>: byte <offset>: <what is wrong>"`, or
/// `"<file>: <io error>"` when the file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The path as given.
        file: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The contents are malformed.
    #[error("{file}: byte {offset}: {what}")]
    Invalid {
        /// The file name as given.
        file: String,
        /// Byte offset of the offending field or record.
        offset: u64,
        /// What is wrong.
        what: Invalid,
    },
}

impl ModelError {
    /// Byte offset of a content error (`None` for I/O errors).
    pub fn offset(&self) -> Option<u64> {
        match self {
            ModelError::Io { .. } => None,
            ModelError::Invalid { offset, .. } => Some(*offset),
        }
    }

    /// The content problem (`None` for I/O errors).
    pub fn invalid(&self) -> Option<&Invalid> {
        match self {
            ModelError::Io { .. } => None,
            ModelError::Invalid { what, .. } => Some(what),
        }
    }
}

/// Why a [`StoredModel`](super::StoredModel) cannot be written in a given format, or breaks an
/// invariant of the in-memory representation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModelInvariantError(pub String);
