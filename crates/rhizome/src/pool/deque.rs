//! A split deque in the style of Lace (van Dijk and van de Pol, 2014).
//!
//! Tasks below the *split* are shared: thieves take the oldest one with a single
//! compare-and-swap on the packed `(tail, split)` word. Tasks at or above the split are
//! private: the owner pushes and pops them with plain stores and no fence. A thief that
//! finds nothing to take raises `movesplit`; the owner then shares half of its private
//! tasks at its next push. When the owner pops a shared task it pulls the split back
//! with a CAS that races fairly with thieves; if a thief won, the task is stolen and the
//! owner helps (steals back) until the thief's completion flag is up.
//!
//! The whole protocol is here, as the owner's operations on [`Owner`] and the thief's on
//! [`Deque`], so that a build with `RUSTFLAGS="--cfg loom"` model-checks it with loom's
//! atomics (the `loom_model` tests below); `Worker` only decides what to run.
//!
//! Hand-written because no crate offers this protocol: crossbeam's Chase–Lev deque needs
//! a sequentially consistent fence on every pop, which is most of the cost of a join.

use super::job::JobRef;
#[cfg(loom)]
use ::loom::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize},
};
use crossbeam_utils::CachePadded;
use free_slots::free_slots;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;
#[cfg(not(loom))]
use std::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize},
};

/// `Slot::state`: not stolen.
pub(super) const FREE: usize = 0;
/// `Slot::state`: stolen, and the thief has finished.
pub(super) const COMPLETED: usize = 1;
/// `Slot::state`: won by a thief that may not run it (a waiting worker won a half, or a
/// background worker outside a run won a job): the owner runs it when it gets there.
pub(super) const RETURNED: usize = 2;
/// `Slot::state`: stolen by worker `state - THIEF_BASE`, still running.
pub(super) const THIEF_BASE: usize = 3;
/// `Slot::state`: a sendable half taken for another PE (`Take::Export`), still running
/// there; completed when its result arrives (`sendable.rs`). Above every worker's
/// `THIEF_BASE + index`, so a wait that leapfrogs to `state - THIEF_BASE` finds no deque.
pub(super) const EXPORTED: usize = usize::MAX;

pub(super) struct Slot {
    job: JobCell,
    pub(super) state: AtomicUsize,
    /// Whether the slot holds a job of the layer above (a future's job, on the heap)
    /// rather than a `join` half (on the owner's stack). Written by the owner before the
    /// slot is published, reset to false by whoever takes the job, so a push of a half
    /// stores nothing here.
    is_job: AtomicBool,
    /// Whether the slot holds a half of `join_sendable`, which may leave the PE
    /// (`sendable.rs`). Set by the owner before the push publishes the slot, reset by the
    /// owner once the join has its result back, so a plain half's push stores nothing here.
    sendable: AtomicBool,
}

/// What a thief may take (see `docs/one-deque.md`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Take {
    /// Any slot: an idle worker, or a `join` leapfrogging to the thief of its half.
    Any,
    /// Jobs only: a worker that waits in a frame, or another PE (halves never leave it).
    Jobs,
    /// Halves only: a background worker outside a run of the layer above.
    Halves,
    /// What may leave the PE, for another PE's steal request: jobs, and halves of
    /// `join_sendable` (which keep the jobs' rule: they wait only for their own subtree).
    Export,
}

impl Take {
    fn allows(self, is_job: bool, sendable: bool) -> bool {
        match self {
            Take::Any => true,
            Take::Jobs => is_job,
            Take::Halves => !is_job,
            Take::Export => is_job || sendable,
        }
    }
}

/// A slot a thief won: its index, its job, whether it is a job of the layer above, and
/// whether it is a sendable half taken for another PE. A job's slot is already complete
/// (the owner may reuse it); a half's is completed by [`Deque::complete`] once it has run
/// (for an exported half: once its result has come back).
pub(super) struct Stolen {
    pub(super) slot: usize,
    pub(super) job: JobRef,
    pub(super) is_job: bool,
    pub(super) exported: bool,
}

/// The job of a slot: written by the owner, read by the one thief that wins the slot.
/// Under loom the cell is loom's, which checks that these accesses never race.
struct JobCell(UnsafeCell<MaybeUninit<JobRef>>);

#[cfg(not(loom))]
impl JobCell {
    /// # Safety
    /// No other thread accesses the cell meanwhile.
    #[inline]
    unsafe fn write(&self, job: JobRef) {
        // SAFETY: the caller's contract.
        unsafe { (*self.0.get()).write(job) };
    }

    /// # Safety
    /// A job was written, its write happens before this read, and no other thread
    /// accesses the cell meanwhile.
    #[inline]
    unsafe fn read(&self) -> JobRef {
        // SAFETY: the caller's contract.
        unsafe { (*self.0.get()).assume_init_read() }
    }
}

#[cfg(loom)]
impl JobCell {
    unsafe fn write(&self, job: JobRef) {
        // SAFETY: the caller's contract, which loom checks.
        self.0.with_mut(|c| unsafe { (*c).write(job) });
    }

    unsafe fn read(&self) -> JobRef {
        // SAFETY: the caller's contract, which loom checks.
        self.0.with(|c| unsafe { (*c).assume_init_read() })
    }
}

/// The shared half of one worker's deque.
pub(super) struct Deque {
    /// `tail` in the low 32 bits, `split` in the high 32 bits.
    ts: CachePadded<AtomicU64>,
    movesplit: CachePadded<AtomicBool>,
    slots: Box<[Slot]>,
}

// SAFETY: the job cells are written only by the owner while the slot is private or
// reserved, and read by exactly one thief after it won the slot by CAS on `ts`, which
// orders the accesses (see the module docs, `Owner::push` and `Deque::steal`).
unsafe impl Sync for Deque {}
// SAFETY: the job pointers in the slots point at stack jobs whose closures are `Send`
// (`Worker::join` requires it); moving the deque moves only these pointers.
unsafe impl Send for Deque {}

#[inline]
fn pack(tail: usize, split: usize) -> u64 {
    tail as u64 | (split as u64) << 32
}

#[inline]
fn unpack(ts: u64) -> (usize, usize) {
    ((ts & 0xFFFF_FFFF) as usize, (ts >> 32) as usize)
}

impl Deque {
    pub(super) fn new(capacity: usize) -> Deque {
        Deque {
            ts: CachePadded::new(AtomicU64::new(0)),
            movesplit: CachePadded::new(AtomicBool::new(false)),
            slots: free_slots(capacity),
        }
    }

    /// Takes the oldest shared task for worker `thief`: its slot and job. The slot stays
    /// reserved until the thief calls [`complete`](Deque::complete). With nothing
    /// shared, asks the owner to share (`movesplit`) and returns `None`.
    pub(super) fn steal(&self, thief: usize, take: Take) -> Option<Stolen> {
        let ts = self.ts.load(Ordering::Acquire);
        let (tail, split) = unpack(ts);
        if tail >= split {
            if !self.movesplit.load(Ordering::Relaxed) {
                self.movesplit.store(true, Ordering::Relaxed);
            }
            return None;
        }
        // A first look at the kind, to leave a slot we may not take. The owner may reuse
        // the slot meanwhile and `ts` come back to the same value (ABA), so the kind is
        // read again once the slot is ours.
        let first = &self.slots[tail];
        if !take.allows(
            first.is_job.load(Ordering::Relaxed),
            first.sendable.load(Ordering::Relaxed),
        ) {
            return None;
        }
        self.ts
            .compare_exchange(
                ts,
                pack(tail + 1, split),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .ok()?;
        let slot = &self.slots[tail];
        // SAFETY: winning the CAS made this thread the only one to take slot `tail`; the
        // owner wrote the job before publishing the split (release, acquired by our CAS)
        // and does not reuse the slot before we store COMPLETED.
        let job = unsafe { slot.job.read() };
        // The owner wrote the kind before it published the slot (our CAS acquired that).
        let is_job = slot.is_job.load(Ordering::Relaxed);
        let sendable = slot.sendable.load(Ordering::Relaxed);
        if !take.allows(is_job, sendable) {
            // Ours, but not for us: its owner runs it when it pops it (see `RETURNED`).
            slot.state.store(RETURNED, Ordering::Release);
            return None;
        }
        // A half taken for another PE: its frame waits for the result to come back.
        let exported = !is_job && take == Take::Export;
        if is_job {
            // A job is on the heap: the slot is free as soon as we have read it.
            slot.is_job.store(false, Ordering::Relaxed);
            slot.state.store(COMPLETED, Ordering::Release);
        } else if exported {
            slot.state.store(EXPORTED, Ordering::Relaxed);
        } else {
            slot.state.store(THIEF_BASE + thief, Ordering::Relaxed);
        }
        Some(Stolen {
            slot: tail,
            job,
            is_job,
            exported,
        })
    }

    /// Jobs and halves that thieves could take now (an estimate: it races with them).
    pub(super) fn shared_len(&self) -> usize {
        let (tail, split) = unpack(self.ts.load(Ordering::Relaxed));
        split.saturating_sub(tail)
    }

    /// The task stolen from slot `i` has run: everything it wrote is visible to the
    /// owner once it sees the flag, and the owner may reuse the slot.
    pub(super) fn complete(&self, i: usize) {
        self.slots[i].state.store(COMPLETED, Ordering::Release);
    }
}

/// A slot that [`Owner::push`] filled, to be handed back to
/// [`pop_or_reclaim`](Owner::pop_or_reclaim).
#[derive(Clone, Copy)]
pub(super) struct Pushed(*const Slot);

/// The owner's side of a deque: the private `head`, `split` and `allstolen` in plain
/// cells, and the deque's slots as a pointer range so that a push reads only this struct
/// (it sits inside `Worker`).
///
/// `head` and `split` are slot pointers, not indices (as in Lace): a push then writes
/// through `head` directly, without scaling an index, and a pop compares pointers. The
/// shared `ts` word keeps indices; only the rare paths that touch it convert.
pub(super) struct Owner {
    deque: *const Deque,
    slots: *const Slot,
    /// One past the last slot.
    end: *const Slot,
    head: Cell<*const Slot>,
    split: Cell<*const Slot>,
    /// Nothing below `head` is shared any more; whenever it is set, so is the deque's
    /// `movesplit`, the one flag `push` tests.
    allstolen: Cell<bool>,
}

impl Owner {
    /// The owner of `deque`, which starts with nothing shared.
    ///
    /// # Safety
    /// `deque` outlives the owner, is not reallocated, and has no other owner meanwhile.
    pub(super) unsafe fn new(deque: &Deque) -> Owner {
        let slots = deque.slots.as_ptr_range();
        let o = Owner {
            deque,
            slots: slots.start,
            end: slots.end,
            head: Cell::new(slots.start),
            split: Cell::new(slots.start),
            allstolen: Cell::new(true),
        };
        o.set_allstolen();
        o
    }

    #[inline]
    fn deque(&self) -> &Deque {
        // SAFETY: `new`'s contract keeps the deque alive and in place.
        unsafe { &*self.deque }
    }

    /// The index of the slot `p` points at (or one past the last).
    #[inline]
    fn index(&self, p: *const Slot) -> usize {
        // SAFETY: the owner's pointers all lie in `slots..=end`, one allocation.
        unsafe { p.offset_from_unsigned(self.slots) }
    }

    /// The slot at index `i`, at most the capacity.
    #[inline]
    fn slot_at(&self, i: usize) -> *const Slot {
        debug_assert!(i <= self.index(self.end));
        // SAFETY: `i` is at most the capacity, so the result stays in `slots..=end`.
        unsafe { self.slots.add(i) }
    }

    /// The index of a slot that `push` returned.
    pub(super) fn index_of(&self, pushed: Pushed) -> usize {
        self.index(pushed.0)
    }

    /// Pushes a task and returns its slot; `None` when the deque is full.
    #[inline]
    pub(super) fn push(&self, job: JobRef) -> Option<Pushed> {
        let h = self.head.get();
        if h == self.end {
            return None;
        }
        // SAFETY: `h` is in `slots..end`, inside the deque, which `new`'s contract keeps
        // alive and in place.
        let slot = unsafe { &*h };
        // SAFETY: slot `h` is at or above `head`, so no thief can take it (thieves only
        // take slots below the published split, which is at most `head`) and no
        // earlier thief still uses it (a stolen slot is released only when completed).
        unsafe { slot.job.write(job) };
        // No `state = FREE` store here: every slot is FREE unless a thief took it, and
        // the owner resets a stolen slot when it releases it (`end_wait`).
        // SAFETY: `h < end`, so `h + 1` is at most `end`.
        self.head.set(unsafe { h.add(1) });
        // One test for both reasons to share: the owner raises `movesplit` itself when
        // it sets `allstolen` (see `set_allstolen`), so the common case reads one flag.
        if self.deque().movesplit.load(Ordering::Relaxed) {
            self.share(h);
        }
        Some(Pushed(h))
    }

    /// Nothing is shared any more: the next push shares at once.
    fn set_allstolen(&self) {
        self.allstolen.set(true);
        self.deque().movesplit.store(true, Ordering::Relaxed);
    }

    /// Shares tasks after the push of slot `h` found `movesplit` raised.
    #[cold]
    #[inline(never)]
    fn share(&self, h: *const Slot) {
        let h = self.index(h);
        let d = self.deque();
        if self.allstolen.get() {
            // Everything below was stolen: share this task at once (it is the largest
            // piece of work this worker will fork for a while).
            self.allstolen.set(false);
            self.split.set(self.slot_at(h + 1));
            d.movesplit.store(false, Ordering::Relaxed);
            d.ts.store(pack(h, h + 1), Ordering::Release);
        } else {
            // A thief asked for work: share the older half of the private tasks.
            let split = self.index(self.split.get());
            let new_split = split + (h + 1 - split).div_ceil(2);
            let mut ts = d.ts.load(Ordering::Relaxed);
            loop {
                let (tail, _) = unpack(ts);
                match d.ts.compare_exchange_weak(
                    ts,
                    pack(tail, new_split),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => ts = now,
                }
            }
            self.split.set(self.slot_at(new_split));
            d.movesplit.store(false, Ordering::Relaxed);
        }
    }

    /// Takes back the most recent task, in slot `pushed`: true if it was not stolen (it
    /// is popped and the caller runs it), false if a thief has it (it stays reserved until
    /// completed: see [`begin_wait`](Owner::begin_wait)).
    ///
    /// The slot comes from `push` rather than from `head` (one past it again, as every
    /// join in between has popped its own task): reading `head` back would chain every
    /// join's pop to the store of the previous one through memory, a store-forwarding
    /// delay on the critical path of each join.
    #[cfg(all(test, loom))]
    pub(super) fn pop_or_reclaim(&self, pushed: Pushed) -> bool {
        self.pop_private(pushed) || self.pop_shared(pushed)
    }

    /// The fast half of [`pop_or_reclaim`](Owner::pop_or_reclaim): pops the slot if it is
    /// private. A shared slot, or one with jobs pushed above it (`push_job` shares up to
    /// them), is left to [`pop_shared`](Owner::pop_shared).
    #[inline]
    pub(super) fn pop_private(&self, pushed: Pushed) -> bool {
        let Pushed(p) = pushed;
        if p >= self.split.get() {
            debug_assert_eq!(self.head.get(), p.wrapping_add(1));
            self.head.set(p);
            return true;
        }
        false
    }

    /// Stores `pushed` as `head` again, where the slow paths of a pop (and the wait for
    /// its thief) have already left it: a store the compiler can see, so that after a
    /// `fork`, on every path, it knows `head` without reading it back from memory. A loop
    /// of forks then keeps `head` in a register instead of reloading the value the
    /// previous pop has just stored (a store-forwarding stall on every turn).
    #[inline]
    pub(super) fn restore_head(&self, pushed: Pushed) {
        debug_assert_eq!(self.head.get(), pushed.0);
        self.head.set(pushed.0);
    }

    /// As [`restore_head`](Owner::restore_head) after a push that found the deque full:
    /// `head` is at the end again.
    #[inline]
    pub(super) fn restore_head_at_end(&self) {
        debug_assert_eq!(self.head.get(), self.end);
        self.head.set(self.end);
    }

    /// The slow half of [`pop_or_reclaim`](Owner::pop_or_reclaim), once nothing is above
    /// the slot any more: pulls the split back below it, or finds it stolen.
    pub(super) fn pop_shared(&self, pushed: Pushed) -> bool {
        let Pushed(p) = pushed;
        debug_assert_eq!(self.head.get(), p.wrapping_add(1));
        let h = self.index(p);
        let d = self.deque();
        let mut ts = d.ts.load(Ordering::Acquire);
        loop {
            let (tail, _) = unpack(ts);
            if tail > h {
                return false;
            }
            // Make `h` private again; older shared tasks stay shared.
            match d
                .ts
                .compare_exchange(ts, pack(tail, h), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.split.set(p);
                    self.head.set(p);
                    return true;
                }
                Err(now) => ts = now,
            }
        }
    }

    /// After `pop_or_reclaim` found the most recent task stolen: returns its slot, to be
    /// polled with [`thief_state`](Owner::thief_state) until `COMPLETED`, then released
    /// with [`end_wait`](Owner::end_wait). Meanwhile the owner may push and run other
    /// tasks above it.
    pub(super) fn begin_wait(&self) -> usize {
        let h = self.index(self.head.get()) - 1;
        // Thieves take the oldest tasks first, so every task below `h` is stolen too:
        // the deque is empty apart from the reserved slot `h`.
        self.split.set(self.head.get());
        self.set_allstolen();
        h
    }

    /// The state of the stolen slot `h`: `COMPLETED` (acquiring what the thief wrote),
    /// `THIEF_BASE` plus the thief's index, or `FREE` if the thief has not said yet.
    #[inline]
    pub(super) fn thief_state(&self, h: usize) -> usize {
        self.deque().slots[h].state.load(Ordering::Acquire)
    }

    /// The thief of slot `h` has completed: the slot is free and the deque empty.
    pub(super) fn end_wait(&self, h: usize) {
        // The thief is done with the slot, so nobody else writes `state` now. Resetting it
        // here rather than at every push keeps a store off the fork path; the next thief
        // of the slot overwrites it only after winning the slot through `ts`, whose
        // release below (or at the next share) orders this store before that one.
        self.deque().slots[h].state.store(FREE, Ordering::Relaxed);
        self.head.set(self.slot_at(h));
        self.split.set(self.slot_at(h));
        self.set_allstolen();
        self.deque().ts.store(pack(h, h), Ordering::Release);
    }
}

mod free_slots;
mod jobs;
mod sendable;

/// The protocol under loom's model of the memory orderings: every interleaving (bounded
/// by `LOOM_MAX_PREEMPTIONS`) of an owner pushing, popping and waiting against thieves.
/// Run: `RUSTFLAGS="--cfg loom" cargo test --release -p rhizome --lib pool::deque::loom_model`.
#[cfg(all(test, loom))]
mod loom_model;
