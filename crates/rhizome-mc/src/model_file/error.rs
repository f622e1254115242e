//! Errors of the model-file readers.

/// What is wrong at a given place of a model file.
///
/// Node indices in these messages are the ones written in the file: global for format A,
/// local to the `DD` block for format B.
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
    /// The file is in format C (Sylvan 1.x `mc`, the SPIN 2017 distributed checker's
    /// models), which this version recognises but does not read yet.
    #[error(
        "format C (Sylvan 1.x `mc` / SPIN 2017 model with a stored reachable set) is not read yet; formats A (thesis-2014 `-rgs.bdd`) and B (LTSmin/Sylvan `bddmc` `.bdd`) are"
    )]
    FormatCNotRead,
    /// The file is an LTSmin list-decision-diagram model, not a BDD model.
    #[error(
        "this is an LDD file (LTSmin list decision diagrams, `.ldd`), not a BDD model: rhizome reads BDD model files, formats A (thesis-2014 `-rgs.bdd`) and B (LTSmin/Sylvan `bddmc` `.bdd`); use the `.bdd` file of the same model"
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
    /// Bytes after the last relation of a format-A file.
    #[error("{count} trailing bytes after the last relation")]
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
