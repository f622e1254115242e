//! Large tables as zero-filled memory that is reserved at once and committed as it is
//! touched, so a table reserved for its largest size costs only what it uses.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

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

/// The address space for the BDD tables could not be reserved.
#[derive(Debug, thiserror::Error)]
#[error("cannot reserve {bytes} bytes of address space for the BDD tables: {source}")]
pub struct ReserveError {
    /// The bytes asked for.
    pub bytes: usize,
    /// What the system said.
    pub source: std::io::Error,
}

/// A slice of `len` zero values in its own anonymous mapping.
///
/// On Unix the mapping is made with `MAP_NORESERVE`, as Sylvan's `llmsset` does: the
/// kernel neither commits memory nor counts it against the overcommit limit until a page
/// is written, so `--memory 1T` on a machine with 24 GiB reserves 1 TiB of address space
/// (plentiful on 64-bit systems) and uses what the table fills. With strict overcommit
/// (`vm.overcommit_memory = 2`) the kernel ignores the flag, and an impossible size fails
/// at once, as a [`ReserveError`], instead of aborting the process.
pub(crate) struct Zeroed<T> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: `Zeroed<T>` owns its elements like a `Box<[T]>`: sending or sharing it sends or
// shares only the `T`s.
unsafe impl<T: Send> Send for Zeroed<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Zeroed<T> {}

impl<T> Zeroed<T> {
    /// Bytes of this table that are in memory now (pages written at least once; a page
    /// only read maps the shared zero page and counts as well where the kernel says so).
    /// Asks the kernel (`mincore`) once per call: a diagnostic, not for a hot path.
    pub(crate) fn resident_bytes(&self) -> usize {
        resident_bytes(self.ptr.as_ptr().cast(), self.len * size_of::<T>())
    }
}

#[cfg(unix)]
fn resident_bytes(start: *mut u8, bytes: usize) -> usize {
    if bytes == 0 {
        return 0;
    }
    // SAFETY: `sysconf` only reads a system constant.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let pages = bytes.div_ceil(page);
    let mut flags = vec![0u8; pages];
    // SAFETY: `start..start + bytes` is one mapping of ours (made page-aligned by mmap);
    // `flags` has one byte per page of it, which is all `mincore` writes.
    let r = unsafe { libc::mincore(start.cast(), bytes, flags.as_mut_ptr().cast()) };
    if r != 0 {
        return 0;
    }
    flags.iter().filter(|&&f| f & 1 != 0).count() * page
}

#[cfg(not(unix))]
fn resident_bytes(_start: *mut u8, bytes: usize) -> usize {
    // Eagerly zeroed by the allocator: all of it.
    bytes
}

impl<T> Deref for Zeroed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised (zero, valid per `Zeroable`) values
        // that this struct owns until drop; a dangling pointer has `len == 0`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for Zeroed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Zeroed<T> {
    fn drop(&mut self) {
        let bytes = self.len * size_of::<T>();
        if bytes == 0 {
            return;
        }
        // The elements are atomics or arrays of them: nothing to drop in place.
        #[cfg(unix)]
        // SAFETY: `ptr..ptr + bytes` is exactly the mapping `try_zeroed` made, unmapped
        // once, here; nothing borrows it any more (`&mut self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), bytes);
        }
        #[cfg(not(unix))]
        // SAFETY: allocated by `alloc_zeroed` with this layout in `try_zeroed`.
        unsafe {
            std::alloc::dealloc(
                self.ptr.as_ptr().cast(),
                std::alloc::Layout::array::<T>(self.len).expect("layout checked at allocation"),
            );
        }
    }
}

/// `n` zero values, or the reason the address space for them cannot be had.
pub(crate) fn try_zeroed<T: Zeroable>(n: usize) -> Result<Zeroed<T>, ReserveError> {
    let bytes = n.checked_mul(size_of::<T>()).ok_or_else(|| ReserveError {
        bytes: usize::MAX,
        source: std::io::Error::other("size overflows the address space"),
    })?;
    if bytes == 0 {
        return Ok(Zeroed {
            ptr: NonNull::dangling(),
            len: n,
        });
    }
    let ptr = map_zeroed(bytes).map_err(|source| ReserveError { bytes, source })?;
    // The tables are read at random: 4 KiB pages would cost a TLB miss on most accesses
    // and a page fault per 4 KiB touched.
    rhizome::hint::advise_huge_pages(ptr.as_ptr(), bytes);
    Ok(Zeroed {
        ptr: ptr.cast(),
        len: n,
    })
}

/// `n` zero values; a failure to reserve them is a panic with the reason. Managers made
/// from a user's size check first with [`check_address_space`].
pub(crate) fn zeroed<T: Zeroable>(n: usize) -> Zeroed<T> {
    try_zeroed(n).unwrap_or_else(|e| panic!("{e}"))
}

/// Fails, with the reason, if `bytes` of address space cannot be reserved now: a tool can
/// refuse an impossible memory limit with one line before it builds a manager of that
/// size (which would panic).
pub fn check_address_space(bytes: usize) -> Result<(), ReserveError> {
    try_zeroed::<std::sync::atomic::AtomicU64>(bytes.div_ceil(8)).map(drop)
}

#[cfg(unix)]
fn map_zeroed(bytes: usize) -> std::io::Result<NonNull<u8>> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choice touches no
    // existing memory; its pages read as zero until written.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // mmap never returns null on success (it would be MAP_FAILED or a valid address).
    NonNull::new(p.cast()).ok_or_else(|| std::io::Error::other("mmap returned null"))
}

#[cfg(not(unix))]
fn map_zeroed(bytes: usize) -> std::io::Result<NonNull<u8>> {
    let layout = std::alloc::Layout::from_size_align(bytes, 64)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    // SAFETY: the layout has non-zero size (checked by the caller).
    NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
        .ok_or_else(|| std::io::Error::other("out of memory"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn zero_filled_writable_and_sized() {
        let mut t: Zeroed<[AtomicU64; 2]> = zeroed(100_000);
        assert_eq!(t.len(), 100_000);
        assert!(t.iter().all(|e| e[0].load(Ordering::Relaxed) == 0));
        t[99_999][1].store(7, Ordering::Relaxed);
        *t[5][0].get_mut() = 3;
        assert_eq!(t[99_999][1].load(Ordering::Relaxed), 7);
        assert_eq!(t[5][0].load(Ordering::Relaxed), 3);
        let empty: Zeroed<AtomicU64> = zeroed(0);
        assert!(empty.is_empty());
    }

    #[test]
    fn reserving_far_more_than_the_machine_has_costs_nothing_until_touched() {
        // 1 TiB of address space: more than this machine's RAM and swap, yet a valid
        // reservation under the default overcommit policy, as in Sylvan.
        if std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|s| s.trim() == "2")
        {
            assert!(check_address_space(1 << 40).is_err());
            return;
        }
        let t: Zeroed<AtomicU64> = zeroed((1 << 40) / 8);
        t[t.len() - 1].store(1, Ordering::Relaxed);
        assert_eq!(t[t.len() - 1].load(Ordering::Relaxed), 1);
    }

    #[test]
    fn resident_bytes_count_the_pages_written_and_no_others() {
        let t: Zeroed<AtomicU64> = zeroed(64 << 20);
        let before = t.resident_bytes();
        // Four writes 8 MiB apart: four distinct pages (huge pages at most 2 MiB here).
        for i in 0..4 {
            t[i * (1 << 20)].store(1, Ordering::Relaxed);
        }
        let after = t.resident_bytes();
        assert!(after > before, "{before} -> {after}");
        assert!(after - before >= 4 * 4096, "{before} -> {after}");
        assert!(after <= 4 * (2 << 20) + before, "{before} -> {after}");
    }

    #[test]
    fn an_impossible_size_is_an_error_not_an_abort() {
        // Beyond the 47-bit user address space of x86-64 and AArch64 Linux.
        let e = check_address_space(1 << 60).unwrap_err();
        assert!(e.to_string().contains("cannot reserve"), "{e}");
        assert!(try_zeroed::<AtomicU64>(usize::MAX / 4).is_err());
    }
}
