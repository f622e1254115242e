//! The slot array of a deque, built free: no job, `state` `FREE`, not a job.

#[cfg(not(loom))]
use super::FREE;
use super::Slot;
#[cfg(loom)]
use super::{AtomicBool, AtomicUsize, FREE, JobCell, UnsafeCell};
#[cfg(loom)]
use std::mem::MaybeUninit;

/// `capacity` free slots, from zeroed memory: all zero bytes are a free slot (no job yet,
/// `state` `FREE`, `is_job` and `sendable` false), so the pages of a deque are the OS's zero pages until
/// the worker first nests that deep, and a pool starts without writing its slots
/// (65,536 per worker, 2 MB).
#[cfg(not(loom))]
pub(super) fn free_slots(capacity: usize) -> Box<[Slot]> {
    const { assert!(FREE == 0) };
    let layout = std::alloc::Layout::array::<Slot>(capacity).expect("deque too large");
    if layout.size() == 0 {
        return Box::new([]);
    }
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Slot>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` is a fresh allocation of the global allocator with the layout of
    // `capacity` slots, the one `Box<[Slot]>` frees with, and zero bytes are a valid
    // slot: a `MaybeUninit` job, an `AtomicUsize` of 0 (`FREE`), two `AtomicBool`s false.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, capacity)) }
}

/// `capacity` free slots, built one by one: loom's cells and atomics are not plain bytes.
#[cfg(loom)]
pub(super) fn free_slots(capacity: usize) -> Box<[Slot]> {
    (0..capacity)
        .map(|_| Slot {
            job: JobCell(UnsafeCell::new(MaybeUninit::uninit())),
            state: AtomicUsize::new(FREE),
            is_job: AtomicBool::new(false),
            sendable: AtomicBool::new(false),
        })
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::{Deque, FREE, Take};
    use std::sync::atomic::Ordering;

    #[test]
    fn a_new_deque_has_only_free_half_slots_and_shares_nothing() {
        for capacity in [0, 1, 3, 1 << 16] {
            let d = Deque::new(capacity);
            assert_eq!(d.slots.len(), capacity);
            assert!(
                d.slots
                    .iter()
                    .all(|s| s.state.load(Ordering::Relaxed) == FREE
                        && !s.is_job.load(Ordering::Relaxed))
            );
            assert_eq!(d.shared_len(), 0);
            assert!(d.steal(0, Take::Any).is_none());
        }
    }
}
