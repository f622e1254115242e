//! Home-based lazy-release-consistency distributed shared memory on the Rhizome runtime.
//!
//! Empty until the issue that builds it lands; see `ARCHITECTURE.md`.
