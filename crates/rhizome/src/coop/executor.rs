//! The run queue: polls a PE's tasks until none is left, driving the PE's messages
//! between rounds.
//!
//! A round polls every task that was woken since the last round, then flushes the
//! aggregation buffers and runs the handlers of the messages received. So the requests
//! that all the round's tasks made to one PE leave together (Grappa's aggregation: a
//! task blocks, the core runs others, their messages share a buffer), and a PE whose
//! tasks never block still answers the other PEs once per round.

use crate::backoff::Backoff;
use crate::context::Ctx;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

type BoxTask<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// The tasks woken since the last round. `Waker` must be `Send + Sync`, so this is a
/// mutex even though only the PE's main thread ever locks it (uncontended: one atomic).
#[derive(Default)]
struct ReadyQueue(Mutex<Vec<usize>>);

impl ReadyQueue {
    fn push(&self, id: usize) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(id);
    }
    fn take_into(&self, out: &mut Vec<usize>) {
        out.clear();
        std::mem::swap(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()), out);
    }
}

/// The waker of one task: queues its id once, however often it is woken before it runs.
struct TaskWaker {
    id: usize,
    queued: AtomicBool,
    ready: Arc<ReadyQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.ready.push(self.id);
        }
    }
}

struct Task<'a> {
    future: BoxTask<'a>,
    flag: Arc<TaskWaker>,
    waker: Waker,
}

/// What a [`Scope`] shares with the loop: tasks spawned but not yet admitted.
#[derive(Default)]
struct Spawned<'a> {
    new: RefCell<Vec<BoxTask<'a>>>,
    /// Tasks admitted and not finished, plus those in `new`.
    live: Cell<usize>,
}

/// The handle that spawns tasks onto the PE's cooperative executor, given to the body
/// of [`Coop::run`](super::Coop::run); clone it into tasks that spawn more.
#[derive(Clone)]
pub struct Scope<'a> {
    spawned: Rc<Spawned<'a>>,
}

impl<'a> Scope<'a> {
    /// Starts `task` on this PE. It runs when the current task blocks or finishes (never
    /// in between two `.await` points of another task), and `Coop::run` returns only
    /// after it has finished.
    pub fn spawn(&self, task: impl Future<Output = ()> + 'a) {
        self.spawned.new.borrow_mut().push(Box::pin(task));
        self.spawned.live.set(self.spawned.live.get() + 1);
    }

    /// Tasks spawned on this PE that have not finished yet.
    pub fn live(&self) -> usize {
        self.spawned.live.get()
    }
}

/// Runs `body`, then every task it spawned (and they spawned) to completion, making
/// progress on the PE's messages between rounds.
pub(super) fn run<'a, R>(ctx: &Ctx, body: impl FnOnce(&Scope<'a>) -> R) -> R {
    let scope = Scope {
        spawned: Rc::new(Spawned::default()),
    };
    let result = body(&scope);
    let ready = Arc::new(ReadyQueue::default());
    let mut tasks: Vec<Option<Task<'a>>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut round: Vec<usize> = Vec::new();
    let mut backoff = Backoff::new(64);
    loop {
        for future in scope.spawned.new.take() {
            let id = free.pop().unwrap_or_else(|| {
                tasks.push(None);
                tasks.len() - 1
            });
            let flag = Arc::new(TaskWaker {
                id,
                queued: AtomicBool::new(false),
                ready: ready.clone(),
            });
            let waker = Waker::from(flag.clone());
            waker.wake_by_ref();
            tasks[id] = Some(Task {
                future,
                flag,
                waker,
            });
        }
        ready.take_into(&mut round);
        for &id in &round {
            let Some(task) = tasks[id].as_mut() else {
                continue;
            };
            // Cleared before the poll, so a wake during the poll queues it again.
            task.flag.queued.store(false, Ordering::Release);
            // Disjoint borrows of the task's fields: no waker clone per poll.
            let Task { future, waker, .. } = task;
            if future
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                tasks[id] = None;
                free.push(id);
                scope.spawned.live.set(scope.spawned.live.get() - 1);
            }
        }
        if scope.spawned.live.get() == 0 {
            return result;
        }
        ctx.flush();
        if ctx.progress() > 0 || !round.is_empty() {
            backoff.reset();
        } else {
            backoff.snooze();
        }
    }
}

/// Lets the other ready tasks of the PE (and its message handlers) run before the
/// calling task continues.
///
/// ```
/// use rhizome::World;
/// use rhizome::coop::{Coop, yield_now};
/// use std::cell::RefCell;
/// World::builder().pes(1).run(|ctx| {
///     let coop = Coop::new(ctx);
///     let order = RefCell::new(Vec::new());
///     coop.run(|s| {
///         for t in 0..2 {
///             let order = &order;
///             s.spawn(async move {
///                 order.borrow_mut().push((t, 0));
///                 yield_now().await;
///                 order.borrow_mut().push((t, 1));
///             });
///         }
///     });
///     assert_eq!(order.into_inner(), [(0, 0), (1, 0), (0, 1), (1, 1)]);
/// }).unwrap();
/// ```
pub fn yield_now() -> impl Future<Output = ()> {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}
