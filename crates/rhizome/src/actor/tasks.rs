//! Non-blocking tasks of a selector: closures that escape the handler that spawned them
//! and run on the PE's worker threads while its main thread keeps handling messages.
//!
//! The PE's fork-join pool ([`Ctx::pool`](crate::Ctx::pool)) runs a job only while some
//! thread is inside [`Pool::run`], and that call blocks its caller. So that the main thread
//! stays free for communication (the FA-BSP split: one thread communicates, the workers
//! compute), a selector that spawns keeps one runner thread: it takes the queued tasks in
//! batches and runs each batch as one pool job, spread over the workers with `join`.
//! A counter of unfinished tasks lets the superstep wait for them; a task's panic is kept
//! and raised again on the main thread, so it ends the run like a handler's panic.

use crate::pool::{Pool, Worker};
use std::cell::OnceCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A task as queued.
pub(super) type Task = Box<dyn FnOnce(&Worker) + Send>;

/// What the runner thread and the main thread share.
#[derive(Default)]
struct Shared {
    /// Tasks spawned and not yet finished.
    pending: AtomicUsize,
    /// The message of the first task that panicked.
    panic: Mutex<Option<String>>,
}

/// The runner of one selector's non-blocking tasks, started on the first spawn.
pub(super) struct TaskRunner {
    pool: Arc<Pool>,
    shared: Arc<Shared>,
    runner: OnceCell<(Sender<Task>, JoinHandle<()>)>,
}

impl TaskRunner {
    pub(super) fn new(pool: Arc<Pool>) -> TaskRunner {
        TaskRunner {
            pool,
            shared: Arc::default(),
            runner: OnceCell::new(),
        }
    }

    /// Queues `task` for the worker threads.
    pub(super) fn spawn(&self, task: Task) {
        self.shared.pending.fetch_add(1, Ordering::Relaxed);
        let (tx, _) = self.runner.get_or_init(|| {
            let (tx, rx) = channel();
            let (pool, shared) = (self.pool.clone(), self.shared.clone());
            let thread = std::thread::Builder::new()
                .name("rhizome-actor-tasks".into())
                .spawn(move || run_batches(&pool, &shared, rx))
                .expect("rhizome: cannot start the selector's task thread");
            (tx, thread)
        });
        tx.send(task)
            .expect("rhizome: the selector's task thread has stopped");
    }

    /// Tasks spawned and not finished. When it returns 0, the effects of every finished
    /// task are visible to the caller (the decrement releases them, this load acquires).
    pub(super) fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::Acquire)
    }

    /// Raises again, on the calling thread, the panic of a task that panicked.
    pub(super) fn raise_panic(&self) {
        let taken = self.shared.panic.lock().map(|mut p| p.take());
        if let Ok(Some(msg)) = taken {
            panic!("{msg}");
        }
    }
}

impl Drop for TaskRunner {
    fn drop(&mut self) {
        if let Some((tx, thread)) = self.runner.take() {
            // Closing the channel ends the thread once it has run what it holds.
            drop(tx);
            let _ = thread.join();
        }
    }
}

/// The runner thread: each batch of queued tasks as one job of the pool.
fn run_batches(pool: &Pool, shared: &Shared, rx: Receiver<Task>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        pool.run(|w| run_all(w, batch, shared));
    }
}

/// Runs `tasks`, the halves in parallel through `join`.
fn run_all(w: &Worker, mut tasks: Vec<Task>, shared: &Shared) {
    if tasks.len() > 1 {
        let second = tasks.split_off(tasks.len() / 2);
        w.join(
            |w| run_all(w, tasks, shared),
            |w| run_all(w, second, shared),
        );
        return;
    }
    for task in tasks {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| task(w))) {
            let msg = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a selector task panicked".into());
            if let Ok(mut p) = shared.panic.lock() {
                p.get_or_insert(msg);
            }
        }
        shared.pending.fetch_sub(1, Ordering::Release);
    }
}
