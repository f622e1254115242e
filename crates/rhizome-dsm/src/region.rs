//! The shared region of one PE: one `memfd` mapped twice.
//!
//! The *application view* is what application threads load from and store to; its page
//! protections follow the protocol (no access: invalid; read-only: valid and clean;
//! read-write: being written this interval), so the first access that the protocol must
//! see faults. The *runtime view* maps the same file always read-write: the service
//! thread installs fetched pages, applies incoming diffs and reads pages for diffs through
//! it, whatever the application view's protection. A page is therefore filled while
//! application threads cannot touch it (invalid in their view) and made accessible only
//! once complete, and a diff from another PE lands beside this PE's own writes to the
//! same page without closing the page to them: no write can be lost between a copy and
//! a protection change.
//!
//! With the local transport every PE is a thread of one process, so the PEs' application
//! views cannot share one address: each PE maps its own views, and shared data is named by
//! its *offset* in the region ([`crate::DsmVec::offset`]), which every PE resolves against
//! its own view. Under MPI there is one PE per process, and the same offsets work.

use std::io;
use std::ptr::NonNull;

/// The page size of the protocol: the machine's.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// Access an application view page allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    None,
    Read,
    Write,
}

/// One PE's region: the file and its two mappings, and the twins of its pages.
pub(crate) struct Region {
    fd: libc::c_int,
    app: NonNull<u8>,
    runtime: NonNull<u8>,
    /// Private anonymous memory as large as the region: page `p`'s twin at `p` pages in,
    /// so that making a twin allocates nothing (the fault handler makes them), and only
    /// pages ever twinned are committed.
    twins: NonNull<u8>,
    len: usize,
    page: usize,
}

// SAFETY: the region is two mappings of a file; the pointers stay valid until drop, and
// every access through them goes through raw pointers whose users synchronise (the
// protocol runs on one service thread; application threads race only as their program
// does).
unsafe impl Send for Region {}
// SAFETY: as for Send.
unsafe impl Sync for Region {}

fn check(r: libc::c_int, what: &str) -> io::Result<()> {
    if r < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(())
    }
}

fn map(fd: libc::c_int, len: usize, prot: libc::c_int) -> io::Result<NonNull<u8>> {
    let flags = if fd < 0 {
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE
    } else {
        libc::MAP_SHARED
    };
    // SAFETY: a fresh mapping of `len` bytes, of `fd` (sized to `len`) or anonymous; no
    // existing memory is replaced (no MAP_FIXED).
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
    if p == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("mmap of {len} bytes: {e}"),
        ));
    }
    Ok(NonNull::new(p.cast()).expect("mmap does not return null on success"))
}

impl Region {
    /// Maps a region of `len` bytes (a multiple of the page size); the application view
    /// starts with no access anywhere.
    pub(crate) fn new(len: usize) -> io::Result<Region> {
        let page = page_size();
        assert!(
            len > 0 && len.is_multiple_of(page),
            "region length is whole pages"
        );
        // SAFETY: the name is a valid C string; flags are plain.
        let fd = unsafe { libc::memfd_create(c"rhizome-dsm".as_ptr(), libc::MFD_CLOEXEC) };
        check(fd, "memfd_create")?;
        let sized = libc::off_t::try_from(len)
            .map_err(|_| io::Error::other("region larger than a file can be"))
            // SAFETY: fd is the memfd just created.
            .and_then(|l| check(unsafe { libc::ftruncate(fd, l) }, "ftruncate"));
        let close = |e| {
            // SAFETY: fd is ours and not used after this.
            unsafe { libc::close(fd) };
            e
        };
        sized.map_err(close)?;
        let app = map(fd, len, libc::PROT_NONE).map_err(close)?;
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let (runtime, twins) = match map(fd, len, rw).and_then(|r| Ok((r, map(-1, len, rw)?))) {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: app was mapped above with this length and is not used after
                // (the runtime view, if it was mapped, is left to the process's end).
                unsafe { libc::munmap(app.as_ptr().cast(), len) };
                return Err(close(e));
            }
        };
        Ok(Region {
            fd,
            app,
            runtime,
            twins,
            len,
            page,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
    pub(crate) fn page(&self) -> usize {
        self.page
    }
    /// Start of the application view.
    pub(crate) fn app_base(&self) -> *mut u8 {
        self.app.as_ptr()
    }

    /// Runs `f` on the runtime view of page `p`: always readable and writable.
    pub(crate) fn with_page<R>(&self, p: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
        assert!(
            (p + 1) * self.page <= self.len,
            "page {p} outside the region"
        );
        // SAFETY: in bounds (checked); the runtime view is mapped read-write for the
        // region's life. Only the service thread uses the runtime view, and none of the
        // crate's callers nests a second `with_page` inside `f`, so no two of these
        // slices are alive at once. Application threads may write the same bytes through
        // the other view concurrently: that is the program's own race (a data-race-free
        // program does not write bytes another PE's diff carries in the same interval).
        let page = unsafe {
            std::slice::from_raw_parts_mut(self.runtime.as_ptr().add(p * self.page), self.page)
        };
        f(page)
    }

    /// Copies page `p` to its twin. Async-signal-safe (a `memcpy`).
    pub(crate) fn make_twin(&self, p: usize) {
        assert!(
            (p + 1) * self.page <= self.len,
            "page {p} outside the region"
        );
        // SAFETY: both ranges are in bounds of mappings that live as long as the region,
        // and they do not overlap (different mappings). The caller holds the page table's
        // lock, so no other twin copy or diff of page `p` runs at the same time.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.runtime.as_ptr().add(p * self.page),
                self.twins.as_ptr().add(p * self.page),
                self.page,
            )
        }
    }

    /// Runs `f` on the twin of page `p` and its runtime view.
    pub(crate) fn with_twin<R>(&self, p: usize, f: impl FnOnce(&[u8], &[u8]) -> R) -> R {
        assert!(
            (p + 1) * self.page <= self.len,
            "page {p} outside the region"
        );
        // SAFETY: in bounds; the twin is only written by `make_twin`, which the page
        // table's lock (held by the caller) keeps out while this runs.
        let twin = unsafe {
            std::slice::from_raw_parts(self.twins.as_ptr().add(p * self.page), self.page)
        };
        self.with_page(p, |page| f(twin, page))
    }

    /// Sets the application view's protection of pages `first..first + count`; false if
    /// the kernel refuses (out of memory for the mapping's pieces). Async-signal-safe.
    pub(crate) fn try_protect(&self, first: usize, count: usize, access: Access) -> bool {
        let prot = match access {
            Access::None => libc::PROT_NONE,
            Access::Read => libc::PROT_READ,
            Access::Write => libc::PROT_READ | libc::PROT_WRITE,
        };
        if (first + count) * self.page > self.len {
            return false;
        }
        // SAFETY: the range lies in the application view, which this region mapped; a
        // protection change cannot invalidate Rust references because the application
        // view is only reached through raw pointers.
        let r = unsafe {
            libc::mprotect(
                self.app.as_ptr().add(first * self.page).cast(),
                count * self.page,
                prot,
            )
        };
        r == 0
    }

    /// [`try_protect`](Region::try_protect), or the PE's end with the reason.
    pub(crate) fn protect(&self, first: usize, count: usize, access: Access) {
        if !self.try_protect(first, count, access) {
            panic!(
                "rhizome: error: mprotect of DSM pages {first}..{} failed: {} (vm.max_map_count too low?)",
                first + count,
                io::Error::last_os_error()
            );
        }
    }

    /// Opens the whole application view read-write: after an abort, so that threads
    /// stopped in a fault run on to their next synchronisation, where they unwind.
    pub(crate) fn open_all(&self) {
        self.protect(0, self.len / self.page, Access::Write);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: both mappings and the fd belong to this region and are not used after.
        unsafe {
            libc::munmap(self.app.as_ptr().cast(), self.len);
            libc::munmap(self.runtime.as_ptr().cast(), self.len);
            libc::munmap(self.twins.as_ptr().cast(), self.len);
            libc::close(self.fd);
        }
    }
}
