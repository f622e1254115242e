//! The sending side of a selector: one lane per (mailbox, destination PE).
//!
//! A lane is a transport buffer holding a header, `id | kind | count`, and then the raw
//! bytes of up to `capacity` messages of its mailbox. It leaves as one transport message
//! when full, when its mailbox is declared done, or when the PE settles at the end of a
//! superstep. The receiver's dispatch runs the mailbox's registered handler once per
//! batch (see `mod.rs`), which is why a batch counts as one message for termination: it
//! is counted as sent when its first item enters the lane, so an unsent lane keeps every
//! wave unbalanced and no superstep can end while it holds messages.
//!
//! Once it has handled a batch, the receiver returns a credit to the lane it came from (a
//! message of kind [`CREDIT`], counted for termination like a batch). A lane knows how
//! many of its batches are in flight; the superstep body waits for a credit before it
//! sends a lane that already has [`CREDITS`] in flight (see `Mail::send`), as a conveyor
//! does, so a PE holds at most a few batches per lane it has not handled and its buffers
//! are reused while still in cache. Handlers never wait: their batches leave at once.

use crate::am::aggregation::Buffered;
use crate::context::Ctx;
use crate::conveyor::{CREDITS, append_item};
use crate::error::ok;
use crate::memory::Pod;
use crate::transport::Messages;
use std::cell::RefCell;

/// Bytes before the first message of a batch: handler id (2), kind (1), count (4).
pub(super) const HEADER: usize = 7;

/// Message kinds (the byte after the handler id): a batch of messages.
pub(super) const BATCH: u8 = 0;
/// `count` batches sent by the receiver of this message have been handled.
pub(super) const CREDIT: u8 = 1;

/// The buffer of one destination of one mailbox.
struct Lane {
    /// `HEADER` bytes, then the messages; empty (no capacity) while nothing is pending.
    buf: Vec<u8>,
    items: usize,
    /// Batches sent on this lane whose credit has not come back.
    in_flight: usize,
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
                    in_flight: 0,
                })
                .collect(),
        });
    }

    /// Appends `msg` to the lane of mailbox `index` (handler `id`) for `pe`; `true` if
    /// the lane is now full (the caller sends it with [`send_lane`](Self::send_lane)).
    /// `from_body`: the superstep body sends, which a `done` forbids.
    #[inline(always)]
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
            _ => other_selector(),
        };
        if from_body && b.done {
            after_done(index);
        }
        let capacity = b.capacity;
        let Some(lane) = b.lanes.get_mut(pe) else {
            no_such_pe(pe, ctx.num_pes())
        };
        if lane.buf.is_empty() {
            lane.open(ctx, capacity * size_of::<M>());
        }
        // The buffer has room for `capacity` messages and holds fewer (a full lane is
        // sent at once by the caller).
        append_item(&mut lane.buf, msg);
        lane.items += 1;
        lane.items == capacity
    }

    /// Whether the lane of mailbox `index` for `pe` may send a batch without exceeding
    /// its credits.
    pub(super) fn has_credit(&self, index: usize, pe: usize) -> bool {
        self.mailboxes.borrow()[index].lanes[pe].in_flight < CREDITS
    }

    /// `count` batches of mailbox `index` sent to `pe` have been handled there.
    pub(super) fn credited(&self, index: usize, pe: usize, count: usize) {
        let mut boxes = self.mailboxes.borrow_mut();
        let lane = &mut boxes[index].lanes[pe];
        lane.in_flight = lane.in_flight.saturating_sub(count);
    }

    /// Tells `pe` that one batch it sent to mailbox `index` has been handled here.
    pub(super) fn return_credit(&self, ctx: &Ctx, index: usize, pe: usize) {
        let id = self.mailboxes.borrow()[index].id;
        let mut buf = ctx.mem.t.buffer(HEADER);
        buf.resize(HEADER, 0);
        write_header(&mut buf, id, CREDIT, 1);
        ctx.termination.count_sent();
        ok(ctx.mem.t.send(pe, buf));
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
            lane.in_flight += 1;
            (
                b.id,
                std::mem::take(&mut lane.items),
                std::mem::take(&mut lane.buf),
            )
        };
        write_header(&mut buf, id, BATCH, items as u32);
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

impl Lane {
    /// Gives an empty lane a buffer for `bytes` of messages; its batch counts as sent
    /// from now on (see the module docs).
    #[cold]
    #[inline(never)]
    fn open(&mut self, ctx: &Ctx, bytes: usize) {
        self.buf = ctx.mem.t.buffer(HEADER + bytes);
        self.buf.resize(HEADER, 0);
        ctx.termination.count_sent();
    }
}

#[cold]
#[inline(never)]
fn other_selector() -> ! {
    panic!("rhizome: send to a mailbox of another selector")
}

#[cold]
#[inline(never)]
fn after_done(index: usize) -> ! {
    panic!("rhizome: send to mailbox {index} after its done")
}

#[cold]
#[inline(never)]
fn no_such_pe(pe: usize, pes: usize) -> ! {
    panic!("rhizome: send to PE {pe}, but there are {pes} PEs")
}

/// Writes a header of `kind` with `count` at the start of `buf`.
fn write_header(buf: &mut [u8], id: u16, kind: u8, count: u32) {
    buf[..2].copy_from_slice(&id.to_le_bytes());
    buf[2] = kind;
    buf[3..HEADER].copy_from_slice(&count.to_le_bytes());
}

/// Splits one message (after its handler id) off the front of `input`: (kind, count,
/// bytes of the messages; none for a credit).
pub(super) fn take_batch<'a>(input: &mut &'a [u8], item_bytes: usize) -> (u8, usize, &'a [u8]) {
    let kind = input[0];
    let count = u32::from_le_bytes(input[1..5].try_into().expect("4 bytes")) as usize;
    let bytes = if kind == CREDIT {
        0
    } else {
        count * item_bytes
    };
    let (data, rest) = input[5..].split_at(bytes);
    *input = rest;
    (kind, count, data)
}
