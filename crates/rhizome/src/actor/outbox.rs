//! The sending side of a selector: one lane per (mailbox, destination PE).
//!
//! A lane is a transport buffer holding a header, `id | count`, and then the raw bytes of
//! up to `capacity` messages of its mailbox. It leaves as one transport message when full,
//! when its mailbox is declared done, or when the PE settles at the end of a superstep.
//! The receiver's dispatch runs the mailbox's registered handler once per batch (see
//! `mod.rs`), which is why a batch counts as one message for termination: it is counted
//! as sent when its first item enters the lane, so an unsent lane keeps every wave
//! unbalanced and no superstep can end while it holds messages.

use crate::am::aggregation::Buffered;
use crate::context::Ctx;
use crate::conveyor::append_item;
use crate::error::ok;
use crate::memory::Pod;
use crate::transport::Messages;
use std::cell::RefCell;

/// Bytes before the first message of a batch: handler id (2), count (4).
pub(super) const HEADER: usize = 6;

/// The buffer of one destination of one mailbox.
struct Lane {
    /// `HEADER` bytes, then the messages; empty (no capacity) while nothing is pending.
    buf: Vec<u8>,
    items: usize,
}

/// The lanes of one mailbox and what this PE declared about it.
struct Lanes {
    /// The handler id of the mailbox (unique in its `Ctx`, so it also names the type).
    id: u16,
    capacity: usize,
    item_bytes: usize,
    /// This PE's superstep body sends no more to this mailbox.
    done: bool,
    lanes: Vec<Lane>,
}

/// Every lane of one selector on this PE.
#[derive(Default)]
pub(super) struct Outbox {
    mailboxes: RefCell<Vec<Lanes>>,
}

impl Outbox {
    /// Adds the lanes of a new mailbox, `index` the next one; `capacity` messages per lane.
    pub(super) fn add(&self, id: u16, capacity: usize, item_bytes: usize, pes: usize) {
        self.mailboxes.borrow_mut().push(Lanes {
            id,
            capacity: capacity.clamp(1, u32::MAX as usize),
            item_bytes,
            done: false,
            lanes: (0..pes)
                .map(|_| Lane {
                    buf: Vec::new(),
                    items: 0,
                })
                .collect(),
        });
    }

    /// Appends `msg` to the lane of mailbox `index` (handler `id`) for `pe`; `true` if
    /// the lane is now full (the caller sends it with [`send_lane`](Self::send_lane)).
    /// `from_body`: the superstep body sends, which a `done` forbids.
    #[inline]
    pub(super) fn push<M: Pod>(
        &self,
        ctx: &Ctx,
        index: usize,
        id: u16,
        msg: M,
        pe: usize,
        from_body: bool,
    ) -> bool {
        let mut boxes = self.mailboxes.borrow_mut();
        let b = match boxes.get_mut(index) {
            Some(b) if b.id == id => b,
            _ => panic!("rhizome: send to a mailbox of another selector"),
        };
        assert!(
            !(from_body && b.done),
            "rhizome: send to mailbox {index} after its done"
        );
        let capacity = b.capacity;
        let Some(lane) = b.lanes.get_mut(pe) else {
            panic!(
                "rhizome: send to PE {pe}, but there are {} PEs",
                ctx.num_pes()
            )
        };
        if lane.buf.is_empty() {
            lane.buf = ctx.mem.t.buffer(HEADER + capacity * size_of::<M>());
            lane.buf.resize(HEADER, 0);
            // The batch counts from its first message on (see the module docs).
            ctx.termination.count_sent();
        }
        // The buffer has room for `capacity` messages and holds fewer (a full lane is
        // sent at once by the caller).
        append_item(&mut lane.buf, msg);
        lane.items += 1;
        lane.items == capacity
    }

    /// Sends the lane of mailbox `index` for `pe` if it holds anything.
    pub(super) fn send_lane(&self, ctx: &Ctx, index: usize, pe: usize) {
        let (id, items, mut buf) = {
            let mut boxes = self.mailboxes.borrow_mut();
            let b = &mut boxes[index];
            let lane = &mut b.lanes[pe];
            if lane.items == 0 {
                return;
            }
            debug_assert_eq!(lane.buf.len(), HEADER + lane.items * b.item_bytes);
            (
                b.id,
                std::mem::take(&mut lane.items),
                std::mem::take(&mut lane.buf),
            )
        };
        buf[..2].copy_from_slice(&id.to_le_bytes());
        buf[2..HEADER].copy_from_slice(&(items as u32).to_le_bytes());
        ok(ctx.mem.t.send(pe, buf));
    }

    /// Sends every lane of mailbox `index` that holds anything.
    pub(super) fn flush_mailbox(&self, ctx: &Ctx, index: usize) {
        for pe in 0..ctx.num_pes() {
            self.send_lane(ctx, index, pe);
        }
    }

    /// Sends every lane that holds anything.
    pub(super) fn flush_all(&self, ctx: &Ctx) {
        for index in 0..self.len() {
            self.flush_mailbox(ctx, index);
        }
    }

    /// Declares mailbox `index` done (or, with `false`, open again for a new superstep).
    pub(super) fn set_done(&self, index: usize, done: bool) {
        self.mailboxes.borrow_mut()[index].done = done;
    }

    /// Handler id of mailbox `index`.
    pub(super) fn id(&self, index: usize) -> u16 {
        self.mailboxes.borrow()[index].id
    }

    /// Mailboxes.
    pub(super) fn len(&self) -> usize {
        self.mailboxes.borrow().len()
    }
}

impl Buffered for Outbox {
    /// A selector's lanes leave whenever the PE flushes: a PE that waits (in a
    /// collective, for a call, at the end of a superstep) sends what its handlers wrote.
    fn flush(&self, ctx: &Ctx) {
        self.flush_all(ctx);
    }
}

/// Splits one batch (after its handler id) off the front of `input`: (count, bytes).
pub(super) fn take_batch<'a>(input: &mut &'a [u8], item_bytes: usize) -> (usize, &'a [u8]) {
    let count = u32::from_le_bytes(input[..4].try_into().expect("4 bytes")) as usize;
    let (data, rest) = input[4..].split_at(count * item_bytes);
    *input = rest;
    (count, data)
}
