//! Delegate operations: a request to another PE whose reply wakes only the calling task.
//!
//! Each operation sends one active message (aggregated with the round's other requests
//! to the same PE) and returns a [`Reply`] future; the owner runs the operation in its
//! message handler, so delegates to one PE are atomic with respect to each other, as in
//! Grappa, where every access to a core's memory is made by that core.

use super::Coop;
use crate::am::CallAm;
use crate::context::Ctx;
use crate::memory::GlobalPtr;
use crate::message::Message;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The pending reply of a delegate operation; `.await` it. Dropping it before the reply
/// arrives discards the reply when it comes (the operation itself still runs).
#[must_use = "a delegate's reply must be awaited"]
pub struct Reply<'c, R> {
    ctx: &'c Ctx,
    slot: u32,
    /// Set once the reply has been taken (the slot is free again).
    taken: bool,
    _r: PhantomData<fn() -> R>,
}

impl<'c, R> Reply<'c, R> {
    /// The reply that will fill `slot` (from [`Ctx::reply_slot`]).
    pub(super) fn new(ctx: &'c Ctx, slot: u32) -> Self {
        Reply {
            ctx,
            slot,
            taken: false,
            _r: PhantomData,
        }
    }
}

impl<R: Message> Future for Reply<'_, R> {
    type Output = R;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        // `Reply` is `Unpin` (a reference and plain values), so it can be reached mutably.
        let this = self.get_mut();
        let bytes = std::task::ready!(this.ctx.poll_reply(this.slot, cx.waker()));
        this.taken = true;
        Poll::Ready(R::decode(&mut &bytes[..]))
    }
}

impl<R> Drop for Reply<'_, R> {
    fn drop(&mut self) {
        if !self.taken {
            self.ctx.abandon_reply(self.slot);
        }
    }
}

/// A global pointer travels as (PE, segment, byte offset).
impl<T: 'static> Message for GlobalPtr<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.pe() as u32, self.segment(), self.byte_offset()).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Self {
        let (pe, segment, offset) = <(u32, u32, usize)>::decode(input);
        GlobalPtr::from_parts(pe as usize, segment, offset)
    }
}

/// The handlers of the memory delegates, registered by [`Coop::new`].
#[derive(Clone, Copy)]
pub(super) struct MemoryDelegates {
    read: CallAm<GlobalPtr<u64>, u64>,
    write: CallAm<(GlobalPtr<u64>, u64), ()>,
    compare_exchange: CallAm<(GlobalPtr<u64>, u64, u64), u64>,
    fetch_add: CallAm<(GlobalPtr<u64>, u64), u64>,
}

impl MemoryDelegates {
    /// Collective: registers the four handlers.
    pub(super) fn register(ctx: &Ctx) -> Self {
        MemoryDelegates {
            read: ctx.register_call(|ctx, p| ctx.load(p)),
            write: ctx.register_call(|ctx, (p, v)| ctx.store(p, v)),
            compare_exchange: ctx.register_call(|ctx, (p, current, new)| {
                ctx.compare_exchange(p, current, new)
                    .unwrap_or_else(|seen| seen)
            }),
            fetch_add: ctx.register_call(|ctx, (p, v)| ctx.fetch_add(p, v)),
        }
    }
}

impl<'c> Coop<'c> {
    /// Runs the handler of `am` on PE `pe` with `req`; the reply wakes the calling task
    /// only. Grappa's `call(pe, f)`: `f` is the handler registered (collectively) with
    /// [`Ctx::register_call`], as closures cannot travel between processes.
    pub fn call<Q, R>(&self, pe: usize, am: CallAm<Q, R>, req: &Q) -> Reply<'c, R>
    where
        Q: Message,
        R: Message,
    {
        Reply::new(self.ctx, self.ctx.send_request(pe, am, req))
    }

    /// Delegate read of a global word, made by its owner.
    pub fn read(&self, p: GlobalPtr<u64>) -> Reply<'c, u64> {
        self.call(p.pe(), self.memory.read, &p)
    }

    /// Delegate write of a global word, made by its owner; complete when awaited.
    pub fn write(&self, p: GlobalPtr<u64>, v: u64) -> Reply<'c, ()> {
        self.call(p.pe(), self.memory.write, &(p, v))
    }

    /// Delegate compare-and-swap: `new` is stored if the word held `current`; the reply
    /// is the value the word held (so it succeeded if that equals `current`).
    pub fn compare_exchange(&self, p: GlobalPtr<u64>, current: u64, new: u64) -> Reply<'c, u64> {
        self.call(p.pe(), self.memory.compare_exchange, &(p, current, new))
    }

    /// Delegate fetch-and-add; the reply is the value before the addition.
    pub fn fetch_add(&self, p: GlobalPtr<u64>, v: u64) -> Reply<'c, u64> {
        self.call(p.pe(), self.memory.fetch_add, &(p, v))
    }
}
