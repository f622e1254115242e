//! `rhizome bench fib N`: the fork-join pool on naive parallel Fibonacci.

use super::record::{BenchOpts, Record};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome::pool::Pool;
use rhizome_kernels::fib::{fib, fib_join};
use std::time::Instant;

#[derive(Args)]
pub struct FibArgs {
    /// Which Fibonacci number to compute.
    #[arg(default_value_t = 35)]
    n: u64,
    /// The fork-join kernel: `fork` (an unstolen half comes back as the next turn of a
    /// loop, what gcc makes of Lace's `SYNC`) or `join` (both halves as calls).
    #[arg(long, value_enum, default_value_t = Kernel::Fork)]
    kernel: Kernel,
    #[command(flatten)]
    opts: BenchOpts,
}

/// Which recursion `bench fib` times; printed in the record's name.
#[derive(Clone, Copy, ValueEnum)]
enum Kernel {
    /// `rhizome_kernels::fib::fib`: `Worker::fork` in a loop.
    Fork,
    /// `rhizome_kernels::fib::fib_join`: plain `Worker::join`.
    Join,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::Fork => "fork",
            Kernel::Join => "join",
        }
    }
}

pub fn run(args: FibArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    let workers = args
        .opts
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
    let kernel = args.kernel;
    let results = World::builder()
        .pes(1)
        .workers(workers)
        .run(|ctx| {
            let timed = (ctx.my_pe() == 0).then(|| {
                let pool = Pool::new(workers);
                let start = Instant::now();
                let value = pool.run(|w| match kernel {
                    Kernel::Fork => fib(w, n),
                    Kernel::Join => fib_join(w, n),
                });
                (value, start.elapsed().as_secs_f64())
            });
            (timed, ctx.transport_name())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some((Some((value, secs)), transport)) = results.into_iter().next() else {
        return Ok(());
    };
    // Checked against the iteration (which wraps as the recursion does in release).
    let expected = (0..n)
        .fold((0u64, 1u64), |(a, b), _| (b, a.wrapping_add(b)))
        .0;
    if value != expected {
        anyhow::bail!("fib({n}) computed {value}, expected {expected}");
    }
    let records = vec![Record {
        name: format!("fib({n}) {}", kernel.name()),
        transport: transport.into(),
        pes: 1,
        workers,
        value: secs,
        unit: "s".into(),
        baseline: None,
        baseline_name: None,
        result: Some(value.to_string()),
    }];
    super::record::report(&records, args.opts.json.as_deref())
}
