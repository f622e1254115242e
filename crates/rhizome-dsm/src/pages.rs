//! The page table of one PE, shared by its service thread and the `SIGSEGV` handler.
//!
//! The common fault, the first write of an interval to a valid page, needs no message: it
//! copies the page to its twin (unless this PE is its home), marks it written and opens
//! it read-write. The handler does that itself, without waking the service thread, under
//! the table's spin lock; every other change of a page's state or twin (fetches, flushes,
//! invalidations) is the service thread's, under the same lock. The lock is held only
//! for a page copy and an `mprotect`, never across a wait, and no thread takes it while
//! it holds it (the handler never faults inside itself; the service thread never touches
//! the application view), so spinning on it is safe in a signal handler: it uses atomics,
//! `memcpy` and the `mprotect` system call only.

use crate::region::{Access, Region};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// No access: must be fetched from its home.
pub(crate) const INVALID: u8 = 0;
/// Valid and read-only.
pub(crate) const READ: u8 = 1;
/// Valid and written in the current interval (a twin exists unless home).
pub(crate) const WRITE: u8 = 2;

pub(crate) struct Pages {
    states: Box<[AtomicU8]>,
    home_here: Box<[AtomicBool]>,
    /// First-touch pages whose home this PE does not know yet: the service thread asks
    /// before the first write (so the handler leaves their write faults to it).
    homeless: Box<[AtomicBool]>,
    /// Pages written in the current interval, one bit each.
    written: Box<[AtomicU64]>,
    lock: AtomicBool,
    /// Write faults the handler served itself.
    pub(crate) fast_write_faults: AtomicU64,
}

/// The table's lock, held.
pub(crate) struct Locked<'a>(&'a Pages);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.0.lock.store(false, Ordering::Release);
    }
}

impl Pages {
    pub(crate) fn new(pages: usize) -> Pages {
        Pages {
            states: (0..pages).map(|_| AtomicU8::new(INVALID)).collect(),
            home_here: (0..pages).map(|_| AtomicBool::new(false)).collect(),
            homeless: (0..pages).map(|_| AtomicBool::new(false)).collect(),
            written: (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            lock: AtomicBool::new(false),
            fast_write_faults: AtomicU64::new(0),
        }
    }

    pub(crate) fn lock(&self) -> Locked<'_> {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        Locked(self)
    }

    /// Page `p` becomes valid (fresh allocation: zero everywhere), homed here, elsewhere
    /// (`Some(false)`) or not known yet (`None`: a first-touch page).
    pub(crate) fn add(&self, p: usize, home_here: Option<bool>) {
        self.home_here[p].store(home_here == Some(true), Ordering::Relaxed);
        self.homeless[p].store(home_here.is_none(), Ordering::Relaxed);
        self.states[p].store(READ, Ordering::Release);
    }

    pub(crate) fn homeless(&self, p: usize) -> bool {
        self.homeless[p].load(Ordering::Acquire)
    }

    pub(crate) fn home_here(&self, p: usize) -> bool {
        self.home_here[p].load(Ordering::Relaxed)
    }
}

impl Locked<'_> {
    /// The home of page `p` is now known: here or elsewhere.
    pub(crate) fn set_home(&self, p: usize, here: bool) {
        self.0.home_here[p].store(here, Ordering::Relaxed);
        self.0.homeless[p].store(false, Ordering::Release);
    }

    pub(crate) fn state(&self, p: usize) -> u8 {
        self.0.states[p].load(Ordering::Relaxed)
    }
    pub(crate) fn set_state(&self, p: usize, s: u8) {
        self.0.states[p].store(s, Ordering::Relaxed);
    }

    /// Opens valid page `p` for writing: twin (unless home), written bit, read-write.
    /// False (and nothing changed but the twin) if the kernel refuses the protection.
    pub(crate) fn open_for_write(&self, region: &Region, p: usize) -> bool {
        if !self.0.home_here(p) {
            region.make_twin(p);
        }
        if !region.try_protect(p, 1, Access::Write) {
            return false;
        }
        self.set_state(p, WRITE);
        self.0.written[p / 64].fetch_or(1 << (p % 64), Ordering::Relaxed);
        true
    }

    /// Takes the pages written in the current interval, in order.
    pub(crate) fn take_written(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (w, bits) in self.0.written.iter().enumerate() {
            let mut b = bits.swap(0, Ordering::Relaxed);
            while b != 0 {
                out.push((w * 64) as u32 + b.trailing_zeros());
                b &= b - 1;
            }
        }
        out
    }
}

/// The handler's fast path: serves a write fault on a valid page at `offset` and returns
/// true, or returns false for the service thread to serve. Async-signal-safe (see the
/// module documentation).
pub(crate) fn try_write_fault(pages: &Pages, region: &Region, offset: usize) -> bool {
    let p = offset / region.page();
    if p >= pages.states.len() {
        return false;
    }
    let t = pages.lock();
    if pages.homeless(p) {
        // The service thread learns the home first (it decides whether to twin).
        return false;
    }
    match t.state(p) {
        // A refused protection goes to the service thread, which reports it.
        READ if t.open_for_write(region, p) => {
            pages.fast_write_faults.fetch_add(1, Ordering::Relaxed);
            true
        }
        // Another thread opened it first: the store can run again.
        WRITE => true,
        _ => false,
    }
}
