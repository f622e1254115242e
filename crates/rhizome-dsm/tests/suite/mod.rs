//! The DSM's SPMD test suite: each test runs inside one PE of a world (local PEs in
//! `tests/dsm.rs`, MPI ranks in `examples/dsm_tests.rs`) and panics on a wrong result.
//! Every test is written for any number of PEs and application threads; each runs with
//! 1 and with 2 application threads per PE, under both interval policies, with diffs and
//! write notices in messages, and twice more with both written by one-sided puts.

mod fairness;
mod notices;
mod prefetch;
mod readahead;

use fairness::a_waiting_pe_gets_a_lock_a_busy_pe_keeps_asking_for;
use notices::notices_applied_while_a_thread_writes_lose_no_update;
use prefetch::{
    a_token_granted_across_a_barrier_carries_the_next_epoch, prefetch_of_tokens_here_asks_nothing,
    prefetched_locks_lose_no_update,
};
use readahead::{
    a_page_in_flight_never_comes_back_older_than_a_notice, a_run_of_pages_is_fetched_in_few_faults,
};
use rhizome::Ctx;
use rhizome_dsm::{Dsm, DsmConfig, DsmLock, Homes, Intervals, Transfer};

/// How one run of a test sets up its DSM.
#[derive(Clone, Copy)]
pub struct Mode {
    threads: usize,
    intervals: Intervals,
    transfer: Transfer,
}

const fn mode(threads: usize, intervals: Intervals, transfer: Transfer) -> Mode {
    Mode {
        threads,
        intervals,
        transfer,
    }
}

/// Lists each test with 1 and with 2 application threads per PE, under lazy and under
/// aggressive intervals, by messages; and by one-sided puts with 1 thread under lazy and 2
/// under aggressive intervals: `(name, body)`, in the form of the runtime's example suites.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        pub const TESTS: &[(&str, fn(&Ctx))] = &[$(
            (concat!(stringify!($name), " x1 lazy"), |ctx: &Ctx| $name(ctx, mode(1, Intervals::Lazy, Transfer::Message))),
            (concat!(stringify!($name), " x2 lazy"), |ctx: &Ctx| $name(ctx, mode(2, Intervals::Lazy, Transfer::Message))),
            (concat!(stringify!($name), " x1 aggressive"), |ctx: &Ctx| $name(ctx, mode(1, Intervals::Aggressive, Transfer::Message))),
            (concat!(stringify!($name), " x2 aggressive"), |ctx: &Ctx| $name(ctx, mode(2, Intervals::Aggressive, Transfer::Message))),
            (concat!(stringify!($name), " x2 lazy one-sided"), |ctx: &Ctx| $name(ctx, mode(2, Intervals::Lazy, Transfer::OneSided))),
            (concat!(stringify!($name), " x1 aggressive one-sided"), |ctx: &Ctx| $name(ctx, mode(1, Intervals::Aggressive, Transfer::OneSided))),
        )*];
    };
}

suite!(
    lock_handoff_is_seen_by_next_holder,
    message_passing_through_barrier,
    false_sharing_loses_no_write,
    every_word_size_diffs,
    dekker_under_a_lock_is_sequential,
    dirty_page_keeps_its_writes_across_an_acquire,
    first_touch_homes_pages_where_written,
    release_without_acquire_is_an_error,
    region_exhaustion_is_an_error,
    a_released_lock_stays_cached,
    a_lock_cached_on_a_pe_in_the_barrier_is_handed_on,
    threads_hammering_two_locks_lose_no_update,
    rings_and_bins_wrap_without_loss,
    a_run_of_pages_is_fetched_in_few_faults,
    prefetched_locks_lose_no_update,
    prefetch_of_tokens_here_asks_nothing,
    a_page_in_flight_never_comes_back_older_than_a_notice,
    a_waiting_pe_gets_a_lock_a_busy_pe_keeps_asking_for,
    notices_applied_while_a_thread_writes_lose_no_update,
    a_token_granted_across_a_barrier_carries_the_next_epoch,
);

fn config(m: Mode) -> DsmConfig {
    DsmConfig::default()
        .threads(m.threads)
        .intervals(m.intervals)
        .transfers(m.transfer, m.transfer)
        // Small rings and bins, so that the tests wrap them.
        .one_sided_sizes(64 << 10, 4096)
}

fn dsm(ctx: &Ctx, m: Mode) -> Dsm {
    Dsm::new(ctx, config(m).region_bytes(16 << 20)).unwrap()
}

/// First-touch homes: each thread fills its own pages, so every page is homed where it
/// was written and the fill sends no diff; then each thread overwrites the next thread's
/// pages (homed elsewhere now), and every thread sees both rounds' values.
fn first_touch_homes_pages_where_written(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let per_page = d.page_size() / 8;
    let all = m.threads * ctx.num_pes();
    let a = d
        .alloc_with::<u64>(2 * per_page * all, Homes::FirstTouch)
        .unwrap();
    let mine = |g: usize| 2 * per_page * g..2 * per_page * (g + 1);
    let check = |t: &rhizome_dsm::DsmThread, round: u64| {
        for g in 0..t.global_threads() {
            for i in mine(g) {
                assert_eq!(a.get(i), round * 1_000_000 + i as u64, "element {i}");
            }
        }
    };
    d.run(ctx, |t| {
        for i in mine(t.global_id()) {
            a.set(i, 1_000_000 + i as u64);
        }
        t.barrier();
        check(t, 1);
        t.barrier();
    });
    assert_eq!(
        d.stats().diffs_created,
        0,
        "every page homed where it was filled"
    );
    d.run(ctx, |t| {
        for i in mine((t.global_id() + 1) % t.global_threads()) {
            a.set(i, 2_000_000 + i as u64);
        }
        t.barrier();
        check(t, 2);
        t.barrier();
    });
}

/// Each thread writes its own word of a page, unlocked, then takes a lock whose last
/// holder (often on another PE) wrote another word of the same page: the acquire must
/// bring the holder's word without dropping this thread's pending write (two-way diffing
/// under lazy intervals; an interval end at the acquire under aggressive ones).
fn dirty_page_keeps_its_writes_across_an_acquire(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let page = d.alloc_with::<u64>(512, Homes::Pe(0)).unwrap();
    let lock = DsmLock::new(5);
    let rounds = 10u64;
    let results = d.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        assert!(all < 512);
        for round in 1..=rounds {
            let mine = round * 1000 + id as u64;
            page.set(1 + id, mine);
            lock.acquire(t);
            let c = page.get(0);
            page.set(0, c + 1);
            lock.release(t).unwrap();
            assert_eq!(page.get(1 + id), mine, "own write kept, round {round}");
        }
        t.barrier();
        let last: Vec<u64> = (0..all).map(|j| page.get(1 + j)).collect();
        (page.get(0), last)
    });
    let two_way = d.stats().two_way_updates;
    if m.intervals == Intervals::Aggressive {
        assert_eq!(two_way, 0, "aggressive intervals never update a dirty page");
    }
    let all = m.threads * ctx.num_pes();
    for (count, last) in results {
        assert_eq!(count, rounds * all as u64, "increments under the lock");
        for (j, v) in last.into_iter().enumerate() {
            assert_eq!(v, rounds * 1000 + j as u64, "thread {j}'s last write");
        }
    }
}

/// A counter incremented under one lock by every thread: each holder sees the previous
/// holder's write (a lost update would leave the total short).
fn lock_handoff_is_seen_by_next_holder(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let counter = d
        .alloc_with::<u64>(1, Homes::Pe(ctx.num_pes() - 1))
        .unwrap();
    let log = d.alloc::<u32>(4096).unwrap();
    let lock = DsmLock::new(7);
    let rounds = 20;
    let got = d.run(ctx, |t| {
        for _ in 0..rounds {
            lock.acquire(t);
            let n = counter.get(0);
            log.set(n as usize, t.global_id() as u32 + 1);
            counter.set(0, n + 1);
            lock.release(t).unwrap();
        }
        t.barrier();
        let total = counter.get(0);
        let filled = (0..total as usize).filter(|&i| log.get(i) != 0).count();
        (total, filled)
    });
    let want = (rounds * m.threads * ctx.num_pes()) as u64;
    for (total, filled) in got {
        assert_eq!(total, want, "increments under the lock");
        assert_eq!(
            filled as u64, want,
            "every log entry written under the lock is seen"
        );
    }
}

/// Data written before a barrier (by every thread, to pages homed everywhere) is read
/// after it by every other thread: the data-race-free program sees what a sequential
/// interleaving would.
fn message_passing_through_barrier(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let n = 3 * 4096;
    let a = d.alloc_with::<u64>(n, Homes::Cyclic).unwrap();
    d.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        for round in 0..3u64 {
            for i in (id..n).step_by(all) {
                a.set(i, round * 1_000_000 + i as u64);
            }
            t.barrier();
            // Read what the *next* thread wrote.
            let other = (id + 1) % all;
            for i in (other..n).step_by(all) {
                assert_eq!(
                    a.get(i),
                    round * 1_000_000 + i as u64,
                    "element {i}, round {round}"
                );
            }
            t.barrier();
        }
    });
}

/// Every thread of every PE writes its own bytes of the same page, many times between
/// barriers: no write is lost when the diffs meet at the home.
fn false_sharing_loses_no_write(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let bytes = d.alloc_with::<u8>(d.page_size(), Homes::Pe(0)).unwrap();
    d.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        for round in 1..=5u8 {
            for i in (id..bytes.len()).step_by(all) {
                bytes.set(i, round.wrapping_mul(31).wrapping_add(i as u8));
            }
            t.barrier();
            for i in 0..bytes.len() {
                assert_eq!(
                    bytes.get(i),
                    round.wrapping_mul(31).wrapping_add(i as u8),
                    "byte {i}"
                );
            }
            t.barrier();
        }
    });
}

fn pattern(i: usize, size: usize, pe: usize) -> u128 {
    let v = (i as u128 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835) ^ pe as u128;
    if size == 16 {
        v
    } else {
        v & ((1u128 << (8 * size)) - 1)
    }
}

/// Elements of 1, 2, 4, 8 and 16 bytes, interleaved between PEs inside one page each:
/// the diff of each carries exactly its writer's elements.
fn every_word_size_diffs(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let page = d.page_size();
    let v8 = d.alloc::<u8>(page).unwrap();
    let v16 = d.alloc::<u16>(page / 2).unwrap();
    let v32 = d.alloc::<u32>(page / 4).unwrap();
    let v64 = d.alloc::<u64>(page / 8).unwrap();
    let v128 = d.alloc::<u128>(page / 16).unwrap();
    d.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        let owner = |i: usize| i % all;
        for i in (id..page).step_by(all) {
            v8.set(i, pattern(i, 1, owner(i)) as u8);
            if i < page / 2 {
                v16.set(i, pattern(i, 2, owner(i)) as u16)
            }
            if i < page / 4 {
                v32.set(i, pattern(i, 4, owner(i)) as u32)
            }
            if i < page / 8 {
                v64.set(i, pattern(i, 8, owner(i)) as u64)
            }
            if i < page / 16 {
                v128.set(i, pattern(i, 16, owner(i)))
            }
        }
        t.barrier();
        for i in 0..page {
            assert_eq!(v8.get(i) as u128, pattern(i, 1, owner(i)), "u8 {i}");
            if i < page / 2 {
                assert_eq!(v16.get(i) as u128, pattern(i, 2, owner(i)), "u16 {i}")
            }
            if i < page / 4 {
                assert_eq!(v32.get(i) as u128, pattern(i, 4, owner(i)), "u32 {i}")
            }
            if i < page / 8 {
                assert_eq!(v64.get(i) as u128, pattern(i, 8, owner(i)), "u64 {i}")
            }
            if i < page / 16 {
                assert_eq!(v128.get(i), pattern(i, 16, owner(i)), "u128 {i}")
            }
        }
    });
}

/// Store buffering (Dekker) with both sides under one lock: each thread sets its flag and
/// reads its partner's; the outcome where neither sees the other's flag, which
/// sequential consistency forbids, never occurs.
fn dekker_under_a_lock_is_sequential(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let flags = d.alloc_with::<u64>(64, Homes::Cyclic).unwrap();
    let seen = d.alloc::<u64>(64).unwrap();
    let lock = DsmLock::new(3);
    d.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        for round in 1..=10u64 {
            // Threads pair up (0 with 1, 2 with 3, ...); a thread without a partner plays
            // against itself.
            let partner = if id ^ 1 < all { id ^ 1 } else { id };
            lock.acquire(t);
            flags.set(id, round);
            let other = flags.get(partner);
            lock.release(t).unwrap();
            seen.set(id, other);
            t.barrier();
            if partner != id {
                let me_saw = seen.get(id) >= round;
                let partner_saw = seen.get(partner) >= round;
                assert!(
                    me_saw || partner_saw,
                    "neither saw the other's flag in round {round}: {id} saw {}, {partner} saw {}",
                    seen.get(id),
                    seen.get(partner)
                );
            }
            t.barrier();
        }
    });
}

/// A release by a thread that never acquired is refused with a clear error.
fn release_without_acquire_is_an_error(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let errs = d.run(ctx, |t| {
        DsmLock::new(11).release(t).unwrap_err().to_string()
    });
    for e in errs {
        assert!(e.contains("does not hold"), "{e}");
    }
}

/// An allocation larger than what is left of the region is refused, and the region
/// stays usable.
fn region_exhaustion_is_an_error(ctx: &Ctx, m: Mode) {
    let d = Dsm::new(ctx, config(m).region_bytes(1 << 20)).unwrap();
    let e = d.alloc::<u64>(1 << 20).map(|_| ()).unwrap_err();
    assert!(e.to_string().contains("DSM region exhausted"), "{e}");
    let small = d.alloc::<u64>(8).unwrap();
    d.run(ctx, |t| {
        if t.global_id() == 0 {
            small.set(0, 5);
        }
        t.barrier();
        assert_eq!(small.get(0), 5);
    });
}

/// Each PE's threads take a lock that only they use, many times: after the first
/// acquisition (which may need the lock's manager on another PE) every one is served on
/// the PE with no message, and the counter it guards is right.
fn a_released_lock_stays_cached(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let counters = d.alloc_with::<u64>(ctx.num_pes(), Homes::Pe(0)).unwrap();
    let rounds = 25u64;
    let me = ctx.my_pe();
    let lock = DsmLock::new(100 + me as u32);
    d.run(ctx, |t| {
        for _ in 0..rounds {
            lock.acquire(t);
            counters.set(me, counters.get(me) + 1);
            lock.release(t).unwrap();
        }
        t.barrier();
        for pe in 0..t.num_pes() {
            assert_eq!(counters.get(pe), rounds * t.threads_per_pe() as u64);
        }
    });
    let s = d.stats();
    let total = rounds * m.threads as u64;
    assert_eq!(s.lock_acquires, total, "acquisitions on PE {me}");
    assert!(
        s.lock_local + 1 >= total,
        "PE {me}: {} of {total} acquisitions served locally",
        s.lock_local
    );
}

/// Thread 0 takes a lock and goes into the barrier, whose token then stays on its PE;
/// the other threads take the lock later (after a pause) before entering the barrier:
/// the PE waiting in the barrier must still hand the token on, and every increment is
/// seen after the barrier.
fn a_lock_cached_on_a_pe_in_the_barrier_is_handed_on(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let counter = d.alloc_with::<u64>(1, Homes::Pe(0)).unwrap();
    let lock = DsmLock::new(9);
    d.run(ctx, |t| {
        if t.global_id() != 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        lock.acquire(t);
        counter.set(0, counter.get(0) + 1);
        lock.release(t).unwrap();
        t.barrier();
        assert_eq!(counter.get(0), t.global_threads() as u64);
    });
}

/// Every thread takes two locks in turn, many times, each guarding a counter on its own
/// page (homed on different PEs): the lock words that threads change themselves and the
/// service threads' decisions never let two holders in at once, nor lose a write.
fn threads_hammering_two_locks_lose_no_update(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let per_page = d.page_size() / 8;
    let counters = d.alloc_with::<u64>(2 * per_page, Homes::Cyclic).unwrap();
    let locks = [DsmLock::new(21), DsmLock::new(22)];
    let rounds = 200u64;
    d.run(ctx, |t| {
        for r in 0..rounds {
            let k = (r as usize + t.global_id()) % 2;
            locks[k].acquire(t);
            let at = k * per_page;
            counters.set(at, counters.get(at) + 1);
            locks[k].release(t).unwrap();
        }
        t.barrier();
        let all = rounds * t.global_threads() as u64;
        assert_eq!(counters.get(0) + counters.get(per_page), all);
    });
}

/// Enough diffs and write notices to wrap the small rings and bins of [`config`] many
/// times: each thread rewrites whole pages homed round the PEs between barriers (full-page
/// diffs, more than a ring holds per epoch), and a lock goes round the threads, each
/// holder adding one to the first word of 16 pages (a 17-word notice per interval). Every
/// page and counter must come out right, and puts are used exactly when configured.
fn rings_and_bins_wrap_without_loss(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let per_page = d.page_size() / 8;
    let (own, shared_pages, rounds) = (16, 16, 8);
    let all = ctx.num_pes() * m.threads;
    let data = d
        .alloc_with::<u64>(all * own * per_page, Homes::Cyclic)
        .unwrap();
    let counters = d.alloc::<u64>(shared_pages * per_page).unwrap();
    let lock = DsmLock::new(9);
    let value = |r: usize, id: usize, w: usize| (r * 1_000_003 + id * 7919 + w) as u64;
    d.run(ctx, |t| {
        let id = t.global_id();
        // 40 acquisitions a round among all threads.
        let turns = 40 / all + usize::from(id < 40 % all);
        for r in 0..rounds {
            for w in id * own * per_page..(id + 1) * own * per_page {
                data.set(w, value(r, id, w));
            }
            for _ in 0..turns {
                lock.acquire(t);
                for p in 0..shared_pages {
                    counters.set(p * per_page, counters.get(p * per_page) + 1);
                }
                lock.release(t).unwrap();
            }
            t.barrier();
            let other = (id + 1) % all;
            for w in (other * own * per_page..(other + 1) * own * per_page).step_by(61) {
                assert_eq!(data.get(w), value(r, other, w), "round {r}, word {w}");
            }
            t.barrier();
        }
        for p in 0..shared_pages {
            assert_eq!(counters.get(p * per_page), 40 * rounds as u64, "page {p}");
        }
    });
    let puts = d.stats().puts;
    match m.transfer {
        Transfer::Message => assert_eq!(puts, 0, "no puts by messages"),
        Transfer::OneSided => assert!(ctx.num_pes() == 1 || puts > 0, "puts when one-sided"),
    }
}
