//! `rhizome`: run symbolic reachability, benchmarks and diagnostics.

use clap::{Args, CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod info;
mod output;
mod plot;
mod progress;
mod reach;

const EXIT_CODES: &str = "\
Exit status:
  0    success
  1    error: bad input, an unreadable or refused file, a run that ran out of --memory
       (one line `rhizome: error: ...` on stderr)
  2    usage: an unknown option or a malformed value (clap's message on stderr)
  141  (killed by SIGPIPE) stdout or stderr was a pipe that closed early, e.g. `| head -1`:
       the program ends quietly, as grep and ls do

Machine-readable output (--json) goes to the named file, or to stdout with `--json -`.";

/// Rhizome: a PGAS runtime and a symbolic model checker.
#[derive(Parser)]
#[command(name = "rhizome", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options every subcommand accepts.
#[derive(Args, Clone, Debug)]
pub struct RuntimeOpts {
    /// Processing elements of the `local` transport (default 1; `bench comm` 2). Under
    /// mpirun this is ignored: one PE per rank. At most 4 x the cores.
    #[arg(long, global = true, env = "RHIZOME_PES", value_name = "N")]
    pub pes: Option<usize>,
    /// Worker threads per PE (default: one per core; `bench comm`/`tasks` 1). At most 4 x
    /// the cores, and PEs x workers at most 4 x the cores.
    #[arg(
        long,
        short = 'w',
        global = true,
        env = "RHIZOME_WORKERS",
        value_name = "N"
    )]
    pub workers: Option<usize>,
}

/// More threads than this many per core only contend for the cores (the pool spins while
/// stealing) and each costs a stack and a deque: 100,000 workers exhaust the memory long
/// before they do any work. Oversubscribing up to 4x still lets tests and experiments
/// emulate a bigger machine.
const THREADS_PER_CORE: usize = 4;

impl RuntimeOpts {
    /// Refuses thread and PE counts that cannot help on this machine, before anything is
    /// started (a huge count would otherwise end in an out-of-memory kill).
    pub fn check_bounds(&self) -> anyhow::Result<()> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let limit = THREADS_PER_CORE * cores;
        let why = format!(
            "this machine has {cores} core{}, and more than {THREADS_PER_CORE} threads per core only contend for them",
            if cores == 1 { "" } else { "s" }
        );
        for (flag, n) in [("--workers", self.workers), ("--pes", self.pes)] {
            if let Some(n) = n
                && n > limit
            {
                anyhow::bail!("{flag} {n} is more than {limit}: {why}");
            }
        }
        if let (Some(p), Some(w)) = (self.pes, self.workers)
            && p.saturating_mul(w) > limit
        {
            anyhow::bail!(
                "--pes {p} x --workers {w} = {} threads is more than {limit}: {why}",
                p.saturating_mul(w)
            );
        }
        Ok(())
    }
}

#[derive(Subcommand)]
enum Command {
    /// Symbolic reachability: the reachable states of a model (a file or a built-in one).
    #[command(after_help = reach::REACH_AFTER_HELP)]
    Reach(Box<reach::ReachArgs>),
    /// Benchmarks of the runtime.
    Bench(bench::BenchArgs),
    /// What this build and machine offer.
    Info(info::InfoArgs),
    /// Draws the per-level record of a `reach --json` report as an SVG picture.
    Plot(plot::PlotArgs),
    /// Print a shell completion script, e.g. `rhizome completions bash >
    /// ~/.local/share/bash-completion/completions/rhizome`.
    Completions(CompletionsArgs),
}

#[derive(Args)]
struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

fn main() -> ExitCode {
    output::die_quietly_on_closed_pipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Reach(args) => reach::run(*args),
        Command::Bench(args) => bench::run(args),
        Command::Info(args) => info::run(args),
        Command::Plot(args) => plot::run(args),
        Command::Completions(args) => {
            clap_complete::generate(
                args.shell,
                &mut Cli::command(),
                "rhizome",
                &mut std::io::stdout(),
            );
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rhizome: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
