//! Communication benchmarks: latency and rate of the runtime's one-sided operations,
//! active-message calls, aggregated messages and collectives.
//!
//! PE 0 drives, PE 1 is the target (with one PE, the target is PE 0 itself). Each figure
//! is the median of `repeat` runs. On the `mpi` transport (with the cargo feature `mpi`),
//! each operation is also measured with raw MPI (`raw_mpi`) in the same run,
//! interleaved with the runtime's runs so that both see the same machine load.

use rhizome::rng::XorShift64;
use rhizome::{Ctx, ReduceOp};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// One measured figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What was measured, e.g. `get 8 B latency`.
    pub name: String,
    /// The figure, in `unit`.
    pub value: f64,
    /// `ns`, `Mops/s` or `Mmsg/s`.
    pub unit: &'static str,
    /// The raw-MPI figure for the same operation, in the same unit (MPI transport only).
    pub baseline: Option<f64>,
}

fn row(name: impl Into<String>, value: f64, unit: &'static str, baseline: Option<f64>) -> Row {
    Row {
        name: name.into(),
        value,
        unit,
        baseline,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs `op` `iters` times on PE 0, `repeat` times; returns the median ns per op. With
/// `raw`, each run is followed by a run of that raw-MPI operation (interleaved, so that
/// both see the same machine load); its median is the second value.
fn latency(
    ctx: &Ctx,
    repeat: usize,
    iters: u64,
    raw: Option<(&RawMpi, RawOp)>,
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
        if let Some((raw, r)) = raw {
            raws.push(raw_once(ctx, raw, iters, r));
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
    let raw = raw.map(|(_, r)| agree(ctx, median(raws), r));
    (ours, raw)
}

/// The figure every PE reports: PE 0's for operations PE 0 drives, the slowest PE's for
/// collective ones.
fn agree(ctx: &Ctx, mine: f64, op: RawOp) -> f64 {
    if op.collective() {
        ctx.allreduce(mine, f64::max)
    } else {
        ctx.broadcast(mine, 0)
    }
}

/// An operation of the raw-MPI baseline.
#[cfg_attr(
    not(feature = "mpi"),
    allow(dead_code, reason = "read by the MPI baselines")
)]
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

#[cfg(feature = "mpi")]
use crate::raw_mpi::RawMpi;

/// Without MPI there is no baseline: no value of this type exists.
#[cfg(not(feature = "mpi"))]
enum RawMpi {}

#[cfg(not(feature = "mpi"))]
impl RawMpi {
    fn new(_: &Ctx) -> Option<RawMpi> {
        None
    }
}

/// Runs `iters` raw-MPI `op`s towards `target`.
#[cfg(feature = "mpi")]
fn run_raw(raw: &RawMpi, op: RawOp, target: usize, iters: u64) {
    match op {
        RawOp::Get(len) => raw.get_or_put(target, len, iters, false),
        RawOp::Put(len) => raw.get_or_put(target, len, iters, true),
        RawOp::CompareExchange => raw.compare_exchange(target, iters),
        RawOp::FetchAdd => raw.fetch_add(target, iters),
        RawOp::PingPong => raw.ping_pong(target, iters),
        RawOp::Barrier => raw.barrier(iters),
        RawOp::Allreduce => raw.allreduce(iters),
    }
}

#[cfg(not(feature = "mpi"))]
fn run_raw(raw: &RawMpi, _: RawOp, _: usize, _: u64) {
    match *raw {}
}

/// Sends `per_pe` hand-aggregated values with raw MPI; the sum received.
#[cfg(feature = "mpi")]
fn run_aggregated(raw: &RawMpi, per_pe: u64, buf_bytes: usize) -> u64 {
    raw.aggregated(per_pe, buf_bytes)
}

#[cfg(not(feature = "mpi"))]
fn run_aggregated(raw: &RawMpi, _: u64, _: usize) -> u64 {
    match *raw {}
}

/// One timed run of `iters` raw-MPI `op`s: ns per operation on this PE (0 on PEs that
/// only wait). Collective: every PE calls it.
fn raw_once(ctx: &Ctx, raw: &RawMpi, iters: u64, op: RawOp) -> f64 {
    let target = 1 % ctx.num_pes();
    ctx.barrier();
    let mut ns = 0.0;
    if op.collective() || ctx.my_pe() == 0 {
        let start = Instant::now();
        run_raw(raw, op, target, iters);
        ns = start.elapsed().as_secs_f64() * 1e9 / iters as f64;
    }
    ctx.barrier();
    ns
}

/// One run of raw MPI, hand-aggregated: 8-byte values packed into buffers of the
/// runtime's size, every rank sending to the next. M messages/s over the slowest rank's
/// time. Collective.
fn raw_aggregated_once(ctx: &Ctx, raw: &RawMpi, per_pe: u64) -> f64 {
    let n = ctx.num_pes() as u64;
    ctx.barrier();
    let start = Instant::now();
    let sum = run_aggregated(raw, per_pe, ctx.aggregation_bytes());
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(sum, per_pe / 2, "raw baseline lost messages");
    let slowest = ctx.max_u64((secs * 1e9) as u64);
    (per_pe * n) as f64 / (slowest as f64 / 1e9) / 1e6
}

/// Collective: every figure of the benchmark, the same on every PE. `iters` operations per
/// latency measurement, `messages` per aggregated-rate measurement, each `repeat` times.
pub fn measure(ctx: &Ctx, repeat: usize, iters: u64, messages: u64) -> Vec<Row> {
    let n = ctx.num_pes();
    let me = ctx.my_pe();
    let target = 1 % n;
    let mut rows: Vec<Row> = Vec::new();
    let raw_mpi = RawMpi::new(ctx);
    let raw_mpi = raw_mpi.as_ref();
    let with_raw = |op| raw_mpi.map(|r| (r, op));
    let bytes = ctx.alloc::<u8>(4096);
    let words = ctx.alloc::<u64>(64);
    for size in [8usize, 16, 32, 64, 128] {
        let mut buf = vec![0u8; size];
        let raw = with_raw(RawOp::Get(size));
        let (ns, raw) = latency(ctx, repeat, iters, raw, |i| {
            ctx.get_into(bytes.ptr(target, (i as usize * 8) % 2048), &mut buf)
        });
        rows.push(row(format!("get {size} B latency"), ns, "ns", raw));
        let data = vec![7u8; size];
        let raw = with_raw(RawOp::Put(size));
        let (ns, raw) = latency(ctx, repeat, iters, raw, |i| {
            ctx.put_slice(bytes.ptr(target, (i as usize * 8) % 2048), &data)
        });
        rows.push(row(format!("put {size} B latency"), ns, "ns", raw));
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
    rows.push(row(
        "get 8 B rate (64 in flight)",
        64e3 / ns,
        "Mops/s",
        None,
    ));
    let p = words.ptr(target, 0);
    let raw = with_raw(RawOp::CompareExchange);
    let (ns, raw) = latency(ctx, repeat, iters, raw, |i| {
        let _ = ctx.compare_exchange(p, i, i + 1);
    });
    rows.push(row("compare-exchange latency", ns, "ns", raw));
    let raw = with_raw(RawOp::FetchAdd);
    let (ns, raw) = latency(ctx, repeat, iters, raw, |_| {
        ctx.fetch_add(p, 1);
    });
    rows.push(row("fetch-add latency", ns, "ns", raw));
    rows.push(row(
        "fetch-add rate",
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
        raws.extend(raw_mpi.map(|r| raw_once(ctx, r, k, RawOp::PingPong)));
    }
    let rt = ctx.broadcast(median(samples), 0);
    let raw = (!raws.is_empty()).then(|| agree(ctx, median(raws), RawOp::PingPong));
    rows.push(row("AM call round trip", rt, "ns", raw));

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
    let mut rng = XorShift64::for_stream(ctx.my_pe() as u64);
    for _ in 0..repeat {
        ctx.barrier();
        let t = Instant::now();
        ctx.finish(|| {
            for i in 0..per_pe {
                let global = rng.next_u64() % (BINS_PER_PE * n as u64);
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
        raws.extend(raw_mpi.map(|r| raw_aggregated_once(ctx, r, per_pe)));
    }
    let handled = ctx.sum_u64(bins.iter().map(Cell::get).sum());
    assert_eq!(handled, repeat as u64 * n as u64 * per_pe, "lost messages");
    let raw = (!raws.is_empty()).then(|| median(raws));
    rows.push(row(
        "aggregated 8 B messages (histogram)",
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
            raws.extend(raw_mpi.map(|r| raw_once(ctx, r, k, op)));
        }
        let ns = ctx.allreduce(median(s), f64::max);
        let raw = (!raws.is_empty()).then(|| agree(ctx, median(raws), op));
        rows.push(row(name, ns, "ns", raw));
    }
    rows
}
