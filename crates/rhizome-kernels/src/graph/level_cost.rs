//! The cost of a BFS level's synchronization, without the search: rounds of the
//! frontier queue's `push_all_then_pop` (what a level of the combining BFS pays besides
//! its step), against rounds of the runtime's collectives and of a conveyor exchange with
//! nothing to send (what the tuned BFS pays). A round of one value per PE shows the fixed
//! latency; rounds of [`BIG`] values per PE, by one task or split as the BFS splits its
//! frontier (a task per 4096 values, up to [`TASKS`]: 5 tasks), show what grows with the
//! frontier.
//!
//! Each figure is microseconds per round, the slowest PE's, median of `repeat` runs of
//! `rounds` rounds. Every round's result is checked (each PE pops exactly the values it
//! pushed, the sums are the PEs' count), so a figure is never that of a wrong round.

use super::bfs_queue::through_queue;
use rhizome::Ctx;
use rhizome::ReduceOp;
use rhizome::conveyor::Conveyor;
use rhizome::coop::Coop;
use rhizome_collections::fc::{GlobalQueue, Mode};
use std::time::Instant;

/// Values each PE moves through the queue per round in the large rounds.
pub const BIG: u64 = 20_000;
/// Tasks the large split rounds may use (the graph kernels' default task count; the
/// frontier's size decides how many it does use).
pub const TASKS: usize = super::DEFAULT_TASKS;

/// One measured figure.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelCost {
    /// What one round does.
    pub name: &'static str,
    /// Microseconds per round (the slowest PE's, median of the runs).
    pub micros: f64,
}

/// Collective: the figures whose name contains `only` (all if empty), the same on every
/// PE, with `rounds` rounds per run (a twentieth as many for the large rounds) and
/// `repeat` runs. An error names a round whose result was wrong.
pub fn level_costs(
    ctx: &Ctx,
    rounds: usize,
    repeat: usize,
    only: &str,
) -> Result<Vec<LevelCost>, String> {
    let coop = Coop::new(ctx);
    let queue = GlobalQueue::<u64>::with_capacity(&coop, Mode::Distributed, usize::MAX);
    let mut conveyor = Conveyor::<u64>::new(ctx);
    let (rounds, repeat) = (rounds.max(1), repeat.max(1));
    let pes = ctx.num_pes() as u64;
    let me = ctx.my_pe() as u64;
    let mut out = Vec::new();
    let big_rounds = (rounds / 20).max(1);
    let mut measure =
        |name: &'static str, rounds: usize, round: &mut dyn FnMut(u64) -> Result<(), String>| {
            if !name.contains(only) {
                return Ok(());
            }
            let mut runs = Vec::with_capacity(repeat);
            for _ in 0..repeat {
                ctx.barrier();
                let start = Instant::now();
                for k in 0..rounds as u64 {
                    round(k)?;
                }
                let ns = start.elapsed().as_nanos() as u64 / rounds as u64;
                // Over messages: a PE done with its rounds still answers the commits of PEs
                // that are not (the transport's collectives would not).
                runs.push(ctx.allreduce(ns, u64::max));
            }
            runs.sort_unstable();
            out.push(LevelCost {
                name,
                micros: runs[runs.len() / 2] as f64 / 1e3,
            });
            Ok::<(), String>(())
        };
    // Round k's values of this PE: distinct from every other PE's and round's.
    let values = |k: u64, n: u64| -> Vec<u64> { (0..n).map(|i| (k * n + i) * pes + me).collect() };
    // Without sorting (a check this cheap barely shows in the figure): as many values,
    // with the same sum and sum of squares (wrapping) as those pushed.
    let check_own = |k: u64, pushed: (usize, [u64; 2]), got: Vec<u64>| {
        if (got.len(), fingerprint(&got)) == pushed {
            Ok(())
        } else {
            Err(format!(
                "round {k}: PE {me} popped {} values, not the {} it pushed",
                got.len(),
                pushed.0
            ))
        }
    };
    // One PE's part of a queue round of n values over up to `tasks` tasks, checked.
    let queue_round = |k: u64, n: u64, tasks: usize| {
        let v = values(k, n);
        let pushed = (v.len(), fingerprint(&v));
        check_own(k, pushed, through_queue(&coop, &queue, v, tasks))
    };
    measure("queue push_all_then_pop, 1 value", rounds, &mut |k| {
        queue_round(k, 1, 1)
    })?;
    measure(
        "queue push_all_then_pop, 1 value, + allreduce",
        rounds,
        &mut |k| {
            queue_round(k, 1, 1)?;
            let sums = ctx.allreduce([1u64, k, 0, 0], |a, b| std::array::from_fn(|i| a[i] + b[i]));
            check_sums(k, sums[0], pes)
        },
    )?;
    measure(
        "queue push_all_then_pop, 20000 values, 1 task",
        big_rounds,
        &mut |k| queue_round(k, BIG, 1),
    )?;
    measure(
        "queue push_all_then_pop, 20000 values, split by size",
        big_rounds,
        &mut |k| queue_round(k, BIG, TASKS),
    )?;
    measure("allreduce (messages), 4 words", rounds, &mut |k| {
        let sums = ctx.allreduce([1u64, k, 0, 0], |a, b| std::array::from_fn(|i| a[i] + b[i]));
        check_sums(k, sums[0], pes)
    })?;
    measure("allreduce_u64 (transport), 3 words", rounds, &mut |k| {
        let mut sums = [1u64, k, 0];
        ctx.allreduce_u64(&mut sums, ReduceOp::Sum);
        check_sums(k, sums[0], pes)
    })?;
    measure("conveyor exchange, nothing sent", rounds, &mut |k| {
        while conveyor.advance(true) {
            if let Some((v, from)) = conveyor.pull() {
                return Err(format!("round {k}: PE {me} pulled {v} from PE {from}"));
            }
        }
        conveyor.reset();
        Ok(())
    })?;
    Ok(out)
}

/// The sum and the sum of squares of `v`, wrapping: equal for the same values in any
/// order, and for a value lost, repeated or replaced only by a rare coincidence.
fn fingerprint(v: &[u64]) -> [u64; 2] {
    v.iter().fold([0u64, 0u64], |[s, q], &x| {
        [s.wrapping_add(x), q.wrapping_add(x.wrapping_mul(x))]
    })
}

fn check_sums(k: u64, count: u64, pes: u64) -> Result<(), String> {
    (count == pes)
        .then_some(())
        .ok_or_else(|| format!("round {k}: the PEs' count summed to {count}, not {pes}"))
}
