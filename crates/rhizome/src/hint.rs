//! Hints to the processor that change no result, only when memory is fetched.
//!
//! Kernels that look up random entries of a table (a histogram's bins, an index-gather's
//! answers, a hash table's probes) spend most of their time waiting for cache misses one
//! after the other. When the next entries are known ahead (they are in the batch being
//! pulled), asking for their lines early overlaps those misses.

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
