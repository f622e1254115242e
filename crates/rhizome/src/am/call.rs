//! Request-reply messages: [`Ctx::call`] and the handle that waits for the reply.

use super::CallAm;
use super::message::{Message, encode_prefixed, take_prefixed};
use super::registry::REPLY_ID;
use crate::context::Ctx;
use std::cell::Cell;
use std::marker::PhantomData;

/// Reply slots of the calls in flight from one PE.
#[derive(Default)]
pub(crate) struct Replies {
    slots: Vec<Option<Vec<u8>>>,
    free: Vec<u32>,
}

/// The handler of [`REPLY_ID`]: stores a reply's bytes in its slot.
pub(crate) fn receive_reply(ctx: &Ctx, _src: usize, input: &mut &[u8]) {
    let slot = u32::decode(input);
    let bytes = take_prefixed(input).to_vec();
    ctx.am.replies.borrow_mut().slots[slot as usize] = Some(bytes);
}

impl Ctx {
    /// Sends a request to PE `pe`; the returned handle yields the handler's result.
    /// The request is flushed when the handle is waited on.
    pub fn call<Q: Message, R: Message>(
        &self,
        pe: usize,
        am: CallAm<Q, R>,
        req: &Q,
    ) -> CallHandle<'_, R> {
        let slot = {
            let mut r = self.am.replies.borrow_mut();
            match r.free.pop() {
                Some(s) => s,
                None => {
                    r.slots.push(None);
                    (r.slots.len() - 1) as u32
                }
            }
        };
        self.send_raw(pe, am.id, |buf| {
            slot.encode(buf);
            req.encode(buf);
        });
        CallHandle {
            ctx: self,
            pe,
            slot,
            flushed: Cell::new(false),
            _r: PhantomData,
        }
    }

    /// Sends the result of a call back to slot `slot` of the caller `pe`.
    pub(crate) fn send_reply<R: Message>(&self, pe: usize, slot: u32, r: &R) {
        self.send_raw(pe, REPLY_ID, |buf| {
            slot.encode(buf);
            // Length-prefixed so the reply handler can keep it without knowing `R`.
            encode_prefixed(buf, |buf| r.encode(buf));
        });
    }
}

/// The pending result of a [`Ctx::call`].
#[must_use = "wait on the handle to obtain the reply"]
pub struct CallHandle<'a, R> {
    ctx: &'a Ctx,
    pe: usize,
    slot: u32,
    flushed: Cell<bool>,
    _r: PhantomData<fn() -> R>,
}

impl<R: Message> CallHandle<'_, R> {
    fn ensure_flushed(&self) {
        if !self.flushed.get() {
            self.ctx.flush_to(self.pe);
            self.flushed.set(true);
        }
    }

    /// Whether the reply has arrived (flushes the request and makes progress).
    pub fn is_ready(&self) -> bool {
        self.ensure_flushed();
        self.ctx.progress();
        self.ctx.am.replies.borrow().slots[self.slot as usize].is_some()
    }

    /// Waits for the reply, running handlers meanwhile.
    pub fn wait(self) -> R {
        self.ensure_flushed();
        let slot = self.slot as usize;
        self.ctx
            .wait_until(|ctx| ctx.am.replies.borrow().slots[slot].is_some());
        let bytes = {
            let mut r = self.ctx.am.replies.borrow_mut();
            let b = r.slots[slot].take().expect("reply present");
            r.free.push(self.slot);
            b
        };
        let mut input = &bytes[..];
        R::decode(&mut input)
    }
}
