//! Active messages: typed messages whose handlers run on the target PE.
//!
//! - [`registry`]: [`Ctx::register`] and [`Ctx::register_call`] give each message type a
//!   16-bit id, the same on every PE because every PE registers in the same order; the
//!   runtime's own messages (call replies, collective traffic) take the first ids.
//! - [`aggregation`]: [`Ctx::send`] appends `id | payload` to a per-destination buffer,
//!   which leaves when full, on [`Ctx::flush`], or when the PE waits.
//! - [`dispatch`]: [`Ctx::progress`] runs the handlers of received buffers, on the PE's
//!   main thread.
//! - [`call`]: request-reply messages, [`Ctx::call`] and its [`CallHandle`].
//! - [`message`]: the payload codec, [`Message`](message::Message).
//!
//! Every message sent through [`Ctx::send`] or [`Ctx::call`] counts for termination
//! ([`crate::termination`]): a `finish` scope waits for it and its consequences.

pub(crate) mod aggregation;
pub(crate) mod call;
pub(crate) mod dispatch;
pub mod message;
pub(crate) mod registry;

pub use aggregation::DEFAULT_AGGREGATION_BYTES;
pub use call::CallHandle;

#[cfg(doc)]
use crate::Ctx;
use registry::Handler;
use std::cell::RefCell;
use std::marker::PhantomData;

/// A registered fire-and-forget message type; obtained from [`Ctx::register`].
pub struct Am<M> {
    pub(crate) id: u16,
    _m: PhantomData<fn(M)>,
}
impl<M> Clone for Am<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Am<M> {}

/// A registered request-reply message type; obtained from [`Ctx::register_call`].
pub struct CallAm<Q, R> {
    pub(crate) id: u16,
    _m: PhantomData<fn(Q) -> R>,
}
impl<Q, R> Clone for CallAm<Q, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Q, R> Copy for CallAm<Q, R> {}

impl<M> Am<M> {
    fn new(id: u16) -> Self {
        Am {
            id,
            _m: PhantomData,
        }
    }
}

impl<Q, R> CallAm<Q, R> {
    fn new(id: u16) -> Self {
        CallAm {
            id,
            _m: PhantomData,
        }
    }
}

/// The active-message state of one PE (a part of its [`Ctx`]).
pub(crate) struct State {
    /// Size at which an aggregation buffer leaves.
    pub(crate) agg: usize,
    handlers: RefCell<Vec<Handler>>,
    /// One aggregation buffer per destination PE.
    out: Box<[RefCell<Vec<u8>>]>,
    replies: RefCell<call::Replies>,
    /// Layers with buffers of their own, flushed with the aggregation buffers.
    buffered: RefCell<Vec<std::rc::Weak<dyn aggregation::Buffered>>>,
}

impl State {
    pub(crate) fn new(pes: usize, agg: usize) -> State {
        State {
            agg,
            handlers: RefCell::new(Vec::new()),
            out: (0..pes).map(|_| RefCell::new(Vec::new())).collect(),
            replies: RefCell::new(call::Replies::default()),
            buffered: RefCell::new(Vec::new()),
        }
    }
}
