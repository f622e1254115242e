//! `rhizome bench`: runtime benchmarks with a human table and JSON records.

mod fib;
mod record;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    kind: BenchKind,
}

#[derive(Subcommand)]
enum BenchKind {
    /// Fork-join pool: parallel fib(N).
    Fib(fib::FibArgs),
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.kind {
        BenchKind::Fib(a) => fib::run(a),
    }
}
