//! Distributed data structures on the Rhizome runtime.
//!
//! This crate will hold the thesis' distributed hash table (`find_or_put` with linear
//! probing over one-sided chunk reads) and the Grappa flat-combining structures. It is
//! empty until the issue that builds them lands; `docs/architecture.md` of the repository
//! shows where it sits among the crates.
