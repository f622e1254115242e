//! Hints to the processor and the kernel that change no result, only when memory is
//! fetched and how it is mapped.
//!
//! Kernels that look up random entries of a table (a histogram's bins, an index-gather's
//! answers, a hash table's probes) spend most of their time waiting for cache misses one
//! after the other. When the next entries are known ahead (they are in the batch being
//! pulled), asking for their lines early overlaps those misses. And on 4 KiB pages nearly
//! every such access also misses the TLB; huge pages for the table cut that.

/// Asks the cache for the line holding `*value` without waiting for it; a no-op where the
/// target has no prefetch instruction.
///
/// ```
/// let table = vec![0u64; 1 << 16];
/// let wanted = [40_000usize, 7, 12_345];
/// for (k, &i) in wanted.iter().enumerate() {
///     if let Some(&next) = wanted.get(k + 1) {
///         rhizome::hint::prefetch(&table[next]); // fetched while table[i] is used
///     }
///     assert_eq!(table[i], 0);
/// }
/// ```
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults nor changes memory (any address may be
    // prefetched, this one is even valid); SSE, which the instruction needs, is part of
    // every x86-64 target.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Asks Linux to back the memory `ptr..ptr + bytes` with transparent huge pages (2 MiB),
/// where the system grants them on request (the common `madvise` setting of
/// `/sys/kernel/mm/transparent_hugepage/enabled`). For large tables read at random: on
/// 4 KiB pages such reads miss the TLB nearly every time, and every 4 KiB first touched
/// costs a page fault. Blocks under 4 MiB are left alone (a huge page would commit more
/// than they use); only the whole pages inside the range are advised. A hint only: it
/// never changes the memory's contents, and where it fails (no such mapping, another
/// system) nothing changes.
///
/// ```
/// let table = vec![0u64; 1 << 20];
/// rhizome::hint::advise_huge_pages(table.as_ptr() as *mut u8, table.len() * 8);
/// assert!(table.iter().all(|&w| w == 0));
/// ```
pub fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < 2 * HUGE || !cfg!(target_os = "linux") {
        return;
    }
    let start = (ptr as usize).next_multiple_of(4096);
    let end = (ptr as usize).saturating_add(bytes) & !4095;
    #[cfg(target_os = "linux")]
    // SAFETY: madvise only reads the range's bounds; MADV_HUGEPAGE changes how the kernel
    // backs pages already mapped there, never their contents, and fails harmlessly
    // (ENOMEM) on a range that is not mapped.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}
