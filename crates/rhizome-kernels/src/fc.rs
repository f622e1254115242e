//! Throughput of the flat-combining stack and queue (seed 003, Figures 6 and 7): many
//! cooperative tasks per PE push, or push and pop at random, on one global structure,
//! in each combining mode; the result is checked (every value pushed is popped by a
//! task or by a final drain, and nothing else).

use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome::rng::XorShift64;
use rhizome_collections::fc::{Fifo, Lifo, Mode, Order, PushPop, Stats};
use std::cell::Cell;
use std::time::Instant;

/// Which structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// [`rhizome_collections::fc::GlobalStack`].
    Stack,
    /// [`rhizome_collections::fc::GlobalQueue`].
    Queue,
}

/// The operation mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// 100 % push.
    Push,
    /// 50 % push, 50 % pop.
    Mixed,
}

impl Structure {
    /// Its name in records.
    pub fn name(self) -> &'static str {
        match self {
            Structure::Stack => "stack",
            Structure::Queue => "queue",
        }
    }
}

impl Mix {
    /// Its name in records.
    pub fn name(self) -> &'static str {
        match self {
            Mix::Push => "push",
            Mix::Mixed => "mixed",
        }
    }
}

/// One measurement, the same on every PE.
#[derive(Clone, Copy, Debug)]
pub struct Throughput {
    /// Operations, all PEs.
    pub ops: u64,
    /// Wall time of the slowest PE.
    pub secs: f64,
    /// Counters summed over all PEs.
    pub stats: Stats,
}

impl Throughput {
    /// Operations per second, all PEs.
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }
}

/// Collective: `tasks` tasks per PE make `ops` operations per PE in all on a fresh
/// structure; checked (an `Err` says what went wrong).
pub fn throughput(
    ctx: &Ctx,
    structure: Structure,
    mode: Mode,
    mix: Mix,
    tasks: u64,
    ops: u64,
) -> Result<Throughput, String> {
    match structure {
        Structure::Stack => measure::<Lifo>(ctx, mode, mix, tasks, ops),
        Structure::Queue => measure::<Fifo>(ctx, mode, mix, tasks, ops),
    }
}

fn measure<O: Order>(
    ctx: &Ctx,
    mode: Mode,
    mix: Mix,
    tasks: u64,
    ops: u64,
) -> Result<Throughput, String> {
    let coop = Coop::new(ctx);
    let s = PushPop::<u64, O>::new(&coop, mode);
    let (pushed, popped) = (Cell::new(0u64), Cell::new(0u64));
    let me = ctx.my_pe() as u64;
    ctx.barrier();
    let start = Instant::now();
    coop.run(|scope| {
        for t in 0..tasks {
            // The PE's operations shared out as evenly as the tasks allow.
            let mine = ops / tasks + u64::from(t < ops % tasks);
            let (s, pushed, popped) = (&s, &pushed, &popped);
            scope.spawn(async move {
                let mut rng = XorShift64::for_stream(me << 32 | t);
                for _ in 0..mine {
                    if mix == Mix::Push || rng.below(2) == 0 {
                        s.push(rng.next_u64()).await;
                        pushed.set(pushed.get() + 1);
                    } else if s.pop().await.is_some() {
                        popped.set(popped.get() + 1);
                    }
                }
            });
        }
    });
    let nanos = start.elapsed().as_nanos() as u64;
    let stats = s.stats();
    let mut totals = [stats.ops, stats.messages, pushed.get(), popped.get()];
    ctx.allreduce_u64(&mut totals, rhizome::ReduceOp::Sum);
    let left = drain(ctx, &coop, &s);
    let [ops_done, messages, pushed, popped] = totals;
    if ops_done != ops * ctx.num_pes() as u64 || pushed != popped + left {
        return Err(format!(
            "{ops_done} operations, {pushed} pushed, {popped} popped, {left} left: values lost or invented"
        ));
    }
    Ok(Throughput {
        ops: ops_done,
        secs: ctx.max_u64(nanos) as f64 / 1e9,
        stats: Stats {
            ops: ops_done,
            messages,
        },
    })
}

/// Collective: pops everything left (on PE 0); every PE returns how many.
fn drain<O: Order>(ctx: &Ctx, coop: &Coop<'_>, s: &PushPop<'_, u64, O>) -> u64 {
    let left = Cell::new(0u64);
    coop.run(|scope| {
        // Many poppers, so that their pops combine.
        for _ in 0..if ctx.my_pe() == 0 { 256 } else { 0 } {
            let left = &left;
            scope.spawn(async move {
                while s.pop().await.is_some() {
                    left.set(left.get() + 1);
                }
            });
        }
    });
    ctx.sum_u64(left.get())
}
