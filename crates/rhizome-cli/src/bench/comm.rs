//! `rhizome bench comm`: latency and rate of the runtime's communication operations.
//!
//! PE 0 drives, PE 1 is the target (with one PE, the target is PE 0 itself). Each figure
//! is the median of `--repeat` runs.

use super::record::{Record, print_table, write_json};
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
    /// Write JSON records to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs `op` `iters` times on PE 0, `repeat` times; returns the median ns per op.
fn latency(ctx: &Ctx, repeat: usize, iters: u64, mut op: impl FnMut(u64)) -> f64 {
    let mut samples = Vec::new();
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
    }
    ctx.broadcast(
        if samples.is_empty() {
            0.0
        } else {
            median(samples)
        },
        0,
    )
}

pub fn run(args: CommArgs) -> anyhow::Result<()> {
    let pes = args.runtime.pes.unwrap_or(2);
    let workers = args.runtime.workers.unwrap_or(1);
    let repeat = args.repeat.max(1);
    let iters = args.iters.max(1);
    let messages = args.messages.max(1);
    let results = World::builder()
        .pes(pes)
        .workers(workers)
        .run(|ctx| measure(ctx, repeat, iters, messages))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let rows = results.into_iter().next().unwrap_or_default();
    let records: Vec<Record> = rows
        .into_iter()
        .map(|(name, value, unit)| Record {
            name,
            transport: "local".into(),
            pes,
            workers,
            value,
            unit: unit.into(),
            baseline: None,
            baseline_name: None,
            result: None,
        })
        .collect();
    print_table(&records);
    if let Some(path) = &args.json {
        write_json(path, &records)?;
    }
    Ok(())
}

type Row = (String, f64, &'static str);

fn measure(ctx: &Ctx, repeat: usize, iters: u64, messages: u64) -> Vec<Row> {
    let n = ctx.num_pes();
    let target = 1 % n;
    let mut rows: Vec<Row> = Vec::new();
    let bytes = ctx.alloc::<u8>(4096);
    let words = ctx.alloc::<u64>(64);
    for size in [8usize, 16, 32, 64, 128] {
        let mut buf = vec![0u8; size];
        let ns = latency(ctx, repeat, iters, |i| {
            ctx.get_into(bytes.ptr(target, (i as usize * 8) % 2048), &mut buf)
        });
        rows.push((format!("get {size} B latency"), ns, "ns"));
        let data = vec![7u8; size];
        let ns = latency(ctx, repeat, iters, |i| {
            ctx.put_slice(bytes.ptr(target, (i as usize * 8) % 2048), &data)
        });
        rows.push((format!("put {size} B latency"), ns, "ns"));
    }
    // Rate: batches of 64 non-blocking gets in flight.
    let ns = latency(ctx, repeat, iters / 64 + 1, |i| {
        let hs: Vec<_> = (0..64)
            .map(|k| ctx.get_nb(words.ptr(target, ((i + k) % 64) as usize), 1))
            .collect();
        for h in hs {
            let _ = h.wait();
        }
    });
    rows.push(("get 8 B rate (64 in flight)".into(), 64e3 / ns, "Mops/s"));
    let p = words.ptr(target, 0);
    let ns = latency(ctx, repeat, iters, |i| {
        let _ = ctx.compare_exchange(p, i, i + 1);
    });
    rows.push(("compare-exchange latency".into(), ns, "ns"));
    let ns = latency(ctx, repeat, iters, |_| {
        ctx.fetch_add(p, 1);
    });
    rows.push(("fetch-add latency".into(), ns, "ns"));
    rows.push(("fetch-add rate".into(), 1e3 / ns, "Mops/s"));

    // Active-message round trip: PE 1 answers while it waits in finish.
    let echo = ctx.register_call(|_ctx: &Ctx, x: u64| x + 1);
    let mut samples = Vec::new();
    for _ in 0..repeat {
        ctx.barrier();
        let r = ctx.finish(|| {
            if ctx.my_pe() == 0 {
                let k = iters / 10 + 1;
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
    }
    let rt = ctx.broadcast(median(samples), 0);
    rows.push(("AM call round trip".into(), rt, "ns"));

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
    let mut rates = Vec::new();
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
    }
    let handled = ctx.sum_u64(bins.iter().map(Cell::get).sum());
    assert_eq!(handled, repeat as u64 * n as u64 * per_pe, "lost messages");
    rows.push((
        "aggregated 8 B messages (histogram)".into(),
        median(rates),
        "Mmsg/s",
    ));

    let ns = {
        let mut s = Vec::new();
        for _ in 0..repeat {
            ctx.barrier();
            let t = Instant::now();
            for _ in 0..iters / 10 {
                ctx.barrier();
            }
            s.push(t.elapsed().as_secs_f64() * 1e9 / (iters / 10).max(1) as f64);
        }
        ctx.allreduce(median(s), f64::max)
    };
    rows.push(("barrier latency".into(), ns, "ns"));
    let ns = {
        let mut s = Vec::new();
        for _ in 0..repeat {
            ctx.barrier();
            let t = Instant::now();
            for i in 0..iters / 10 {
                let _ = ctx.sum_u64(i);
            }
            s.push(t.elapsed().as_secs_f64() * 1e9 / (iters / 10).max(1) as f64);
        }
        ctx.allreduce(median(s), f64::max)
    };
    rows.push(("allreduce u64 latency".into(), ns, "ns"));
    rows
}
