//! `rhizome`: run symbolic reachability, benchmarks and diagnostics.

use clap::{Args, Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod info;
mod plot;
mod progress;
mod reach;

/// Rhizome: a PGAS runtime and a symbolic model checker.
#[derive(Parser)]
#[command(name = "rhizome", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options every subcommand accepts.
#[derive(Args, Clone, Debug)]
pub struct RuntimeOpts {
    /// Processing elements of the `local` transport (ignored under mpirun: one PE per rank).
    #[arg(long, global = true, env = "RHIZOME_PES")]
    pub pes: Option<usize>,
    /// Worker threads per PE.
    #[arg(long, global = true, env = "RHIZOME_WORKERS")]
    pub workers: Option<usize>,
}

#[derive(Subcommand)]
enum Command {
    /// Symbolic reachability: the reachable states of a model (a file or a built-in one).
    Reach(Box<reach::ReachArgs>),
    /// Benchmarks of the runtime.
    Bench(bench::BenchArgs),
    /// What this build and machine offer.
    Info(info::InfoArgs),
    /// Draws the per-level record of a `reach --json` report as an SVG picture.
    Plot(plot::PlotArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Reach(args) => reach::run(*args),
        Command::Bench(args) => bench::run(args),
        Command::Info(args) => info::run(args),
        Command::Plot(args) => plot::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rhizome: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
