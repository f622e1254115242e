//! Jobs: the [`Job`] trait users implement, and the type-erased jobs the deques hold
//! (a serializable job, a closure that stays on its PE, a job pinned to its PE).

use super::future::{self, JobError, REMOTE_THIEF, State, encode_result};
use super::wire::{Msg, Wire, encode_job};
use super::worker::TaskCtx;
use super::{Shared, Stopped};
use crate::world::AbortUnwind;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A unit of work that may run on any PE: a serializable value with a `run` method.
///
/// Derive `Serialize` and `Deserialize` (serde) and register the type on every PE with
/// [`Tasks::register`](super::Tasks::register). The output travels back to the owner of
/// the future when the job ran elsewhere.
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    /// The job's result.
    type Output: Serialize + DeserializeOwned + Send + 'static;
    /// Does the work; `t` spawns sub-jobs and gives the PE's identity.
    fn run(self, t: &TaskCtx) -> Self::Output;
}

/// A job in a deque, type-erased.
pub(super) trait TaskObj: Send {
    fn run(self: Box<Self>, w: &TaskCtx);
    /// Encodes the job for PE `thief`; gives it back if it must stay on this PE.
    fn export(self: Box<Self>, sh: &Shared, thief: usize) -> Result<Wire, Task>;
    /// Records who runs the job (leapfrogging hint for its waiter).
    fn note_thief(&self, code: u64);
}
pub(super) type Task = Box<dyn TaskObj>;

/// Where a job's result goes: a future on this PE, or PE `owner`'s slot `id`.
pub(super) enum Dest<T> {
    Local(Arc<State<T>>),
    Remote { owner: u32, id: u64 },
}

/// A serializable job and where its result goes.
pub(super) struct JobTask<J: Job> {
    pub(super) job: J,
    pub(super) dest: Dest<J::Output>,
}

/// Runs `f`, turning a panic into a `JobError` (but letting a stop unwind on).
fn catch<R>(f: impl FnOnce() -> R) -> Result<R, JobError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        if p.is::<Stopped>() || p.is::<AbortUnwind>() {
            resume_unwind(p)
        }
        JobError::from_panic(&*p)
    })
}

impl<J: Job> TaskObj for JobTask<J> {
    fn run(self: Box<Self>, w: &TaskCtx) {
        let JobTask { job, dest } = *self;
        let r = catch(|| job.run(w));
        match dest {
            Dest::Local(st) => {
                st.fulfill(r);
                w.sh.jobs.complete();
            }
            Dest::Remote { owner, id } => w.sh.outbox.post(
                owner as usize,
                Msg::Value {
                    id,
                    bytes: encode_result(&r),
                },
            ),
        }
    }

    fn export(self: Box<Self>, sh: &Shared, thief: usize) -> Result<Wire, Task> {
        let JobTask { job, dest } = *self;
        let (owner, id) = match dest {
            Dest::Local(st) => {
                st.thief
                    .store(REMOTE_THIEF + thief as u64, Ordering::Relaxed);
                let id = sh.values.add_pending(future::remote_fulfiller(st), true);
                (sh.pe as u32, id)
            }
            Dest::Remote { owner, id } => (owner, id),
        };
        Ok(encode_job(&job, owner, id))
    }

    fn note_thief(&self, code: u64) {
        if let Dest::Local(st) = &self.dest {
            st.thief.store(code, Ordering::Relaxed);
        }
    }
}

/// A closure job: never leaves its PE.
pub(super) struct LocalTask<F, T> {
    pub(super) f: F,
    pub(super) state: Arc<State<T>>,
}

impl<F: FnOnce(&TaskCtx) -> T + Send + 'static, T: Send + 'static> TaskObj for LocalTask<F, T> {
    fn run(self: Box<Self>, w: &TaskCtx) {
        let LocalTask { f, state } = *self;
        let r = catch(|| f(w));
        state.fulfill(r);
        w.sh.jobs.complete();
    }
    fn export(self: Box<Self>, _: &Shared, _: usize) -> Result<Wire, Task> {
        Err(self)
    }
    fn note_thief(&self, code: u64) {
        self.state.thief.store(code, Ordering::Relaxed);
    }
}

/// A job that must stay on this PE (sent here with `async_on`).
pub(super) struct Pinned(pub(super) Task);

impl TaskObj for Pinned {
    fn run(self: Box<Self>, w: &TaskCtx) {
        self.0.run(w)
    }
    fn export(self: Box<Self>, _: &Shared, _: usize) -> Result<Wire, Task> {
        Err(self)
    }
    fn note_thief(&self, code: u64) {
        self.0.note_thief(code)
    }
}
