//! Home-based lazy-release-consistency distributed shared memory on the Rhizome runtime.
//!
//! Empty until the issue that builds it lands; `docs/architecture.md` of the repository
//! shows where it sits among the crates.
