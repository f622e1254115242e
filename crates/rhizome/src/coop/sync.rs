//! Synchronization for cooperative tasks (Grappa's section 2): a global lock whose
//! waiters queue at its owner, a per-PE condition variable and a counting completion
//! event. Only the waiting task blocks; the PE runs its other tasks meanwhile.

use super::Coop;
use super::delegate::Reply;
use crate::am::Am;
use crate::context::Ctx;
use crate::message::Message;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// One lock's state at its owner: held or not, and the requests waiting for it.
#[derive(Default)]
struct LockState {
    held: bool,
    /// (requesting PE, its reply slot), granted in arrival order.
    waiters: VecDeque<(usize, u32)>,
}

/// The handlers and owner-side state of the global locks, registered by [`Coop::new`].
#[derive(Clone)]
pub(super) struct Locks {
    acquire: u16,
    release: Am<u32>,
    /// Locks made so far (`Coop::lock_on` numbers them in call order, the same on every PE).
    made: Rc<Cell<u32>>,
}

impl Locks {
    /// Collective: registers the acquire and release handlers.
    pub(super) fn register(ctx: &Ctx) -> Locks {
        let owned: Rc<RefCell<HashMap<u32, LockState>>> = Rc::default();
        let at_acquire = owned.clone();
        // Not `register_call`: the reply waits until the lock is free, so the handler
        // keeps the caller's slot instead of answering at once.
        let acquire = ctx.add_handler(Box::new(move |ctx, src, input| {
            let slot = u32::decode(input);
            let id = u32::decode(input);
            let mut owned = at_acquire.borrow_mut();
            let lock = owned.entry(id).or_default();
            if lock.held {
                lock.waiters.push_back((src, slot));
            } else {
                lock.held = true;
                ctx.send_reply(src, slot, &());
            }
        }));
        let release = ctx.register(move |ctx, id: u32| {
            let mut owned = owned.borrow_mut();
            let lock = owned
                .get_mut(&id)
                .expect("rhizome: release of a lock never acquired");
            match lock.waiters.pop_front() {
                Some((pe, slot)) => ctx.send_reply(pe, slot, &()),
                None => lock.held = false,
            }
        });
        Locks {
            acquire,
            release,
            made: Rc::default(),
        }
    }
}

/// A mutual-exclusion lock that lives on one PE; made by [`Coop::lock_on`].
///
/// Acquiring sends one message to the owner, which grants the lock at once or queues
/// the request; a release (when the [`LockGuard`] drops) is one message that grants the
/// next request in the queue. So a waiter costs its owner a queue entry, not a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalLock {
    owner: usize,
    id: u32,
}

/// Holds a [`GlobalLock`]; dropping it releases the lock.
pub struct LockGuard<'c> {
    ctx: &'c Ctx,
    release: Am<u32>,
    lock: GlobalLock,
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.ctx.send(self.lock.owner, self.release, &self.lock.id);
    }
}

impl<'c> Coop<'c> {
    /// Collective: a new lock owned by PE `owner`. Every PE makes its locks in the same
    /// order (they are numbered, not allocated).
    pub fn lock_on(&self, owner: usize) -> GlobalLock {
        assert!(
            owner < self.ctx.num_pes(),
            "rhizome: lock owner {owner} is not a PE"
        );
        let id = self.locks.made.get();
        self.locks.made.set(id + 1);
        GlobalLock { owner, id }
    }

    /// Acquires `lock`, blocking only the calling task until the owner grants it.
    /// Await it to the end: a future dropped after sending its request is still granted
    /// the lock, and nobody releases it.
    pub async fn acquire(&self, lock: GlobalLock) -> LockGuard<'c> {
        let slot = self.ctx.reply_slot();
        self.ctx.send_raw(lock.owner, self.locks.acquire, |buf| {
            slot.encode(buf);
            lock.id.encode(buf);
        });
        let granted: Reply<'c, ()> = Reply::new(self.ctx, slot);
        granted.await;
        LockGuard {
            ctx: self.ctx,
            release: self.locks.release,
            lock,
        }
    }
}

/// A waiter of a [`CondVar`]: set when signalled.
#[derive(Default)]
struct Waiter {
    signalled: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

/// A condition variable of one PE's tasks (Mesa style: a woken task rechecks its
/// condition). No lock goes with it: tasks are not preempted between two `.await`
/// points, so checking a condition and waiting is already atomic.
#[derive(Default)]
pub struct CondVar {
    waiters: RefCell<VecDeque<Rc<Waiter>>>,
}

impl CondVar {
    /// A condition variable with no waiters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Blocks the calling task until a [`signal`](Self::signal) or
    /// [`broadcast`](Self::broadcast) made after this call.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        let me = Rc::new(Waiter::default());
        self.waiters.borrow_mut().push_back(me.clone());
        std::future::poll_fn(move |cx| {
            if me.signalled.get() {
                Poll::Ready(())
            } else {
                *me.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }

    /// Wakes the task that has waited longest, if any.
    pub fn signal(&self) {
        let first = self.waiters.borrow_mut().pop_front();
        if let Some(w) = first {
            wake(&w);
        }
    }

    /// Wakes every waiting task.
    pub fn broadcast(&self) {
        let all = std::mem::take(&mut *self.waiters.borrow_mut());
        all.iter().for_each(|w| wake(w));
    }

    /// Tasks waiting now.
    pub fn waiting(&self) -> usize {
        self.waiters.borrow().len()
    }
}

fn wake(w: &Waiter) {
    w.signalled.set(true);
    if let Some(waker) = w.waker.borrow_mut().take() {
        waker.wake();
    }
}

/// A counter of outstanding work that tasks wait on until it reaches zero (Grappa's
/// `CompletionEvent`): [`enroll`](Self::enroll) before starting work,
/// [`complete`](Self::complete) when each piece is done.
#[derive(Default)]
pub struct CompletionEvent {
    outstanding: Cell<u64>,
    zero: CondVar,
}

impl CompletionEvent {
    /// An event with nothing outstanding.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `n` pieces of outstanding work.
    pub fn enroll(&self, n: u64) {
        self.outstanding.set(self.outstanding.get() + n);
    }

    /// Marks `n` pieces done; wakes the waiters when none is left. Panics if more are
    /// completed than were enrolled.
    pub fn complete(&self, n: u64) {
        let left = self
            .outstanding
            .get()
            .checked_sub(n)
            .expect("rhizome: CompletionEvent completed more than was enrolled");
        self.outstanding.set(left);
        if left == 0 {
            self.zero.broadcast();
        }
    }

    /// Pieces still outstanding.
    pub fn outstanding(&self) -> u64 {
        self.outstanding.get()
    }

    /// Blocks the calling task until nothing is outstanding.
    pub async fn wait(&self) {
        while self.outstanding.get() > 0 {
            self.zero.wait().await;
        }
    }
}
