//! Hooks for a layer above the pool (the futures and cluster-stealing scheduler of
//! [`crate::tasks`]), so that the pool's threads are its workers too: a PE has one set of
//! worker threads, whatever runs on them.
//!
//! - The *idle hook* of a run: what a background worker does while the run is active (the
//!   layer's own worker loop, which also steals fork-join tasks).
//! - The *helper* of a thread: one step of the layer's scheduling, taken by a `join`
//!   waiting for its thief when there is no fork-join task to steal back, so the wait
//!   neither blocks the layer's jobs (or its messages) nor waits on them.

use super::{Pool, Shared, Worker};
use std::cell::Cell;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The hook with its lifetime erased; it is only reachable while `Pool::run_with_idle`,
/// which borrows it, runs (see [`HookSlot`]).
type Hook = &'static (dyn Fn(&Worker) + Sync);

/// Where the hook of the current run lives. Workers call it under the read lock; the run
/// clears it under the write lock, so it returns only once no worker is inside the hook.
#[derive(Default)]
pub(super) struct HookSlot {
    hook: RwLock<Option<Hook>>,
    /// Whether a hook is installed: lets idle workers of a plain run skip the lock.
    installed: AtomicBool,
}

/// Clears the hook when the run ends, also by unwinding.
struct Uninstall<'a>(&'a Shared);

impl Drop for Uninstall<'_> {
    fn drop(&mut self) {
        let slot = &self.0.idle;
        slot.installed.store(false, Ordering::Relaxed);
        *slot.hook.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Pool {
    /// Like [`run`](Pool::run), and the other workers call `idle` with their context
    /// whenever they find no fork-join task to steal; `idle` should return soon after the
    /// work it looks for is over. `run_with_idle` returns once `f` has returned and no
    /// worker is inside `idle`. Called from inside a job of this pool, it runs `f` inline
    /// and installs nothing.
    /// `f` runs on the calling thread, so it need not be `Send`.
    pub(crate) fn run_with_idle<R>(
        &self,
        idle: &(dyn Fn(&Worker) + Sync),
        f: impl FnOnce(&Worker) -> R,
    ) -> R {
        self.run_serialised(
            || {
                // SAFETY: only the lifetime is erased. The hook is reachable only through
                // the slot, which `Uninstall` empties before this call returns or unwinds,
                // waiting (write lock) for every worker still inside it.
                let hook: Hook = unsafe { std::mem::transmute(idle) };
                let slot = &self.shared.idle;
                *slot.hook.write().unwrap_or_else(|e| e.into_inner()) = Some(hook);
                slot.installed.store(true, Ordering::Relaxed);
                Uninstall(&self.shared)
            },
            f,
        )
    }
}

impl Worker {
    /// A background worker found nothing to steal: runs the hook of the current run.
    pub(super) fn run_idle_hook(&self) {
        let slot = &self.shared.idle;
        if !slot.installed.load(Ordering::Relaxed) {
            return;
        }
        // `try_read`: while the run clears the hook (write lock pending), go back to
        // stealing instead of queueing behind it.
        let Ok(guard) = slot.hook.try_read() else {
            return;
        };
        if let Some(hook) = *guard
            && self.shared.active.load(Ordering::Relaxed) > 0
        {
            hook(self);
        }
    }
}

thread_local! {
    /// One scheduling step of the layer this thread works for, if any: true if it ran
    /// something.
    static HELPER: Cell<Option<fn() -> bool>> = const { Cell::new(None) };
}

/// Makes `helper` this thread's helper (`None`: no helper); returns the previous one.
pub(crate) fn set_helper(helper: Option<fn() -> bool>) -> Option<fn() -> bool> {
    HELPER.with(|h| h.replace(helper))
}

/// Whether this thread works for a layer with a helper.
pub(super) fn has_helper() -> bool {
    HELPER.with(|h| h.get()).is_some()
}

/// Takes one step of this thread's helper; false if it has none or it found nothing.
pub(super) fn help() -> bool {
    HELPER.with(|h| h.get()).is_some_and(|step| step())
}
