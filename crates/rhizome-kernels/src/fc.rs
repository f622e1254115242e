//! Throughput of the flat-combining structures (seed 003, Figures 6 to 8): many
//! cooperative tasks per PE push, or push and pop at random, on one global stack or
//! queue, or insert, or insert and look up, random keys of a range on one global set or
//! map, in each combining mode. Results are checked: every value pushed is popped by a
//! task or by a final drain, and nothing else; every key inserted is found afterwards,
//! and no other.

use rhizome::Ctx;
use rhizome::coop::Coop;
use rhizome::rng::XorShift64;
use rhizome_collections::fc::{Fifo, GlobalMap, GlobalSet, Lifo, Mode, Order, PushPop, Stats};
use std::cell::Cell;
use std::time::Instant;

/// Which structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// [`rhizome_collections::fc::GlobalStack`].
    Stack,
    /// [`rhizome_collections::fc::GlobalQueue`].
    Queue,
    /// [`rhizome_collections::fc::GlobalSet`].
    Set,
    /// [`rhizome_collections::fc::GlobalMap`] (`u64` values).
    Map,
}

/// The operation mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// 100 % push (insert).
    Push,
    /// 50 % push, 50 % pop (insert, lookup).
    Mixed,
}

impl Structure {
    /// Its name in records.
    pub fn name(self) -> &'static str {
        match self {
            Structure::Stack => "stack",
            Structure::Queue => "queue",
            Structure::Set => "set",
            Structure::Map => "map",
        }
    }
}

impl Mix {
    /// Its name in records, for `structure`.
    pub fn name(self, structure: Structure) -> &'static str {
        let keyed = matches!(structure, Structure::Set | Structure::Map);
        match (self, keyed) {
            (Mix::Push, false) => "push",
            (Mix::Push, true) => "insert",
            (Mix::Mixed, _) => "mixed",
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

/// One workload: `tasks` tasks per PE make `ops` operations per PE in all; a set's or
/// map's keys are drawn from `0..2^key_bits`.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// The operation mix.
    pub mix: Mix,
    /// Cooperative tasks per PE.
    pub tasks: u64,
    /// Operations per PE.
    pub ops: u64,
    /// Keys of a set or map: `0..2^key_bits`.
    pub key_bits: u32,
}

/// Collective: runs `w` on a fresh structure; checked (an `Err` says what went wrong).
pub fn throughput(
    ctx: &Ctx,
    structure: Structure,
    mode: Mode,
    w: Workload,
) -> Result<Throughput, String> {
    match structure {
        Structure::Stack => measure::<Lifo>(ctx, mode, w),
        Structure::Queue => measure::<Fifo>(ctx, mode, w),
        Structure::Set | Structure::Map => measure_keyed(ctx, structure, mode, w),
    }
}

/// Runs `tasks` tasks per PE, sharing out `ops` operations per PE, each task with its
/// own random stream; returns the slowest PE's wall time in nanoseconds.
fn timed_tasks(ctx: &Ctx, coop: &Coop<'_>, w: Workload, op: impl AsyncFn(&mut XorShift64)) -> u64 {
    let me = ctx.my_pe() as u64;
    ctx.barrier();
    let start = Instant::now();
    coop.run(|scope| {
        for t in 0..w.tasks {
            // The PE's operations shared out as evenly as the tasks allow.
            let mine = w.ops / w.tasks + u64::from(t < w.ops % w.tasks);
            let op = &op;
            scope.spawn(async move {
                let mut rng = XorShift64::for_stream(me << 32 | t);
                for _ in 0..mine {
                    op(&mut rng).await;
                }
            });
        }
    });
    ctx.max_u64(start.elapsed().as_nanos() as u64)
}

/// A fair coin, from the generator's top bit. Keys are uniform and independent of it
/// (the paper's "random keys in a range"), also drawn from the top bits: the low bits
/// of consecutive xorshift states are related, and a key taken from one state's low
/// bits with the coin from the next one's lowest bit made some keys mostly inserted
/// and others mostly looked up, which showed as repeats that uniform keys do not make.
fn heads(rng: &mut XorShift64) -> bool {
    rng.next_u64() >> 63 == 1
}

/// A set or a map, behind one interface for the workload.
enum Keyed<'c> {
    Set(GlobalSet<'c>),
    Map(GlobalMap<'c, u64>),
}

impl Keyed<'_> {
    async fn insert(&self, key: u64) {
        match self {
            Keyed::Set(s) => s.insert(key).await,
            Keyed::Map(m) => m.insert(key, !key).await,
        }
    }
    /// Whether `key` is present; panics if a map holds a value never inserted.
    async fn contains(&self, key: u64) -> bool {
        match self {
            Keyed::Set(s) => s.contains(key).await,
            Keyed::Map(m) => m
                .lookup(key)
                .await
                .inspect(|&v| assert_eq!(v, !key))
                .is_some(),
        }
    }
    fn stats(&self) -> Stats {
        match self {
            Keyed::Set(s) => s.stats(),
            Keyed::Map(m) => m.stats(),
        }
    }
}

fn measure_keyed(
    ctx: &Ctx,
    structure: Structure,
    mode: Mode,
    w: Workload,
) -> Result<Throughput, String> {
    let coop = Coop::new(ctx);
    let keyed = match structure {
        Structure::Set => Keyed::Set(GlobalSet::new(&coop, mode)),
        _ => Keyed::Map(GlobalMap::new(&coop, mode)),
    };
    let range = 1usize << w.key_bits;
    let inserted = std::cell::RefCell::new(vec![0u64; range.div_ceil(64)]);
    let nanos = timed_tasks(ctx, &coop, w, async |rng| {
        let insert = w.mix == Mix::Push || heads(rng);
        let key = rng.next_u64().checked_shr(64 - w.key_bits).unwrap_or(0) as usize;
        if insert {
            keyed.insert(key as u64).await;
            inserted.borrow_mut()[key / 64] |= 1 << (key % 64);
        } else {
            keyed.contains(key as u64).await;
        }
    });
    let stats = keyed.stats();
    let mut totals = [stats.ops, stats.messages];
    ctx.allreduce_u64(&mut totals, rhizome::ReduceOp::Sum);
    let inserted = ctx.allreduce(inserted.into_inner(), |a, b| {
        a.iter().zip(&b).map(|(x, y)| x | y).collect()
    });
    // Every PE looks up its share of the range: present exactly when inserted.
    let wrong = Cell::new(0u64);
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    coop.run(|scope| {
        for first in (me * 64..range).step_by(pes * 64) {
            let (keyed, inserted, wrong) = (&keyed, &inserted, &wrong);
            scope.spawn(async move {
                for key in first..(first + 64).min(range) {
                    let want = inserted[key / 64] >> (key % 64) & 1 == 1;
                    if keyed.contains(key as u64).await != want {
                        wrong.set(wrong.get() + 1);
                    }
                }
            });
        }
    });
    let wrong = ctx.sum_u64(wrong.get());
    let failure =
        (wrong > 0).then(|| format!("{wrong} keys present though never inserted, or missing"));
    checked(ctx, w, totals, nanos, failure)
}

/// The measurement, unless the run's check found `failure` or the PEs' operations do not
/// add up to the workload's.
fn checked(
    ctx: &Ctx,
    w: Workload,
    [ops, messages]: [u64; 2],
    nanos: u64,
    failure: Option<String>,
) -> Result<Throughput, String> {
    let made = w.ops * ctx.num_pes() as u64;
    if ops != made {
        return Err(format!("{ops} operations counted, {made} made"));
    }
    if let Some(f) = failure {
        return Err(f);
    }
    Ok(Throughput {
        ops,
        secs: nanos as f64 / 1e9,
        stats: Stats { ops, messages },
    })
}

fn measure<O: Order>(ctx: &Ctx, mode: Mode, w: Workload) -> Result<Throughput, String> {
    let coop = Coop::new(ctx);
    let s = PushPop::<u64, O>::new(&coop, mode);
    let (pushed, popped) = (Cell::new(0u64), Cell::new(0u64));
    let nanos = timed_tasks(ctx, &coop, w, async |rng| {
        if w.mix == Mix::Push || heads(rng) {
            s.push(rng.next_u64()).await;
            pushed.set(pushed.get() + 1);
        } else if s.pop().await.is_some() {
            popped.set(popped.get() + 1);
        }
    });
    let stats = s.stats();
    let mut totals = [stats.ops, stats.messages, pushed.get(), popped.get()];
    ctx.allreduce_u64(&mut totals, rhizome::ReduceOp::Sum);
    let left = drain(ctx, &coop, &s);
    let [ops, messages, pushed, popped] = totals;
    let failure = (pushed != popped + left)
        .then(|| format!("{pushed} pushed, {popped} popped, {left} left: values lost or invented"));
    checked(ctx, w, [ops, messages], nanos, failure)
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
