//! The repository's documentation, tested.
//!
//! The README shows every crate of the workspace, so its Rust blocks are doc tests of a
//! crate that sits above all of them rather than of one of them (each block is a complete
//! program; `sh` and `text` blocks are not compiled). `tests/docs.rs` checks the README and
//! `docs/` against the tree: no path outside the repository, every file they point at
//! exists, every code block marked, and the README's first two commands.
//!
//! This crate has no API: nothing depends on it.

/// The repository's README, so that `cargo test` compiles and runs every Rust block in it.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}
