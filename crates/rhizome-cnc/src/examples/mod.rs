//! CnC applications with results checked against sequential versions on every run: tiled
//! Cholesky ([`cholesky`]) and the Smith-Waterman wavefront ([`smith_waterman`]). Each is
//! a collective function that builds the graph on every PE, runs it, gathers the result
//! on PE 0, checks it there and gives every PE the same verdict.

pub mod cholesky;
pub mod smith_waterman;

use crate::CncError;
use rhizome::Ctx;

/// Why a checked example failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExampleError {
    /// The graph's run reported an error.
    #[error("{0}")]
    Cnc(CncError),
    /// The graph ran, but its result differs from the sequential one.
    #[error("wrong result: {0}")]
    Wrong(String),
}

/// Collective: PE 0's verdict (`Some` only there: a value, or why the result is wrong) on
/// every PE.
fn share_verdict(ctx: &Ctx, verdict: Option<Result<f64, String>>) -> (f64, Option<String>) {
    let mine = match verdict {
        Some(Ok(v)) => (v, None),
        Some(Err(why)) => (0.0, Some(why)),
        None => (0.0, None),
    };
    ctx.broadcast(mine, 0)
}
