//! Tokens asked for ahead (`DsmLock::prefetch`): a hint that moves tokens early, never
//! one that lets two holders in at once or hides an earlier holder's writes.

use super::{Mode, dsm};
use rhizome::Ctx;
use rhizome_dsm::{DsmLock, Homes};

/// Locks `FIRST..FIRST + LOCKS`, each guarding one counter; eight counters share a page,
/// so neighbouring locks' data falsely share pages homed round the PEs.
const FIRST: u32 = 200;
const LOCKS: usize = 64;
const RUN: usize = 8;

/// Every thread adds one to every counter each round, lock by lock, in runs of
/// [`RUN`] locks from a starting run of its own, asking for the next run's tokens while
/// it takes this one's; every other round it also asks for a run it will not take soon
/// (so tokens arrive where no thread waits for them, and go on to the PE that asks next).
/// No increment may be lost, each holder must see the last one, and a PE that asked for
/// tokens it lacked must have counted the requests.
pub(super) fn prefetched_locks_lose_no_update(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let counters = d.alloc_with::<u64>(LOCKS, Homes::Cyclic).unwrap();
    let rounds = 6usize;
    d.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        let runs = LOCKS / RUN;
        let range = |k: usize| {
            let a = FIRST + ((k % runs) * RUN) as u32;
            a..a + RUN as u32
        };
        // Before any acquisition: the tokens not managed here must be asked for.
        DsmLock::prefetch(t, range(id));
        for r in 0..rounds {
            let start = id + r;
            for k in start..start + runs {
                DsmLock::prefetch(t, range(k + 1));
                if r % 2 == 1 {
                    DsmLock::prefetch(t, range(k + runs / 2));
                }
                for lock in range(k) {
                    let i = (lock - FIRST) as usize;
                    let l = DsmLock::new(lock);
                    l.acquire(t);
                    let seen = counters.get(i);
                    counters.set(i, seen + 1);
                    l.release(t).unwrap();
                }
            }
        }
        t.barrier();
        for i in 0..LOCKS {
            assert_eq!(counters.get(i), (rounds * all) as u64, "counter {i}");
        }
    });
    let s = d.stats();
    if ctx.num_pes() > 1 {
        assert!(
            s.lock_prefetches > 0,
            "PE {} asked for no token ahead",
            ctx.my_pe()
        );
    }
    assert_eq!(
        s.lock_acquires,
        (rounds * LOCKS * m.threads) as u64,
        "acquisitions on PE {}",
        ctx.my_pe()
    );
}

/// A prefetch of tokens that are all here (or of nothing) asks nothing, and a thread may
/// prefetch a lock it holds: the hint never waits for a token, so none of this blocks.
pub(super) fn prefetch_of_tokens_here_asks_nothing(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let counter = d.alloc_with::<u64>(1, Homes::Pe(0)).unwrap();
    let me = ctx.my_pe() as u32;
    let pes = ctx.num_pes() as u32;
    // Locks managed here: their tokens start here.
    let mine = (FIRST..FIRST + 4 * pes).filter(|l| l % pes == me);
    let mine: Vec<u32> = mine.collect();
    d.run(ctx, |t| {
        DsmLock::prefetch(t, 0..0);
        for &l in &mine {
            let lock = DsmLock::new(l);
            lock.acquire(t);
            DsmLock::prefetch(t, l..l + 1);
            lock.release(t).unwrap();
            DsmLock::prefetch(t, l..l + 1);
        }
        DsmLock::new(7).acquire(t);
        counter.set(0, counter.get(0) + 1);
        DsmLock::new(7).release(t).unwrap();
        t.barrier();
        assert_eq!(counter.get(0), t.global_threads() as u64);
    });
    assert_eq!(
        d.stats().lock_prefetches,
        0,
        "PE {me} asked for tokens it had"
    );
}

/// Lock `CROSSING` is held by global thread 0 across a barrier while the other PEs ask
/// for its token ahead (their requests reach the holder before the barrier, with their
/// vector timestamps of then); the holder writes in the phase before the barrier and
/// releases right after it, so the token leaves a PE that has passed the barrier for PEs
/// that may not have finished it yet, carrying write notices of the epoch after it.
/// Every holder of the token must still see the last holder's write under it (the
/// notices are neither refused nor dropped when the receiver's barrier ends), and every
/// thread the holder's write before the barrier.
pub(super) fn a_token_granted_across_a_barrier_carries_the_next_epoch(ctx: &Ctx, m: Mode) {
    const CROSSING: u32 = 300;
    let d = dsm(ctx, m);
    // Homed at the holder's PE: the others' copies must be invalidated by the notices.
    let before = d.alloc_with::<u64>(1, Homes::Pe(0)).unwrap();
    let under = d.alloc_with::<u64>(1, Homes::Pe(0)).unwrap();
    let lock = DsmLock::new(CROSSING);
    let rounds = 200u64;
    d.run(ctx, |t| {
        let holder = t.global_id() == 0;
        let asker = t.pe() != 0 && t.thread() == 0;
        for r in 1..=rounds {
            if holder {
                lock.acquire(t);
            }
            t.barrier();
            if holder {
                before.set(0, r);
            }
            if asker {
                DsmLock::prefetch(t, CROSSING..CROSSING + 1);
            }
            t.barrier();
            assert_eq!(before.get(0), r, "the write before the barrier, round {r}");
            if holder {
                under.set(0, r);
                lock.release(t).unwrap();
            }
            if asker {
                lock.acquire(t);
                assert_eq!(under.get(0), r, "the write under the lock, round {r}");
                lock.release(t).unwrap();
            }
            t.barrier();
        }
    });
}
