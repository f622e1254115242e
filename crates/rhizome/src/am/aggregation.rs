//! Aggregation: messages to one PE share a buffer, which leaves when full or when flushed.

use super::Am;
use super::message::Message;
use crate::context::Ctx;
use crate::error::ok;
use crate::transport::Messages;
use std::rc::Weak;

/// Default size of one per-destination aggregation buffer, in bytes.
pub const DEFAULT_AGGREGATION_BYTES: usize = 64 * 1024;

impl Ctx {
    /// Sends `msg` to PE `pe`, whose handler for `am` will run it. The message is buffered
    /// with others to the same PE and leaves when the buffer is full, on [`Ctx::flush`],
    /// or at the end of a [`Ctx::finish`]. A message larger than a buffer leaves at once.
    #[inline]
    pub fn send<M: Message>(&self, pe: usize, am: Am<M>, msg: &M) {
        self.send_raw(pe, am.id, |buf| msg.encode(buf));
    }

    /// Sends a message for `am` that `encode` writes as `M::encode` would, without an `M`
    /// value (e.g. from a borrowed form of it).
    pub(crate) fn send_encoded<M: Message>(
        &self,
        pe: usize,
        am: Am<M>,
        encode: impl FnOnce(&mut Vec<u8>),
    ) {
        self.send_raw(pe, am.id, encode);
    }

    /// Appends a message counted for termination.
    #[inline]
    pub(crate) fn send_raw(&self, pe: usize, id: u16, encode: impl FnOnce(&mut Vec<u8>)) {
        self.termination.count_sent();
        self.send_uncounted(pe, id, encode);
    }

    /// Appends a message without counting it for termination (collective traffic, which
    /// its receiver always waits for).
    #[inline]
    pub(crate) fn send_uncounted(&self, pe: usize, id: u16, encode: impl FnOnce(&mut Vec<u8>)) {
        let Some(cell) = self.am.out.get(pe) else {
            panic!(
                "rhizome: message to PE {pe}, but there are {} PEs",
                self.pes
            )
        };
        let full = {
            let mut buf = cell.borrow_mut();
            if buf.capacity() == 0 {
                *buf = self.mem.t.buffer(self.am.agg + 64);
            }
            buf.extend_from_slice(&id.to_le_bytes());
            encode(&mut buf);
            buf.len() >= self.am.agg
        };
        if full {
            self.flush_to(pe);
        }
    }

    /// Sends the aggregation buffer of PE `pe` now, if it holds anything.
    pub(crate) fn flush_to(&self, pe: usize) {
        let buf = {
            let mut b = self.am.out[pe].borrow_mut();
            if b.is_empty() {
                return;
            }
            std::mem::take(&mut *b)
        };
        ok(self.mem.t.send(pe, buf));
    }

    /// Sends every partly filled aggregation buffer now (and those of the layers with
    /// buffers of their own, such as selectors).
    pub fn flush(&self) {
        for pe in 0..self.pes {
            self.flush_to(pe);
        }
        for layer in self.am.buffered.borrow().iter() {
            if let Some(layer) = layer.upgrade() {
                layer.flush(self);
            }
        }
    }

    /// Makes every [`Ctx::flush`] also flush `layer`, while it lives: its buffered
    /// messages then leave whenever the PE waits, as active messages do.
    pub(crate) fn add_buffered(&self, layer: Weak<dyn Buffered>) {
        let mut all = self.am.buffered.borrow_mut();
        all.retain(|l| l.strong_count() > 0);
        all.push(layer);
    }
}

/// A layer that holds messages in buffers of its own (not in the aggregation buffers).
pub(crate) trait Buffered {
    /// Sends whatever it holds.
    fn flush(&self, ctx: &Ctx);
}
