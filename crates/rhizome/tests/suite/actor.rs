//! SPMD test bodies of selectors (actors with mailboxes); part of the SPMD suite, so they
//! run on 1, 2 and 4 local PEs and under `mpirun -np 2` and `-np 4`.

use rhizome::Ctx;
use rhizome::actor::Selector;
use rhizome::rng::XorShift64;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Lane sizes from one message (a batch per send) to the default.
const CAPACITIES: [Option<usize>; 5] = [Some(1), Some(2), Some(3), Some(61), None];

fn selector<'c, S: 'static>(ctx: &'c Ctx, state: S, capacity: Option<usize>) -> Selector<'c, S> {
    match capacity {
        Some(c) => Selector::with_capacity(ctx, state, c),
        None => Selector::new(ctx, state),
    }
}

/// Messages PE `src` sends to PE `dst` (to each of two mailboxes), self included.
fn amount(src: usize, dst: usize) -> u64 {
    (40 + 13 * src + 7 * dst) as u64
}

/// Marks message `seq` from `src` as seen in `seen[src]`; panics on a second delivery.
fn mark(seen: &mut [Vec<bool>], src: usize, seq: u64) {
    let slot = &mut seen[src][seq as usize];
    assert!(!*slot, "message {seq} from PE {src} delivered twice");
    *slot = true;
}

pub fn actor_exactly_once(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    struct Seen {
        small: Vec<Vec<bool>>,
        wide: Vec<Vec<bool>>,
    }
    for cap in CAPACITIES {
        let fresh = |_| Seen {
            small: (0..pes)
                .map(|s| vec![false; amount(s, me) as usize])
                .collect(),
            wide: (0..pes)
                .map(|s| vec![false; amount(s, me) as usize])
                .collect(),
        };
        let mut sel = selector(ctx, fresh(()), cap);
        // Two mailboxes of different message types; each message names its sender.
        let small = sel.mailbox::<u32>();
        let wide = sel.mailbox::<[u64; 3]>();
        sel.process(small, move |s, msg, from, mail| {
            assert_eq!(mail.my_pe(), me);
            assert_eq!((msg >> 16) as usize, from, "small: sender");
            mark(&mut s.small, from, (msg & 0xFFFF) as u64);
        });
        sel.process(wide, move |s, [src, seq, check], from, _| {
            assert_eq!(src as usize, from, "wide: sender");
            assert_eq!(check, seq * 3 + 1, "wide: payload");
            mark(&mut s.wide, from, seq);
        });
        for round in 0..2 {
            sel.superstep(|mail| {
                for dst in (0..pes).rev() {
                    for seq in 0..amount(me, dst) {
                        mail.send(small, ((me as u32) << 16) | seq as u32, dst);
                        mail.send(wide, [me as u64, seq, seq * 3 + 1], dst);
                    }
                }
            });
            let s = sel.state();
            for src in 0..pes {
                assert!(
                    s.small[src].iter().all(|&b| b),
                    "round {round}: small from {src}"
                );
                assert!(
                    s.wide[src].iter().all(|&b| b),
                    "round {round}: wide from {src}"
                );
            }
            drop(s);
            *sel.state_mut() = fresh(());
        }
    }
}

/// Hops of chain `i` started by PE `pe` (0 to 20).
fn hops(pe: usize, i: u64) -> u64 {
    XorShift64::for_stream(((pe as u64) << 32) | i).below(21) as u64
}

pub fn actor_multi_hop(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    const CHAINS: u64 = 300;
    for cap in [Some(1), Some(7), None] {
        // State: (hops handled here, chains of mine that came home).
        let mut sel = selector(ctx, (0u64, vec![false; CHAINS as usize]), cap);
        let hop = sel.mailbox::<[u64; 3]>();
        let home = sel.mailbox::<u64>();
        sel.process(hop, move |s, [origin, chain, left], _, mail| {
            s.0 += 1;
            if left == 0 {
                mail.send(home, chain, origin as usize);
            } else {
                // The next PE depends on the chain and the hop, so chains wander.
                let next = XorShift64::for_stream(chain ^ (left << 40) ^ (origin << 50)).below(pes);
                mail.send(hop, [origin, chain, left - 1], next);
            }
        });
        sel.process(home, |s, chain, _, _| {
            assert!(!s.1[chain as usize], "chain {chain} came home twice");
            s.1[chain as usize] = true;
        });
        sel.superstep(|mail| {
            for i in 0..CHAINS {
                mail.send(hop, [me as u64, i, hops(me, i)], (me + i as usize) % pes);
            }
            mail.done(hop);
        });
        let (handled, home_all) = {
            let s = sel.state();
            (s.0, s.1.iter().all(|&b| b))
        };
        assert!(home_all, "PE {me}: a chain did not come home");
        // Every chain of length h is handled h + 1 times on its way.
        let want: u64 = (0..pes)
            .flat_map(|pe| (0..CHAINS).map(move |i| hops(pe, i) + 1))
            .sum();
        assert_eq!(ctx.allgather(handled).iter().sum::<u64>(), want);
    }
}

pub fn actor_done_order(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    // Mailbox `first` is done long before `second`: the body waits until every PE has
    // answered its `first` messages (on `ack`), and only then sends on `second`.
    let acks = Rc::new(Cell::new(0usize));
    let mut sel = Selector::with_capacity(ctx, (0u64, 0u64), 4);
    let first = sel.mailbox::<u64>();
    let second = sel.mailbox::<u64>();
    let ack = sel.mailbox::<u8>();
    sel.process(first, move |s, v, from, mail| {
        s.0 += v;
        mail.send(ack, 1, from);
    });
    sel.process(second, |s, v, _, _| s.1 += v);
    let seen = acks.clone();
    sel.process(ack, move |_, _, _, _| seen.set(seen.get() + 1));
    sel.superstep(|mail| {
        for dst in 0..pes {
            mail.send(first, 1 + me as u64, dst);
        }
        mail.done(first);
        while acks.get() < pes {
            mail.poll();
        }
        for dst in 0..pes {
            mail.send(second, 100, dst);
        }
        mail.done(second);
    });
    let s = *sel.state();
    let pes64 = pes as u64;
    assert_eq!(s.0, pes64 * (pes64 + 1) / 2, "first");
    assert_eq!(s.1, 100 * pes64, "second");
    assert_eq!(acks.get(), pes);

    // Only PE 0 sends, late, and waits for the acks while the others have already left
    // their bodies and wait for the end of the superstep: they must send the acks their
    // handlers produce while they wait.
    acks.set(0);
    sel.superstep(|mail| {
        if me == 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            for dst in 0..pes {
                mail.send(first, 1, dst);
            }
            mail.done(first);
            while acks.get() < pes {
                mail.poll();
            }
        }
    });
    assert_eq!(acks.get(), if me == 0 { pes } else { 0 });
}

fn fib(w: &rhizome::pool::Worker, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = w.join(|w| fib(w, n - 1), |w| fib(w, n - 2));
    a + b
}

pub fn actor_tasks_in_handlers(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    const PER_PE: u64 = 40;
    // Non-blocking tasks add into this; blocking ones into the state.
    let escaped = Arc::new(AtomicU64::new(0));
    let mut sel = Selector::with_capacity(ctx, 0u64, 3);
    let blocking = sel.mailbox::<u64>();
    let nonblocking = sel.mailbox::<u64>();
    sel.process(blocking, |sum, n, _, mail| {
        // A finish { async .. } inside the handler: forks on the PE's workers, waits.
        *sum += mail.ctx().pool().run(|w| fib(w, n));
    });
    let into = escaped.clone();
    sel.process(nonblocking, move |_, n, _, mail| {
        let into = into.clone();
        // Escapes the handler; the superstep waits for it.
        mail.spawn(move |w| {
            std::thread::sleep(std::time::Duration::from_micros(200));
            into.fetch_add(fib(w, n), Ordering::Relaxed);
        });
    });
    for round in 1..=2u64 {
        sel.superstep(|mail| {
            for i in 0..PER_PE {
                let dst = (me + i as usize) % pes;
                mail.send(blocking, 10 + i % 5, dst);
                mail.send(nonblocking, 10 + i % 7, dst);
            }
        });
        let fibs = |m: u64| -> u64 {
            (0..PER_PE)
                .map(|i| {
                    let n = 10 + i % m;
                    let (mut a, mut b) = (0u64, 1u64);
                    for _ in 0..n {
                        (a, b) = (b, a + b);
                    }
                    a
                })
                .sum()
        };
        // Every PE sent the same multiset, so the sums over PEs are known exactly; the
        // escaped sum is read at once, with no wait: the superstep waited for the tasks.
        let got = ctx.allgather([*sel.state(), escaped.load(Ordering::Relaxed)]);
        let blocked: u64 = got.iter().map(|g| g[0]).sum();
        let spawned: u64 = got.iter().map(|g| g[1]).sum();
        assert_eq!(blocked, round * pes as u64 * fibs(5), "blocking tasks");
        assert_eq!(spawned, round * pes as u64 * fibs(7), "non-blocking tasks");
    }
}

pub fn actor_stress(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    const N: u64 = 60_000;
    // State: per-source count and sum of the messages received.
    let mut sel = Selector::new(ctx, vec![(0u64, 0u64); pes]);
    let mb = sel.mailbox::<[u64; 2]>();
    let echo = sel.mailbox::<u64>();
    sel.process(mb, move |s, [v, bounce], from, mail| {
        s[from].0 += 1;
        s[from].1 += v;
        if bounce == 1 {
            mail.send(echo, v, from);
        }
    });
    sel.process(echo, move |s, v, _, _| {
        s[me].0 += 1;
        s[me].1 += v;
    });
    let mut rng = XorShift64::for_stream(0xA5 ^ me as u64);
    let mut sent = vec![(0u64, 0u64); pes];
    let mut echoed = (0u64, 0u64);
    sel.superstep(|mail| {
        for i in 0..N {
            let dst = rng.below(pes);
            let bounce = (i % 3 == 0) as u64;
            mail.send(mb, [i, bounce], dst);
            sent[dst].0 += 1;
            sent[dst].1 += i;
            if bounce == 1 {
                echoed.0 += 1;
                echoed.1 += i;
            }
        }
    });
    // What each PE received from each source equals what that source sent it.
    let mine = sel.state().clone();
    for (src, got) in mine.iter().enumerate() {
        let theirs = ctx.broadcast(sent.clone(), src);
        let mut want = theirs[me];
        if src == me {
            want.0 += echoed.0;
            want.1 += echoed.1;
        }
        assert_eq!(*got, want, "PE {me} from PE {src}");
    }
}

pub fn actor_look_ahead(ctx: &Ctx) {
    // `process_ahead`: the look-ahead sees every message exactly once, before its handler,
    // and the handler still sees every message exactly once, at every lane size.
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    struct Looked {
        ahead: std::cell::RefCell<Vec<Vec<bool>>>,
        handled: Vec<Vec<bool>>,
    }
    for cap in CAPACITIES {
        let fresh = || {
            (0..pes)
                .map(|s| vec![false; amount(s, me) as usize])
                .collect()
        };
        let state = Looked {
            ahead: std::cell::RefCell::new(fresh()),
            handled: fresh(),
        };
        let mut sel = selector(ctx, state, cap);
        let mb = sel.mailbox::<[u64; 2]>();
        sel.process_ahead(
            mb,
            |s, &[src, seq]| mark(&mut s.ahead.borrow_mut(), src as usize, seq),
            |s, [src, seq], from, _| {
                assert_eq!(src as usize, from, "the sender is the message's source");
                assert!(
                    s.ahead.borrow()[from][seq as usize],
                    "message {seq} from PE {from} handled before its look-ahead"
                );
                mark(&mut s.handled, from, seq);
            },
        );
        sel.superstep(|mail| {
            for dst in 0..pes {
                for seq in 0..amount(me, dst) {
                    mail.send(mb, [me as u64, seq], dst);
                }
            }
            mail.done(mb);
        });
        let s = sel.into_state();
        let all = |v: &Vec<Vec<bool>>| v.iter().all(|row| row.iter().all(|&b| b));
        assert!(
            all(&s.ahead.borrow()),
            "PE {me}, lanes {cap:?}: a message never looked at"
        );
        assert!(
            all(&s.handled),
            "PE {me}, lanes {cap:?}: a message never handled"
        );
    }
}
