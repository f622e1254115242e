//! `rhizome bench comm`: latency and rate of the runtime's communication operations.
//!
//! PE 0 drives, PE 1 is the target (with one PE, the target is PE 0 itself). Each figure
//! is the median of `--repeat` runs.
//!
//! On the `mpi` transport (a build with the `mpi` feature, started by `mpirun`), each
//! operation is also measured with raw MPI on the same window and communicator (see
//! `rhizome::transport::mpi::baseline`), in the same run: the record's `baseline`.

use super::record::Record;
use crate::RuntimeOpts;
use clap::Args;
use rhizome::{Ctx, ReduceOp, World};
use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

#[derive(Args)]
pub struct CommArgs {
    /// Repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Operations per latency measurement.
    #[arg(long, default_value_t = 200_000)]
    iters: u64,
    /// Messages per aggregated-rate measurement.
    #[arg(long, default_value_t = 20_000_000)]
    messages: u64,
    /// Write JSON records to this file (an existing one only if it is an earlier report),
    /// or to stdout with `-` (the table then goes to stderr). Default: none.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs `op` `iters` times on PE 0, `repeat` times; returns the median ns per op. With
/// `raw`, each run is followed by a run of that raw-MPI operation (interleaved, so that
/// both see the same machine load); its median is the second value (MPI transport only).
fn latency(
    ctx: &Ctx,
    repeat: usize,
    iters: u64,
    raw: Option<(RawOp, u32)>,
    mut op: impl FnMut(u64),
) -> (f64, Option<f64>) {
    let mut samples = Vec::new();
    let mut raws = Vec::new();
    for _ in 0..repeat {
        ctx.barrier();
        if ctx.my_pe() == 0 {
            let t = Instant::now();
            for i in 0..iters {
                op(i);
            }
            samples.push(t.elapsed().as_secs_f64() * 1e9 / iters as f64);
        }
        ctx.barrier();
        if let Some((r, seg)) = raw {
            raws.extend(raw_once(ctx, iters, r, seg));
        }
    }
    let ours = ctx.broadcast(
        if samples.is_empty() {
            0.0
        } else {
            median(samples)
        },
        0,
    );
    let raw = (!raws.is_empty()).then(|| agree(ctx, median(raws), raw.map(|r| r.0)));
    (ours, raw)
}

/// The figure every PE reports: PE 0's for operations PE 0 drives, the slowest PE's for
/// collective ones.
fn agree(ctx: &Ctx, mine: f64, op: Option<RawOp>) -> f64 {
    if op.is_some_and(RawOp::collective) {
        ctx.allreduce(mine, f64::max)
    } else {
        ctx.broadcast(mine, 0)
    }
}

pub fn run(args: CommArgs) -> anyhow::Result<()> {
    args.runtime.check_bounds()?;
    super::record::check_json(args.json.as_deref())?;
    let pes = args.runtime.pes.unwrap_or(2);
    let workers = args.runtime.workers.unwrap_or(1);
    let repeat = args.repeat.max(1);
    let iters = args.iters.max(1);
    let messages = args.messages.max(1);
    let results = World::builder()
        .pes(pes)
        .workers(workers)
        .run(|ctx| {
            let rows = measure(ctx, repeat, iters, messages);
            (ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), rows)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Under MPI every rank has the same rows; rank 0 reports them.
    let Some((0, transport, pes, rows)) = results.into_iter().next() else {
        return Ok(());
    };
    let records: Vec<Record> = rows
        .into_iter()
        .map(|(name, value, unit, baseline)| Record {
            name,
            transport: transport.into(),
            pes,
            workers,
            value,
            unit: unit.into(),
            baseline,
            baseline_name: baseline.map(|_| "raw MPI".into()),
            result: None,
        })
        .collect();
    super::record::report(&records, args.json.as_deref())
}

/// (name, value, unit, raw-MPI baseline in the same unit).
type Row = (String, f64, &'static str, Option<f64>);

/// An operation of the raw-MPI baseline.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
#[derive(Clone, Copy)]
enum RawOp {
    Get(usize),
    Put(usize),
    CompareExchange,
    FetchAdd,
    PingPong,
    Barrier,
    Allreduce,
}

impl RawOp {
    /// Whether every PE takes part (otherwise PE 0 drives, the others wait).
    fn collective(self) -> bool {
        matches!(self, RawOp::PingPong | RawOp::Barrier | RawOp::Allreduce)
    }
}

/// One timed run of `iters` raw-MPI `op`s: ns per operation on this PE (0 on PEs that
/// only wait), `None` unless the transport is MPI. Collective: every PE calls it.
#[cfg(feature = "mpi")]
fn raw_once(ctx: &Ctx, iters: u64, op: RawOp, seg: u32) -> Option<f64> {
    use rhizome::transport::Backend;
    use rhizome::transport::mpi::baseline;
    let Backend::Mpi(t) = ctx.backend() else {
        return None;
    };
    let target = 1 % ctx.num_pes();
    ctx.barrier();
    let mut ns = 0.0;
    if op.collective() || ctx.my_pe() == 0 {
        let start = Instant::now();
        let r = match op {
            RawOp::Get(len) => baseline::get(t, target, seg, len, iters),
            RawOp::Put(len) => baseline::put(t, target, seg, len, iters),
            RawOp::CompareExchange => baseline::compare_exchange(t, target, seg, iters),
            RawOp::FetchAdd => baseline::fetch_add(t, target, seg, iters),
            RawOp::PingPong => baseline::ping_pong(t, target, iters),
            RawOp::Barrier => baseline::barrier(t, iters),
            RawOp::Allreduce => baseline::allreduce(t, iters),
        };
        if let Err(e) = r {
            panic!("raw MPI baseline: {e}");
        }
        ns = start.elapsed().as_secs_f64() * 1e9 / iters as f64;
    }
    ctx.barrier();
    Some(ns)
}

#[cfg(not(feature = "mpi"))]
fn raw_once(_: &Ctx, _: u64, _: RawOp, _: u32) -> Option<f64> {
    None
}

/// One run of raw MPI, hand-aggregated: 8-byte values packed into buffers of the
/// runtime's size, every rank sending to the next. M messages/s over the slowest rank's
/// time, or `None` unless the transport is MPI. Collective.
#[cfg(feature = "mpi")]
fn raw_aggregated_once(ctx: &Ctx, per_pe: u64) -> Option<f64> {
    use rhizome::transport::Backend;
    use rhizome::transport::mpi::baseline;
    let Backend::Mpi(t) = ctx.backend() else {
        return None;
    };
    let n = ctx.num_pes() as u64;
    ctx.barrier();
    let start = Instant::now();
    let sum = baseline::aggregated(t, per_pe, ctx.aggregation_bytes())
        .unwrap_or_else(|e| panic!("raw MPI baseline: {e}"));
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(sum, per_pe / 2, "raw baseline lost messages");
    let mut slowest = [(secs * 1e9) as u64];
    ctx.allreduce_u64(&mut slowest, ReduceOp::Max);
    Some((per_pe * n) as f64 / (slowest[0] as f64 / 1e9) / 1e6)
}

#[cfg(not(feature = "mpi"))]
fn raw_aggregated_once(_: &Ctx, _: u64) -> Option<f64> {
    None
}

fn measure(ctx: &Ctx, repeat: usize, iters: u64, messages: u64) -> Vec<Row> {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    let target = 1 % n;
    let mut rows: Vec<Row> = Vec::new();
    let bytes = ctx.alloc::<u8>(4096);
    let words = ctx.alloc::<u64>(64);
    let raw_words = ctx.alloc::<u64>(64);
    for size in [8usize, 16, 32, 64, 128] {
        let mut buf = vec![0u8; size];
        let raw = Some((RawOp::Get(size), bytes.segment()));
        let (ns, raw) = latency(ctx, repeat, iters, raw, |i| {
            ctx.get_into(bytes.ptr(target, (i as usize * 8) % 2048), &mut buf)
        });
        rows.push((format!("get {size} B latency"), ns, "ns", raw));
        let data = vec![7u8; size];
        let raw = Some((RawOp::Put(size), bytes.segment()));
        let (ns, raw) = latency(ctx, repeat, iters, raw, |i| {
            ctx.put_slice(bytes.ptr(target, (i as usize * 8) % 2048), &data)
        });
        rows.push((format!("put {size} B latency"), ns, "ns", raw));
    }
    // Rate: batches of 64 non-blocking gets in flight.
    let (ns, _) = latency(ctx, repeat, iters / 64 + 1, None, |i| {
        let hs: Vec<_> = (0..64)
            .map(|k| ctx.get_nb(words.ptr(target, ((i + k) % 64) as usize), 1))
            .collect();
        for h in hs {
            let _ = h.wait();
        }
    });
    rows.push((
        "get 8 B rate (64 in flight)".into(),
        64e3 / ns,
        "Mops/s",
        None,
    ));
    let p = words.ptr(target, 0);
    let raw = Some((RawOp::CompareExchange, raw_words.segment()));
    let (ns, raw) = latency(ctx, repeat, iters, raw, |i| {
        let _ = ctx.compare_exchange(p, i, i + 1);
    });
    rows.push(("compare-exchange latency".into(), ns, "ns", raw));
    let raw = Some((RawOp::FetchAdd, raw_words.segment()));
    let (ns, raw) = latency(ctx, repeat, iters, raw, |_| {
        ctx.fetch_add(p, 1);
    });
    rows.push(("fetch-add latency".into(), ns, "ns", raw));
    rows.push((
        "fetch-add rate".into(),
        1e3 / ns,
        "Mops/s",
        raw.map(|r| 1e3 / r),
    ));

    // Active-message round trip: PE 1 answers while it waits in finish. Raw MPI: an
    // 8-byte MPI_Send/MPI_Recv ping-pong.
    let echo = ctx.register_call(|_ctx: &Ctx, x: u64| x + 1);
    let k = iters / 10 + 1;
    let (mut samples, mut raws) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        ctx.barrier();
        let r = ctx.finish(|| {
            if me == 0 {
                let t = Instant::now();
                for i in 0..k {
                    assert_eq!(ctx.call(target, echo, &i).wait(), i + 1);
                }
                t.elapsed().as_secs_f64() * 1e9 / k as f64
            } else {
                0.0
            }
        });
        samples.push(r);
        raws.extend(raw_once(ctx, k, RawOp::PingPong, 0));
    }
    let rt = ctx.broadcast(median(samples), 0);
    let raw = (!raws.is_empty()).then(|| agree(ctx, median(raws), Some(RawOp::PingPong)));
    rows.push(("AM call round trip".into(), rt, "ns", raw));

    // Aggregated one-way messages with 8-byte payloads, as in Bale's histogram: every PE
    // sends increments of random bins of a table distributed over all PEs (itself
    // included); the rate is all messages over the slowest PE's time.
    const BINS_PER_PE: u64 = 1000;
    let bins: Rc<Vec<Cell<u64>>> = Rc::new((0..BINS_PER_PE).map(|_| Cell::new(0)).collect());
    let table = bins.clone();
    let incr = ctx.register(move |_ctx, bin: u64| {
        let b = &table[bin as usize];
        b.set(b.get() + 1);
    });
    let (mut rates, mut raws) = (Vec::new(), Vec::new());
    let per_pe = messages / n as u64;
    let mut rng =
        0x9E37_79B9_7F4A_7C15u64 ^ (ctx.my_pe() as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    for _ in 0..repeat {
        ctx.barrier();
        let t = Instant::now();
        ctx.finish(|| {
            for i in 0..per_pe {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let global = rng % (BINS_PER_PE * n as u64);
                ctx.send((global % n as u64) as usize, incr, &(global / n as u64));
                if i % 65536 == 0 {
                    ctx.progress();
                }
            }
        });
        let secs = t.elapsed().as_secs_f64();
        let mut slowest = [(secs * 1e9) as u64];
        ctx.allreduce_u64(&mut slowest, ReduceOp::Max);
        rates.push((per_pe * n as u64) as f64 / (slowest[0] as f64 / 1e9) / 1e6);
        raws.extend(raw_aggregated_once(ctx, per_pe));
    }
    let handled = ctx.sum_u64(bins.iter().map(Cell::get).sum());
    assert_eq!(handled, repeat as u64 * n as u64 * per_pe, "lost messages");
    let raw = (!raws.is_empty()).then(|| median(raws));
    rows.push((
        "aggregated 8 B messages (histogram)".into(),
        median(rates),
        "Mmsg/s",
        raw,
    ));

    let k = (iters / 10).max(1);
    for (name, op) in [
        ("barrier latency", RawOp::Barrier),
        ("allreduce u64 latency", RawOp::Allreduce),
    ] {
        let (mut s, mut raws) = (Vec::new(), Vec::new());
        for _ in 0..repeat {
            ctx.barrier();
            let t = Instant::now();
            for i in 0..k {
                match op {
                    RawOp::Barrier => ctx.barrier(),
                    _ => {
                        let _ = ctx.sum_u64(i);
                    }
                }
            }
            s.push(t.elapsed().as_secs_f64() * 1e9 / k as f64);
            raws.extend(raw_once(ctx, k, op, 0));
        }
        let ns = ctx.allreduce(median(s), f64::max);
        let raw = (!raws.is_empty()).then(|| agree(ctx, median(raws), Some(op)));
        rows.push((name.into(), ns, "ns", raw));
    }
    rows
}
