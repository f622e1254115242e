//! Request-reply messages: [`Ctx::call`] and the handle that waits for the reply.

use super::CallAm;
use super::message::{Message, encode_prefixed, take_prefixed};
use super::registry::REPLY_ID;
use crate::context::Ctx;
use std::cell::Cell;
use std::marker::PhantomData;
use std::task::{Poll, Waker};

/// Reply slots of the calls in flight from one PE.
#[derive(Default)]
pub(crate) struct Replies {
    slots: Vec<Option<Vec<u8>>>,
    /// The task to wake when a slot's reply arrives (calls awaited in [`crate::coop`]).
    wakers: Vec<Option<Waker>>,
    /// Slots whose handle was dropped before the reply came: the reply frees them.
    abandoned: Vec<bool>,
    free: Vec<u32>,
}

/// The handler of [`REPLY_ID`]: stores a reply's bytes in its slot.
pub(crate) fn receive_reply(ctx: &Ctx, _src: usize, input: &mut &[u8]) {
    let slot = u32::decode(input) as usize;
    let bytes = take_prefixed(input).to_vec();
    let waker = {
        let mut r = ctx.am.replies.borrow_mut();
        if std::mem::take(&mut r.abandoned[slot]) {
            r.free.push(slot as u32);
            return;
        }
        r.slots[slot] = Some(bytes);
        r.wakers[slot].take()
    };
    if let Some(w) = waker {
        w.wake();
    }
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
        let slot = self.send_request(pe, am, req);
        CallHandle {
            ctx: self,
            pe,
            slot,
            flushed: Cell::new(false),
            waited: false,
            _r: PhantomData,
        }
    }

    /// Buffers the request of a call to `pe`; returns the slot its reply will fill.
    pub(crate) fn send_request<Q: Message, R: Message>(
        &self,
        pe: usize,
        am: CallAm<Q, R>,
        req: &Q,
    ) -> u32 {
        let slot = self.reply_slot();
        self.send_raw(pe, am.id, |buf| {
            slot.encode(buf);
            req.encode(buf);
        });
        slot
    }

    /// A free reply slot, which the reply to one request will fill.
    pub(crate) fn reply_slot(&self) -> u32 {
        let mut r = self.am.replies.borrow_mut();
        match r.free.pop() {
            Some(s) => s,
            None => {
                r.slots.push(None);
                r.wakers.push(None);
                r.abandoned.push(false);
                (r.slots.len() - 1) as u32
            }
        }
    }

    /// The reply's bytes once slot `slot` holds them (the slot is then free again);
    /// until then `waker` is woken when the reply arrives.
    pub(crate) fn poll_reply(&self, slot: u32, waker: &Waker) -> Poll<Vec<u8>> {
        let mut r = self.am.replies.borrow_mut();
        let slot = slot as usize;
        match r.slots[slot].take() {
            Some(bytes) => {
                r.wakers[slot] = None;
                r.free.push(slot as u32);
                Poll::Ready(bytes)
            }
            None => {
                r.wakers[slot] = Some(waker.clone());
                Poll::Pending
            }
        }
    }

    /// Gives slot `slot` back when its handle is dropped unanswered: at once if the reply
    /// is in, else when it arrives (so a dropped call never keeps its slot).
    pub(crate) fn abandon_reply(&self, slot: u32) {
        let mut r = self.am.replies.borrow_mut();
        let slot = slot as usize;
        r.wakers[slot] = None;
        if r.slots[slot].take().is_some() {
            r.free.push(slot as u32);
        } else {
            r.abandoned[slot] = true;
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
    /// Set once `wait` has taken the reply (the slot is free again).
    waited: bool,
    _r: PhantomData<fn() -> R>,
}

impl<R> Drop for CallHandle<'_, R> {
    fn drop(&mut self) {
        if !self.waited {
            self.ctx.abandon_reply(self.slot);
        }
    }
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
    pub fn wait(mut self) -> R {
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
        self.waited = true;
        let mut input = &bytes[..];
        R::decode(&mut input)
    }
}

#[cfg(test)]
mod tests {
    use crate::World;

    /// Calls dropped before their reply give their slots back when the replies arrive:
    /// a second round of dropped calls reuses them instead of adding as many again.
    #[test]
    fn dropped_calls_free_their_reply_slots() {
        World::builder()
            .pes(2)
            .run(|ctx| {
                let double = ctx.register_call(|_, x: u64| 2 * x);
                let other = 1 - ctx.my_pe();
                for round in 0..2 {
                    for i in 0..100 {
                        drop(ctx.call(other, double, &i));
                    }
                    // Replies come back in order: once this one is in, so are the others.
                    assert_eq!(ctx.call(other, double, &21).wait(), 42);
                    let slots = ctx.am.replies.borrow().slots.len();
                    assert_eq!(slots, 101, "round {round}: reply slots in use");
                }
                ctx.barrier();
            })
            .unwrap();
    }
}
