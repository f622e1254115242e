//! The service thread asks the scheduler for a short time slice while it serves.
//!
//! The service thread sleeps until a request or a message rings its doorbell, and every
//! page fetch, lock grant and barrier waits for a service thread (this PE's, and the
//! other PE's) to be woken and run. When the machine has no idle core, the woken thread
//! must preempt an application thread; Linux's EEVDF scheduler lets a waking thread do
//! that at once only if its time slice is shorter than the running thread's (otherwise
//! the running thread keeps its slice, up to a few milliseconds). A short slice is what
//! a thread that runs in short bursts should ask for (`sched_setattr` with a
//! `sched_runtime` for `SCHED_OTHER`, Linux 6.12 and later; no privilege needed). Where
//! the kernel does not take it, nothing changes. The previous setting comes back when
//! the run ends, since the service thread is the PE's main thread. A service thread that
//! polls instead of sleeping (MPI, where no hook says a message arrived) does not ask:
//! it is always runnable, and a short slice would have the scheduler switch to it, only
//! for it to yield again, far more often.

/// The slice the service thread asks for: the kernel's least (0.1 ms).
const SLICE_NS: u64 = 100_000;

/// `struct sched_attr` of `sched_setattr(2)` (its first version, 48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

const SCHED_OTHER: u32 = 0;

fn set(attr: &SchedAttr) -> bool {
    // SAFETY: `attr` is a valid sched_attr of the size it states; pid 0 is the calling
    // thread; the call reads the struct and changes only this thread's scheduling.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, attr as *const SchedAttr, 0) == 0 }
}

/// The calling thread's short slice, given back on drop.
pub(crate) struct ShortSlice {
    /// The nice value to go back to, if the slice was set.
    nice: Option<i32>,
}

impl ShortSlice {
    /// Asks for the short slice if the calling thread is an ordinary (`SCHED_OTHER`) one.
    pub(crate) fn new() -> ShortSlice {
        let size = std::mem::size_of::<SchedAttr>() as u32;
        let mut now = SchedAttr::default();
        // SAFETY: `now` is writable and `size` bytes long; pid 0 is the calling thread.
        let read = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut now as *mut SchedAttr,
                size,
                0,
            )
        } == 0;
        if !read || now.policy != SCHED_OTHER {
            return ShortSlice { nice: None };
        }
        let short = SchedAttr {
            size,
            policy: SCHED_OTHER,
            nice: now.nice,
            runtime: SLICE_NS,
            ..SchedAttr::default()
        };
        ShortSlice {
            nice: set(&short).then_some(now.nice),
        }
    }

    /// Whether the kernel took the short slice.
    #[cfg(test)]
    fn taken(&self) -> bool {
        self.nice.is_some()
    }
}

impl Drop for ShortSlice {
    fn drop(&mut self) {
        if let Some(nice) = self.nice {
            // A runtime of 0 is the kernel's default slice.
            set(&SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                policy: SCHED_OTHER,
                nice,
                ..SchedAttr::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice_now() -> u64 {
        let mut now = SchedAttr::default();
        let size = std::mem::size_of::<SchedAttr>() as u32;
        // SAFETY: as in `ShortSlice::new`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut now as *mut SchedAttr,
                size,
                0,
            )
        };
        assert_eq!(r, 0);
        now.runtime
    }

    #[test]
    fn the_short_slice_is_set_and_given_back() {
        std::thread::spawn(|| {
            let before = slice_now();
            let short = ShortSlice::new();
            if short.taken() {
                assert_eq!(slice_now(), SLICE_NS);
            }
            drop(short);
            assert_eq!(slice_now(), before);
        })
        .join()
        .unwrap();
    }
}
