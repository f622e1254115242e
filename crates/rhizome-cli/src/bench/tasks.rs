//! `rhizome bench tasks KERNEL [N]`: futures and cluster work stealing on the task-parallel
//! kernels of `rhizome_kernels::tasks`. Each kernel checks its result; the time is the
//! median of `--repeat` runs, compared with the plain sequential code in the same process.

use super::record::{BenchOpts, Record};
use anyhow::bail;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome::tasks::{Stats, StealPolicy, Tasks};
use rhizome_kernels::tasks::{self as kernels, Instance, Kernel};
use std::time::Instant;

/// The kernels of `rhizome_kernels::tasks`, with their help lines, as values of the
/// KERNEL argument.
fn kernel_parser() -> impl TypedValueParser<Value = Kernel> {
    PossibleValuesParser::new(Kernel::ALL.map(|k| PossibleValue::new(k.name()).help(k.about())))
        .map(|s| s.parse().expect("clap passes only possible values"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StealArg {
    One,
    Half,
}

#[derive(Args)]
pub struct TasksArgs {
    /// The kernel.
    #[arg(value_parser = kernel_parser())]
    kernel: Kernel,
    /// Problem size (see the kernel).
    n: Option<u64>,
    /// Sequential cutoff (see the kernel).
    #[arg(long)]
    cutoff: Option<u64>,
    /// UTS sample tree.
    #[arg(long, default_value = "T1")]
    tree: String,
    /// Repetitions (the median time is reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Jobs a PE gives for one steal request from another PE.
    #[arg(long, value_enum, default_value_t = StealArg::One)]
    steal: StealArg,
    /// Skip the sequential reference run (no speedup then).
    #[arg(long)]
    no_seq: bool,
    /// Disable the initial work-sharing phase.
    #[arg(long)]
    no_sharing: bool,
    #[command(flatten)]
    opts: BenchOpts,
}

// ----- driver -----

/// What one repetition reports on PE 0: seconds (or µs per round trip), the result, and
/// the summed scheduler counters.
struct Rep {
    value: f64,
    result: u64,
    /// The LU residual.
    residual: Option<f64>,
    stats: Stats,
    /// Cores this process used on average during the run (CPU time over wall time).
    cores: f64,
}

/// CPU seconds (user + system) used by this process so far; 0 where unknown.
fn process_cpu_secs() -> f64 {
    // CLOCK_PROCESS_CPUTIME_ID has nanosecond resolution; /proc's 10 ms ticks made the
    // figure meaningless for runs of milliseconds.
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A PE's counters and its process's CPU time (ns) for one repetition, for a gather.
fn stats_vec(s: &Stats, cpu_ns: u64) -> Vec<u64> {
    vec![
        cpu_ns,
        s.jobs_run,
        s.local_steals,
        s.remote_steals,
        s.steal_requests,
        s.steal_successes,
        s.shared_in,
        s.steal_latency_ns,
        s.remote_runs,
    ]
}

fn stats_from(v: &[u64]) -> Stats {
    Stats {
        jobs_run: v[1],
        local_steals: v[2],
        remote_steals: v[3],
        steal_requests: v[4],
        steal_successes: v[5],
        shared_in: v[6],
        steal_latency_ns: v[7],
        remote_runs: v[8],
    }
}

fn median_by(mut v: Vec<Rep>) -> Rep {
    v.sort_by(|a, b| a.value.total_cmp(&b.value));
    let mid = v.len() / 2;
    v.swap_remove(mid)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

pub fn run(args: TasksArgs) -> anyhow::Result<()> {
    args.opts.check()?;
    let pes = args.opts.runtime.pes.unwrap_or(1);
    let workers = args.opts.runtime.workers.unwrap_or(1);
    let repeat = args.repeat.max(1);
    let kernel = args.kernel;
    let instance =
        Instance::new(kernel, args.n, args.cutoff, &args.tree).map_err(anyhow::Error::msg)?;
    let label = instance.label().to_string();
    let expected = instance.expected();

    // Sequential reference.
    let mut seq = None;
    if !args.no_seq && kernel != Kernel::Pingpong {
        let mut times = Vec::new();
        let mut result = 0;
        for _ in 0..repeat {
            let t0 = Instant::now();
            let out = instance
                .run_sequential()
                .expect("every kernel but pingpong has a sequential version");
            result = out.result;
            times.push(out.own_time.unwrap_or_else(|| t0.elapsed().as_secs_f64()));
        }
        if let Some(e) = expected
            && e != result
        {
            bail!("{label}: the sequential code computed {result}, expected {e}");
        }
        seq = Some((median(times), result));
    }

    let policy = match args.steal {
        StealArg::One => StealPolicy::One,
        StealArg::Half => StealPolicy::Half,
    };
    let sharing = !args.no_sharing;
    let reps = World::builder()
        .pes(pes)
        .workers(workers)
        .run(|ctx| {
            let tasks = Tasks::new(ctx);
            kernels::register(&tasks)
                .set_steal_policy(policy)
                .set_initial_sharing(sharing);
            let mut out = Vec::new();
            for _ in 0..repeat {
                ctx.barrier();
                let cpu0 = process_cpu_secs();
                let t0 = Instant::now();
                let r = tasks.run(ctx, |t| {
                    if t.my_pe() != 0 {
                        return None;
                    }
                    Some(instance.run_parallel(t))
                });
                let secs = t0.elapsed().as_secs_f64();
                let cpu_ns = ((process_cpu_secs() - cpu0) * 1e9) as u64;
                let all = ctx.gather(stats_vec(&tasks.stats(), cpu_ns), 0);
                // PEs of the local transport share one process (PE 0's figure is the
                // whole); MPI ranks are processes of their own (their figures add up).
                let cores = all.as_ref().map_or(0.0, |all| {
                    let ns: u64 = if ctx.transport_name() == "mpi" {
                        all.iter().map(|v| v[0]).sum()
                    } else {
                        all[0][0]
                    };
                    ns as f64 * 1e-9 / secs
                });
                if let (Some(outcome), Some(all)) = (r, all) {
                    let per_pe: Vec<Stats> = all.iter().map(|v| stats_from(v)).collect();
                    out.push(Rep {
                        // Pingpong reports its round trip; the data kernels their own time,
                        // without copying the input and checking the output.
                        value: outcome.own_time.unwrap_or(secs),
                        result: outcome.result,
                        residual: outcome.residual,
                        stats: Stats::sum(&per_pe),
                        cores,
                    });
                }
            }
            (ctx.my_pe(), ctx.transport_name(), ctx.num_pes(), out)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Under MPI each rank holds only its own PE's result: PE 0's rank reports.
    let Some((0, transport, pes, reps)) = reps.into_iter().next() else {
        return Ok(());
    };
    if reps.is_empty() {
        bail!("PE 0 recorded no repetition");
    }
    for r in &reps {
        let want = expected.or(seq.map(|s| s.1));
        if let Some(e) = want
            && e != r.result
        {
            bail!("{label}: computed {}, expected {e}", r.result);
        }
    }
    let rep = median_by(reps);
    let transport = transport.to_string();
    let rec = |name: String, value: f64, unit: &str, baseline: Option<(f64, &str)>| {
        let run = (transport.as_str(), pes, workers);
        Record::new(
            name,
            run,
            value,
            unit,
            baseline,
            Some(rep.result.to_string()),
        )
    };
    let mut records = Vec::new();
    if kernel == Kernel::Pingpong {
        records.push(rec(
            "tasks pingpong round trip".into(),
            rep.value,
            "us",
            None,
        ));
    } else {
        records.push(rec(
            format!("tasks {label} time"),
            rep.value,
            "s",
            seq.map(|s| (s.0, "sequential")),
        ));
        if let Some((s, _)) = seq {
            records.push(rec(
                format!("tasks {label} speedup"),
                s / rep.value,
                "x",
                None,
            ));
        }
    }
    let s = rep.stats;
    records.push(rec(
        format!("tasks {label} jobs"),
        s.jobs_run as f64,
        "jobs",
        None,
    ));
    records.push(rec(
        format!("tasks {label} local steals"),
        s.local_steals as f64,
        "jobs",
        None,
    ));
    records.push(rec(
        format!("tasks {label} remote steals"),
        s.remote_steals as f64,
        "jobs",
        None,
    ));
    records.push(rec(
        format!("tasks {label} steal requests"),
        s.steal_requests as f64,
        "msgs",
        None,
    ));
    records.push(rec(
        format!("tasks {label} steal latency"),
        s.mean_steal_latency_us(),
        "us",
        None,
    ));
    records.push(rec(
        format!("tasks {label} cores used"),
        rep.cores,
        "cores",
        None,
    ));
    println!(
        "{label}: result {}{} ({}), {pes} PEs x {workers} workers, median of {repeat}",
        rep.result,
        match rep.residual {
            Some(residual) => format!(", residual {residual:.2e}"),
            None => String::new(),
        },
        match expected {
            Some(_) => "checked against the known value",
            None if seq.is_some() => "checked against the sequential code",
            None => "not checked",
        }
    );
    super::record::report(&records, args.opts.json.as_deref())
}
