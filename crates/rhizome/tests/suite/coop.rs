//! Cooperative tasks (`rhizome::coop`): thousands of tasks per PE blocked on delegates,
//! the global lock, the condition variable and the completion event.

use rhizome::Ctx;
use rhizome::coop::{CompletionEvent, CondVar, Coop, yield_now};
use std::cell::{Cell, RefCell};

/// Tasks per PE in the tests that block many at once.
const TASKS: u64 = 2000;

/// Every task blocks on a remote call at once: the PE polls them all before any reply
/// can arrive, so all are waiting together, and each gets its own reply.
pub fn coop_many_blocked_calls(ctx: &Ctx) {
    let coop = Coop::new(ctx);
    let square = ctx.register_call(|ctx, x: u64| (ctx.my_pe() as u64, x * x));
    let (waiting, most, sum) = (Cell::new(0u64), Cell::new(0u64), Cell::new(0u64));
    let n = ctx.num_pes() as u64;
    coop.run(|s| {
        for t in 0..TASKS {
            let (coop, waiting, most, sum) = (&coop, &waiting, &most, &sum);
            s.spawn(async move {
                let x = ctx.my_pe() as u64 * TASKS + t;
                let reply = coop.call((t % n) as usize, square, &x);
                waiting.set(waiting.get() + 1);
                most.set(most.get().max(waiting.get()));
                let (pe, sq) = reply.await;
                waiting.set(waiting.get() - 1);
                assert_eq!((pe, sq), (t % n, x * x), "task {t} got another's reply");
                sum.set(sum.get() + 1);
            });
        }
    });
    assert_eq!(sum.get(), TASKS);
    assert_eq!(most.get(), TASKS, "every task was blocked at the same time");
}

/// Remote read, write, fetch-and-add and compare-and-swap from many tasks on every PE.
pub fn coop_memory_delegates(ctx: &Ctx) {
    let coop = Coop::new(ctx);
    let words = ctx.alloc::<u64>(2);
    let (n, me) = (ctx.num_pes(), ctx.my_pe());
    let last = n - 1;
    coop.run(|s| {
        for _ in 0..200 {
            let coop = &coop;
            s.spawn(async move {
                coop.fetch_add(words.ptr(0, 0), 1).await;
                // An increment by compare-and-swap, retried until no other task got in.
                let p = words.ptr(last, 1);
                let mut seen = coop.read(p).await;
                loop {
                    let was = coop.compare_exchange(p, seen, seen + 1).await;
                    if was == seen {
                        break;
                    }
                    seen = was;
                }
            });
        }
    });
    ctx.barrier();
    let total = 200 * n as u64;
    assert_eq!(ctx.load(words.ptr(0, 0)), total);
    assert_eq!(ctx.load(words.ptr(last, 1)), total);
    ctx.barrier();
    // Each PE writes its number to its right neighbour's first word and reads it back.
    let coop = Coop::new(ctx);
    let right = words.ptr((me + 1) % n, 0);
    let read = RefCell::new(None);
    coop.run(|s| {
        let (coop, read) = (&coop, &read);
        s.spawn(async move {
            coop.write(right, 1000 + me as u64).await;
            *read.borrow_mut() = Some(coop.read(right).await);
        });
    });
    assert_eq!(read.into_inner(), Some(1000 + me as u64));
}

/// A read-modify-write of a plain word at PE 0 made of two delegates (read, then
/// write): without the lock the tasks of a round would all read the same value and lose
/// updates; with it every increment counts, and the waiters queue at PE 0.
pub fn coop_lock_excludes(ctx: &Ctx) {
    let coop = Coop::new(ctx);
    let lock = coop.lock_on(0);
    let word = ctx.alloc::<u64>(1).ptr(0, 0);
    let inside = ctx.alloc::<u64>(1).ptr(0, 0);
    let per_pe = 100u64;
    coop.run(|s| {
        for _ in 0..per_pe {
            let coop = &coop;
            s.spawn(async move {
                let _held = coop.acquire(lock).await;
                // Who else holds it now? Nobody, if the lock excludes.
                assert_eq!(coop.fetch_add(inside, 1).await, 0, "two tasks in the lock");
                let v = coop.read(word).await;
                yield_now().await;
                coop.write(word, v + 1).await;
                coop.fetch_add(inside, u64::MAX).await; // -1
            });
        }
    });
    ctx.barrier();
    assert_eq!(ctx.load(word), per_pe * ctx.num_pes() as u64);
}

/// A local producer and consumers on a condition variable, and a completion event that
/// counts remote calls.
pub fn coop_condvar_and_event(ctx: &Ctx) {
    let coop = Coop::new(ctx);
    let echo = ctx.register_call(|_, x: u64| x);
    let items = RefCell::new(Vec::new());
    let ready = CondVar::new();
    let consumed = Cell::new(0u64);
    let event = CompletionEvent::new();
    let echoed = Cell::new(0u64);
    let n = ctx.num_pes();
    coop.run(|s| {
        let (items, ready, consumed) = (&items, &ready, &consumed);
        for _ in 0..10 {
            s.spawn(async move {
                loop {
                    let item = items.borrow_mut().pop();
                    match item {
                        Some(0) => return,
                        Some(_) => consumed.set(consumed.get() + 1),
                        None => ready.wait().await,
                    }
                }
            });
        }
        s.spawn(async move {
            for i in 1..=100u64 {
                items.borrow_mut().push(i);
                ready.signal();
                if i % 7 == 0 {
                    yield_now().await;
                }
            }
            // One stop marker per consumer, put below whatever is left.
            items.borrow_mut().splice(0..0, [0u64; 10]);
            ready.broadcast();
        });
        let (coop, event, echoed) = (&coop, &event, &echoed);
        event.enroll(50);
        for i in 0..50u64 {
            s.spawn(async move {
                assert_eq!(coop.call(i as usize % n, echo, &i).await, i);
                echoed.set(echoed.get() + 1);
                event.complete(1);
            });
        }
        s.spawn(async move {
            event.wait().await;
            assert_eq!(echoed.get(), 50, "the event fired before the work was done");
        });
    });
    assert_eq!(consumed.get(), 100);
    assert_eq!(ready.waiting(), 0);
    assert_eq!(event.outstanding(), 0);
}
