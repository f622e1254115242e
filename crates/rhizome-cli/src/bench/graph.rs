//! `rhizome bench graph bfs|cc`: Graph500-style BFS and connected components on a
//! Kronecker graph (`rhizome_kernels::graph`), with the flat-combining queue or set,
//! the same structure without combining, and a hand-tuned version; every run checked,
//! rates in MTEPS (seed 003, section 5).

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_kernels::graph::{
    DEFAULT_EDGEFACTOR, DEFAULT_TASKS, DistGraph, Impl, Kronecker, Run, bfs, cc, pick_root,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum KernelArg {
    /// Breadth-first search from a random vertex of degree at least one.
    Bfs,
    /// Connected components.
    Cc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ImplArg {
    Combining,
    None,
    Tuned,
    All,
}

#[derive(Args)]
pub struct GraphArgs {
    /// The kernel.
    #[arg(value_enum)]
    kernel: KernelArg,
    /// log2 of the number of vertices.
    #[arg(long)]
    scale: u32,
    /// Edges per vertex.
    #[arg(long, default_value_t = DEFAULT_EDGEFACTOR)]
    edgefactor: u64,
    /// Implementations: on the combining structure, on the structure without
    /// combining, hand-tuned, or all three (the tuned one is the others' baseline).
    #[arg(
        long = "impl",
        value_enum,
        value_delimiter = ',',
        default_value = "all"
    )]
    impls: Vec<ImplArg>,
    /// Cooperative tasks per PE of the combining and non-combining versions.
    #[arg(long, default_value_t = DEFAULT_TASKS)]
    tasks: usize,
    /// Repetitions (rounds over the implementations in turn, a new BFS root each round;
    /// the median rate is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Seed of the generator (and of the BFS roots).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the generated edges to this file, one `u v` line each (the `.el`
    /// format of gapbs and others, to run a reference code on the same graph).
    #[arg(long, value_name = "FILE")]
    edge_list: Option<PathBuf>,
    /// Without `--pes`, the local transport runs 1, 2 and 4 PEs in turn.
    #[command(flatten)]
    opts: BenchOpts,
}

/// The implementations asked for, in report order, without repeats.
fn impls(args: &[ImplArg]) -> Vec<Impl> {
    let all = args.contains(&ImplArg::All);
    let picked = |a: ImplArg| all || args.contains(&a);
    [
        (ImplArg::Combining, Impl::Combining),
        (ImplArg::None, Impl::None),
        (ImplArg::Tuned, Impl::Tuned),
    ]
    .into_iter()
    .filter(|&(a, _)| picked(a))
    .map(|(_, i)| i)
    .collect()
}

/// Whether this process is rank 0 of an MPI launch, or not launched by one.
fn first_rank() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .find_map(|var| std::env::var(var).ok())
        .is_none_or(|r| r.trim() == "0")
}

/// Writes `g`'s edges to `path`, one `u v` line each.
fn write_edge_list(g: &Kronecker, path: &Path) -> anyhow::Result<()> {
    let fail = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
    for i in 0..g.edges() {
        let (u, v) = g.edge(i);
        writeln!(out, "{u} {v}").map_err(fail)?;
    }
    out.flush().map_err(fail)
}

pub fn run(args: GraphArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    if args.opts.runtime.pes == Some(0) {
        anyhow::bail!("--pes must be at least 1");
    }
    if args.tasks == 0 || args.repeat == 0 {
        anyhow::bail!("--tasks and --repeat must be at least 1");
    }
    let generator = Kronecker::new(args.scale, args.edgefactor, args.seed)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let impls = impls(&args.impls);
    if let Some(path) = &args.edge_list
        && first_rank()
    {
        write_edge_list(&generator, path)?;
    }
    let pe_counts = match (rhizome::launcher_ranks(), args.opts.runtime.pes) {
        (Some(ranks), _) => vec![ranks],
        (None, Some(p)) => vec![p],
        (None, None) => vec![1, 2, 4],
    };
    let kernel = match args.kernel {
        KernelArg::Bfs => "bfs",
        KernelArg::Cc => "cc",
    };
    let mut records = Vec::new();
    for pes in pe_counts {
        let results = World::builder().pes(pes).run(|ctx| -> Result<_, String> {
            let graph = Rc::new(DistGraph::build(ctx, &generator));
            let mut runs: Vec<Vec<(Run, u64)>> = vec![Vec::new(); impls.len()];
            for round in 0..args.repeat {
                let root = pick_root(ctx, &graph, args.seed + round as u64);
                for (k, &imp) in impls.iter().enumerate() {
                    let run = match args.kernel {
                        KernelArg::Bfs => bfs(ctx, &graph, root, imp, args.tasks)?,
                        KernelArg::Cc => cc(ctx, &graph, imp, args.tasks)?,
                    };
                    runs[k].push((run, root));
                }
            }
            let medians: Vec<(Run, u64)> = runs
                .into_iter()
                .map(|mut r| {
                    r.sort_by(|a, b| a.0.mteps().total_cmp(&b.0.mteps()));
                    r[r.len() / 2]
                })
                .collect();
            Ok((ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), medians))
        });
        let Some((transport, pes, medians)) = super::record::pe0_rows(results)? else {
            return Ok(());
        };
        let tuned = impls
            .iter()
            .zip(&medians)
            .find(|(i, _)| **i == Impl::Tuned)
            .map(|(_, r)| r.0.mteps());
        for (&imp, (r, root)) in impls.iter().zip(&medians) {
            let name = format!("graph {kernel} scale {} {}", args.scale, imp.name());
            let baseline = tuned.filter(|_| imp != Impl::Tuned).map(|t| (t, "tuned"));
            let (edges, secs, count) = (r.edges, r.secs, r.count);
            let result = if kernel == "bfs" {
                format!("{edges} edges in {secs:.4} s, root {root} reached {count}")
            } else {
                format!("{edges} edges in {secs:.4} s, components {count}")
            };
            let run = (transport, pes, 1);
            records.push(Record::new(
                name.clone(),
                run,
                r.mteps(),
                "MTEPS",
                baseline,
                Some(result),
            ));
            if let Some(stats) = r.stats {
                records.push(Record::new(
                    format!("{name} ops/msg"),
                    run,
                    stats.ops_per_message(),
                    "ops/msg",
                    None,
                    None,
                ));
            }
        }
    }
    super::record::report(&records, args.opts.json.as_deref())
}
