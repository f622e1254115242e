//! `rhizome reach`: symbolic reachability on a model file or a built-in model.

use crate::RuntimeOpts;
use crate::output::{self, Replaceable, ReportToStdout};
use crate::progress::{Display, LevelLines};
use anyhow::{Context, bail};
use clap::Args;
use rhizome_bdd::{BddError, Config, Manager, NodeStore, OpCache};
use rhizome_mc::builtin;
use rhizome_mc::model::Model;
use rhizome_mc::model_file::{self, Format};
use rhizome_mc::reach::{
    Incomplete, Progress, ReachOptions, SlicedError, SlicedOutcome, Strategy, Watch, reach,
    reach_sliced,
};
use rhizome_mc::relations;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

mod mem_log;
mod pes;
mod pss;
mod report;
mod sizes;
mod sliced;

use report::{RunInfo, remote_ops_line, write_json};
pub use sizes::{human_bytes, parse_size, process_status_bytes};
use sizes::{peak_rss_bytes, physical_memory, short_nodes, size_text};

/// The model a bare `rhizome reach` explores: small enough for seconds, big enough to be
/// symbolic work (3,145,168,096,065,837,266,706,434 states, about 3 x 10^24).
const DEFAULT_BUILTIN: &str = "philosophers:64";

#[derive(Args)]
pub struct ReachArgs {
    /// Model file: an LTSmin/Sylvan BDD model (`.bdd`, format A of the thesis-2014 files,
    /// format B of Sylvan's `bddmc` or format C of Sylvan 1.x `mc` (the SPIN 2017 set),
    /// detected from the content; the repository's `docs/` describes them). A file that
    /// stores its reachable states (format C) has every run checked against them: the
    /// summary's `check` line, and an error if they differ. Without it, a built-in model is explored (see --builtin).
    model: Option<PathBuf>,
    /// Built-in model to explore instead of a file: philosophers:N (N >= 2; `philosophers`
    /// alone is philosophers:64, also the default without a model file).
    #[arg(long, conflicts_with = "model", value_name = "SPEC")]
    builtin: Option<String>,
    /// Exploration strategy: sat (the default, as in Sylvan's bddmc: saturation keeps
    /// the intermediate BDDs small, often by orders of magnitude), bfs, chaining or par.
    #[arg(long, short, default_value = "sat", value_parser = parse_strategy)]
    strategy: Strategy,
    /// Count deadlock states and print one (bddmc's --deadlocks).
    #[arg(long, short = 'd')]
    deadlocks: bool,
    /// Merge all transition groups into one relation before exploring, as bddmc does: each
    /// group's relation is extended with x = x' on the state bits it leaves alone, and the
    /// results are joined. Same states, one (larger) image per step. Default: off.
    #[arg(long)]
    merge_relations: bool,
    /// Print the dependency matrix before exploring, one row per group and one character
    /// per state integer, as bddmc does: `-` untouched, `r` read, `w` written, `+` both;
    /// in file order, or for sat and chaining sorted by first integer as bddmc sorts them. Format A and built-in models store only which integers a group
    /// touches: those show as `+`. Default: off.
    #[arg(long)]
    print_matrix: bool,
    /// Write the report as a JSON object to FILE, or to stdout with `-` (the human summary
    /// then goes to stderr). An existing FILE is replaced only if it is an earlier rhizome
    /// report (or with --force); a model file is never replaced. Default: no report.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Memory for the BDD node table and cache, e.g. 512M, 8G (default: half the RAM, at
    /// most 16G). Address space is reserved, memory is used only as the table grows.
    /// Exceeding it stops the run with an error. On several PEs (--pes, mpirun) the limit
    /// is per PE: each holds a partition of that size (default 8M nodes), made at start.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    memory: Option<usize>,
    /// Model file format (a: thesis-2014 `-rgs.bdd`, b: ltsmin-2017, c: spin17-beem);
    /// detected if absent.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Also write the model in format B to this file (e.g. to export a built-in model).
    /// Never over the model read; an existing file only if it is an earlier export of
    /// rhizome (or with --force).
    #[arg(long, value_name = "FILE")]
    write_model: Option<PathBuf>,
    /// Replace an existing --json or --write-model file whatever it holds (never the model
    /// being read).
    #[arg(long)]
    force: bool,
    /// Progress display on stderr: auto (on a terminal), always, never. On a terminal one
    /// line redrawn in place; to a file or pipe (always), one plain line per level, every
    /// 5 s for saturation.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    progress: String,
    // Per-level output and traces (Sylvan bddmc's --count-* flags). Level lines go to
    // stdout with the report they belong to; progress and errors go to stderr.
    /// Print the states visited after every level (on stdout, as bddmc does).
    #[arg(long)]
    count_states: bool,
    /// Print the node count of the visited set after every level (on stdout).
    #[arg(long)]
    count_nodes: bool,
    /// Print the node table's fill after every level (on stdout).
    #[arg(long)]
    count_table: bool,
    /// With --deadlocks: print a shortest path from an initial state to the deadlock
    /// example, one state vector a line with the transition group taken.
    #[arg(long, requires = "deadlocks")]
    trace: bool,
    /// On several PEs (--pes, mpirun): how the work is divided. `states`: the reachable
    /// states are sliced over the PEs by the values of log2(N) split variables, each PE
    /// explores its slice with a one-PE BDD manager of its own and sends the states it
    /// finds in other slices to their owners once a level (sat: between the rounds of
    /// saturating its slice; N a power of two, without --count-nodes). `table`: one node
    /// table spread over the PEs, PE 0 driving any strategy. `auto` (the default): states
    /// where they run, else table. Ignored on one PE.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    split: sliced::SplitMode,
    /// With sliced states on N PEs: the split variables, most significant first (log2(N)
    /// of them, comma-separated BDD variable numbers of state variables, as the summary's
    /// `slices` line names them), instead of the ones a rule picks from the states
    /// visited before the split. The variable can change the work several times over
    /// (collision.5 `sat` on 2 PEs: 1.1 s with 4, 2.0 s with the rule's 12);
    /// `scripts/split-scan.sh` times every candidate. Ignored on one PE.
    #[arg(long, value_delimiter = ',', value_name = "VARS")]
    split_vars: Option<Vec<u32>>,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

/// `reach`'s help: what `--pes` and mpirun do.
pub const REACH_AFTER_HELP: &str = "\
--pes N (or mpirun -np N, one PE per rank): with --split states (the default on a power of
two of PEs) every PE explores its slice of the states with its own node table and --workers
threads, the slices exchanged once a level (sat: as the saturation finds them); with --split table (the
default otherwise) the BDD node table is spread over N processing elements, each holding a partition
of --memory (default 192M, 8M nodes, per PE on several PEs), and PE 0 runs the exploration.
PE 0 prints the one report. The answers are those of one PE.

Short flags and long options of Sylvan's bddmc mean the same here: -w/--workers,
-s/--strategy, -d/--deadlocks, --count-nodes, --merge-relations, --print-matrix.";

/// Where the report and the exported model go, checked before any work is done.
struct Outputs {
    /// `--json -`: the report's stdout, fd 1 pointing at stderr meanwhile.
    report_to_stdout: Option<ReportToStdout>,
}

/// Refuses every output that would destroy an input or a file the user did not mean to
/// replace (see [`crate::output::check_output`]), before the model is even read.
fn check_outputs(args: &ReachArgs) -> anyhow::Result<Outputs> {
    let inputs: Vec<&Path> = args.model.iter().map(|p| p.as_path()).collect();
    let mut report_to_stdout = None;
    if let Some(path) = &args.json {
        if output::is_stdout(path) {
            report_to_stdout = Some(ReportToStdout::divert()?);
        } else {
            if args.model.is_none() && args.builtin.is_none() && output::looks_like_model(path) {
                bail!(
                    "--json {p}: no model was named, and {p} looks like a model file, not a report; to explore it: rhizome reach {p} --json report.json (or --json - for stdout)",
                    p = path.display()
                );
            }
            output::check_output(
                "--json",
                path,
                Replaceable::Report,
                &inputs,
                Some(args.force),
            )?;
            crate::bench::record::probe_writable(path)?;
        }
    }
    if let Some(path) = &args.write_model {
        output::check_output(
            "--write-model",
            path,
            Replaceable::Model,
            &inputs,
            Some(args.force),
        )?;
        crate::bench::record::probe_writable(path)?;
    }
    Ok(Outputs { report_to_stdout })
}

/// `--print-matrix` and `--merge-relations`, on the loaded model.
fn bddmc_views<S: NodeStore, C: OpCache>(
    args: &ReachArgs,
    m: &mut Manager<S, C>,
    model: Model,
    show: bool,
) -> anyhow::Result<Model> {
    if args.print_matrix && show {
        let read_write = match &args.model {
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("cannot read model file {}", path.display()))?;
                model_file::read_write_projections(
                    &bytes,
                    &path.display().to_string(),
                    args.format,
                )?
            }
            None => None,
        };
        for row in relations::dependency_matrix(
            &model,
            read_write.as_deref(),
            matches!(args.strategy, Strategy::Sat | Strategy::Chaining),
        ) {
            println!("{row}");
        }
    }
    if !args.merge_relations {
        return Ok(model);
    }
    relations::merge_relations(m, model).map_err(|e| anyhow::anyhow!("--merge-relations: {e}"))
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse()
}

fn parse_format(s: &str) -> Result<Format, String> {
    match s.to_ascii_lowercase().as_str() {
        "a" => Ok(Format::A),
        "b" => Ok(Format::B),
        "c" => Ok(Format::C),
        _ => Err(format!("unknown format `{s}` (expected a, b or c)")),
    }
}

pub fn run(args: ReachArgs) -> anyhow::Result<()> {
    args.runtime.check_bounds()?;
    let outputs = check_outputs(&args)?;
    let workers = match args.runtime.workers {
        Some(0) => bail!("--workers must be at least 1"),
        Some(w) => w,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if args.runtime.pes == Some(0) {
        bail!("--pes must be at least 1");
    }
    let memory = args
        .memory
        .unwrap_or_else(|| (physical_memory() / 2).min(16 << 30));
    let mut defaults = Config::default();
    if let Some(r) = tuning_knob("RHIZOME_CACHE_RATIO") {
        defaults.cache_ratio = r;
    }
    if let Some(n) = tuning_knob("RHIZOME_INITIAL_NODES") {
        defaults.initial_nodes = n;
    }
    if let Some(g) = tuning_knob("RHIZOME_GROW") {
        defaults.grow_threshold = g;
    }
    if let Some(n) = tuning_knob("RHIZOME_GROW_ON_FULL_BELOW") {
        defaults.grow_on_full_below = n;
    }
    let max_nodes = Config::max_nodes_for_bytes(memory, defaults.cache_ratio);
    if max_nodes < 1 << 12 {
        bail!("--memory {memory}: too small for a BDD table (need at least 1M)");
    }
    // The tables reserve their largest size up front and commit as they grow; a limit the
    // address space cannot hold is refused now rather than by an abort in the allocator.
    rhizome_bdd::check_address_space(Config::bytes_for(max_nodes, defaults.cache_ratio))
        .map_err(|e| anyhow::anyhow!("--memory {}: {e}", human_bytes(memory as u64)))?;
    let config = Config {
        workers,
        max_nodes,
        initial_nodes: defaults.initial_nodes.min(max_nodes),
        ..defaults
    };
    pes::run(&args, config, memory, outputs)
}

/// Reads the model of `args` (a file or a built-in one) into `m`, with
/// `--merge-relations` (and `--print-matrix` where `show` is true); returns it and the
/// seconds it took.
fn load_model<S: NodeStore, C: OpCache>(
    args: &ReachArgs,
    m: &mut Manager<S, C>,
    show: bool,
) -> anyhow::Result<(Model, f64)> {
    let load_start = Instant::now();
    let model = match &args.model {
        Some(path) => {
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read model file {}", path.display()))?;
            let stored = model_file::parse_model(&bytes, &path.display().to_string(), args.format)?;
            let name = path.display().to_string();
            Model::from_stored(m, name, &stored)
                .with_context(|| format!("{}: loading the BDDs", path.display()))?
        }
        None => {
            let spec = args.builtin.as_deref().unwrap_or(DEFAULT_BUILTIN);
            builtin::build(m, spec)?
        }
    };
    let model = bddmc_views(args, m, model, show)?;
    Ok((model, load_start.elapsed().as_secs_f64()))
}

/// Loads the model into `m`, explores it and reports (PE 0's part of a run; in a sliced
/// run the other PEs run [`sliced::follow`]).
fn drive<S: NodeStore, C: OpCache>(
    args: &ReachArgs,
    mut m: Manager<S, C>,
    memory: usize,
    outputs: &Mutex<Outputs>,
    peaks: &pes::Peaks<'_>,
) -> anyhow::Result<()> {
    let m = &mut m;
    let (model, load_seconds) = load_model(args, m, true)?;
    if let Some(out) = &args.write_model {
        let bytes = model_file::write_format_b(&model.to_stored(m));
        std::fs::write(out, bytes).with_context(|| format!("writing {}", out.display()))?;
    }

    let mut outputs = outputs.lock().unwrap_or_else(|e| e.into_inner());
    explore(args, m, &model, memory, load_seconds, &mut outputs, peaks)
}

/// Runs the exploration with its display, prints the summary and writes the report.
fn explore<S: NodeStore, C: OpCache>(
    args: &ReachArgs,
    m: &mut Manager<S, C>,
    model: &Model,
    memory: usize,
    load_seconds: f64,
    outputs: &mut Outputs,
    peaks: &pes::Peaks<'_>,
) -> anyhow::Result<()> {
    let workers = m.workers();
    let sliced = peaks.sliced();
    let show = match args.progress.as_str() {
        "always" => true,
        "never" => false,
        _ => std::io::stderr().is_terminal(),
    };
    let watch = Arc::new(Watch::default());
    let lines = LevelLines {
        states: args.count_states,
        nodes: args.count_nodes,
        table: args.count_table,
    };
    let display = Display::new(
        show,
        std::io::stderr().is_terminal(),
        args.strategy,
        watch.clone(),
        lines,
    );
    let opts = ReachOptions {
        deadlocks: args.deadlocks,
        trace: args.trace,
        count_nodes: args.count_nodes,
        watch: Some(watch),
    };
    // On several PEs, the exploration's operations spread over the PEs' workers.
    let mut mem_log = mem_log::MemLog::open(0);
    let mut progress = |m: &Manager<S, C>, p: &Progress<'_>| {
        mem_log.level(m, p);
        display.level(m, p)
    };
    let outcome = peaks.explore(|| match sliced {
        None => Ok(reach(m, model, args.strategy, &opts, &mut progress).map(|r| (r, None))),
        Some(ctx) => {
            let slicing = sliced::slice_options(args);
            match reach_sliced(ctx, m, model, args.strategy, &opts, &slicing, &mut progress) {
                Ok(SlicedOutcome {
                    report: Some(r),
                    slices,
                }) => Ok(Ok((r, Some(slices)))),
                Ok(SlicedOutcome { report: None, .. }) => {
                    Err(anyhow::anyhow!("PE 0 got no report"))
                }
                Err(SlicedError::Incomplete(i)) => Ok(Err(*i)),
                Err(e) => Err(e.into()),
            }
        }
    });
    display.finish();
    let outcome = outcome?;
    peaks.set_jobs(m.spread_jobs());
    peaks.set_cache(m.op_cache().stats());
    let per_pe = peaks.gather();
    let mut run = RunInfo {
        split: sliced::SplitMode::ran(sliced.is_some()),
        slices: None,
        workers,
        pes: peaks.pes(),
        transport: peaks.transport(),
        load_seconds,
        peak: peak_rss_bytes(),
        peaks: per_pe.rss,
        pss: per_pe.pss,
        jobs: per_pe.jobs,
        cache: per_pe.cache,
        remote_ops: per_pe.remote_ops,
    };
    let report = match outcome {
        Ok((report, slices)) => {
            run.slices = slices;
            report
        }
        Err(Incomplete {
            error,
            level,
            partial,
        }) => {
            // What was found so far is kept: the report says it is incomplete.
            if let Some(path) = &args.json {
                write_json(path, args, m, model, &partial, &run, outputs)?;
            }
            let BddError::OutOfNodes { live, capacity } = error;
            bail!(
                "out of BDD nodes at level {level}: {} live nodes fill the table of {} nodes (--memory {}); raise --memory",
                short_nodes(live),
                short_nodes(capacity),
                size_text(memory)
            );
        }
    };

    println!("model      {}", model.name);
    let substitute = if report.strategy == args.strategy {
        String::new()
    } else {
        format!(
            ", instead of {}: the model's next-state variables are not interleaved with its current ones",
            args.strategy
        )
    };
    println!(
        "strategy   {} ({} worker{}{}{substitute})",
        report.strategy,
        workers,
        if workers == 1 { "" } else { "s" },
        if run.pes > 1 && run.split == sliced::SplitMode::States {
            format!(", states sliced over {} PEs ({})", run.pes, run.transport)
        } else if run.pes > 1 {
            format!(", node table over {} PEs ({})", run.pes, run.transport)
        } else {
            String::new()
        }
    );
    println!("states     {}", report.states);
    match report.levels {
        Some(l) => println!("levels     {l}"),
        None => println!("levels     - (saturation has no levels)"),
    }
    println!("nodes      {}", report.nodes);
    if let Some(d) = &report.deadlocks {
        match &d.example {
            Some(ex) => println!("deadlocks  {} (one: {:?})", d.count, ex),
            None => println!("deadlocks  0"),
        }
        if let Some(trace) = &d.trace {
            println!(
                "trace      {} steps from an initial state to the deadlock above",
                trace.len() - 1
            );
            for (i, step) in trace.iter().enumerate() {
                let how = match step.group {
                    None => "initial".to_string(),
                    Some(g) => format!("group {g}"),
                };
                println!("  {i:>4}  {how:<10} {:?}", step.state);
            }
        }
    }
    if let Some(check) = &report.stored_check {
        println!("check      {check}");
    }
    println!(
        "time       {:.3} s (loading {:.3} s)",
        report.seconds, load_seconds
    );
    if let Some(line) = run.peak_line() {
        println!("peak RSS   {line}");
    }
    if let Some(line) = run.pss_line() {
        println!("peak PSS   {line}");
    }
    if let Some(s) = &run.slices {
        println!("slices     {}", sliced::slices_line(s));
    }
    if run.pes > 1 && run.split == sliced::SplitMode::Table {
        let each: Vec<String> = run
            .jobs
            .iter()
            .map(|j| j.map_or("?".into(), |j| j.to_string()))
            .collect();
        println!(
            "jobs       {} (sub-operations run, per PE)",
            each.join(", ")
        );
    }
    if let Some(line) = remote_ops_line(&run.remote_ops) {
        println!("remote ops {line}");
    }
    if let Some(path) = &args.json {
        write_json(path, args, m, model, &report, &run, outputs)?;
    }
    match &report.stored_check {
        Some(check) if !check.matches() => bail!("{}: the exploration {check}", model.name),
        _ => Ok(()),
    }
}

/// A tuning knob for experiments, read from the environment variable `name`: deliberately
/// not a command-line option. Unset or unparsable leaves the default.
fn tuning_knob<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
