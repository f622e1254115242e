//! Large tables allocated as zeroed memory, so the OS commits pages only when touched.

use std::alloc::{Layout, alloc_zeroed, handle_alloc_error};

/// Types whose all-zero bit pattern is a valid value (atomics of integers, arrays of them).
///
/// # Safety
/// Implementors must be valid when every byte is zero.
pub(crate) unsafe trait Zeroable {}
// SAFETY: an atomic integer is a plain integer in memory; zero is a valid integer.
unsafe impl Zeroable for std::sync::atomic::AtomicU64 {}
// SAFETY: as above.
unsafe impl Zeroable for std::sync::atomic::AtomicU32 {}
// SAFETY: an array of zeroable values is zeroable.
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// A boxed slice of `n` zero values. Unlike `(0..n).map(..).collect()`, this does not
/// write the memory: `alloc_zeroed` of a large block maps fresh zero pages, and a table
/// that is reserved large but used small costs only what it touches.
pub(crate) fn zeroed<T: Zeroable>(n: usize) -> Box<[T]> {
    if n == 0 || size_of::<T>() == 0 {
        return Vec::new().into_boxed_slice();
    }
    let layout = Layout::array::<T>(n).expect("table size overflows the address space");
    // SAFETY: the layout has non-zero size (checked above).
    let ptr = unsafe { alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[T; n]`, is
    // zero-filled, and zero is a valid `T` (`Zeroable`); the box takes ownership and frees
    // it with the same layout.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) }
}
