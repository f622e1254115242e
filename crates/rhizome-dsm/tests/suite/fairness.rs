//! Lock hand-offs between the threads of one PE come first, but never starve another PE:
//! a PE whose threads keep asking for a lock still lets a waiting PE have it.

use super::{Mode, dsm};
use rhizome::Ctx;
use rhizome_dsm::{DsmLock, Homes};
use std::time::{Duration, Instant};

/// Locks managed by PE 0 on up to 8 PEs, so their tokens start there: the contended
/// lock, and the one that tells the other PEs when to ask for it.
const LOCK: u32 = 240;
const START: u32 = 248;
/// PE 0's turns before the other PEs ask.
const WARM_UP: u64 = 20;

/// PE 0's threads take the lock again and again, counting their turns (and holding it a
/// moment each time), until a holder finds the flag set; every other PE's threads take it
/// once, after PE 0's first [`WARM_UP`] turns, and set the flag. With two threads on PE 0
/// the other local thread is waiting whenever the holder releases, so a hand-off that
/// always preferred local threads would keep the lock on PE 0 forever. The loop gives up
/// only after a generous hang limit, and then the test fails: the waiting PE starved.
pub(super) fn a_waiting_pe_gets_a_lock_a_busy_pe_keeps_asking_for(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    // Word 0: the flag; word 1: PE 0's turns; word 2: the other PEs' turns.
    let words = d.alloc_with::<u64>(3, Homes::Pe(0)).unwrap();
    let pes = ctx.num_pes();
    let (lock, start) = (DsmLock::new(LOCK), DsmLock::new(START));
    let limit = Duration::from_secs(120);
    d.run(ctx, |t| {
        let starter = t.pe() == 0 && t.thread() == 0;
        if starter {
            // Held until PE 0's threads are busy with `lock`.
            start.acquire(t);
        }
        t.barrier();
        if t.pe() == 0 {
            let begun = Instant::now();
            let mut holds_start = starter;
            loop {
                lock.acquire(t);
                let flagged = words.get(0) == 1;
                // With one PE nobody sets the flag: a few turns, then done.
                let alone = pes == 1 && words.get(1) >= 100;
                let turns = words.get(1);
                if !flagged && !alone {
                    words.set(1, turns + 1);
                    // Held a while, so that PE 0's other thread is queued for the lock
                    // again by the time this one releases it: constant local demand.
                    std::thread::sleep(Duration::from_millis(1));
                }
                lock.release(t).unwrap();
                if holds_start && turns >= WARM_UP {
                    start.release(t).unwrap();
                    holds_start = false;
                }
                if flagged || alone {
                    break;
                }
                assert!(
                    begun.elapsed() < limit,
                    "PE 0 kept the lock for {limit:?}: a waiting PE was starved"
                );
            }
            if holds_start {
                start.release(t).unwrap();
            }
        } else {
            start.acquire(t);
            start.release(t).unwrap();
            lock.acquire(t);
            words.set(0, 1);
            words.set(2, words.get(2) + 1);
            lock.release(t).unwrap();
        }
        t.barrier();
        let others = ((pes - 1) * t.threads_per_pe()) as u64;
        assert_eq!(words.get(2), others, "every other PE's thread took it once");
        assert_eq!(words.get(0), u64::from(pes > 1));
        if pes == 1 {
            assert_eq!(words.get(1), 100, "one PE: its threads took 100 turns");
        } else {
            assert!(
                words.get(1) > WARM_UP,
                "the others asked after PE 0's warm-up"
            );
        }
    });
}
