//! The fork-join pool: results, panics, nesting, and stress with many tiny joins.

use rhizome::pool::{Forked, Pool, Worker};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

fn fib(w: &Worker, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = w.join(|w| fib(w, n - 1), |w| fib(w, n - 2));
    a + b
}

#[test]
fn fib_is_right_for_every_worker_count() {
    for workers in 1..=4 {
        let pool = Pool::new(workers);
        assert_eq!(pool.workers(), workers);
        for n in [0, 1, 2, 10, 25] {
            let expect = (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
            assert_eq!(
                pool.run(|w| fib(w, n)),
                expect,
                "fib({n}) with {workers} workers"
            );
        }
    }
}

#[test]
fn results_of_different_types_and_borrowed_data() {
    let pool = Pool::new(3);
    let data: Vec<u64> = (0..10_000).collect();
    fn sum(w: &Worker, d: &[u64]) -> u64 {
        if d.len() <= 16 {
            return d.iter().sum();
        }
        let (l, r) = d.split_at(d.len() / 2);
        let (a, b) = w.join(|w| sum(w, l), |w| sum(w, r));
        a + b
    }
    assert_eq!(pool.run(|w| sum(w, &data)), data.iter().sum::<u64>());
    let (s, v) = pool.run(|w| w.join(|_| String::from("left"), |_| vec![1u8, 2, 3]));
    assert_eq!((s.as_str(), v), ("left", vec![1, 2, 3]));
}

#[test]
fn every_task_runs_exactly_once_under_stress() {
    // Millions of tiny joins; every leaf adds its index once.
    fn leaves(w: &Worker, lo: u64, hi: u64, total: &AtomicU64) {
        if hi - lo == 1 {
            total.fetch_add(lo, Ordering::Relaxed);
            return;
        }
        let mid = lo + (hi - lo) / 2;
        w.join(|w| leaves(w, lo, mid, total), |w| leaves(w, mid, hi, total));
    }
    for workers in [2, 4] {
        let pool = Pool::new(workers);
        let total = AtomicU64::new(0);
        let n = 1u64 << 21;
        for _ in 0..3 {
            total.store(0, Ordering::Relaxed);
            pool.run(|w| leaves(w, 0, n, &total));
            assert_eq!(total.load(Ordering::Relaxed), n * (n - 1) / 2);
        }
    }
}

#[test]
fn panics_propagate_from_either_half_and_the_pool_survives() {
    let pool = Pool::new(2);
    for side in 0..2 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.run(|w| {
                w.join(
                    |w| {
                        if side == 0 {
                            panic!("left half fails");
                        }
                        fib(w, 15)
                    },
                    |w| {
                        if side == 1 {
                            panic!("right half fails");
                        }
                        fib(w, 15)
                    },
                )
            })
        }));
        let msg = *r.unwrap_err().downcast::<&str>().unwrap();
        assert!(msg.contains("half fails"), "{msg}");
        assert_eq!(
            pool.run(|w| fib(w, 20)),
            6765,
            "pool unusable after a panic"
        );
    }
}

#[test]
fn run_from_several_threads_and_nested_run() {
    let pool = Arc::new(Pool::new(2));
    let handles: Vec<_> = (0..4u64)
        .map(|i| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| pool.run(|w| fib(w, 12 + i)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let expect = [144u64, 233, 377, 610][i];
        assert!(h.join().unwrap().iter().all(|&v| v == expect));
    }
    // A job that calls `run` on its own pool runs inline instead of deadlocking.
    let inner = pool.run(|w| {
        let outer_index = w.index();
        pool.run(|w2| (w2.index() == outer_index, fib(w2, 10)))
    });
    assert_eq!(inner, (true, 55));
}

#[test]
fn many_pools_come_and_go() {
    for i in 0..50 {
        let pool = Pool::new(1 + i % 4);
        assert_eq!(pool.run(|w| fib(w, 10)), 55);
    }
}

#[test]
fn long_chains_of_nested_joins() {
    fn chain(w: &Worker, d: u32) -> u32 {
        if d == 0 {
            return 0;
        }
        let (a, b) = w.join(|w| chain(w, d - 1), |_| 1);
        a + b
    }
    let pool = Pool::new(2);
    let r = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || pool.run(|w| chain(w, 3000)))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r, 3000);
}

/// Counts its drops: the forked closure owns one, so every way a join can end (popped
/// back and run, stolen and run, dropped unrun when the first half panics, deque full)
/// must drop it exactly once.
struct DropCounter(Arc<AtomicU64>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Forks `depth` levels deep, each level's second half owning a counter; the first half
/// at the bottom panics when `fail` is set.
fn nested_owners(w: &Worker, depth: u32, fail: bool, drops: &Arc<AtomicU64>) -> u64 {
    if depth == 0 {
        if fail {
            panic!("bottom fails");
        }
        return 1;
    }
    let owned = DropCounter(Arc::clone(drops));
    let (a, b) = w.join(
        |w| nested_owners(w, depth - 1, fail, drops),
        move |w| {
            let _owned = owned;
            fib(w, 8)
        },
    );
    a + b
}

#[test]
fn the_forked_closure_is_dropped_exactly_once_however_the_join_ends() {
    for workers in [1, 2, 4] {
        let pool = Pool::new(workers);
        for fail in [false, true] {
            for _ in 0..50 {
                let drops = Arc::new(AtomicU64::new(0));
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.run(|w| nested_owners(w, 40, fail, &drops))
                }));
                assert_eq!(r.is_err(), fail);
                if !fail {
                    assert_eq!(r.unwrap(), 1 + 40 * 21);
                }
                assert_eq!(drops.load(Ordering::Relaxed), 40, "workers {workers}");
            }
        }
    }
}

/// `fib` with `fork`, the second half run as the next turn of a loop when it comes back,
/// as the fib kernel does; counts the halves that came back and that were stolen.
fn fib_loop(w: &Worker, mut n: u64, back: &AtomicU64, stolen: &AtomicU64) -> u64 {
    let mut sum = 0;
    while n >= 2 {
        let (a, b) = w.fork(
            move |w| fib_loop(w, n - 2, back, stolen),
            move |w| fib_loop(w, n - 1, back, stolen),
        );
        sum += a;
        match b {
            Forked::Back(_) => {
                back.fetch_add(1, Ordering::Relaxed);
                n -= 1;
            }
            Forked::Stolen(b) => {
                stolen.fetch_add(1, Ordering::Relaxed);
                return sum + b;
            }
        }
    }
    sum + n
}

#[test]
fn a_loop_of_forks_is_right_and_forks_once_per_internal_node() {
    for workers in 1..=4 {
        let pool = Pool::new(workers);
        for _ in 0..3 {
            let (back, stolen) = (AtomicU64::new(0), AtomicU64::new(0));
            assert_eq!(pool.run(|w| fib_loop(w, 25, &back, &stolen)), 75025);
            let (back, stolen) = (back.into_inner(), stolen.into_inner());
            // fib(25) has fib(26) - 1 internal nodes, one fork each.
            assert_eq!(back + stolen, 121_392, "workers {workers}");
            if workers == 1 {
                assert_eq!(stolen, 0, "nothing is stolen without thieves");
            }
        }
    }
}

#[test]
fn fork_gives_a_stolen_halfs_result_and_its_panic() {
    let pool = Pool::new(2);
    for fail in [false, true] {
        let started = AtomicBool::new(false);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.run(|w| {
                // The first half waits until a thief has started the second, so the
                // second cannot come back unrun.
                w.fork(
                    |_| {
                        while !started.load(Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                        1u64
                    },
                    |w| {
                        started.store(true, Ordering::Release);
                        if fail {
                            panic!("stolen half fails");
                        }
                        fib(w, 20)
                    },
                )
            })
        }));
        match r {
            Ok((a, Forked::Stolen(b))) => assert!(!fail && a == 1 && b == 6765),
            Ok((_, Forked::Back(_))) => panic!("a half that a thief started came back"),
            Err(p) => {
                assert!(fail);
                assert_eq!(*p.downcast::<&str>().unwrap(), "stolen half fails");
            }
        }
    }
    assert_eq!(
        pool.run(|w| fib(w, 20)),
        6765,
        "pool unusable after a panic"
    );
}

#[test]
fn forks_past_a_full_deque_give_the_half_back_and_the_deque_recovers() {
    // Deeper than the 65,536 slots of a deque: the forks below run their first half
    // alone and hand the second back.
    fn chain(w: &Worker, d: u32) -> u32 {
        if d == 0 {
            return 0;
        }
        match w.fork(|w| chain(w, d - 1), |_| 1) {
            (a, Forked::Back(b)) => a + b(w),
            (a, Forked::Stolen(b)) => a + b,
        }
    }
    for workers in [1, 2] {
        let pool = Pool::new(workers);
        let r = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || {
                let deep = pool.run(|w| chain(w, 70_000));
                (deep, pool.run(|w| fib(w, 20)))
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(r, (70_000, 6765), "workers {workers}");
    }
}
