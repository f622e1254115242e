//! How application threads ask the service thread for something, and the `SIGSEGV`
//! handler that turns an access to a protected page into such a request.
//!
//! **Why a `SIGSEGV` handler and not `userfaultfd`.** The protocol needs to see the first
//! read of an invalid page *and* the first write of a read-only page. `userfaultfd`
//! reports missing pages, and write-protect faults only for anonymous or (on recent
//! kernels) shmem memory with extra setup, not a plain `memfd` mapped twice; a present but
//! stale page could not be made to fault again without dropping it from both views. Plain
//! `mprotect` on the application view plus a `SIGSEGV` handler covers all three states
//! with one mechanism, on any Linux.
//!
//! **Why the handler is async-signal-safe.** It does no protocol work: it finds the
//! calling thread's [`Slot`] (a const-initialised thread local, a plain `#[thread_local]`
//! access with no lazy initialisation or destructor), stores the faulting offset in it
//! with atomic stores, rings the PE's doorbell (an atomic add and a `futex` wake) and
//! waits on the slot with `futex` until the service thread answers. Atomics and the
//! `futex` system call are all it uses; everything that allocates, locks or sends
//! messages runs on the service thread. When the handler returns, the faulting instruction
//! runs again on the now accessible page.
//!
//! A fault outside the region, or in the region from a thread that is not one of its
//! PE's application threads, goes to the handler that was installed before (Rust's stack
//! overflow handler, or the default action).

use std::cell::Cell;
use std::sync::Once;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

/// What an application thread asks of its service thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A page fault: the argument is `offset << 2 | known << 1 | write`.
    Fault = 1,
    /// Acquire the lock named by the argument.
    Acquire,
    /// Release the lock named by the argument.
    Release,
    /// Enter the barrier.
    Barrier,
    /// Ask for the tokens of locks ahead of their acquisitions: the argument is
    /// `first << 32 | count`.
    Prefetch,
}

// A prefetch's argument packs two `u32`s into the slot's `usize`.
const _: () = assert!(usize::BITS >= 64, "rhizome-dsm needs 64-bit words");

impl Op {
    fn from_word(w: u32) -> Option<Op> {
        [
            Op::Fault,
            Op::Acquire,
            Op::Release,
            Op::Barrier,
            Op::Prefetch,
        ]
        .into_iter()
        .find(|&op| op as u32 == w)
    }
}

/// How the service thread answered a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Done {
    /// Served.
    Ok = 1,
    /// Refused; the reason is in the slot's `error`.
    Refused,
    /// The run was aborted: unwind.
    Aborted,
}

impl Done {
    fn from_word(w: u32) -> Option<Done> {
        [Done::Ok, Done::Refused, Done::Aborted]
            .into_iter()
            .find(|&d| d as u32 == w)
    }
}

/// How many times a thread polls for its answer before it sleeps on the slot's futex.
/// Few: the answer needs the service thread, which may need this very core (a remote
/// lock or page takes tens of microseconds at least), and every poll is CPU time the
/// PE's other threads could use (200 polls cost about 10 us on this machine's cores).
const REQUEST_SPINS: u32 = 20;

/// One application thread's mailbox to its PE's service thread.
pub(crate) struct Slot {
    op: AtomicU32,
    arg: AtomicUsize,
    done: AtomicU32,
    /// The PE's shared state: its doorbell (which counts requests, so the service thread
    /// sleeps on it), page table and region.
    owner: *const crate::Shared,
    /// The application view this thread may touch: `[base, base + len)`.
    base: usize,
    len: usize,
    /// Why the last request was refused.
    pub(crate) error: std::sync::Mutex<String>,
}

// SAFETY: `owner` points to the PE's shared state, which outlives every slot user
// (the application threads are joined before it is dropped); the rest is atomics.
unsafe impl Send for Slot {}
// SAFETY: as for Send.
unsafe impl Sync for Slot {}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAIT reads it and sleeps, FUTEX_WAKE
    // wakes sleepers; neither writes memory. Errors (EAGAIN, EINTR, ETIMEDOUT) only mean
    // "look again", which every caller does.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            ts,
        );
    }
}

/// Sleeps while `word` holds `seen`, at most `timeout` (if given).
pub(crate) fn wait_while(word: &AtomicU32, seen: u32, timeout: Option<&libc::timespec>) {
    futex(word, libc::FUTEX_WAIT, seen, timeout);
}

/// Wakes every thread sleeping on `word`.
pub(crate) fn wake_all(word: &AtomicU32) {
    futex(word, libc::FUTEX_WAKE, i32::MAX as u32, None);
}

impl Slot {
    pub(crate) fn new(owner: *const crate::Shared, base: usize, len: usize) -> Slot {
        Slot {
            op: AtomicU32::new(0),
            arg: AtomicUsize::new(0),
            done: AtomicU32::new(0),
            owner,
            base,
            len,
            error: std::sync::Mutex::new(String::new()),
        }
    }

    /// Posts a request and waits for its answer. Called from the signal handler too:
    /// atomics and futex only.
    pub(crate) fn request(&self, op: Op, arg: usize) -> Done {
        self.arg.store(arg, Ordering::Relaxed);
        self.op.store(op as u32, Ordering::Release);
        self.owner().doorbell.ring();
        let mut spins = 0u32;
        loop {
            if let Some(d) = Done::from_word(self.done.load(Ordering::Acquire)) {
                // An abort stays, so every later request sees it at once.
                if d != Done::Aborted {
                    self.done.store(0, Ordering::Relaxed);
                }
                return d;
            }
            if spins < REQUEST_SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                wait_while(&self.done, 0, None);
            }
        }
    }

    fn owner(&self) -> &crate::Shared {
        // SAFETY: see the Send impl: the shared state outlives the slot's users.
        unsafe { &*self.owner }
    }

    /// The service thread takes the pending request, if any: `(op, arg)`.
    pub(crate) fn take(&self) -> Option<(Op, usize)> {
        if self.op.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let op = Op::from_word(self.op.swap(0, Ordering::Acquire))?;
        Some((op, self.arg.load(Ordering::Relaxed)))
    }

    /// The service thread answers the request taken last.
    pub(crate) fn complete(&self, answer: Done) {
        self.done.store(answer as u32, Ordering::Release);
        wake_all(&self.done);
    }
}

thread_local! {
    /// The calling thread's slot, set while it runs as an application thread.
    static SLOT: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
}

/// Marks the calling thread as the application thread of `slot` until the guard drops.
pub(crate) fn enter(slot: &Slot) -> impl Drop {
    install();
    SLOT.with(|s| s.set(slot));
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            SLOT.with(|s| s.set(std::ptr::null()));
        }
    }
    Leave
}

/// The calling thread's slot (null outside application threads).
pub(crate) fn current() -> *const Slot {
    SLOT.with(|s| s.get())
}

/// The handler installed before ours, to which faults that are not ours go.
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid "no handler" value; we fill in ours and
        // let the kernel store the previous one, which is leaked so the handler can read
        // it for the life of the process.
        unsafe {
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_segv as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut ours.sa_mask);
            let old: &mut libc::sigaction = Box::leak(Box::new(std::mem::zeroed()));
            if libc::sigaction(libc::SIGSEGV, &ours, old) == 0 {
                PREVIOUS.store(old, Ordering::Release);
            } else {
                panic!(
                    "rhizome: error: cannot install the DSM fault handler: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    });
}

/// Whether the fault was a write, where the architecture says so.
fn write_flag(ctx: *mut libc::c_void) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO handler; on x86-64
        // bit 1 of the page-fault error code is "write access".
        let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
        Some(uc.uc_mcontext.gregs[libc::REG_ERR as usize] & 2 != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ctx;
        None
    }
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t for SIGSEGV.
    let addr = unsafe { (*info).si_addr() } as usize;
    let slot = current();
    // SAFETY: a non-null slot pointer is set by `enter` and cleared before the slot dies.
    if let Some(slot) = unsafe { slot.as_ref() }
        && addr.wrapping_sub(slot.base) < slot.len
    {
        let offset = addr - slot.base;
        let owner = slot.owner();
        if write_flag(ctx) == Some(true)
            && crate::pages::try_write_fault(&owner.pages, &owner.region, offset)
        {
            return;
        }
        let arg = match write_flag(ctx) {
            Some(w) => offset << 2 | 2 | w as usize,
            None => offset << 2,
        };
        match slot.request(Op::Fault, arg) {
            Done::Ok | Done::Aborted => return,
            Done::Refused => {
                // The service thread printed why; the access cannot be satisfied.
                // SAFETY: _exit is async-signal-safe.
                unsafe { libc::_exit(1) }
            }
        }
    }
    chain(sig, info, ctx);
}

/// Hands a fault that is not ours to the handler installed before, or to the default
/// action (the faulting instruction runs again and the process ends with SIGSEGV).
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let prev = PREVIOUS.load(Ordering::Acquire);
    // SAFETY: PREVIOUS is null or the leaked sigaction stored by `install`.
    let handler = unsafe { prev.as_ref() }.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    let siginfo = unsafe { prev.as_ref() }.is_some_and(|p| p.sa_flags & libc::SA_SIGINFO != 0);
    if handler != libc::SIG_DFL && handler != libc::SIG_IGN && siginfo {
        // SAFETY: the previous handler was installed as an SA_SIGINFO handler with this
        // signature; we call it as the kernel would.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: restoring the default action with a zeroed sigaction is valid and
        // async-signal-safe; returning re-runs the access, which then ends the process.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    }
}
