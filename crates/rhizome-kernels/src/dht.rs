//! Benchmarks of the distributed hash table (`rhizome_collections::dht`), as in the
//! thesis' section 3.5.
//!
//! - [`throughput`]: find-or-put per second over all PEs for a read-heavy (80 % finds),
//!   write-heavy (20 % finds) or mixed (50 %) load, around a chosen load factor: the
//!   table is filled to just below it, then every PE runs its operations (finds of keys
//!   already in the table, inserts of fresh ones) and the load factor ends just above it.
//! - [`sweep`]: PE 0 alone inserts fresh keys while the load factor grows (the others
//!   only own their partitions, as the thesis' idle process did); at each level the
//!   chunks scanned per insert (the round trips of Lemma 1 / Figure 3.17), the one-sided
//!   operations per insert and the time per insert are measured over a window of 1 % of
//!   the table, beside the model's prediction.

use rhizome::Ctx;
use rhizome::rng::XorShift64;
use rhizome_collections::dht::{Access, Config, DistributedHashTable, Stats};
use std::time::Instant;

/// The share of finds among the operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// 80 % finds, 20 % inserts.
    ReadHeavy,
    /// 20 % finds, 80 % inserts.
    WriteHeavy,
    /// 50 % of each.
    Mixed,
}

impl Load {
    /// Finds among 100 operations.
    pub fn finds_percent(self) -> u64 {
        match self {
            Load::ReadHeavy => 80,
            Load::WriteHeavy => 20,
            Load::Mixed => 50,
        }
    }
    /// `read-heavy`, `write-heavy`, `mixed`.
    pub fn name(self) -> &'static str {
        match self {
            Load::ReadHeavy => "read-heavy",
            Load::WriteHeavy => "write-heavy",
            Load::Mixed => "mixed",
        }
    }
}

/// The name of an access mode in records.
pub fn access_name(access: Access) -> &'static str {
    match access {
        Access::OneSided => "one-sided",
        Access::OwnerComputes => "owner-computes",
    }
}

/// The `i`-th benchmark key: 16 bytes, the size of a BDD node.
fn key(i: u64) -> [u64; 2] {
    [i, i ^ 0x5555_5555_5555_5555]
}

/// What a throughput run measured (the same on every PE).
#[derive(Clone, Debug)]
pub struct Throughput {
    /// find-or-put operations over all PEs.
    pub ops: u64,
    /// Seconds of the slowest PE.
    pub secs: f64,
    /// CPU seconds of the busiest thread: the run's time had every thread a core of its
    /// own (on a shared machine the wall time also counts waiting for a core).
    pub cpu_secs: f64,
    /// Load factor before and after the run.
    pub alpha: (f64, f64),
    /// What the probes did, over all PEs (owners' probes included).
    pub stats: Stats,
}

impl Throughput {
    /// Operations per second over all PEs.
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }
    /// Operations per CPU second of the busiest thread.
    pub fn cpu_rate(&self) -> f64 {
        self.ops as f64 / self.cpu_secs
    }
}

/// CPU seconds this thread has run.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; Linux supports the per-thread clock.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The keys `ops` operations of PE `pe` use: finds of keys `0..present`, inserts of keys
/// from `present` on that no other PE uses.
fn operations(pe: usize, pes: usize, ops: u64, load: Load, present: u64) -> Vec<[u64; 2]> {
    let mut rng = XorShift64::for_stream(pe as u64 + 1);
    let mut fresh = 0u64;
    (0..ops)
        .map(|_| {
            if present > 0 && rng.next_u64() % 100 < load.finds_percent() {
                key(rng.next_u64() % present)
            } else {
                fresh += 1;
                key(present + pe as u64 + pes as u64 * (fresh - 1))
            }
        })
        .collect()
}

/// Collective: one throughput measurement on `table` (cleared first), `ops` operations
/// per PE (split over `workers` threads in one-sided mode) around load factor `alpha`.
/// `Err` if the inserts would move the load factor by more than 0.2.
pub fn throughput(
    ctx: &Ctx,
    table: &DistributedHashTable<[u64; 2]>,
    load: Load,
    alpha: f64,
    ops: u64,
    workers: usize,
) -> Result<Throughput, String> {
    let pes = ctx.num_pes();
    let capacity = table.capacity() as f64;
    let inserts = (ops * pes as u64) as f64 * (100 - load.finds_percent()) as f64 / 100.0;
    if inserts > 0.2 * capacity {
        return Err(format!(
            "{ops} operations per PE would move the load factor by {:.2}: use more slots or fewer operations",
            inserts / capacity
        ));
    }
    let present = (alpha * capacity - inserts / 2.0).max(0.0) as u64;
    table.clear(ctx);
    // Fill to just below `alpha`, each PE its share, one-sided (every mode's layout).
    let me = ctx.my_pe() as u64;
    for i in (me..present).step_by(pes) {
        table.find_or_put(&key(i)).map_err(|e| e.to_string())?;
    }
    let work = operations(ctx.my_pe(), pes, ops, load, present);
    let served_before = table.owner_stats();
    ctx.barrier();
    let start = Instant::now();
    let (result, mut stats, cpu) = run_operations(ctx, table, &work, workers);
    let nanos = start.elapsed().as_nanos() as u64;
    result?;
    stats.add(&table.owner_stats().since(&served_before));
    let mut totals = stats.to_array();
    ctx.allreduce_u64(&mut totals, rhizome::ReduceOp::Sum);
    let stats = Stats::from_array(totals);
    let secs = ctx.max_u64(nanos) as f64 / 1e9;
    let cpu_secs = ctx.max_u64((cpu * 1e9) as u64) as f64 / 1e9;
    Ok(Throughput {
        ops: ops * pes as u64,
        secs,
        cpu_secs,
        alpha: (
            present as f64 / capacity,
            (present + stats.inserted) as f64 / capacity,
        ),
        stats,
    })
}

/// Runs `work` on this PE: one-sided over `workers` threads (each one pipelined call of
/// [`DistributedHashTable::find_or_put_pipelined`] on its share), or as owner-computes batches
/// from the main thread inside a `finish` (so that it serves the others until all are
/// done). Also returns the CPU seconds of its busiest thread.
fn run_operations(
    ctx: &Ctx,
    table: &DistributedHashTable<[u64; 2]>,
    work: &[[u64; 2]],
    workers: usize,
) -> (Result<(), String>, Stats, f64) {
    match table.config().access {
        Access::OwnerComputes => {
            let mut stats = Stats::default();
            let cpu = thread_cpu_secs();
            let r = ctx.finish(|| {
                for piece in work.chunks(1 << 16) {
                    table
                        .find_or_put_many_counted(ctx, piece, &mut stats)
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            });
            (r, stats, thread_cpu_secs() - cpu)
        }
        Access::OneSided => {
            let per = work.len().div_ceil(workers.max(1)).max(1);
            let results: Vec<(Result<(), String>, Stats, f64)> = std::thread::scope(|s| {
                let threads: Vec<_> = work
                    .chunks(per)
                    .map(|piece| {
                        s.spawn(move || {
                            let cpu = thread_cpu_secs();
                            let mut stats = Stats::default();
                            let r = table
                                .find_or_put_pipelined(piece, &mut stats)
                                .map(drop)
                                .map_err(|e| e.to_string());
                            (r, stats, thread_cpu_secs() - cpu)
                        })
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("worker"))
                    .collect()
            });
            let mut stats = Stats::default();
            let mut result = Ok(());
            let mut busiest = 0f64;
            for (r, s, cpu) in results {
                stats.add(&s);
                result = result.and(r);
                busiest = busiest.max(cpu);
            }
            ctx.barrier();
            (result, stats, busiest)
        }
    }
}

/// The thesis' Corollary 1: expected chunks of `chunk` buckets read until an empty bucket
/// is found at load factor `alpha`, `(1 + 1/(1-α)²) / 2C`.
pub fn corollary1(chunk: usize, alpha: f64) -> f64 {
    (1.0 + 1.0 / ((1.0 - alpha) * (1.0 - alpha))) / (2.0 * chunk as f64)
}

/// The expected round trips of the thesis' Figure 3.17 (from Lemma 1): at least one chunk,
/// and whole chunks, `max(1, ⌈g(C, α)⌉)`.
pub fn lemma1_round_trips(chunk: usize, alpha: f64) -> f64 {
    corollary1(chunk, alpha).ceil().max(1.0)
}

/// One level of a [`sweep`].
#[derive(Clone, Debug)]
pub struct SweepPoint {
    /// Chunk size `C`.
    pub chunk: usize,
    /// Load factor at the middle of the measured window.
    pub alpha: f64,
    /// Inserts measured.
    pub ops: u64,
    /// Chunks scanned per insert: the measured round trips.
    pub chunks_per_op: f64,
    /// Gets, atomics and puts issued per insert.
    pub rma_per_op: f64,
    /// Nanoseconds per insert (PE 0, one thread).
    pub ns_per_op: f64,
}

/// Collective: fills a fresh `slots_per_pe` table of chunk size `chunk` from PE 0 with
/// fresh keys, and measures each level of `alphas` (increasing) over a window of 1 % of
/// the table centred on it. Every PE gets the points.
pub fn sweep(
    ctx: &Ctx,
    slots_per_pe: usize,
    chunk: usize,
    max_chunks: usize,
    alphas: &[f64],
) -> Result<Vec<SweepPoint>, String> {
    let config = Config::new(slots_per_pe)
        .chunk(chunk)
        .max_chunks(max_chunks);
    let table = DistributedHashTable::<[u64; 2]>::new(ctx, config).map_err(|e| e.to_string())?;
    let capacity = table.capacity() as f64;
    let window = (capacity / 100.0).max(1.0) as u64;
    let mut points = Vec::new();
    let mut next = 0u64;
    let mut failed = None;
    for &alpha in alphas {
        ctx.barrier();
        let mut point = [0u64; 6];
        if ctx.my_pe() == 0 && failed.is_none() {
            let start = ((alpha * capacity) as u64)
                .saturating_sub(window / 2)
                .max(next);
            let insert = |i: u64, stats: &mut Stats| table.find_or_put_counted(&key(i), stats);
            let mut untimed = Stats::default();
            let mut stats = Stats::default();
            let r = (next..start)
                .try_for_each(|i| insert(i, &mut untimed).map(drop))
                .and_then(|()| {
                    let t = Instant::now();
                    (start..start + window).try_for_each(|i| insert(i, &mut stats).map(drop))?;
                    Ok(t.elapsed().as_nanos() as u64)
                });
            next = start + window;
            match r {
                Ok(nanos) => point = [1, stats.ops, stats.chunks, stats.rma(), nanos, 0],
                Err(e) => failed = Some(e.to_string()),
            }
        }
        let [measured, ops, chunks, rma, nanos, _] = ctx.broadcast(point, 0);
        if measured == 1 {
            points.push(SweepPoint {
                chunk,
                alpha,
                ops,
                chunks_per_op: chunks as f64 / ops as f64,
                rma_per_op: rma as f64 / ops as f64,
                ns_per_op: nanos as f64 / ops as f64,
            });
        }
    }
    ctx.barrier();
    match ctx.broadcast(failed, 0) {
        Some(e) => Err(format!(
            "above load factor {:.2}: {e}",
            points.last().map_or(0.0, |p| p.alpha)
        )),
        None => Ok(points),
    }
}
