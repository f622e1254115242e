//! A lock's write notices applied while another thread of the PE writes the pages they
//! name: every named page must end up invalid or updated, never left as it was.

use super::{Mode, config};
use rhizome::Ctx;
use rhizome_dsm::{Dsm, DsmLock, Homes};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const LOCK: u32 = 310;
/// Pages the lock's holders write: a grant's notices name them all, so applying them
/// takes a while, in which the PE's other thread faults on some of them.
const PAGES: usize = 48;
/// The writers' last value of their own words.
const LAST: u64 = u64::MAX;
/// How long applying a grant's notices pauses between sorting the pages and closing the
/// read-only ones: long enough for the writers to fault on some of them meanwhile.
const PAUSE: Duration = Duration::from_micros(300);

/// Thread 0 of every PE takes the lock again and again, adding one to the first word of
/// each of [`PAGES`] pages homed round the PEs (so every grant carries notices naming them
/// all); meanwhile every other thread writes its own word of each page, unlocked (false
/// sharing, which diffs keep apart), so that its write faults open pages while its PE's
/// service thread applies a grant's notices to them. A page opened for writing in that
/// moment must still be brought up to date: if it kept its old contents, the next holder
/// on its PE would add one to an old counter and an increment would be lost. Every counter
/// and every thread's last own write must come out right.
///
/// That moment is a few instructions wide, too narrow for threads run side by side to hit,
/// so the DSM pauses there for [`PAUSE`] (`DsmConfig::notice_pause`, a test hook). With
/// the pages sorted and closed in two holds of the page table's lock (stop 29's bug) this
/// test failed in none of 34 runs without the pause, and in 6 of 6 with it.
pub(super) fn notices_applied_while_a_thread_writes_lose_no_update(ctx: &Ctx, m: Mode) {
    let d = Dsm::new(ctx, config(m).region_bytes(16 << 20).notice_pause(PAUSE)).unwrap();
    let per_page = d.page_size() / 8;
    let words = d
        .alloc_with::<u64>(PAGES * per_page, Homes::Cyclic)
        .unwrap();
    let lock = DsmLock::new(LOCK);
    let turns = 60u64;
    // Set by this PE's thread 0 when its turns are done: the writers write until then.
    let holding = AtomicBool::new(true);
    d.run(ctx, |t| {
        let id = t.global_id();
        assert!(1 + id < per_page);
        if t.thread() == 0 {
            for _ in 0..turns {
                lock.acquire(t);
                for p in 0..PAGES {
                    let at = p * per_page;
                    words.set(at, words.get(at) + 1);
                }
                lock.release(t).unwrap();
            }
            holding.store(false, Ordering::Release);
        } else {
            let mut w = 0;
            while holding.load(Ordering::Acquire) {
                w += 1;
                // Downwards, against the service thread's walk up the notices' pages.
                for p in (0..PAGES).rev() {
                    words.set(p * per_page + 1 + id, w);
                }
                // Leaves the core to a thread that waits for it, if any (on oversubscribed
                // cores, the holders and the service threads that pass the lock round):
                // the writes race the notices only where a core is free for them anyway.
                std::thread::yield_now();
            }
            for p in 0..PAGES {
                words.set(p * per_page + 1 + id, LAST);
            }
        }
        t.barrier();
        let holders = t.global_threads() / t.threads_per_pe();
        for p in 0..PAGES {
            let at = p * per_page;
            assert_eq!(words.get(at), turns * holders as u64, "counter of page {p}");
            for g in 0..t.global_threads() {
                let want = if g % t.threads_per_pe() == 0 { 0 } else { LAST };
                assert_eq!(words.get(at + 1 + g), want, "page {p}, thread {g}'s word");
            }
        }
    });
}
