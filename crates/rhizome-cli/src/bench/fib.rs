//! `rhizome bench fib N`: the fork-join pool on naive parallel Fibonacci.

use super::record::Record;
use crate::RuntimeOpts;
use clap::Args;
use rhizome::World;
use rhizome::pool::{Pool, Worker};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct FibArgs {
    /// Which Fibonacci number to compute.
    #[arg(default_value_t = 35)]
    n: u64,
    /// Write JSON records to this file (an existing one only if it is an earlier report),
    /// or to stdout with `-` (the table then goes to stderr). Default: none.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

fn fib(w: &Worker, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = w.join(move |w| fib(w, n - 1), move |w| fib(w, n - 2));
    a + b
}

pub fn run(args: FibArgs) -> anyhow::Result<()> {
    args.runtime.check_bounds()?;
    super::record::check_json(args.json.as_deref())?;
    let workers = args
        .runtime
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // The pool would run with one worker anyway, and the record would claim none.
    if workers == 0 {
        anyhow::bail!("--workers must be at least 1");
    }
    // The pool is one PE's: under mpirun only rank 0 computes and reports, with the
    // transport it ran under, instead of every rank printing a row labelled `local`.
    let n = args.n;
    let results = World::builder()
        .pes(1)
        .workers(workers)
        .run(|ctx| {
            let timed = (ctx.my_pe() == 0).then(|| {
                let pool = Pool::new(workers);
                let start = Instant::now();
                let value = pool.run(|w| fib(w, n));
                (value, start.elapsed().as_secs_f64())
            });
            (timed, ctx.transport_name())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some((Some((value, secs)), transport)) = results.into_iter().next() else {
        return Ok(());
    };
    let records = vec![Record {
        name: format!("fib({n})"),
        transport: transport.into(),
        pes: 1,
        workers,
        value: secs,
        unit: "s".into(),
        baseline: None,
        baseline_name: None,
        result: Some(value.to_string()),
    }];
    super::record::report(&records, args.json.as_deref())
}
