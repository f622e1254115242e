//! `rhizome bench bale KERNEL`: Bale's kernels (`rhizome_kernels::bale`), one record per
//! implementation with its rate in items per second (updates, nonzeros, entries, edges or
//! rows: the kernel's unit); every run's result is checked.

use super::record::{BenchOpts, Record};
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_kernels::bale::{Impl, Kernel, KroneckerStars, Options};

/// A kernel named on the command line: the library's own list and names, so the two
/// cannot drift apart.
#[derive(Clone, Copy, Debug)]
struct KernelArg(Kernel);

impl ValueEnum for KernelArg {
    fn value_variants<'a>() -> &'a [Self] {
        static KERNELS: std::sync::LazyLock<Vec<KernelArg>> =
            std::sync::LazyLock::new(|| Kernel::ALL.map(KernelArg).to_vec());
        &KERNELS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ImplArg {
    /// One-sided operations, one per update.
    Agp,
    /// Conveyors.
    Conveyor,
    /// One-sided operations inside an aggregation context.
    Context,
    /// Actors with mailboxes (selectors).
    Selector,
    /// Every version the kernel has.
    All,
}

#[derive(Args)]
pub struct BaleArgs {
    #[arg(value_enum)]
    kernel: KernelArg,
    /// Which implementation(s) to run.
    #[arg(long = "impl", value_enum, default_value_t = ImplArg::All)]
    imp: ImplArg,
    /// Updates (histogram), requests (index-gather), rows (permute, transpose, toposort)
    /// or entries (randperm) per PE, as Bale's `-n` [default: 1000000; 100000 rows].
    #[arg(short = 'n', long = "updates")]
    updates: Option<usize>,
    /// Table entries per PE, as Bale's `-T`.
    #[arg(short = 'T', long = "table-size", default_value_t = 1000)]
    table: usize,
    /// Nonzeros per row on average (permute, transpose, toposort), as Bale's `-z`.
    #[arg(short = 'z', long = "nonzeros", default_value_t = 10)]
    nonzeros: usize,
    /// The R-MAT graph of `triangles` has 2^SCALE vertices (edge factor 16).
    #[arg(short = 'S', long = "scale", default_value_t = 14)]
    scale: u32,
    /// `triangles` counts Bale's Kronecker product of stars `MODE:S1xS2x...` (as Bale's
    /// `triangle -K`, e.g. 1:3x4x5x6x7) instead of the R-MAT graph.
    #[arg(short = 'K', long = "kronecker", value_parser = parse_kronecker)]
    kronecker: Option<KroneckerStars>,
    /// Items per conveyor buffer, as Bale's `-b` (default: the aggregation buffer size).
    #[arg(short = 'b', long = "buffer")]
    buffer: Option<usize>,
    /// Seed of the random indices, as Bale's `-s`.
    #[arg(short = 's', long = "seed", default_value_t = 122222)]
    seed: u64,
    /// Runs of each implementation (the median rate is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[command(flatten)]
    opts: BenchOpts,
}

/// `--kronecker`'s value, refused with the reason.
fn parse_kronecker(s: &str) -> Result<KroneckerStars, String> {
    s.parse()
}

pub fn run(args: BaleArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    if args.updates == Some(0) || args.table == 0 || args.buffer == Some(0) {
        anyhow::bail!("-n, -T and -b must be at least 1");
    }
    let kernel = args.kernel.0;
    if kernel == Kernel::Triangles && !(1..=28).contains(&args.scale) {
        anyhow::bail!("--scale must be 1 to 28");
    }
    if kernel != Kernel::Triangles && args.kronecker.is_some() {
        anyhow::bail!("--kronecker is an input of triangles only");
    }
    let imps: Vec<Impl> = match args.imp {
        ImplArg::Agp => vec![Impl::Agp],
        ImplArg::Conveyor => vec![Impl::Conveyor],
        ImplArg::Context => vec![Impl::Context],
        ImplArg::Selector => vec![Impl::Selector],
        ImplArg::All => Impl::ALL.to_vec(),
    };
    // `all` means every version the kernel has; one asked for by name must exist.
    let imps: Vec<Impl> = if args.imp == ImplArg::All {
        imps.into_iter()
            .filter(|&i| kernel.supports(i).is_ok())
            .collect()
    } else {
        imps
    };
    for &imp in &imps {
        if let Err(why) = kernel.supports(imp) {
            anyhow::bail!(
                "bale {} has no {} version: {why}",
                kernel.name(),
                imp.name()
            );
        }
    }
    let rows = matches!(
        kernel,
        Kernel::Permute | Kernel::Transpose | Kernel::Toposort
    );
    let opts = Options {
        updates: args
            .updates
            .unwrap_or(if rows { 100_000 } else { 1_000_000 }),
        table: args.table,
        buffer: args.buffer,
        seed: args.seed,
        nonzeros: args.nonzeros,
        scale: args.scale,
        kronecker: args.kronecker,
    };
    let repeat = args.repeat.max(1);
    let pes = args.opts.runtime.pes.unwrap_or(2);
    let results = World::builder()
        .pes(pes)
        .workers(1)
        .run(|ctx| {
            let rows: Result<Vec<(Impl, f64)>, String> = imps
                .iter()
                .map(|&imp| {
                    let mut rates = (0..repeat)
                        .map(|_| kernel.run(ctx, imp, &opts).map(|o| o.rate()))
                        .collect::<Result<Vec<f64>, String>>()?;
                    rates.sort_by(f64::total_cmp);
                    Ok((imp, rates[rates.len() / 2]))
                })
                .collect();
            (ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), rows)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Every PE has the same rows (rates and checks are reduced over all PEs); PE 0 reports.
    let Some((0, transport, pes, rows)) = results.into_iter().next() else {
        return Ok(());
    };
    let records: Vec<Record> = rows
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .map(|(imp, rate)| Record {
            name: format!("bale {} ({})", kernel.name(), imp.name()),
            transport: transport.into(),
            pes,
            workers: 1,
            value: rate,
            unit: kernel.unit().into(),
            baseline: None,
            baseline_name: None,
            result: Some("checked".into()),
        })
        .collect();
    super::record::report(&records, args.opts.json.as_deref())
}
