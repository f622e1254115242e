//! Page fetches in runs: a thread reading a run of another PE's pages that a barrier
//! took away gets them back in one fetch, and always the current contents; and fetches in
//! flight: a page whose fetch was sent before a lock's write notices named it is never
//! installed as it was.

use super::{Mode, dsm};
use rhizome::Ctx;
use rhizome_dsm::{DsmLock, Homes};
use std::sync::atomic::{AtomicBool, Ordering};

/// PE 0's thread 0 rewrites 32 pages homed on PE 0 each round; after a barrier every
/// other thread reads them front to back and must see this round's values. With one
/// thread per PE the first round's reads take at most 8 faults (the read-ahead doubles its
/// window along the run, up to 16 pages); the barrier then takes away pages the reader
/// fetched, which come back in one batch: one fault a round, where the read-ahead alone
/// takes 6 and a fetch per page 32.
pub(super) fn a_run_of_pages_is_fetched_in_few_faults(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let per_page = d.page_size() / 8;
    let (pages, rounds) = (32, 3);
    let a = d.alloc_with::<u64>(pages * per_page, Homes::Pe(0)).unwrap();
    let value = |r: usize, w: usize| (r * 1_000_003 + w) as u64;
    d.run(ctx, |t| {
        for r in 0..rounds {
            if t.global_id() == 0 {
                for w in 0..a.len() {
                    a.set(w, value(r, w));
                }
            }
            t.barrier();
            if t.pe() != 0 {
                for w in 0..a.len() {
                    assert_eq!(a.get(w), value(r, w), "round {r}, word {w}");
                }
            }
            t.barrier();
        }
    });
    let s = d.stats();
    if ctx.my_pe() != 0 && m.threads == 1 {
        assert_eq!(
            s.page_fetches,
            (pages * rounds) as u64,
            "every page, each round"
        );
        // The first round's pages were fresh: read-ahead (at most 8 faults); then one.
        assert!(
            s.read_faults <= 8 + (rounds as u64 - 1),
            "{} read faults",
            s.read_faults
        );
    }
}

/// A counter on a page homed on PE 0, added to under a lock by every thread but one per
/// PE; with 2 threads per PE the other one keeps reading the same page without the lock,
/// so that its fetches are in flight while grants bring write notices naming the page (a
/// fetch sent before them may carry the page as it was, on a transport that does not
/// deliver causally: the local one does, so there the answer comes first). No increment
/// may be lost, and the adders' faults share the readers' fetches.
pub(super) fn a_page_in_flight_never_comes_back_older_than_a_notice(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let a = d.alloc_with::<u64>(2, Homes::Pe(0)).unwrap();
    let lock = DsmLock::new(31);
    let rounds = 150u64;
    let readers = usize::from(m.threads > 1);
    let done = AtomicBool::new(false);
    d.run(ctx, |t| {
        if t.thread() < readers {
            // Unsynchronised reads: any value will do; they keep the page travelling.
            let mut seen = 0;
            while !done.load(Ordering::Acquire) {
                seen = seen.max(a.get(1));
                std::hint::spin_loop();
            }
            std::hint::black_box(seen);
        } else {
            for _ in 0..rounds {
                lock.acquire(t);
                a.set(0, a.get(0) + 1);
                a.set(1, a.get(1) + 1);
                lock.release(t).unwrap();
            }
            done.store(true, Ordering::Release);
        }
        t.barrier();
        let adders = t.num_pes() * (t.threads_per_pe() - readers);
        assert_eq!(a.get(0), rounds * adders as u64, "no increment lost");
        assert_eq!(a.get(1), a.get(0));
    });
}
