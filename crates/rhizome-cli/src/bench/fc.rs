//! `rhizome bench fc`: the flat-combining global stack and queue (`rhizome_kernels::fc`)
//! in each combining mode, beside the mode without combining: throughput and operations
//! per message (seed 003, Figures 6 and 7).

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_collections::fc::Mode;
use rhizome_kernels::fc::{Mix, Structure, throughput};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StructureArg {
    Stack,
    Queue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MixArg {
    Push,
    Mixed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    None,
    Centralized,
    Distributed,
}

#[derive(Args)]
pub struct FcArgs {
    /// Structures to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "stack,queue")]
    structures: Vec<StructureArg>,
    /// Operation mixes: all pushes, or half pushes and half pops.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "push,mixed")]
    mixes: Vec<MixArg>,
    /// Combining modes (`none` is measured whenever another mode is, as its baseline).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "centralized,distributed"
    )]
    modes: Vec<ModeArg>,
    /// Cooperative tasks per PE.
    #[arg(long, default_value_t = 1024)]
    tasks: u64,
    /// Operations per PE of a combining mode; `none`, far slower, makes a sixteenth.
    #[arg(long, default_value_t = 1 << 16)]
    ops: u64,
    /// Repetitions of each measurement (the median rate is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Without `--pes`, the local transport runs 1, 2 and 4 PEs in turn.
    #[command(flatten)]
    opts: BenchOpts,
}

pub fn run(args: FcArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    if args.opts.runtime.pes == Some(0) {
        anyhow::bail!("--pes must be at least 1");
    }
    if args.tasks == 0 || args.ops < 16 || args.repeat == 0 {
        anyhow::bail!("--tasks and --repeat must be at least 1, and --ops at least 16");
    }
    let structures: Vec<Structure> = args
        .structures
        .iter()
        .map(|s| match s {
            StructureArg::Stack => Structure::Stack,
            StructureArg::Queue => Structure::Queue,
        })
        .collect();
    let mixes: Vec<Mix> = args
        .mixes
        .iter()
        .map(|m| match m {
            MixArg::Push => Mix::Push,
            MixArg::Mixed => Mix::Mixed,
        })
        .collect();
    let mut modes = vec![Mode::None];
    modes.extend(args.modes.iter().filter_map(|m| match m {
        ModeArg::None => None,
        ModeArg::Centralized => Some(Mode::Centralized),
        ModeArg::Distributed => Some(Mode::Distributed),
    }));
    // Under mpirun the ranks are the PEs: one world, whatever --pes says.
    let pe_counts = match (rhizome::launcher_ranks(), args.opts.runtime.pes) {
        (Some(ranks), _) => vec![ranks],
        (None, Some(p)) => vec![p],
        (None, None) => vec![1, 2, 4],
    };
    let mut records = Vec::new();
    for pes in pe_counts {
        let results = World::builder()
            .pes(pes)
            .run(|ctx| -> Result<_, String> {
                let mut rows = Vec::new();
                for &s in &structures {
                    for &mix in &mixes {
                        for &mode in &modes {
                            let ops = if mode == Mode::None {
                                args.ops / 16
                            } else {
                                args.ops
                            };
                            rows.push((
                                s,
                                mix,
                                mode,
                                throughput(ctx, s, mode, mix, args.tasks, ops)?,
                            ));
                        }
                    }
                }
                Ok((ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), rows))
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(first) = results.into_iter().next() else {
            continue;
        };
        let (me, transport, pes, rows) = first.map_err(|e| anyhow::anyhow!("{e}"))?;
        if me != 0 {
            return Ok(());
        }
        let mut none = (0.0, 0.0);
        for (s, mix, mode, t) in rows {
            let name = format!("fc {} {} {}", s.name(), mix.name(), mode.name());
            let (rate, per_message) = (t.rate() / 1e6, t.stats.ops_per_message());
            if mode == Mode::None {
                none = (rate, per_message);
            }
            let baseline = |b: f64| (mode != Mode::None).then_some((b, "none"));
            let run = (transport, pes, 1);
            let result = Some(format!("{} ops in {:.3} s", t.ops, t.secs));
            records.push(Record::new(
                name.clone(),
                run,
                rate,
                "Mops/s",
                baseline(none.0),
                result,
            ));
            records.push(Record::new(
                format!("{name} ops/msg"),
                run,
                per_message,
                "ops/msg",
                baseline(none.1),
                None,
            ));
        }
    }
    super::record::report(&records, args.opts.json.as_deref())
}
