//! Distributed data structures on the Rhizome runtime.
//!
//! - [`dht`]: the distributed hash table of the thesis' chapter 3 ([`DistributedHashTable`]):
//!   `find_or_put` of fixed-size keys over partitions in the PEs' global memory, reached
//!   one-sided (chunked linear probing with compare-and-swap) or owner-computes (batches
//!   of keys as active messages to the owner). The unique table of a distributed BDD
//!   store is the use it was built for.
//!
//! - [`fc`]: flat combining (seed 003, Grappa): a per-PE proxy combines the operations
//!   of the PE's cooperative tasks and commits them in one message per PE concerned;
//!   [`fc::GlobalStack`], [`fc::GlobalQueue`], [`fc::GlobalSet`] and [`fc::GlobalMap`],
//!   each also without combining (and stack and queue with combining at the master
//!   only), for comparison.
//!
//! `docs/architecture.md` of the repository shows where this crate sits among the crates.
pub mod dht;
pub mod fc;

pub use dht::DistributedHashTable;
