//! Registration: message types get ids, the same on every PE.

use super::message::Message;
use super::{Am, CallAm, call};
use crate::collectives;
use crate::context::Ctx;

/// A handler as stored: it decodes its payload from the front of the input.
pub(crate) type Handler = Box<dyn Fn(&Ctx, usize, &mut &[u8])>;

/// Replies of [`Ctx::call`].
pub(crate) const REPLY_ID: u16 = 0;
/// Collective traffic (not counted for termination: its receiver always waits for it).
pub(crate) const COLLECTIVE_ID: u16 = 1;
const FIRST_USER_ID: u16 = 2;

impl Ctx {
    /// Installs the runtime's own handlers, which take the ids below [`FIRST_USER_ID`].
    pub(crate) fn register_runtime_handlers(&self) {
        assert_eq!(self.add_handler(Box::new(call::receive_reply)), REPLY_ID);
        assert_eq!(
            self.add_handler(Box::new(collectives::receive)),
            COLLECTIVE_ID
        );
        debug_assert_eq!(self.am.handlers.borrow().len(), FIRST_USER_ID as usize);
    }

    /// Collective: registers a fire-and-forget message type whose handler `f` runs on the
    /// target PE. Every PE registers the same handlers in the same order, before sending.
    /// Handlers may send messages and make calls, but not register or run collectives.
    pub fn register<M: Message>(&self, f: impl Fn(&Ctx, M) + 'static) -> Am<M> {
        Am::new(self.add_handler(Box::new(move |ctx, _src, input| f(ctx, M::decode(input)))))
    }

    /// Collective: registers a request-reply message type; `f` runs on the target PE and
    /// its result travels back to the caller's [`CallHandle`](super::CallHandle).
    pub fn register_call<Q: Message, R: Message>(
        &self,
        f: impl Fn(&Ctx, Q) -> R + 'static,
    ) -> CallAm<Q, R> {
        CallAm::new(self.add_handler(Box::new(move |ctx, src, input| {
            let slot = u32::decode(input);
            let r = f(ctx, Q::decode(input));
            ctx.send_reply(src, slot, &r);
        })))
    }

    pub(crate) fn add_handler(&self, h: Handler) -> u16 {
        let mut hs = self
            .am
            .handlers
            .try_borrow_mut()
            .expect("rhizome: handlers cannot be registered from inside a handler");
        let id = u16::try_from(hs.len()).expect("rhizome: more than 65535 message types");
        hs.push(h);
        id
    }
}
