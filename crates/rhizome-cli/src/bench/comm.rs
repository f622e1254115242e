//! `rhizome bench comm`: latency and rate of the runtime's communication operations
//! (`rhizome_kernels::comm`). On the `mpi` transport (a build with the `mpi` feature,
//! started by `mpirun`), each operation is also measured with raw MPI in the same run:
//! the record's `baseline`.

use super::record::{BenchOpts, Record};
use clap::Args;
use rhizome::World;
use rhizome_kernels::comm::{Row, measure};

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
    #[command(flatten)]
    opts: BenchOpts,
}

pub fn run(args: CommArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    let pes = args.opts.runtime.pes.unwrap_or(2);
    let workers = args.opts.runtime.workers.unwrap_or(1);
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
        .map(|r: Row| Record {
            name: r.name,
            transport: transport.into(),
            pes,
            workers,
            value: r.value,
            unit: r.unit.into(),
            baseline: r.baseline,
            baseline_name: r.baseline.map(|_| "raw MPI".into()),
            result: None,
        })
        .collect();
    super::record::report(&records, args.opts.json.as_deref())
}
