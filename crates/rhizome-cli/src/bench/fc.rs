//! `rhizome bench fc`: the flat-combining global stack, queue, set and map
//! (`rhizome_kernels::fc`) in each combining mode, beside the mode without combining:
//! throughput and operations per message (seed 003, Figures 6 to 8).

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome_collections::fc::Mode;
use rhizome_kernels::fc::{Mix, Structure, Workload, throughput};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StructureArg {
    Stack,
    Queue,
    Set,
    Map,
}

impl StructureArg {
    fn kernel(self) -> Structure {
        [
            Structure::Stack,
            Structure::Queue,
            Structure::Set,
            Structure::Map,
        ][self as usize]
    }
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
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "stack,queue,set,map"
    )]
    structures: Vec<StructureArg>,
    /// Key ranges of the set and map, as powers of two.
    #[arg(long, value_delimiter = ',', default_value = "10,14")]
    key_bits: Vec<u32>,
    /// Operation mixes: all pushes (inserts), or half pushes and half pops (inserts and
    /// lookups).
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
    /// Cooperative tasks per PE. The paper's 2048, twice the combining buffer (1024
    /// operations, or keys of a set or map): so a set's or map's proxy fills up, and
    /// how many operations a commit carries shows how many repeated keys combined.
    #[arg(long, default_value_t = 2048)]
    tasks: u64,
    /// Operations per PE of a combining mode; `none` on a stack or queue, far slower,
    /// makes a sixteenth.
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
    if let Some(b) = args.key_bits.iter().find(|&&b| b == 0 || b > 24) {
        anyhow::bail!("--key-bits must be between 1 and 24, not {b}");
    }
    let structures: Vec<Structure> = args.structures.iter().map(|s| s.kernel()).collect();
    let mixes = args.mixes.iter().map(|&m| {
        if m == MixArg::Push {
            Mix::Push
        } else {
            Mix::Mixed
        }
    });
    let mixes: Vec<Mix> = mixes.collect();
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
        let results = World::builder().pes(pes).run(|ctx| -> Result<_, String> {
            let mut rows = Vec::new();
            for &s in &structures {
                let keyed = matches!(s, Structure::Set | Structure::Map);
                let ranges = if keyed { &args.key_bits[..] } else { &[0][..] };
                for (&mix, &key_bits) in mixes
                    .iter()
                    .flat_map(|m| ranges.iter().map(move |k| (m, k)))
                {
                    for &mode in &modes {
                        let ops = if mode == Mode::None && !keyed {
                            args.ops / 16
                        } else {
                            args.ops
                        };
                        let w = Workload {
                            mix,
                            tasks: args.tasks,
                            ops,
                            key_bits,
                        };
                        let mut runs = (0..args.repeat)
                            .map(|_| throughput(ctx, s, mode, w))
                            .collect::<Result<Vec<_>, _>>()?;
                        runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
                        rows.push((s, mix, key_bits, mode, runs[runs.len() / 2]));
                    }
                }
            }
            Ok((ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), rows))
        });
        let Some((transport, pes, rows)) = super::record::pe0_rows(results)? else {
            return Ok(());
        };
        let mut none = (0.0, 0.0);
        for (s, mix, key_bits, mode, t) in rows {
            let keys = if key_bits > 0 {
                format!(" 2^{key_bits}")
            } else {
                String::new()
            };
            let name = format!("fc {} {}{keys} {}", s.name(), mix.name(s), mode.name());
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
