//! `rhizome bench fib N`: the fork-join pool on naive parallel Fibonacci.

use super::record::{Record, print_table, write_json};
use crate::RuntimeOpts;
use clap::Args;
use rhizome::pool::{Pool, Worker};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct FibArgs {
    /// Which Fibonacci number to compute.
    #[arg(default_value_t = 35)]
    n: u64,
    /// Write JSON records to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

fn fib(w: &Worker, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = w.join(|w| fib(w, n - 1), |w| fib(w, n - 2));
    a + b
}

pub fn run(args: FibArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        super::record::probe_writable(path)?;
    }
    let workers = args
        .runtime
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // The pool would run with one worker anyway, and the record would claim none.
    if workers == 0 {
        anyhow::bail!("--workers must be at least 1");
    }
    let pool = Pool::new(workers);
    let start = Instant::now();
    let value = pool.run(|w| fib(w, args.n));
    let secs = start.elapsed().as_secs_f64();
    let records = vec![Record {
        name: format!("fib({})", args.n),
        transport: "local".into(),
        pes: 1,
        workers,
        value: secs,
        unit: "s".into(),
        baseline: None,
        baseline_name: None,
        result: Some(value.to_string()),
    }];
    print_table(&records);
    if let Some(path) = &args.json {
        write_json(path, &records)?;
    }
    Ok(())
}
