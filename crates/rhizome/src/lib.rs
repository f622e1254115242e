//! Rhizome: a partitioned-global-address-space runtime for irregular, fine-grained
//! parallel programs.
//!
//! Modules:
//! - [`pool`]: the fork-join work-stealing pool inside one PE.
pub mod pool;
