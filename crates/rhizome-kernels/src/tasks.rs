//! The kernels of the tasks layer as one menu: pick a [`Kernel`], make an [`Instance`]
//! (problem size, cutoff, inputs), run it sequentially or on a [`TaskCtx`], and check the
//! result. `rhizome bench tasks` and the tests drive them through this module.

use crate::dense::{self, Doubles, hash_bits, lu, matmul, qsort};
use crate::fib::{Fib, fib_seq};
use crate::nqueens::{self, Queens};
use crate::uts::{self, Uts};
use rhizome::tasks::{Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// A kernel of the tasks layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Naive Fibonacci.
    Fib,
    /// Solutions of the N-queens problem.
    Nqueens,
    /// Unbalanced tree search on a sample tree.
    Uts,
    /// Job round trips between two PEs.
    Pingpong,
    /// Quicksort of doubles.
    Qsort,
    /// Dense matrix product.
    Matmul,
    /// Tiled LU factorisation.
    Lu,
}

impl Kernel {
    /// Every kernel, in the order of the menu.
    pub const ALL: [Kernel; 7] = [
        Kernel::Fib,
        Kernel::Nqueens,
        Kernel::Uts,
        Kernel::Pingpong,
        Kernel::Qsort,
        Kernel::Matmul,
        Kernel::Lu,
    ];

    /// The kernel's name on a command line.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Fib => "fib",
            Kernel::Nqueens => "nqueens",
            Kernel::Uts => "uts",
            Kernel::Pingpong => "pingpong",
            Kernel::Qsort => "qsort",
            Kernel::Matmul => "matmul",
            Kernel::Lu => "lu",
        }
    }

    /// What the kernel computes, with the meaning and default of its size N and cutoff.
    pub fn about(self) -> &'static str {
        match self {
            Kernel::Fib => "Naive Fibonacci, N default 40, sequential below --cutoff (default 25)",
            Kernel::Nqueens => {
                "Solutions of the N-queens problem, N default 14, sequential from row --cutoff (default 4)"
            }
            Kernel::Uts => {
                "Unbalanced tree search on the sample tree --tree (T1, T2, T3, T5, T1L, T2L, T3L)"
            }
            Kernel::Pingpong => {
                "Job round trip: N times (default 20000) `async_on(other PE, job)` then `get`"
            }
            Kernel::Qsort => {
                "Quicksort of N doubles (default 100000), sequential below --cutoff (default 1000)"
            }
            Kernel::Matmul => {
                "Dense N x N matrix product (default 768), jobs of --cutoff rows (default 16)"
            }
            Kernel::Lu => {
                "Tiled LU of an N x N matrix (default 2000) in --cutoff x --cutoff tiles (default 200); checks the residual. The time excludes the residual check"
            }
        }
    }
}

impl std::str::FromStr for Kernel {
    type Err = String;
    fn from_str(s: &str) -> Result<Kernel, String> {
        Kernel::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown kernel {s:?}"))
    }
}

/// Registers the jobs of every kernel (collective, as [`Tasks::register`]).
pub fn register(tasks: &Tasks) -> &Tasks {
    tasks
        .register::<Fib>()
        .register::<Queens>()
        .register::<Uts>()
        .register::<Ping>()
        .register::<qsort::Sort>()
        .register::<matmul::MatMul>()
        .register::<lu::LuPlace>()
        .register::<lu::LuStep>()
        .register::<lu::LuUpdate>()
        .register::<lu::LuCollect>()
}

/// The job of the pingpong kernel: returns its argument plus one.
#[derive(Serialize, Deserialize)]
pub struct Ping(pub u64);

impl Job for Ping {
    type Output = u64;
    fn run(self, _t: &TaskCtx) -> u64 {
        self.0 + 1
    }
}

/// What one run of a kernel gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// The result: a count, or a hash of the output bits for the data kernels (the
    /// parallel code does the same floating-point operations per element as the
    /// sequential code, so the hashes match exactly).
    pub result: u64,
    /// The kernel's own time in seconds, for the kernels that time themselves (without
    /// copying the input or checking the output), or µs per round trip for pingpong.
    pub own_time: Option<f64>,
    /// The relative residual of the factorisation (LU only).
    pub residual: Option<f64>,
}

/// A kernel with its problem size, cutoff and inputs, ready to run any number of times.
pub struct Instance {
    kernel: Kernel,
    n: u64,
    cutoff: u64,
    tree: Option<(uts::Params, u64)>,
    label: String,
    data: Vec<f64>,
    b: Arc<Doubles>,
    tiles: Vec<Vec<lu::Tile>>,
}

impl Instance {
    /// The kernel with size `n` and `cutoff` (the kernel's defaults where `None`), and the
    /// UTS sample tree named `tree` (ignored by the other kernels). Invalid parameters
    /// are refused with a sentence that says why.
    pub fn new(
        kernel: Kernel,
        n: Option<u64>,
        cutoff: Option<u64>,
        tree: &str,
    ) -> Result<Instance, String> {
        let (label, n, cutoff, t) = match kernel {
            Kernel::Fib => {
                let (n, c) = (n.unwrap_or(40), cutoff.unwrap_or(25));
                (format!("fib({n}) cutoff {c}"), n, c, None)
            }
            Kernel::Nqueens => {
                let n = n.unwrap_or(14);
                if !(1..=16).contains(&n) {
                    return Err(format!("nqueens N must be in 1..=16, not {n}"));
                }
                let c = cutoff.unwrap_or(4);
                (format!("nqueens({n}) cutoff {c}"), n, c, None)
            }
            Kernel::Uts => {
                let sample = uts::sample(tree).ok_or_else(|| {
                    format!("unknown UTS tree {tree:?} (known: T1, T2, T3, T5, T1L, T2L, T3L)")
                })?;
                (format!("uts {tree}"), 0, 0, Some(sample))
            }
            Kernel::Pingpong => {
                let n = n.unwrap_or(20_000).max(1);
                (format!("pingpong x{n}"), n, 0, None)
            }
            Kernel::Qsort => {
                let (n, c) = (n.unwrap_or(100_000).max(1), cutoff.unwrap_or(1000));
                (format!("qsort({n}) cutoff {c}"), n, c, None)
            }
            Kernel::Matmul => {
                let (n, c) = (n.unwrap_or(768).max(1), cutoff.unwrap_or(16));
                (format!("matmul({n}) rows {c}"), n, c, None)
            }
            Kernel::Lu => {
                let (n, c) = (n.unwrap_or(2000), cutoff.unwrap_or(200));
                // N = 0 has no tiles: its residual would be NaN and fail the check.
                if c == 0 || n == 0 || !n.is_multiple_of(c) {
                    return Err(format!(
                        "lu: N ({n}) must be a positive multiple of the tile size --cutoff ({c})"
                    ));
                }
                (format!("lu({n}) tiles {c}"), n, c, None)
            }
        };
        let mut me = Instance {
            kernel,
            n,
            cutoff,
            tree: t,
            label,
            data: Vec::new(),
            b: Arc::default(),
            tiles: Vec::new(),
        };
        let (un, uc) = (n as usize, cutoff as usize);
        match kernel {
            Kernel::Qsort => me.data = dense::random_doubles(un, 7),
            Kernel::Matmul => {
                me.data = dense::random_doubles(un * un, 1);
                me.b = Arc::new(Doubles(dense::random_doubles(un * un, 2)));
            }
            Kernel::Lu => me.tiles = lu::lu_input(un / uc, uc, 3),
            _ => {}
        }
        Ok(me)
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// A short name with the parameters, e.g. `fib(40) cutoff 25`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The known result, where there is one (N-queens, UTS, pingpong).
    pub fn expected(&self) -> Option<u64> {
        match self.kernel {
            Kernel::Nqueens => Some(nqueens::SOLUTIONS[self.n as usize]),
            Kernel::Uts => self.tree.map(|(_, size)| size),
            Kernel::Pingpong => Some(self.n),
            Kernel::Fib | Kernel::Qsort | Kernel::Matmul | Kernel::Lu => None,
        }
    }

    /// Runs the plain sequential code; `None` for pingpong, which has none.
    pub fn run_sequential(&self) -> Option<Outcome> {
        let counted = |result| Outcome {
            result,
            own_time: None,
            residual: None,
        };
        Some(match self.kernel {
            Kernel::Fib => counted(fib_seq(self.n)),
            Kernel::Nqueens => counted(nqueens::solutions_seq(self.n as u32)),
            Kernel::Uts => {
                let (p, _) = self.tree.expect("uts has a tree");
                counted(p.count(vec![p.root()]))
            }
            Kernel::Pingpong => return None,
            Kernel::Qsort | Kernel::Matmul | Kernel::Lu => self.run_data(None),
        })
    }

    /// Runs the kernel on the tasks layer, from the job `t` (the body of a
    /// [`Tasks::run`] on one PE).
    pub fn run_parallel(&self, t: &TaskCtx) -> Outcome {
        let counted = |result| Outcome {
            result,
            own_time: None,
            residual: None,
        };
        match self.kernel {
            Kernel::Fib => counted(
                Fib {
                    n: self.n,
                    cutoff: self.cutoff,
                }
                .run(t),
            ),
            Kernel::Nqueens => counted(Queens::board(self.n as u32, self.cutoff as u32).run(t)),
            Kernel::Uts => {
                let (p, _) = self.tree.expect("uts has a tree");
                counted(
                    Uts {
                        p,
                        nodes: vec![p.root()],
                    }
                    .run(t),
                )
            }
            Kernel::Pingpong => {
                let target = 1 % t.num_pes();
                let t1 = Instant::now();
                let mut ok = 0;
                for i in 0..self.n {
                    ok += (t.async_on(target, Ping(i)).get() == i + 1) as u64;
                }
                Outcome {
                    result: ok,
                    own_time: Some(t1.elapsed().as_secs_f64() * 1e6 / self.n as f64),
                    residual: None,
                }
            }
            Kernel::Qsort | Kernel::Matmul | Kernel::Lu => self.run_data(Some(t)),
        }
    }

    /// Runs a data kernel (sequentially with `t = None`), timing only the kernel itself,
    /// and checks its output (sorted, a small LU residual).
    fn run_data(&self, t: Option<&TaskCtx>) -> Outcome {
        let (n, cutoff) = (self.n as usize, self.cutoff as usize);
        let mut residual = None;
        let (result, secs) = match self.kernel {
            Kernel::Qsort => {
                let mut data = self.data.clone();
                let t0 = Instant::now();
                let out = match t {
                    Some(t) => {
                        qsort::Sort {
                            data: Doubles(data),
                            cutoff,
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
                        matmul::MatMul {
                            a_rows: Doubles(a_rows),
                            b: Arc::clone(&self.b),
                            n,
                            cutoff,
                        }
                        .run(t)
                        .0
                    }
                    None => matmul::matmul_rows(&a_rows, &self.b, n),
                };
                (hash_bits(c), t0.elapsed().as_secs_f64())
            }
            Kernel::Lu => {
                let mut f = self.tiles.clone();
                let t0 = Instant::now();
                match t {
                    Some(t) => lu::lu_distributed(&mut f, cutoff, t),
                    None => lu::lu(&mut f, cutoff),
                }
                let secs = t0.elapsed().as_secs_f64();
                let r = lu::lu_residual(&self.tiles, &f, cutoff);
                assert!(r < 1e-9, "lu residual {r:e} is not below 1e-9");
                residual = Some(r);
                (
                    hash_bits(f.iter().flatten().flat_map(|t| t.iter().copied())),
                    secs,
                )
            }
            _ => unreachable!("not a data kernel"),
        };
        Outcome {
            result,
            own_time: Some(secs),
            residual,
        }
    }
}
