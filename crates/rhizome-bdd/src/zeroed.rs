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
    advise_huge_pages(ptr as *mut u8, layout.size());
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[T; n]`, is
    // zero-filled, and zero is a valid `T` (`Zeroable`); the box takes ownership and frees
    // it with the same layout.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) }
}

/// Asks Linux to back a large table with transparent huge pages (where the system enables
/// them on request, the common `madvise` setting). The tables are read at random, so 4 KiB
/// pages cost a TLB miss on most accesses and a page fault per 4 KiB touched; 2 MiB pages
/// cut both. The advice is only a hint: if it fails, the table works as before.
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 2 * HUGE || !cfg!(target_os = "linux") {
        return;
    }
    let start = (ptr as usize).next_multiple_of(4096);
    let end = (ptr as usize + len) & !4095;
    #[cfg(target_os = "linux")]
    // SAFETY: `start..end` lies inside the allocation just made (page-aligned inward), and
    // MADV_HUGEPAGE changes only how the kernel backs those pages, not their contents.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}
