//! `rhizome bench tasks KERNEL [N]`: futures and cluster work stealing on task-parallel
//! kernels (fib, nqueens, UTS, pingpong). Each kernel checks its result; the time is the
//! median of `--repeat` runs, compared with the plain sequential code in the same process.

use super::dense;
use super::record::Record;
use super::uts;
use crate::RuntimeOpts;
use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use rhizome::World;
use rhizome::tasks::{Future, Job, Stats, StealPolicy, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kernel {
    /// Naive Fibonacci, N default 40, sequential below `--cutoff` (default 25).
    Fib,
    /// Solutions of the N-queens problem, N default 14, sequential from row `--cutoff`
    /// (default 4).
    Nqueens,
    /// Unbalanced tree search on the sample tree `--tree` (T1, T2, T3, T5, T1L, T2L, T3L).
    Uts,
    /// Job round trip: N times (default 20000) `async_on(other PE, job)` then `get`.
    Pingpong,
    /// Quicksort of N doubles (default 100000), sequential below `--cutoff` (default 1000).
    Qsort,
    /// Dense N x N matrix product (default 768), jobs of `--cutoff` rows (default 16).
    Matmul,
    /// Tiled LU of an N x N matrix (default 2000) in `--cutoff` x `--cutoff` tiles
    /// (default 200); checks the residual. The time excludes the residual check.
    Lu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StealArg {
    One,
    Half,
}

#[derive(Args)]
pub struct TasksArgs {
    /// The kernel.
    #[arg(value_enum)]
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
    /// Write JSON records to this file (an existing one only if it is an earlier report),
    /// or to stdout with `-` (the table then goes to stderr). Default: none.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    runtime: RuntimeOpts,
}

// ----- kernels -----

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

#[derive(Serialize, Deserialize)]
struct Fib {
    n: u64,
    cutoff: u64,
}
impl Job for Fib {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.n < self.cutoff.max(2) {
            return fib_seq(self.n);
        }
        let a = t.spawn(Fib {
            n: self.n - 1,
            cutoff: self.cutoff,
        });
        let b = Fib {
            n: self.n - 2,
            cutoff: self.cutoff,
        }
        .run(t);
        a.get() + b
    }
}

fn nq_seq(all: u32, cols: u32, d1: u32, d2: u32) -> u64 {
    if cols == all {
        return 1;
    }
    let mut free = all & !(cols | d1 | d2);
    let mut count = 0;
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free ^= bit;
        count += nq_seq(all, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
    }
    count
}

/// Known numbers of N-queens solutions, N = 0..=16.
const NQ: [u64; 17] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
];

#[derive(Serialize, Deserialize)]
struct Queens {
    all: u32,
    cols: u32,
    d1: u32,
    d2: u32,
    cutoff: u32,
}
impl Job for Queens {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        if self.cols.count_ones() >= self.cutoff || self.cols == self.all {
            return nq_seq(self.all, self.cols, self.d1, self.d2);
        }
        let mut free = self.all & !(self.cols | self.d1 | self.d2);
        let mut kids: Vec<Future<u64>> = Vec::new();
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            kids.push(t.spawn(Queens {
                all: self.all,
                cols: self.cols | bit,
                d1: (self.d1 | bit) << 1,
                d2: (self.d2 | bit) >> 1,
                cutoff: self.cutoff,
            }));
        }
        kids.iter().rev().map(|f| f.get()).sum()
    }
}

/// Nodes a UTS job expands between two splits of its stack.
const UTS_SPLIT_EVERY: u32 = 1024;

#[derive(Serialize, Deserialize)]
struct Uts {
    p: uts::Params,
    nodes: Vec<uts::Node>,
}
impl Job for Uts {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        let p = self.p;
        let mut stack = self.nodes;
        let mut count = 0u64;
        let mut kids: Vec<Future<u64>> = Vec::new();
        let mut since = 0;
        while let Some(n) = stack.pop() {
            count += 1;
            p.expand(&n, &mut stack);
            since += 1;
            if since == UTS_SPLIT_EVERY {
                since = 0;
                // Give the older (shallower) half of the stack away as a job.
                if stack.len() >= 2 {
                    let nodes: Vec<uts::Node> = stack.drain(..stack.len() / 2).collect();
                    kids.push(t.spawn(Uts { p, nodes }));
                }
                t.poll();
            }
        }
        count + kids.iter().rev().map(|f| f.get()).sum::<u64>()
    }
}

#[derive(Serialize, Deserialize)]
struct Ping(u64);
impl Job for Ping {
    type Output = u64;
    fn run(self, _t: &TaskCtx) -> u64 {
        self.0 + 1
    }
}

// ----- driver -----

/// What one repetition reports on PE 0: seconds (or µs per round trip), the result, and
/// the summed scheduler counters.
struct Rep {
    value: f64,
    result: u64,
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

/// The residual of the last parallel LU (bits of an f64), for the summary line.
static LU_RESIDUAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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
    args.runtime.check_bounds()?;
    super::record::check_json(args.json.as_deref())?;
    let pes = args.runtime.pes.unwrap_or(1);
    let workers = args.runtime.workers.unwrap_or(1);
    let repeat = args.repeat.max(1);
    let kernel = args.kernel;
    let (label, n, cutoff, tree) = match kernel {
        Kernel::Fib => {
            let n = args.n.unwrap_or(40);
            let c = args.cutoff.unwrap_or(25);
            (format!("fib({n}) cutoff {c}"), n, c, None)
        }
        Kernel::Nqueens => {
            let n = args.n.unwrap_or(14);
            if !(1..=16).contains(&n) {
                bail!("nqueens N must be in 1..=16, not {n}");
            }
            let c = args.cutoff.unwrap_or(4);
            (format!("nqueens({n}) cutoff {c}"), n, c, None)
        }
        Kernel::Uts => {
            let (p, size) = uts::sample(&args.tree).with_context(|| {
                format!(
                    "unknown UTS tree {:?} (known: T1, T2, T3, T5, T1L, T2L, T3L)",
                    args.tree
                )
            })?;
            (format!("uts {}", args.tree), 0, 0, Some((p, size)))
        }
        Kernel::Pingpong => {
            let n = args.n.unwrap_or(20_000).max(1);
            (format!("pingpong x{n}"), n, 0, None)
        }
        Kernel::Qsort => {
            let n = args.n.unwrap_or(100_000).max(1);
            let c = args.cutoff.unwrap_or(1000);
            (format!("qsort({n}) cutoff {c}"), n, c, None)
        }
        Kernel::Matmul => {
            let n = args.n.unwrap_or(768).max(1);
            let c = args.cutoff.unwrap_or(16);
            (format!("matmul({n}) rows {c}"), n, c, None)
        }
        Kernel::Lu => {
            let n = args.n.unwrap_or(2000);
            let c = args.cutoff.unwrap_or(200);
            // N = 0 has no tiles: its residual would be NaN and fail the check.
            if c == 0 || n == 0 || !n.is_multiple_of(c) {
                bail!("lu: N ({n}) must be a positive multiple of the tile size --cutoff ({c})");
            }
            (format!("lu({n}) tiles {c}"), n, c, None)
        }
    };
    let inputs = Arc::new(Inputs::new(kernel, n, cutoff));
    let expected: Option<u64> = match kernel {
        Kernel::Fib => None,
        Kernel::Nqueens => Some(NQ[n as usize]),
        Kernel::Uts => tree.map(|(_, s)| s),
        Kernel::Pingpong => Some(n),
        Kernel::Qsort | Kernel::Matmul | Kernel::Lu => None,
    };

    // Sequential reference.
    let mut seq = None;
    if !args.no_seq && kernel != Kernel::Pingpong {
        let mut times = Vec::new();
        let mut result = 0;
        for _ in 0..repeat {
            let t0 = Instant::now();
            let mut kernel_secs = None;
            result = match kernel {
                Kernel::Fib => fib_seq(n),
                Kernel::Nqueens => nq_seq((1u32 << n) - 1, 0, 0, 0),
                Kernel::Uts => {
                    let (p, _) = tree.expect("uts has a tree");
                    p.count(vec![p.root()])
                }
                Kernel::Qsort | Kernel::Matmul | Kernel::Lu => {
                    let (r, secs) = inputs.run(kernel, None);
                    kernel_secs = Some(secs);
                    r
                }
                Kernel::Pingpong => unreachable!(),
            };
            times.push(kernel_secs.unwrap_or_else(|| t0.elapsed().as_secs_f64()));
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
            tasks
                .register::<Fib>()
                .register::<Queens>()
                .register::<Uts>()
                .register::<Ping>()
                .register::<dense::Sort>()
                .register::<dense::MatMul>()
                .register::<dense::LuPlace>()
                .register::<dense::LuStep>()
                .register::<dense::LuUpdate>()
                .register::<dense::LuCollect>()
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
                    Some(match kernel {
                        Kernel::Fib => (Fib { n, cutoff }.run(t), 0.0),
                        Kernel::Nqueens => (
                            Queens {
                                all: (1u32 << n) - 1,
                                cols: 0,
                                d1: 0,
                                d2: 0,
                                cutoff: cutoff as u32,
                            }
                            .run(t),
                            0.0,
                        ),
                        Kernel::Uts => {
                            let (p, _) = tree.expect("uts has a tree");
                            (
                                Uts {
                                    p,
                                    nodes: vec![p.root()],
                                }
                                .run(t),
                                0.0,
                            )
                        }
                        Kernel::Pingpong => {
                            let target = 1 % t.num_pes();
                            let t1 = Instant::now();
                            let mut ok = 0;
                            for i in 0..n {
                                ok += (t.async_on(target, Ping(i)).get() == i + 1) as u64;
                            }
                            (ok, t1.elapsed().as_secs_f64() * 1e6 / n as f64)
                        }
                        Kernel::Qsort | Kernel::Matmul | Kernel::Lu => inputs.run(kernel, Some(t)),
                    })
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
                if let (Some((result, rtt)), Some(all)) = (r, all) {
                    let per_pe: Vec<Stats> = all.iter().map(|v| stats_from(v)).collect();
                    out.push(Rep {
                        // Pingpong reports its round trip; the data kernels their own time,
                        // without copying the input and checking the output.
                        value: match kernel {
                            Kernel::Pingpong | Kernel::Qsort | Kernel::Matmul | Kernel::Lu => rtt,
                            _ => secs,
                        },
                        result,
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
    let rec = |name: String, value: f64, unit: &str, baseline: Option<(f64, &str)>| Record {
        name,
        transport: transport.clone(),
        pes,
        workers,
        value,
        unit: unit.into(),
        baseline: baseline.map(|b| b.0),
        baseline_name: baseline.map(|b| b.1.to_string()),
        result: Some(rep.result.to_string()),
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
    let residual = f64::from_bits(LU_RESIDUAL.load(std::sync::atomic::Ordering::Relaxed));
    println!(
        "{label}: result {}{} ({}), {pes} PEs x {workers} workers, median of {repeat}",
        rep.result,
        if kernel == Kernel::Lu {
            format!(", residual {residual:.2e}")
        } else {
            String::new()
        },
        match expected {
            Some(_) => "checked against the known value",
            None if seq.is_some() => "checked against the sequential code",
            None => "not checked",
        }
    );
    super::record::report(&records, args.json.as_deref())
}

/// Inputs of the data kernels, made once, and their runs (sequential with `t = None`).
/// Results are 64-bit hashes of the output bits: the parallel code does the same
/// floating-point operations in the same order per element, so they match exactly.
struct Inputs {
    data: Vec<f64>,
    b: Arc<dense::Doubles>,
    tiles: Vec<Vec<dense::Tile>>,
    n: usize,
    cutoff: usize,
}

fn hash_bits(v: impl IntoIterator<Item = f64>) -> u64 {
    v.into_iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ x.to_bits()).wrapping_mul(0x100_0000_01b3)
    })
}

impl Inputs {
    fn new(kernel: Kernel, n: u64, cutoff: u64) -> Inputs {
        let n = n as usize;
        let cutoff = cutoff as usize;
        let mut me = Inputs {
            data: Vec::new(),
            b: Arc::default(),
            tiles: Vec::new(),
            n,
            cutoff,
        };
        match kernel {
            Kernel::Qsort => me.data = dense::random_doubles(n, 7),
            Kernel::Matmul => {
                me.data = dense::random_doubles(n * n, 1);
                me.b = Arc::new(dense::Doubles(dense::random_doubles(n * n, 2)));
            }
            Kernel::Lu => me.tiles = dense::lu_input(n / cutoff, cutoff, 3),
            _ => {}
        }
        me
    }

    /// Runs the kernel; returns the result hash and the kernel's own time in seconds
    /// (copying the input before and checking the output after are not timed).
    fn run(&self, kernel: Kernel, t: Option<&TaskCtx>) -> (u64, f64) {
        match kernel {
            Kernel::Qsort => {
                let mut data = self.data.clone();
                let t0 = Instant::now();
                let out = match t {
                    Some(t) => {
                        dense::Sort {
                            data: dense::Doubles(data),
                            cutoff: self.cutoff,
                        }
                        .run(t)
                        .0
                    }
                    None => {
                        data.sort_unstable_by(f64::total_cmp);
                        data
                    }
                };
                let secs = t0.elapsed().as_secs_f64();
                assert_eq!(out.len(), self.data.len(), "qsort lost elements");
                assert!(out.is_sorted_by(|a, b| a <= b), "qsort output not sorted");
                (hash_bits(out), secs)
            }
            Kernel::Matmul => {
                let a_rows = self.data.clone();
                let t0 = Instant::now();
                let c = match t {
                    Some(t) => {
                        dense::MatMul {
                            a_rows: dense::Doubles(a_rows),
                            b: Arc::clone(&self.b),
                            n: self.n,
                            cutoff: self.cutoff,
                        }
                        .run(t)
                        .0
                    }
                    None => dense::matmul_rows(&a_rows, &self.b, self.n),
                };
                let secs = t0.elapsed().as_secs_f64();
                (hash_bits(c), secs)
            }
            Kernel::Lu => {
                let mut f = self.tiles.clone();
                let t0 = Instant::now();
                match t {
                    Some(t) => dense::lu_distributed(&mut f, self.cutoff, t),
                    None => dense::lu(&mut f, self.cutoff),
                }
                let secs = t0.elapsed().as_secs_f64();
                let r = dense::lu_residual(&self.tiles, &f, self.cutoff);
                assert!(r < 1e-9, "lu residual {r:e} is not below 1e-9");
                if t.is_some() {
                    LU_RESIDUAL.store(r.to_bits(), std::sync::atomic::Ordering::Relaxed);
                }
                (
                    hash_bits(f.iter().flatten().flat_map(|t| t.iter().copied())),
                    secs,
                )
            }
            _ => unreachable!("not a data kernel"),
        }
    }
}
