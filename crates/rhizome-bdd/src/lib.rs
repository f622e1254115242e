//! A parallel BDD package: see the crate README section in the workspace README.
