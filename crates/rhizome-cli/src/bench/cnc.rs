//! `rhizome bench cnc`: the Concurrent Collections applications of `rhizome-cnc`, tiled
//! Cholesky and the Smith-Waterman wavefront, results checked on every run, on 1 and 2
//! PEs in alternation (the median of `--repeat` runs each); the 1-PE rate is the
//! baseline, so the ratio column is the speedup.

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_cnc::examples::{cholesky, smith_waterman};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum App {
    Cholesky,
    SmithWaterman,
}

#[derive(Args)]
pub struct CncArgs {
    /// The application.
    #[arg(value_enum)]
    app: App,
    /// Cholesky: tiles per side.
    #[arg(long, default_value_t = 12)]
    tiles: usize,
    /// Tile side (Cholesky: doubles; Smith-Waterman: letters).
    #[arg(long, default_value_t = 128)]
    tile: usize,
    /// Smith-Waterman: length of both sequences.
    #[arg(long, default_value_t = 8192)]
    length: usize,
    /// Runs per PE count (the median is reported), alternating between the PE counts.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Without `--pes`, the local transport runs 1 and 2 PEs; `--workers` defaults to 1.
    #[command(flatten)]
    opts: BenchOpts,
}

/// One checked run: (this PE, seconds, result).
fn once(app: App, a: &CncArgs, pes: usize, workers: usize) -> anyhow::Result<(usize, f64, String)> {
    let out = World::builder()
        .pes(pes)
        .workers(workers)
        .run(|ctx| {
            let me = ctx.my_pe();
            match app {
                App::Cholesky => cholesky::run(ctx, a.tiles, a.tile).map(|o| {
                    (
                        me,
                        o.seconds,
                        format!("n {} residual {:.1e}", o.n, o.residual),
                    )
                }),
                App::SmithWaterman => smith_waterman::run(ctx, a.length, a.length, a.tile)
                    .map(|o| (me, o.seconds, format!("best score {}", o.best))),
            }
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let first = out.into_iter().next().expect("at least one PE");
    first.map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn run(args: CncArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    if args.opts.runtime.pes == Some(0) || args.opts.runtime.workers == Some(0) {
        anyhow::bail!("--pes and --workers must be at least 1");
    }
    if args.tiles == 0 || args.tile == 0 || args.length == 0 || args.repeat == 0 {
        anyhow::bail!("--tiles, --tile, --length and --repeat must be at least 1");
    }
    let workers = args.opts.runtime.workers.unwrap_or(1);
    let (name, work, unit) = match args.app {
        App::Cholesky => {
            let n = (args.tiles * args.tile) as f64;
            ("cnc cholesky", n * n * n / 3.0 / 1e9, "Gflop/s")
        }
        App::SmithWaterman => {
            let n = args.length as f64;
            ("cnc smith-waterman", n * n / 1e6, "Mcells/s")
        }
    };
    // Under mpirun the ranks are the PEs: one world, whatever --pes says.
    let launched = rhizome::launcher_ranks();
    let pe_counts = match (launched, args.opts.runtime.pes) {
        (Some(ranks), _) => vec![ranks],
        (None, Some(p)) => vec![p],
        (None, None) => vec![1, 2],
    };
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); pe_counts.len()];
    let mut results = vec![String::new(); pe_counts.len()];
    let mut me = 0;
    for _ in 0..args.repeat {
        for (i, &pes) in pe_counts.iter().enumerate() {
            let (pe, secs, result) = once(args.app, &args, pes, workers)?;
            me = pe;
            times[i].push(secs);
            results[i] = result;
        }
    }
    let transport = if launched.is_some() { "mpi" } else { "local" };
    let mut records = Vec::new();
    let mut base = None;
    for ((&pes, mut t), result) in pe_counts.iter().zip(times).zip(results) {
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        let rate = work / median;
        records.push(Record::new(
            name.to_string(),
            (transport, pes, workers),
            rate,
            unit,
            base.map(|b| (b, "1 PE")),
            Some(format!("{result}, median {median:.3} s of {}", args.repeat)),
        ));
        if pes == 1 {
            base = Some(rate);
        }
    }
    // Under mpirun only rank 0 prints.
    if me != 0 {
        return Ok(());
    }
    super::record::report(&records, args.opts.json.as_deref())
}
