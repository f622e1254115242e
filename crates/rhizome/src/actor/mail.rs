//! [`Mail`]: what a superstep body and a handler use to send, declare done and spawn.

use super::Mailbox;
use super::outbox::Outbox;
use super::tasks::TaskRunner;
use crate::backoff::Backoff;
use crate::context::Ctx;
use crate::memory::Pod;
use crate::pool::Worker;

/// The sending side of a selector during a superstep, given to its body and to every
/// handler. See the [module docs](super).
pub struct Mail<'a> {
    pub(super) ctx: &'a Ctx,
    pub(super) outbox: &'a Outbox,
    pub(super) tasks: &'a TaskRunner,
    /// `true` in the superstep body, `false` in a handler.
    pub(super) from_body: bool,
}

impl Mail<'_> {
    /// Sends `msg` to mailbox `mb` of PE `pe`, whose handler will run it once. Messages
    /// to one mailbox of one PE are batched and leave when the batch is full (or the
    /// mailbox is done, or the PE waits at the end of the superstep). In the body, a
    /// full batch also lets this PE handle what it has received meanwhile, and waits
    /// (handling messages) while the lane has [`CREDITS`](crate::conveyor::CREDITS)
    /// batches its receiver has not handled yet. Panics if `pe` is not a PE, if `mb`
    /// belongs to another selector, or if the body sends to a mailbox it declared done.
    #[inline(always)]
    pub fn send<M: Pod>(&self, mb: Mailbox<M>, msg: M, pe: usize) {
        let full = self
            .outbox
            .push(self.ctx, mb.index, mb.id, msg, pe, self.from_body);
        if full {
            self.send_full(mb.index, pe);
        }
    }

    /// Sends the full lane of mailbox `index` for `pe`. In the body: once the lane has a
    /// credit, and then handles what has arrived (a handler never waits: it may run
    /// inside the wait of the PE's body, or of a PE the receiver waits for).
    #[inline(never)]
    fn send_full(&self, index: usize, pe: usize) {
        if self.from_body && !self.outbox.has_credit(index, pe) {
            let mut backoff = Backoff::new(64);
            while !self.outbox.has_credit(index, pe) {
                if self.ctx.progress() > 0 {
                    backoff.reset();
                } else {
                    backoff.snooze();
                }
            }
        }
        self.outbox.send_lane(self.ctx, index, pe);
        if self.from_body {
            self.ctx.progress();
        }
    }

    /// Declares that the superstep body of this PE sends nothing more to `mb` (handlers
    /// still may: the superstep waits for their messages), and sends what `mb`'s lanes
    /// hold now, so its receivers can finish with it while this PE goes on with other
    /// mailboxes. Mailboxes not declared done when the body returns are declared done
    /// then.
    pub fn done<M: Pod>(&self, mb: Mailbox<M>) {
        self.outbox.set_done(mb.index, true);
        self.outbox.flush_mailbox(self.ctx, mb.index);
    }

    /// Starts a non-blocking task: `task` runs on the PE's worker threads, after the
    /// handler (or body) that spawned it has returned, while this PE keeps handling
    /// messages; the superstep returns only once it has completed. It receives the
    /// worker running it, so it may fork with [`Worker::join`]. A panic in it ends the
    /// run as a handler's panic does.
    ///
    /// For a blocking task (the handler waits for it), call
    /// [`ctx().pool().run(..)`](crate::pool::Pool::run) inside the handler instead.
    pub fn spawn(&self, task: impl FnOnce(&Worker) + Send + 'static) {
        self.tasks.spawn(Box::new(task));
    }

    /// The context of this PE (for its number, its pool, one-sided operations).
    pub fn ctx(&self) -> &Ctx {
        self.ctx
    }

    /// This PE's number.
    pub fn my_pe(&self) -> usize {
        self.ctx.my_pe()
    }

    /// Number of PEs.
    pub fn num_pes(&self) -> usize {
        self.ctx.num_pes()
    }

    /// In the superstep body: handles the messages received so far (a body that waits
    /// for something its handlers do calls this in its loop). Does nothing in a handler,
    /// where handlers may not nest.
    pub fn poll(&self) {
        if self.from_body {
            // Also sends this selector's lanes.
            self.ctx.flush();
            self.ctx.progress();
        }
    }
}
