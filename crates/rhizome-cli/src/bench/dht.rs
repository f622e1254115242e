//! `rhizome bench dht`: the distributed hash table's find-or-put (`rhizome_kernels::dht`):
//! throughput for read-heavy, write-heavy and mixed loads in each access mode, and with
//! `--sweep` the round trips per insert as the load factor grows, beside the thesis'
//! Lemma 1 (its Figure 3.17).

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_collections::dht::{Access, Config, DistributedHashTable};
use rhizome_kernels::dht::{Load, access_name, corollary1, lemma1_round_trips, sweep, throughput};
use rhizome_kernels::probe_model::{chunks_from_tail, probe_tail};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AccessArg {
    OneSided,
    OwnerComputes,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LoadArg {
    ReadHeavy,
    WriteHeavy,
    Mixed,
    All,
}

#[derive(Args)]
pub struct DhtArgs {
    /// Access mode to a remote partition.
    #[arg(long, value_enum, default_value = "both")]
    access: AccessArg,
    /// Share of finds: read-heavy 80 %, write-heavy 20 %, mixed 50 %.
    #[arg(long, value_enum, default_value = "all")]
    load: LoadArg,
    /// Load factor around which throughput is measured.
    #[arg(long, default_value_t = 0.5)]
    alpha: f64,
    /// Buckets per PE (16-byte keys: 24 bytes each).
    #[arg(long, default_value_t = 1 << 21)]
    slots: usize,
    /// find-or-put operations per PE per measurement.
    #[arg(long, default_value_t = 1 << 18)]
    ops: u64,
    /// Chunk size C of the throughput runs.
    #[arg(long, default_value_t = 8)]
    chunk: usize,
    /// Most chunks M a probe reads.
    #[arg(long, default_value_t = 64)]
    max_chunks: usize,
    /// Keys per owner-computes message.
    #[arg(long, default_value_t = 4096)]
    batch: usize,
    /// Repetitions of each throughput measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Also measure round trips per insert as the load factor grows, for each chunk size.
    #[arg(long)]
    sweep: bool,
    /// Chunk sizes of the sweep.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64")]
    sweep_chunks: Vec<usize>,
    /// Buckets per PE of the sweep's tables.
    #[arg(long, default_value_t = 1 << 20)]
    sweep_slots: usize,
    #[command(flatten)]
    opts: BenchOpts,
}

impl DhtArgs {
    fn check(&self) -> anyhow::Result<()> {
        self.opts.check()?;
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            anyhow::bail!("--alpha must be between 0 and 1, not {}", self.alpha);
        }
        if self.sweep_chunks.contains(&0) {
            anyhow::bail!("--sweep-chunks must all be at least 1");
        }
        Config::new(self.slots)
            .chunk(self.chunk)
            .max_chunks(self.max_chunks)
            .batch(self.batch)
            .check::<[u64; 2]>()?;
        Config::new(self.sweep_slots).check::<[u64; 2]>()?;
        Ok(())
    }
    fn accesses(&self) -> Vec<Access> {
        match self.access {
            AccessArg::OneSided => vec![Access::OneSided],
            AccessArg::OwnerComputes => vec![Access::OwnerComputes],
            AccessArg::Both => vec![Access::OneSided, Access::OwnerComputes],
        }
    }
    fn loads(&self) -> Vec<Load> {
        match self.load {
            LoadArg::ReadHeavy => vec![Load::ReadHeavy],
            LoadArg::WriteHeavy => vec![Load::WriteHeavy],
            LoadArg::Mixed => vec![Load::Mixed],
            LoadArg::All => vec![Load::ReadHeavy, Load::WriteHeavy, Load::Mixed],
        }
    }
}

/// A record before the transport and sizes are known: name, value, unit, baseline and its
/// name, detail.
type Row = (
    String,
    f64,
    &'static str,
    Option<(f64, &'static str)>,
    String,
);

pub fn run(args: DhtArgs) -> anyhow::Result<()> {
    args.check()?;
    let pes = args.opts.runtime.pes.unwrap_or(2);
    let workers = args.opts.runtime.workers.unwrap_or(1);
    let repeat = args.repeat.max(1);
    let results = World::builder()
        .pes(pes)
        .workers(workers)
        .run(|ctx| -> Result<_, String> {
            let mut rows: Vec<Row> = Vec::new();
            for access in args.accesses() {
                let config = Config::new(args.slots)
                    .chunk(args.chunk)
                    .max_chunks(args.max_chunks)
                    .batch(args.batch)
                    .access(access);
                let table = DistributedHashTable::new(ctx, config).map_err(|e| e.to_string())?;
                for load in args.loads() {
                    let mut runs = (0..repeat)
                        .map(|_| throughput(ctx, &table, load, args.alpha, args.ops, workers))
                        .collect::<Result<Vec<_>, _>>()?;
                    runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
                    let t = &runs[runs.len() / 2];
                    let per = |n: u64| n as f64 / t.stats.ops.max(1) as f64;
                    let name = format!(
                        "find-or-put {} {} a={}",
                        load.name(),
                        access_name(access),
                        args.alpha
                    );
                    let detail = format!(
                        "load {:.3}-{:.3}, C={}, {:.3} chunks/op, {:.3} rma/op",
                        t.alpha.0,
                        t.alpha.1,
                        args.chunk,
                        per(t.stats.chunks),
                        per(t.stats.rma())
                    );
                    rows.push((name.clone(), t.rate() / 1e6, "Mop/s", None, detail.clone()));
                    // The same run per CPU second of its busiest thread: what it would do
                    // with a core per thread, whatever else the machine runs.
                    let cpu = t.cpu_rate() / 1e6;
                    rows.push((name + " (cpu)", cpu, "Mop/cpu-s", None, detail));
                }
            }
            if args.sweep {
                let alphas: Vec<f64> = (1..=9).map(|i| i as f64 / 10.0).collect();
                // The model's probe-length distribution, once per load factor (on PE 0,
                // which reports).
                let mut tails: Vec<(f64, Vec<f64>)> = Vec::new();
                for &chunk in &args.sweep_chunks {
                    // Long probe runs near 0.9 reach thousands of buckets in a table of a
                    // million: let every chunk size probe at least 8192 before `Full`.
                    let max_chunks = args.max_chunks.max(8192usize.div_ceil(chunk));
                    for p in sweep(ctx, args.sweep_slots, chunk, max_chunks, &alphas)? {
                        if ctx.my_pe() != 0 {
                            continue;
                        }
                        // At the load factor the window is centred on.
                        let tail = match tails.iter().find(|t| t.0 == p.alpha) {
                            Some(t) => &t.1,
                            None => {
                                tails.push((p.alpha, probe_tail(p.alpha)));
                                &tails[tails.len() - 1].1
                            }
                        };
                        rows.push((
                            format!("round trips/insert C={} a={:.1}", p.chunk, p.alpha),
                            p.chunks_per_op,
                            "chunks",
                            Some((
                                chunks_from_tail(tail, p.chunk),
                                "thesis model E[ceil(L/C)] (sec 3.3)",
                            )),
                            format!(
                                "Lemma 1 / Fig 3.17 max(1,ceil(g))={:.0}, g(C,a)={:.3}, \
                                 {:.3} rma/op, {:.0} ns/op, {} inserts",
                                lemma1_round_trips(p.chunk, p.alpha),
                                corollary1(p.chunk, p.alpha),
                                p.rma_per_op,
                                p.ns_per_op,
                                p.ops
                            ),
                        ));
                    }
                }
            }
            Ok((ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), rows))
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Every PE has the same rows; the first result is PE 0's (under MPI, this rank's).
    let Some(first) = results.into_iter().next() else {
        return Ok(());
    };
    let (me, transport, pes, rows) = first.map_err(|e| anyhow::anyhow!("{e}"))?;
    if me != 0 {
        return Ok(());
    }
    let records: Vec<Record> = rows
        .into_iter()
        .map(|(name, value, unit, baseline, detail)| {
            Record::new(
                name,
                (transport, pes, workers),
                value,
                unit,
                baseline,
                Some(detail),
            )
        })
        .collect();
    super::record::report(&records, args.opts.json.as_deref())
}
