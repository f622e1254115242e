//! Tallied rounds of the queue (`GlobalQueue::push_all_then_pop_tallied`): the sums that
//! ride on the commits come back right on every PE, round after round, while the values
//! still go through the queue unharmed; and the master's count of values popped from
//! other PEs' chunks is what the pops took.

use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome_collections::fc::{GlobalQueue, Mode};
use std::cell::RefCell;

const ROUNDS: u64 = 10;
const PER_CALL: u64 = 4;

/// `tasks` tasks per PE, each pushing and popping `PER_CALL` values a round, the first
/// carrying the PE's tally, on a queue whose small buffer splits a PE's round into
/// several commits: the totals are the sums of the tallies (with no foreign pop), each
/// PE gets back its own values, and every value comes out once.
pub fn tallied_rounds(ctx: &Ctx, mode: Mode, tasks: u64) {
    let coop = Coop::new(ctx);
    let queue = GlobalQueue::<u64>::with_capacity(&coop, mode, 8);
    ctx.barrier();
    let (me, pes) = (ctx.my_pe() as u64, ctx.num_pes() as u64);
    let (pushed, popped) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
    for round in 0..ROUNDS {
        let totals = RefCell::new(Vec::new());
        coop.run_local(|s| {
            for t in 0..tasks {
                let (queue, pushed, popped, totals) = (&queue, &pushed, &popped, &totals);
                let tally = if t == 0 { vec![1, me, round] } else { vec![] };
                s.spawn(async move {
                    let values: Vec<u64> = (0..PER_CALL)
                        .map(|j| me << 32 | round << 20 | t << 4 | j)
                        .collect();
                    pushed.borrow_mut().extend(&values);
                    let (got, sums) = queue
                        .push_all_then_pop_tallied(values, PER_CALL as usize, tally)
                        .await;
                    assert_eq!(
                        got.len(),
                        PER_CALL as usize,
                        "{mode:?}: a pop found it empty"
                    );
                    popped.borrow_mut().extend(got);
                    totals.borrow_mut().extend(sums);
                });
            }
        });
        let totals = totals.into_inner();
        if mode == Mode::Distributed {
            let expected = vec![pes, pes * (pes - 1) / 2, pes * round, 0];
            assert_eq!(totals, [expected], "round {round}: the totals");
        } else {
            assert!(totals.is_empty(), "{mode:?}: totals without combining");
        }
        // Other PEs may still wait for this one's answers: a collective over messages.
        ctx.allgather(());
    }
    super::all_came_out(ctx, mode, pushed.into_inner(), popped.into_inner());
}

/// Two rounds on 2 PEs or more: in the first PE 1 pushes three values and pops none,
/// in the second PE 0 pops three: the second round's last total counts them as taken
/// from another PE's chunk, on every PE, and PE 0 gets PE 1's values.
pub fn foreign_pops_counted(ctx: &Ctx) {
    if ctx.num_pes() < 2 {
        return;
    }
    let coop = Coop::new(ctx);
    let queue = GlobalQueue::<u64>::new(&coop, Mode::Distributed);
    ctx.barrier();
    let me = ctx.my_pe();
    let rounds: [(Vec<u64>, usize); 2] = match me {
        1 => [(vec![7, 8, 9], 0), (vec![], 0)],
        0 => [(vec![], 0), (vec![], 3)],
        _ => [(vec![], 0), (vec![], 0)],
    };
    let mut last = Vec::new();
    for (values, pops) in rounds {
        let out = RefCell::new(None);
        coop.run_local(|s| {
            let (queue, out) = (&queue, &out);
            s.spawn(async move {
                *out.borrow_mut() =
                    Some(queue.push_all_then_pop_tallied(values, pops, vec![1]).await);
            });
        });
        last.push(out.into_inner().expect("the task ran"));
        ctx.allgather(());
    }
    let pes = ctx.num_pes() as u64;
    assert_eq!(last[0].1, Some(vec![pes, 0]), "first round's totals");
    assert_eq!(last[1].1, Some(vec![pes, 3]), "second round's totals");
    if me == 0 {
        let mut got = last[1].0.clone();
        got.sort_unstable();
        assert_eq!(got, [7, 8, 9], "PE 0 pops PE 1's values");
    }
}
