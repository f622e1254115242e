//! BDD edges: a node index plus a complement mark, in one 64-bit word.

use std::fmt;

/// Bit 63 of an edge: the edge denotes the negation of the node's function.
pub const COMPLEMENT: u64 = 1 << 63;
/// Bits 0..39 of an edge: the node index (0 is the constant `false`).
pub const INDEX_MASK: u64 = (1 << 40) - 1;

/// A reference to a Boolean function in a [`Manager`](crate::Manager): an edge to a node,
/// possibly complemented. Copying it is free; it stays valid until a garbage collection
/// that does not reach it from a root (see [`Manager::root`](crate::Manager::root)).
///
/// ```
/// use rhizome_bdd::Bdd;
/// assert_eq!(!Bdd::FALSE, Bdd::TRUE);
/// assert!(Bdd::TRUE.is_const());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Bdd(pub(crate) u64);

impl Bdd {
    /// The constant `false`.
    pub const FALSE: Bdd = Bdd(0);
    /// The constant `true` (the complemented `false` terminal).
    pub const TRUE: Bdd = Bdd(COMPLEMENT);
    /// Internal marker: an operation gave up because the node table is full. Never handed
    /// to users; index `2^40 - 1` is never allocated.
    pub(crate) const INVALID: Bdd = Bdd(INDEX_MASK);

    /// The edge whose raw word is `raw` (as returned by [`raw`](Bdd::raw)). Only
    /// meaningful for words taken from live edges of the same manager.
    pub fn from_raw(raw: u64) -> Bdd {
        Bdd(raw & (INDEX_MASK | COMPLEMENT))
    }

    /// The edge as a raw word (index in bits 0..39, complement mark in bit 63), the
    /// encoding of the model files.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// The node index this edge points at (0 for the constants).
    pub fn index(self) -> u64 {
        self.0 & INDEX_MASK
    }

    /// Whether the edge carries the complement mark.
    pub fn is_complemented(self) -> bool {
        self.0 & COMPLEMENT != 0
    }

    /// Whether this is `true` or `false`.
    pub fn is_const(self) -> bool {
        self.0 & INDEX_MASK == 0
    }

    /// The same edge without complement mark.
    pub(crate) fn regular(self) -> Bdd {
        Bdd(self.0 & !COMPLEMENT)
    }

    /// The edge complemented when `c` holds.
    #[inline]
    pub(crate) fn not_if(self, c: bool) -> Bdd {
        Bdd(self.0 ^ ((c as u64) << 63))
    }
}

impl std::ops::Not for Bdd {
    type Output = Bdd;
    /// Negation is free with complement edges: it flips the mark.
    #[inline]
    fn not(self) -> Bdd {
        Bdd(self.0 ^ COMPLEMENT)
    }
}

impl fmt::Debug for Bdd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Bdd::FALSE => write!(f, "false"),
            Bdd::TRUE => write!(f, "true"),
            b => write!(
                f,
                "{}#{}",
                if b.is_complemented() { "!" } else { "" },
                b.index()
            ),
        }
    }
}
