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
//! Hand-written because no crate offers this protocol: crossbeam's Chase–Lev deque needs
//! a sequentially consistent fence on every pop, which is most of the cost of a join.

use super::job::JobRef;
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

/// `Slot::state`: not stolen.
pub(super) const FREE: usize = 0;
/// `Slot::state`: stolen, and the thief has finished.
pub(super) const COMPLETED: usize = 1;
/// `Slot::state`: stolen by worker `state - THIEF_BASE`, still running.
pub(super) const THIEF_BASE: usize = 2;

pub(super) struct Slot {
    pub(super) job: UnsafeCell<MaybeUninit<JobRef>>,
    pub(super) state: AtomicUsize,
}

/// The shared half of one worker's deque.
pub(super) struct Deque {
    /// `tail` in the low 32 bits, `split` in the high 32 bits.
    pub(super) ts: CachePadded<AtomicU64>,
    pub(super) movesplit: CachePadded<AtomicBool>,
    pub(super) slots: Box<[Slot]>,
}

// SAFETY: the job cells are written only by the owner while the slot is private or
// reserved, and read by exactly one thief after it won the slot by CAS on `ts`, which
// orders the accesses (see the module docs and `Worker::push`/`steal_from`).
unsafe impl Sync for Deque {}
// SAFETY: the job pointers in the slots point at stack jobs whose closures are `Send`
// (`Worker::join` requires it); moving the deque moves only these pointers.
unsafe impl Send for Deque {}

#[inline]
pub(super) fn pack(tail: usize, split: usize) -> u64 {
    tail as u64 | (split as u64) << 32
}

#[inline]
pub(super) fn unpack(ts: u64) -> (usize, usize) {
    ((ts & 0xFFFF_FFFF) as usize, (ts >> 32) as usize)
}

impl Deque {
    pub(super) fn new(capacity: usize) -> Deque {
        Deque {
            ts: CachePadded::new(AtomicU64::new(0)),
            movesplit: CachePadded::new(AtomicBool::new(false)),
            slots: (0..capacity)
                .map(|_| Slot {
                    job: UnsafeCell::new(MaybeUninit::uninit()),
                    state: AtomicUsize::new(FREE),
                })
                .collect(),
        }
    }
}
