//! Errors of a run, and how a PE ends when something below it fails.
//!
//! A run fails as a whole: the first PE that panics or meets a transport error aborts the
//! transport, which wakes every other PE with [`TransportError::Aborted`]; those unwind
//! quietly ([`AbortUnwind`]) and [`World::run`](crate::World::run) returns the first
//! PE's reason as [`RunError::Failed`].

use crate::transport::TransportError;

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Bad configuration (builder values or environment variables).
    #[error("configuration: {0}")]
    Config(String),
    /// A PE panicked or failed; every PE stopped. The text names the PE and the reason.
    #[error("{0}")]
    Failed(String),
}

/// Unwinds a PE that was stopped because another PE failed (no second panic message).
pub(crate) struct AbortUnwind;

/// Turns a transport error into the PE's end: a quiet unwind if the run was aborted
/// elsewhere, a panic with the error's message otherwise.
#[cold]
pub(crate) fn fail(e: TransportError) -> ! {
    match e {
        TransportError::Aborted(_) => std::panic::resume_unwind(Box::new(AbortUnwind)),
        e => panic!("rhizome: {e}"),
    }
}

/// The value of a transport call, or the PE's end (see [`fail`]).
#[inline]
pub(crate) fn ok<R>(r: Result<R, TransportError>) -> R {
    match r {
        Ok(v) => v,
        Err(e) => fail(e),
    }
}

/// The message of a panic payload, for the report of a failed PE.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}
