//! `rhizome bench dsm sor|nbody|water|all`: the multithreaded-HLRC paper's applications on the distributed
//! shared memory (`rhizome_kernels::dsm`): time of the parallel run, its speedup over the
//! sequential run of the same code, whose result it must match, and the protocol's
//! counters (the paper's Figure 7 breakdown) in the JSON record.

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_kernels::dsm::{App, Outcome, run_dsm, run_sequential};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AppArg {
    Sor,
    Nbody,
    Water,
    All,
}

#[derive(Args)]
pub struct DsmArgs {
    /// The application.
    #[arg(value_enum, default_value = "all")]
    app: AppArg,
    /// SOR: interior grid points per side.
    #[arg(long, default_value_t = 1024)]
    sor_n: usize,
    /// SOR: iterations (each a red and a black sweep).
    #[arg(long, default_value_t = 40)]
    sor_iters: usize,
    /// NBody: bodies (64 bytes each).
    #[arg(long, default_value_t = 2048)]
    bodies: usize,
    /// NBody: time steps.
    #[arg(long, default_value_t = 10)]
    steps: usize,
    /// Water: molecules (one lock each).
    #[arg(long, default_value_t = 1024)]
    molecules: usize,
    /// Water: time steps.
    #[arg(long, default_value_t = 4)]
    water_steps: usize,
    #[command(flatten)]
    opts: BenchOpts,
}

/// The JSON record: the table's row, the speedup and the protocol's counters.
#[derive(Serialize)]
struct DsmRecord {
    #[serde(flatten)]
    row: Record,
    app: String,
    threads: usize,
    sequential_seconds: f64,
    speedup: f64,
    protocol: BTreeMap<&'static str, u64>,
}

pub fn run(args: DsmArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    let pes = args.opts.runtime.pes.unwrap_or(2);
    let threads = args.opts.runtime.workers.unwrap_or(1);
    if pes == 0 || threads == 0 {
        anyhow::bail!("--pes and --workers (application threads per PE) must be at least 1");
    }
    for (flag, n) in [
        ("--sor-n", args.sor_n),
        ("--bodies", args.bodies),
        ("--molecules", args.molecules),
    ] {
        if n == 0 {
            anyhow::bail!("{flag} must be at least 1");
        }
    }
    let apps: Vec<App> = [
        (
            AppArg::Sor,
            App::Sor {
                n: args.sor_n,
                iters: args.sor_iters,
            },
        ),
        (
            AppArg::Nbody,
            App::Nbody {
                bodies: args.bodies,
                steps: args.steps,
            },
        ),
        (
            AppArg::Water,
            App::Water {
                molecules: args.molecules,
                steps: args.water_steps,
            },
        ),
    ]
    .into_iter()
    .filter(|(a, _)| args.app == AppArg::All || args.app == *a)
    .map(|(_, app)| app)
    .collect();
    let mut rows = Vec::new();
    let mut records = Vec::new();
    for app in apps {
        let seq = run_sequential(&app);
        let out = World::builder()
            .pes(pes)
            .run(|ctx| {
                let par = run_dsm(ctx, &app, threads);
                (ctx.my_pe() == 0).then(|| (par, ctx.transport_name(), ctx.num_pes()))
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(Some((par, transport, pes))) = out.into_iter().next() else {
            return Ok(());
        };
        let (row, record) = record(app, threads, (transport, pes), &seq, &par)?;
        rows.push(row);
        records.push(record);
    }
    super::record::report_with(&rows, &records, args.opts.json.as_deref())
}

fn record(
    app: App,
    threads: usize,
    (transport, pes): (&str, usize),
    seq: &Outcome,
    par: &Outcome,
) -> anyhow::Result<(Record, DsmRecord)> {
    let (name, label) = match app {
        App::Sor { n, iters } => ("sor", format!("dsm sor {n}x{n} x{iters}")),
        App::Nbody { bodies, steps } => ("nbody", format!("dsm nbody {bodies} x{steps}")),
        App::Water { molecules, steps } => ("water", format!("dsm water {molecules} x{steps}")),
    };
    if par.checksum != seq.checksum {
        anyhow::bail!(
            "{label}: the parallel result differs from the sequential one (checksum {:#x} against {:#x})",
            par.checksum,
            seq.checksum
        );
    }
    let row = Record::new(
        label,
        (transport, pes, threads),
        par.seconds,
        "s",
        Some((seq.seconds, "sequential")),
        Some("matches sequential".into()),
    );
    let record = DsmRecord {
        row: row.clone(),
        app: name.into(),
        threads,
        sequential_seconds: seq.seconds,
        speedup: seq.seconds / par.seconds,
        protocol: par.stats.fields().into_iter().collect(),
    };
    Ok((row, record))
}
