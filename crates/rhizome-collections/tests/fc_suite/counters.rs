//! What the counters say a commit costs: a stack's pop commit is one message, its answer
//! carrying the values (however many PEs pushed them); a set's proxy takes a repeated
//! key even when full, so that repeats share one entry of one commit.

use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome_collections::fc::{GlobalSet, GlobalStack, Mode};
use std::cell::RefCell;

/// Every PE but PE 0 pushes 8 values (one commit of a buffer of 8); then PE 0, which
/// holds none of them unless it is alone, pops 8 values in one call: one commit, one
/// message, and the values it gets are values pushed (the newest 8), none lost.
pub fn stack_pops_answered_in_one_message(ctx: &Ctx) {
    let (me, pes) = (ctx.my_pe() as u64, ctx.num_pes() as u64);
    let coop = Coop::new(ctx);
    let stack = GlobalStack::<u64>::with_capacity(&coop, Mode::Distributed, 8);
    ctx.barrier();
    // The PEs that push: all but PE 0, or PE 0 alone.
    let pushes = |pe: u64| pe > 0 || pes == 1;
    coop.run(|scope| {
        if pushes(me) {
            let stack = &stack;
            scope.spawn(async move { stack.push_all((0..8).map(|j| me << 8 | j).collect()).await });
        }
    });
    let before = stack.stats();
    let got = RefCell::new(Vec::new());
    coop.run(|scope| {
        if me == 0 {
            let (stack, got) = (&stack, &got);
            scope.spawn(async move { *got.borrow_mut() = stack.pop_all(8).await });
        }
    });
    if me == 0 {
        let after = stack.stats();
        assert_eq!(after.ops - before.ops, 8);
        assert_eq!(
            after.messages - before.messages,
            1,
            "a pop commit of values pushed elsewhere took more than one message"
        );
        let got = got.borrow();
        assert!(
            got.iter().all(|v| v.is_some_and(|v| pushes(v >> 8))),
            "{got:?}"
        );
    }
    // Everything pushed comes out exactly once: PE 0 drains the rest.
    let rest = RefCell::new(Vec::new());
    coop.run(|scope| {
        if me == 0 {
            let (stack, rest) = (&stack, &rest);
            scope.spawn(async move {
                while let Some(v) = stack.pop().await {
                    rest.borrow_mut().push(v);
                }
            });
        }
    });
    if me == 0 {
        let mut all: Vec<u64> = got.borrow().iter().flatten().copied().collect();
        all.extend(rest.into_inner());
        all.sort_unstable();
        let want: Vec<u64> = (0..pes)
            .filter(|&pe| pushes(pe))
            .flat_map(|pe| (0..8).map(move |j| pe << 8 | j))
            .collect();
        assert_eq!(all, want, "values lost, duplicated or invented");
    }
}

/// 64 tasks per PE insert the same key into a set whose buffer holds one key: each
/// insert joins the pending one, so the PE commits a handful of times, not 64 (a full
/// proxy that made repeats wait would commit once per insert).
pub fn set_repeats_join_a_full_proxy(ctx: &Ctx) {
    let coop = Coop::new(ctx);
    let set = GlobalSet::with_capacity(&coop, Mode::Distributed, 1);
    ctx.barrier();
    coop.run(|scope| {
        for _ in 0..64 {
            let set = &set;
            scope.spawn(async move { set.insert(7).await });
        }
    });
    let stats = set.stats();
    assert_eq!(stats.ops, 64);
    assert!(
        stats.messages <= 4,
        "64 inserts of one key took {} messages",
        stats.messages
    );
    let found = RefCell::new(false);
    coop.run(|scope| {
        let (set, found) = (&set, &found);
        scope.spawn(async move { *found.borrow_mut() = set.contains(7).await });
    });
    assert!(found.into_inner(), "the key inserted is not found");
}
