//! What the counters say a commit costs: a stack's pop commit is one message, its answer
//! carrying the values (however many PEs pushed them); a set's proxy takes a repeated
//! key even when full, so that repeats share one entry of one commit; a queue's batch
//! that pops back the whole chunk it pushed gets the same vector back, not a copy.

use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome_collections::fc::{GlobalQueue, GlobalSet, GlobalStack, Mode};
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

/// On an empty queue with distributed combining, each PE's one task pushes 1000 values
/// and pops as many in one `push_all_then_pop`: it gets its own values back as the very
/// vector it pushed (the chunk moved out whole, not copied). Then two tasks per PE do
/// so in the same commit (two batches, one chunk split between them): each gets 500
/// values, together exactly the PE's 1000. The queue is empty afterwards.
pub fn queue_hands_a_whole_chunk_back_uncopied(ctx: &Ctx) {
    let me = ctx.my_pe() as u64;
    let coop = Coop::new(ctx);
    let queue = GlobalQueue::<u64>::with_capacity(&coop, Mode::Distributed, usize::MAX);
    ctx.barrier();
    let values = |round: u64, task: u64, n: u64| -> Vec<u64> {
        (0..n)
            .map(|j| me << 32 | round << 24 | task << 16 | j)
            .collect()
    };
    coop.run(|scope| {
        let queue = &queue;
        scope.spawn(async move {
            let pushed = values(0, 0, 1000);
            let (at, expected) = (pushed.as_ptr() as usize, pushed.clone());
            let got = queue.push_all_then_pop(pushed, 1000).await;
            assert_eq!(got, expected, "PE {me} did not get its own values back");
            assert_eq!(got.as_ptr() as usize, at, "PE {me}'s chunk was copied");
        });
    });
    let got = RefCell::new(Vec::new());
    coop.run(|scope| {
        for task in 0..2 {
            let (queue, got) = (&queue, &got);
            scope.spawn(async move {
                let popped = queue.push_all_then_pop(values(1, task, 500), 500).await;
                assert_eq!(popped.len(), 500, "PE {me}: a batch got too few values");
                got.borrow_mut().extend(popped);
            });
        }
    });
    let mut got = got.into_inner();
    got.sort_unstable();
    let mut expected = [values(1, 0, 500), values(1, 1, 500)].concat();
    expected.sort_unstable();
    assert_eq!(
        got, expected,
        "PE {me}: values lost, duplicated or another PE's"
    );
    let left = RefCell::new(None);
    coop.run(|scope| {
        let (queue, left) = (&queue, &left);
        scope.spawn(async move { *left.borrow_mut() = queue.pop().await });
    });
    assert_eq!(left.into_inner(), None, "a value was left in the queue");
}
