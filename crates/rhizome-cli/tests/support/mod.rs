//! Support shared by the command's end-to-end tests (see `cli.rs` in this folder).
mod cli;
pub use cli::*;
