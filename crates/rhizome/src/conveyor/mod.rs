//! Conveyors: typed items pushed to a destination PE and pulled there, in batches.
//!
//! A [`Conveyor<T>`] is Bale's `convey` for Rust. Every PE pushes items to any PE
//! ([`Conveyor::push`]), pulls the items sent to it ([`Conveyor::pull`]) and calls
//! [`Conveyor::advance`] to move batches along; `advance(done)` declares, once `done` is
//! true, that this PE pushes no more, and returns `false` once every PE has declared so
//! and every item sent to this PE has been pulled.
//!
//! ```
//! use rhizome::{World, conveyor::Conveyor};
//! // Every PE sends each number 0..100 to PE `i % pes`; each PE sums what it receives.
//! let sums = World::builder().pes(3).run(|ctx| {
//!     let mut c = Conveyor::<u64>::new(ctx);
//!     let (mut next, mut sum) = (0u64, 0u64);
//!     while c.advance(next == 100) {
//!         while next < 100 && c.push(next, next as usize % ctx.num_pes()) {
//!             next += 1;
//!         }
//!         while let Some((item, _from)) = c.pull() {
//!             sum += item;
//!         }
//!     }
//!     sum
//! }).unwrap();
//! assert_eq!(sums.iter().sum::<u64>(), 3 * (0..100).sum::<u64>());
//! ```
//!
//! # How it moves items
//! Each destination has a lane: a buffer of at most `capacity` items that leaves as one
//! message of the transport when full (or when this PE is done or idle). Batches go
//! straight through the transport's message layer, not through the active-message
//! aggregation buffers: an item is copied once into its lane and once out of the received
//! buffer, with no per-item header, and the batch needs no second packing. A lane may
//! have [`CREDITS`] batches in flight; the receiver returns a credit when it has pulled a
//! batch. With no credit left, a full lane refuses the push: the caller pulls and
//! advances (which lets the credits in), then retries. So every PE holds at most
//! `pes * CREDITS` batches it has not pulled, however fast the others push.
//!
//! Batches from one PE to another arrive in order, so the last batch a PE sends to each
//! destination carries a final flag: a PE is complete when it has sent its own final
//! batches, received one from every PE, and pulled everything. No global wave is needed.
//!
//! # Progress
//! As in Bale, delivery is certain only once every PE has declared `done`; in addition, a
//! call to `advance` with no push attempted since the previous one sends the partly
//! filled lanes, so a PE that waits (for instance for replies) does not hold back items
//! others wait for. Handlers run while [`Conveyor::advance`] runs: the conveyor's own and
//! every other active message of the PE.
//!
//! A conveyor counts its messages for termination, so a [`Ctx::finish`] around its use
//! also waits for them.

mod wire;

use crate::backoff::Backoff;
use crate::context::Ctx;
use crate::error::ok;
use crate::memory::Pod;
use crate::transport::Messages;
use std::cell::RefCell;
use std::rc::Rc;
use wire::{BATCH, Batch, CREDIT, FINAL, HEADER, Inbox};
pub(crate) use wire::{append_item, item_bytes};

/// Batches one lane may have in flight (sent, not yet pulled by the receiver).
pub const CREDITS: usize = 4;

/// The buffer of one destination.
struct Lane {
    /// `HEADER` bytes, then the items; empty (no capacity) before the first push.
    buf: Vec<u8>,
    items: usize,
    in_flight: usize,
    final_sent: bool,
}

/// A conveyor of items of type `T` between all PEs. See the [module docs](self).
pub struct Conveyor<'c, T: Pod> {
    ctx: &'c Ctx,
    id: u16,
    capacity: usize,
    lanes: Vec<Lane>,
    inbox: Rc<RefCell<Inbox<T>>>,
    /// The batch being pulled, taken out of the inbox so that pulls do not borrow it.
    current: Option<Batch<T>>,
    /// Credits owed to each source for batches pulled.
    owed: Vec<u32>,
    /// This PE declared `done` this round.
    done: bool,
    /// Lanes whose final batch is still to be sent.
    finals_pending: usize,
    /// A push was attempted since the last `advance`.
    busy: bool,
    /// A push was accepted, or a batch sent, since the last `advance`.
    moved: bool,
    /// Waits while nothing moves: on a machine with more threads than cores, the PE this
    /// one waits for may need this core.
    backoff: Backoff,
    /// `advance` returned `false` this round.
    complete: bool,
}

impl<'c, T: Pod> Conveyor<'c, T> {
    /// Collective: a conveyor whose lanes hold as many items as fit in the context's
    /// aggregation buffer size ([`Ctx::aggregation_bytes`]).
    pub fn new(ctx: &'c Ctx) -> Self {
        let capacity = ctx.aggregation_bytes() / size_of::<T>().max(1);
        Self::with_capacity(ctx, capacity)
    }

    /// Collective: a conveyor whose lanes hold `capacity` items (at least 1). Every PE
    /// creates its conveyors in the same order (each takes a message id, as
    /// [`Ctx::register`] does); reuse one with [`Conveyor::reset`] rather than creating
    /// many.
    pub fn with_capacity(ctx: &'c Ctx, capacity: usize) -> Self {
        let capacity = capacity.clamp(1, u32::MAX as usize);
        let pes = ctx.num_pes();
        let inbox = Rc::new(RefCell::new(Inbox::new(pes)));
        let id = ctx.add_handler(wire::handler(Rc::downgrade(&inbox)));
        // No batch may arrive before its handler exists on the receiver.
        ctx.barrier();
        Conveyor {
            ctx,
            id,
            capacity,
            lanes: (0..pes)
                .map(|_| Lane {
                    buf: Vec::new(),
                    items: 0,
                    in_flight: 0,
                    final_sent: false,
                })
                .collect(),
            inbox,
            current: None,
            owed: vec![0; pes],
            done: false,
            finals_pending: pes,
            busy: false,
            moved: false,
            backoff: Backoff::new(64),
            complete: false,
        }
    }

    /// Items per lane.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Offers `item` for PE `pe`; `false` if its lane is full and has no credit (pull,
    /// advance, then offer it again). Panics if `pe` is not a PE or if this PE has
    /// already declared `done`.
    #[inline]
    pub fn push(&mut self, item: T, pe: usize) -> bool {
        assert!(!self.done, "rhizome: conveyor push after advance(true)");
        self.busy = true;
        let Some(lane) = self.lanes.get_mut(pe) else {
            panic!(
                "rhizome: conveyor push to PE {pe}, but there are {} PEs",
                self.ctx.num_pes()
            )
        };
        if lane.items == self.capacity && !self.send(pe, BATCH) {
            return false;
        }
        let lane = &mut self.lanes[pe];
        if lane.buf.is_empty() {
            lane.buf = self
                .ctx
                .mem
                .t
                .buffer(HEADER + self.capacity * size_of::<T>());
            lane.buf.resize(HEADER, 0);
        }
        // The buffer has room for `capacity` items and holds fewer (a full lane was sent
        // above, or the push refused).
        wire::append_item(&mut lane.buf, item);
        lane.items += 1;
        self.moved = true;
        if lane.items == self.capacity {
            // Leave at once if a credit allows, so the receiver can start on it.
            self.send(pe, BATCH);
        }
        true
    }

    /// The next item sent to this PE and the PE that pushed it, if one has arrived.
    #[inline]
    pub fn pull(&mut self) -> Option<(T, usize)> {
        loop {
            if let Some(b) = &mut self.current {
                if let Some(&item) = b.items.get(b.next) {
                    b.next += 1;
                    return Some((item, b.src));
                }
                self.release_current();
            }
            let next = self.inbox.borrow_mut().batches.pop_front();
            self.current = Some(next?);
        }
    }

    /// The items the next pulls will return from the batch being pulled (empty when it
    /// is exhausted or none has been pulled from yet), in order: a puller may look ahead,
    /// for instance to prefetch what the next items will touch ([`crate::hint::prefetch`]).
    #[inline]
    pub fn ahead(&self) -> &[T] {
        match &self.current {
            Some(b) => &b.items[b.next..],
            None => &[],
        }
    }

    /// Puts back the item the last [`pull`](Self::pull) returned, so the next pull returns
    /// it again (for a puller that could not pass it on). `false` if there is none to put
    /// back (nothing pulled since the last advance).
    pub fn unpull(&mut self) -> bool {
        match &mut self.current {
            Some(b) if b.next > 0 => {
                b.next -= 1;
                true
            }
            _ => false,
        }
    }

    /// Makes progress: runs received handlers, returns credits, sends full lanes (and, if
    /// no push was attempted since the last call, partly filled ones). `done` declares
    /// that this PE pushes nothing more this round; once declared it stays so, whatever
    /// later calls pass. Returns `false` once every PE has declared `done` and everything
    /// sent to this PE has been pulled; then [`reset`](Self::reset) starts a new round.
    pub fn advance(&mut self, done: bool) -> bool {
        if self.complete {
            return false;
        }
        self.ctx.progress();
        if self
            .current
            .as_ref()
            .is_some_and(|b| b.next == b.items.len())
        {
            self.release_current();
        }
        let received = {
            let mut inbox = self.inbox.borrow_mut();
            for (lane, c) in self.lanes.iter_mut().zip(inbox.credits.iter_mut()) {
                lane.in_flight -= std::mem::take(c) as usize;
            }
            inbox.finals == self.ctx.num_pes() && inbox.batches.is_empty()
        };
        for src in 0..self.owed.len() {
            if self.owed[src] > 0 {
                self.send_credits(src);
            }
        }
        self.done |= done;
        let idle = !std::mem::take(&mut self.busy);
        for pe in 0..self.lanes.len() {
            let lane = &self.lanes[pe];
            if lane.items == self.capacity || (idle && lane.items > 0) {
                self.send(pe, BATCH);
            }
            let lane = &self.lanes[pe];
            if self.done && !lane.final_sent && lane.items < self.capacity && self.send(pe, FINAL) {
                self.lanes[pe].final_sent = true;
                self.finals_pending -= 1;
            }
        }
        self.complete = received && self.finals_pending == 0 && self.current.is_none();
        if std::mem::take(&mut self.moved) {
            self.backoff.reset();
        } else if !self.complete {
            self.backoff.snooze();
        }
        !self.complete
    }

    /// Collective: starts a new round after [`advance`](Self::advance) returned `false` on
    /// this PE. Panics if the round is not complete here.
    pub fn reset(&mut self) {
        assert!(
            self.complete,
            "rhizome: conveyor reset before advance returned false"
        );
        // No PE may send batches of the new round to a PE still finishing the old one.
        self.ctx.barrier();
        self.inbox.borrow_mut().finals = 0;
        for lane in &mut self.lanes {
            lane.final_sent = false;
        }
        self.finals_pending = self.lanes.len();
        self.done = false;
        self.complete = false;
    }

    /// Sends lane `pe` as a batch of `kind` if a credit allows; `false` if none does.
    fn send(&mut self, pe: usize, kind: u8) -> bool {
        let lane = &mut self.lanes[pe];
        if lane.in_flight == CREDITS {
            return false;
        }
        let mut buf = std::mem::take(&mut lane.buf);
        if buf.len() < HEADER {
            buf = self.ctx.mem.t.buffer(HEADER);
            buf.resize(HEADER, 0);
        }
        wire::write_header(&mut buf, self.id, kind, lane.items as u32);
        lane.items = 0;
        lane.in_flight += 1;
        self.moved = true;
        self.ctx.termination.count_sent();
        ok(self.ctx.mem.t.send(pe, buf));
        true
    }

    /// Returns the credits owed to `src`.
    fn send_credits(&mut self, src: usize) {
        let mut buf = self.ctx.mem.t.buffer(HEADER);
        buf.resize(HEADER, 0);
        wire::write_header(
            &mut buf,
            self.id,
            CREDIT,
            std::mem::take(&mut self.owed[src]),
        );
        self.ctx.termination.count_sent();
        ok(self.ctx.mem.t.send(src, buf));
    }

    /// Drops the exhausted current batch: a credit to its source, its vector for reuse.
    fn release_current(&mut self) {
        if let Some(b) = self.current.take() {
            self.owed[b.src] += 1;
            self.inbox.borrow_mut().spare.push(b.items);
        }
    }
}
