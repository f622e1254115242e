//! Actors with mailboxes (selectors), as in HClib-Actor: fine-grained messages written as
//! sends and handlers, aggregated underneath, inside a `finish`-like superstep.
//!
//! A [`Selector<S>`] owns a PE-local state `S` and N mailboxes, each with its own message
//! type `M` ([`Mailbox<M>`], from [`Selector::mailbox`]) and handler
//! `process(&mut S, msg, sender_pe, &Mail)` ([`Selector::process`]). A superstep
//! ([`Selector::superstep`], collective) runs a body that sends with
//! [`Mail::send`]`(mailbox, msg, pe)` and declares [`Mail::done`]`(mailbox)`; it returns
//! once every mailbox of every PE is done, every message sent (by the body or by a
//! handler: multi-hop) has been handled, and every task spawned inside has completed.
//!
//! Handlers of one PE run one at a time on its main thread, so they get `&mut S` and
//! mutate the PE's state without atomics or locks. Two kinds of task may run beside them
//! on the PE's worker threads, the two forms of the FA-BSP chapter of seed 002:
//! - blocking: the handler forks and waits, `mail.ctx().pool().run(|w| w.join(..))`
//!   (a `finish { async .. }` inside the handler);
//! - non-blocking: [`Mail::spawn`] starts a `Send + 'static` task that escapes the handler
//!   and must complete before the superstep returns.
//!
//! ```
//! use rhizome::World;
//! use rhizome::actor::Selector;
//! // Every PE asks the owner of keys 0..100 (key k lives on PE k % pes) for k * k; owners
//! // answer on a second mailbox; each PE sums the answers it gets.
//! let sums = World::builder().pes(3).run(|ctx| {
//!     let mut sel = Selector::new(ctx, 0u64);
//!     let ask = sel.mailbox::<u64>();
//!     let answer = sel.mailbox::<u64>();
//!     sel.process(ask, move |_sum, key, from, mail| mail.send(answer, key * key, from));
//!     sel.process(answer, |sum, value, _from, _mail| *sum += value);
//!     sel.superstep(|mail| {
//!         for key in 0..100u64 {
//!             mail.send(ask, key, key as usize % mail.num_pes());
//!         }
//!         mail.done(ask);
//!     });
//!     sel.into_state()
//! }).unwrap();
//! assert_eq!(sums, vec![(0..100u64).map(|k| k * k).sum::<u64>(); 3]);
//! ```
//!
//! # How messages travel
//! Messages must be [`Pod`]: each mailbox has a lane per destination PE, a transport
//! buffer into which a message is copied as raw bytes, and which leaves as one transport
//! message of `capacity` messages (see `outbox.rs`). The receiver runs the mailbox's
//! handler over the batch in place: one dynamic call per batch, then a loop over its
//! messages into the (inlined) user handler. This is the conveyor's wire path
//! ([`crate::conveyor`]) without its pull queue, chosen over the active-message layer
//! ([`Ctx::send`]), whose messages carry a 2-byte id each and go through a handler lookup
//! and a decode each: with `Pod` messages a batch needs neither. Like a conveyor's lanes,
//! a lane may have [`CREDITS`](crate::conveyor::CREDITS) batches in flight before the
//! superstep body waits for their receiver to have handled one (handling messages
//! meanwhile), so a fast sender neither floods a slow receiver nor allocates fresh
//! buffers for batches nobody has handled yet. Handlers do not wait (a send that had to
//! wait for credits would have to run other handlers inside a handler): their batches
//! leave when full, beyond the credits. The body also handles what it has received each
//! time one of its batches leaves, so receivers keep up with senders. The superstep's
//! end is the four-counter termination detection of [`Ctx::finish`]: a batch counts as
//! sent from its first message, as handled when its handler has run; a credit counts as
//! one message.
//!
//! # Rules
//! Every PE creates its selectors and their mailboxes in the same order (each mailbox
//! takes a message id, as [`Ctx::register`] does) and gives each mailbox a handler before
//! its first superstep. Handlers may send, spawn and run blocking pool jobs, but not call
//! collectives, [`Ctx::finish`] or another superstep. A handler's panic ends the run.

mod mail;
mod outbox;
mod tasks;
#[cfg(test)]
mod tests;

pub use mail::Mail;

use crate::backoff::Backoff;
use crate::context::Ctx;
use crate::memory::Pod;
use outbox::{CREDIT, Outbox, take_batch};
use std::cell::{Ref, RefCell, RefMut};
use std::marker::PhantomData;
use std::rc::Rc;
use tasks::TaskRunner;

/// How many messages ahead of its handler [`Selector::process_ahead`]'s look-ahead runs.
pub const AHEAD: usize = 16;

/// A mailbox of messages of type `M` of one selector; copy it into handlers that send to
/// it. Obtained from [`Selector::mailbox`].
pub struct Mailbox<M> {
    index: usize,
    id: u16,
    _m: PhantomData<fn(M)>,
}
impl<M> Clone for Mailbox<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Mailbox<M> {}

/// A handler as stored: it runs over one batch, `(state, count, bytes, sender, mail)`.
type BatchHandler<S> = Box<dyn FnMut(&mut S, usize, &[u8], usize, &Mail<'_>)>;

/// The handler slot of one mailbox, set by [`Selector::process`].
type Slot<S> = RefCell<Option<BatchHandler<S>>>;

/// What the message handlers of a selector reach (through a weak reference).
struct Inner<S> {
    state: RefCell<S>,
    outbox: Rc<Outbox>,
    tasks: TaskRunner,
}

/// An actor with mailboxes on every PE: see the [module docs](self).
pub struct Selector<'c, S> {
    ctx: &'c Ctx,
    inner: Rc<Inner<S>>,
    slots: Vec<Rc<Slot<S>>>,
    /// Items per lane for new mailboxes, `None` for the aggregation buffer's worth.
    capacity: Option<usize>,
}

impl<'c, S: 'static> Selector<'c, S> {
    /// Collective: a selector with PE-local state `state` and no mailboxes yet, whose
    /// lanes hold as many messages as fit in the context's aggregation buffer
    /// ([`Ctx::aggregation_bytes`]).
    pub fn new(ctx: &'c Ctx, state: S) -> Self {
        let outbox = Rc::new(Outbox::default());
        // Lanes written by handlers while this PE waits must leave while it waits.
        ctx.add_buffered(Rc::downgrade(&outbox) as _);
        Selector {
            ctx,
            inner: Rc::new(Inner {
                state: RefCell::new(state),
                outbox,
                tasks: TaskRunner::new(ctx.pool().clone()),
            }),
            slots: Vec::new(),
            capacity: None,
        }
    }

    /// Collective: as [`new`](Self::new), with lanes of `capacity` messages (at least 1)
    /// for the mailboxes created afterwards.
    pub fn with_capacity(ctx: &'c Ctx, state: S, capacity: usize) -> Self {
        let mut s = Self::new(ctx, state);
        s.capacity = Some(capacity.max(1));
        s
    }

    /// Collective: adds a mailbox of messages of type `M`; give it a handler with
    /// [`process`](Self::process) before the next superstep.
    pub fn mailbox<M: Pod>(&mut self) -> Mailbox<M> {
        let index = self.slots.len();
        let slot: Rc<Slot<S>> = Rc::new(RefCell::new(None));
        let (inner, weak_slot) = (Rc::downgrade(&self.inner), Rc::downgrade(&slot));
        let id = self.ctx.add_handler(Box::new(move |ctx, src, input| {
            let (kind, count, data) = take_batch(input, size_of::<M>());
            // What arrives for a dropped selector (after a failure) is dropped.
            if let (Some(inner), Some(slot)) = (inner.upgrade(), weak_slot.upgrade()) {
                if kind == CREDIT {
                    inner.outbox.credited(index, src, count);
                } else {
                    deliver(ctx, &inner, &slot, index, count, data, src);
                    inner.outbox.return_credit(ctx, index, src);
                }
            }
        }));
        let capacity = self
            .capacity
            .unwrap_or(self.ctx.aggregation_bytes() / size_of::<M>().max(1));
        self.inner
            .outbox
            .add(id, capacity, size_of::<M>(), self.ctx.num_pes());
        self.slots.push(slot);
        Mailbox {
            index,
            id,
            _m: PhantomData,
        }
    }

    /// Sets the handler of `mb`: `handler(state, msg, sender_pe, mail)` runs once for
    /// every message sent to `mb` on this PE, one handler at a time.
    pub fn process<M: Pod>(
        &mut self,
        mb: Mailbox<M>,
        handler: impl FnMut(&mut S, M, usize, &Mail<'_>) + 'static,
    ) {
        self.process_ahead(mb, |_, _| {}, handler);
    }

    /// As [`process`](Self::process), with a look-ahead: `ahead(state, msg)` runs on each
    /// message of a received batch [`AHEAD`] messages before its handler does, for
    /// instance to prefetch what the handler will touch ([`crate::hint::prefetch`]), so
    /// that the cache misses of consecutive messages overlap.
    ///
    /// ```
    /// use rhizome::World;
    /// use rhizome::actor::Selector;
    /// // Each PE sums entries of a large table of its own, named by messages from both PEs.
    /// let sums = World::builder().pes(2).run(|ctx| {
    ///     let table: Vec<u64> = (0..1u64 << 16).collect();
    ///     let mut sel = Selector::new(ctx, (table, 0u64));
    ///     let read = sel.mailbox::<u64>();
    ///     sel.process_ahead(
    ///         read,
    ///         |(table, _), &i| rhizome::hint::prefetch(&table[i as usize]),
    ///         |(table, sum), i, _, _| *sum += table[i as usize],
    ///     );
    ///     sel.superstep(|mail| {
    ///         for i in 0..1000u64 {
    ///             mail.send(read, i * 61 % (1 << 16), i as usize % 2);
    ///         }
    ///         mail.done(read);
    ///     });
    ///     sel.into_state().1
    /// }).unwrap();
    /// let all: u64 = (0..1000u64).map(|i| i * 61 % (1 << 16)).sum();
    /// assert_eq!(sums.iter().sum::<u64>(), 2 * all);
    /// ```
    pub fn process_ahead<M: Pod>(
        &mut self,
        mb: Mailbox<M>,
        ahead: impl Fn(&S, &M) + 'static,
        mut handler: impl FnMut(&mut S, M, usize, &Mail<'_>) + 'static,
    ) {
        let slot = match self.slots.get(mb.index) {
            Some(slot) if self.inner.outbox.id(mb.index) == mb.id => slot,
            _ => panic!("rhizome: process for a mailbox of another selector"),
        };
        *slot.borrow_mut() = Some(Box::new(move |state, count, data, src, mail| {
            debug_assert_eq!(data.len(), count * size_of::<M>());
            let message = |i: usize| {
                // SAFETY: `data` holds `count` messages of `M` as raw bytes (the batch
                // was split with `size_of::<M>()`; the id, which names this mailbox and
                // so `M`, was checked by the dispatch), and callers pass `i < count`, so
                // message `i` lies within it. `M: Pod` accepts every bit pattern; the
                // read is unaligned because the received bytes have no particular
                // alignment.
                unsafe {
                    std::ptr::read_unaligned(data.as_ptr().add(i * size_of::<M>()) as *const M)
                }
            };
            for i in 0..count.min(AHEAD) {
                ahead(state, &message(i));
            }
            for i in 0..count {
                if i + AHEAD < count {
                    ahead(state, &message(i + AHEAD));
                }
                handler(state, message(i), src, mail);
            }
        }));
    }

    /// Collective: one superstep. Runs `body`, then handles messages until every
    /// mailbox of every PE is done, every message sent in the superstep (by any body or
    /// handler, transitively) has been handled and every task spawned in it has
    /// completed; returns what `body` returned. Panics if a mailbox has no handler.
    pub fn superstep<R>(&mut self, body: impl FnOnce(&Mail<'_>) -> R) -> R {
        if let Some(i) = self.slots.iter().position(|s| s.borrow().is_none()) {
            panic!("rhizome: mailbox {i} of a selector has no handler (call process)");
        }
        let (ctx, inner) = (self.ctx, &*self.inner);
        // No batch of this superstep may reach a PE that has not created every mailbox,
        // or that is still leaving the previous superstep.
        ctx.barrier();
        for i in 0..inner.outbox.len() {
            inner.outbox.set_done(i, false);
        }
        let mail = Mail {
            ctx,
            outbox: &inner.outbox,
            tasks: &inner.tasks,
            from_body: true,
        };
        let r = body(&mail);
        for i in 0..inner.outbox.len() {
            inner.outbox.set_done(i, true);
        }
        ctx.quiesce_with(|| inner.settle(ctx));
        inner.tasks.raise_panic();
        r
    }

    /// The state of this PE (outside a superstep).
    pub fn state(&self) -> Ref<'_, S> {
        self.inner.state.borrow()
    }

    /// The state of this PE, to change (outside a superstep).
    pub fn state_mut(&mut self) -> RefMut<'_, S> {
        self.inner.state.borrow_mut()
    }

    /// The state of this PE; ends the selector.
    pub fn into_state(self) -> S {
        // The message handlers hold only weak references, so this is the one strong one.
        match Rc::try_unwrap(self.inner) {
            Ok(inner) => inner.state.into_inner(),
            Err(_) => unreachable!("a selector's state has one owner"),
        }
    }
}

impl<S> Inner<S> {
    /// Before a termination wave: sends every lane, then waits (handling messages) until
    /// this PE's tasks have completed, so the wave sees everything they caused.
    fn settle(&self, ctx: &Ctx) {
        let mut backoff = Backoff::new(64);
        loop {
            self.outbox.flush_all(ctx);
            if self.tasks.pending() == 0 {
                break;
            }
            self.tasks.raise_panic();
            if ctx.progress() > 0 {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
        self.tasks.raise_panic();
    }
}

/// Runs the handler of mailbox `index` over one received batch.
fn deliver<S>(
    ctx: &Ctx,
    inner: &Inner<S>,
    slot: &Slot<S>,
    index: usize,
    count: usize,
    data: &[u8],
    src: usize,
) {
    const NESTED: &str = "rhizome: a selector handler ran inside another handler (handlers may not call finish, collectives or a superstep)";
    let mut handler = slot.try_borrow_mut().expect(NESTED);
    let Some(handler) = handler.as_mut() else {
        panic!("rhizome: a message for mailbox {index}, which has no handler");
    };
    let mut state = inner.state.try_borrow_mut().expect(NESTED);
    let mail = Mail {
        ctx,
        outbox: &inner.outbox,
        tasks: &inner.tasks,
        from_body: false,
    };
    handler(&mut state, count, data, src, &mail);
}
