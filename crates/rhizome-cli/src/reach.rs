//! `rhizome reach`: symbolic reachability on a model file or a built-in model.

use crate::RuntimeOpts;
use anyhow::{Context, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rhizome_bdd::{Config, Manager};
use rhizome_mc::builtin;
use rhizome_mc::model::Model;
use rhizome_mc::model_file::{self, Format};
use rhizome_mc::reach::{ReachOptions, Strategy, reach};
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The model a bare `rhizome reach` explores: small enough for seconds, big enough to be
/// symbolic work (3,145,168,096,065,837,266,706,434 states, about 3 x 10^24).
const DEFAULT_BUILTIN: &str = "philosophers:64";

#[derive(Args)]
pub struct ReachArgs {
    /// Model file (formats of ../shared/formats/bdd-model-files.md: LTSmin/Sylvan `.bdd`).
    /// Without it, a built-in model is explored (see --builtin).
    model: Option<PathBuf>,
    /// Built-in model to explore instead of a file: philosophers:N (N >= 2).
    #[arg(long, conflicts_with = "model", value_name = "SPEC")]
    builtin: Option<String>,
    /// Exploration strategy: sat (the default, as in Sylvan's bddmc: saturation keeps
    /// the intermediate BDDs small, often by orders of magnitude), bfs, chaining or par.
    #[arg(long, short, default_value = "sat", value_parser = parse_strategy)]
    strategy: Strategy,
    /// Count deadlock states and print one.
    #[arg(long)]
    deadlocks: bool,
    /// Print the node count of the visited set after every level.
    #[arg(long)]
    count_nodes: bool,
    /// Write the report as a JSON object to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Memory for the BDD node table and cache, e.g. 512M, 8G (default: half the RAM, at
    /// most 16G). Exceeding it stops the run with an error.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    memory: Option<usize>,
    /// Model file format (a: thesis-2014 `-rgs.bdd`, b: ltsmin-2017); detected if absent.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Also write the model in format B to this file (e.g. to export a built-in model).
    #[arg(long, value_name = "FILE")]
    write_model: Option<PathBuf>,
    /// Progress display on stderr: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    progress: String,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse()
}

fn parse_format(s: &str) -> Result<Format, String> {
    match s.to_ascii_lowercase().as_str() {
        "a" => Ok(Format::A),
        "b" => Ok(Format::B),
        _ => Err(format!("unknown format `{s}` (expected a or b)")),
    }
}

/// Parses `123`, `64K`, `512M`, `8G`, `1T` (binary multiples).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        // A trailing letter is a unit only after a number: `garbage` is not `garbag` in
        // an unknown unit `e`.
        Some((i, c)) if c.is_ascii_alphabetic() && t[..i].trim().parse::<f64>().is_ok() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("size `{s}`: unknown unit `{c}` (use K, M, G or T)")),
            };
            (t[..i].trim(), m)
        }
        _ => (t, 1),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("size `{s}` is not a number with an optional K/M/G/T unit"))?;
    if n.is_nan() || n <= 0.0 || !n.is_finite() {
        return Err(format!("size `{s}` must be positive"));
    }
    Ok((n * mult as f64) as usize)
}

fn physical_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<usize>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}

/// Peak resident memory of this process so far (VmHWM), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn human_bytes(b: u64) -> String {
    let mut v = b as f64;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if v < 1024.0 {
            return format!("{v:.1} {unit}");
        }
        v /= 1024.0;
    }
    format!("{v:.1} TiB")
}

pub fn run(args: ReachArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        crate::bench::record::probe_writable(path)?;
    }
    if let Some(p) = args.runtime.pes
        && p != 1
    {
        bail!("--pes {p}: reach runs on a single PE (distributed reachability is not built yet)");
    }
    if let Some(n) = rhizome::launcher_ranks()
        && n > 1
    {
        // Every rank would explore the whole model and report it again.
        bail!(
            "started as {n} MPI ranks: reach runs on a single PE (distributed reachability is not built yet); use mpirun -np 1 or no mpirun"
        );
    }
    let workers = match args.runtime.workers {
        Some(0) => bail!("--workers must be at least 1"),
        Some(w) => w,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let memory = args
        .memory
        .unwrap_or_else(|| (physical_memory() / 2).min(16 << 30));
    let mut defaults = Config::default();
    // Tuning knobs for experiments, deliberately not command-line options.
    if let Some(r) = std::env::var("RHIZOME_CACHE_RATIO")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        defaults.cache_ratio = r;
    }
    if let Some(n) = std::env::var("RHIZOME_INITIAL_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        defaults.initial_nodes = n;
    }
    if let Some(g) = std::env::var("RHIZOME_GROW")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        defaults.grow_threshold = g;
    }
    let max_nodes = Config::max_nodes_for_bytes(memory, defaults.cache_ratio);
    if max_nodes < 1 << 12 {
        bail!("--memory {memory}: too small for a BDD table (need at least 1M)");
    }
    let mut m = Manager::with_config(Config {
        workers,
        max_nodes,
        initial_nodes: defaults.initial_nodes.min(max_nodes),
        ..defaults
    });

    let load_start = Instant::now();
    let model = match &args.model {
        Some(path) => {
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read model file {}", path.display()))?;
            let stored = model_file::parse_model(&bytes, &path.display().to_string(), args.format)?;
            let name = path.display().to_string();
            Model::from_stored(&mut m, name, &stored)
                .with_context(|| format!("{}: loading the BDDs", path.display()))?
        }
        None => {
            let spec = args.builtin.as_deref().unwrap_or(DEFAULT_BUILTIN);
            builtin::build(&mut m, spec)?
        }
    };
    let load_seconds = load_start.elapsed().as_secs_f64();
    if let Some(out) = &args.write_model {
        let bytes = model_file::write_format_b(&model.to_stored(&m));
        std::fs::write(out, bytes).with_context(|| format!("writing {}", out.display()))?;
    }

    let show = match args.progress.as_str() {
        "always" => true,
        "never" => false,
        _ => std::io::stderr().is_terminal(),
    };
    let bar = if show {
        let b = ProgressBar::new_spinner();
        b.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        b.enable_steady_tick(Duration::from_millis(200));
        Some(b)
    } else {
        None
    };
    let opts = ReachOptions {
        deadlocks: args.deadlocks,
        count_nodes: args.count_nodes,
    };
    let count_nodes = args.count_nodes;
    let mut last_draw = Instant::now() - Duration::from_secs(1);
    let state_vars = model.state_vars.clone();
    let report = reach(&mut m, &model, args.strategy, &opts, &mut |m, p| {
        if count_nodes {
            let nodes = m.node_count(p.visited);
            let line = format!("level {:>6}: {:>10} nodes", p.level, nodes);
            match &bar {
                Some(b) => b.println(line),
                None => eprintln!("{line}"),
            }
        }
        if let Some(b) = &bar
            && last_draw.elapsed() > Duration::from_millis(100)
        {
            last_draw = Instant::now();
            let states = m.satcount_approx(p.visited, &state_vars);
            b.set_message(format!(
                "level {}  states ≈ {:.4e}  table {:.0}% of {}  {:.1} s",
                p.level,
                states,
                100.0 * p.table_used as f64 / p.table_size as f64,
                p.table_size,
                p.elapsed
            ));
        }
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let peak = peak_rss_bytes();

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
        "strategy   {} ({} worker{}{substitute})",
        report.strategy,
        workers,
        if workers == 1 { "" } else { "s" }
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
    }
    println!(
        "time       {:.3} s (loading {:.3} s)",
        report.seconds, load_seconds
    );
    if let Some(p) = peak {
        println!("peak RSS   {}", human_bytes(p));
    }
    if let Some(path) = &args.json {
        let stats = m.stats();
        let mut obj = json!({
            "model": model.name,
            "strategy": report.strategy.name(),
            "requested_strategy": args.strategy.name(),
            "workers": workers,
            "states": report.states.to_string(),
            "levels": report.levels,
            "nodes": report.nodes,
            "seconds": report.seconds,
            "load_seconds": load_seconds,
            "peak_rss_bytes": peak,
            "collections": stats.collections,
            "table_size": stats.table_size,
        });
        if let Some(d) = &report.deadlocks {
            obj["deadlocks"] = json!(d.count.to_string());
            obj["deadlock_example"] = json!(d.example);
        }
        if count_nodes {
            obj["level_nodes"] = json!(report.level_nodes);
        }
        let text = serde_json::to_string_pretty(&obj)? + "\n";
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
