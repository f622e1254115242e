//! The applications of the multithreaded-HLRC paper on the distributed shared memory
//! (`rhizome-dsm`): [`sor`] (red-black successive over-relaxation), [`lu`] (blocked LU
//! without pivoting, blocks owned cyclically), [`water`] (Water-nsquared-like: pairwise
//! forces added to each molecule under its own lock), [`tsp`] (branch and bound over a
//! lock-protected shared queue of partial tours), [`radix`] (radix sort with per-thread
//! histograms in shared memory) and [`nbody`] (the NBody and NBodyW microbenchmarks,
//! 64-byte bodies). Each is one piece of code over an array of 64-bit words ([`Mem`])
//! that runs sequentially on a `Vec` and in parallel on the shared region, with barriers
//! between its phases and locks where it shares a sum or a queue; both runs give the
//! same result, which the checksum compares (TSP: the optimum length, which is unique
//! even where the optimal tour is not), and each kernel checks its own result too (a
//! sorted permutation, a valid tour of the claimed length, `L * U = A`).
//!
//! ```
//! use rhizome::World;
//! use rhizome_kernels::dsm::{App, run_dsm, run_sequential};
//! let app = App::Sor { n: 64, iters: 4 };
//! let seq = run_sequential(&app);
//! let par = World::builder().pes(2).run(|ctx| run_dsm(ctx, &app, 1)).unwrap();
//! assert_eq!(par[0].checksum, seq.checksum);
//! ```

mod cpu;
pub mod lu;
pub mod nbody;
pub mod radix;
pub mod sor;
pub mod tsp;
pub mod water;

use rhizome::Ctx;
use rhizome_dsm::{Dsm, DsmConfig, DsmLock, DsmStats, DsmThread};
use std::time::Instant;

/// An application and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum App {
    /// Red-black SOR on an `n` x `n` grid (plus a fixed boundary), `iters` iterations.
    Sor { n: usize, iters: usize },
    /// `bodies` bodies of 64 bytes, `steps` time steps of all-pairs forces.
    Nbody { bodies: usize, steps: usize },
    /// `molecules` molecules of three sites, `steps` time steps of half-shell pairwise
    /// forces (nine site-site interactions a pair), each molecule's force summed under
    /// its lock once per thread and step.
    Water { molecules: usize, steps: usize },
    /// Blocked LU of an `n` x `n` diagonally dominant matrix in `block` x `block` blocks
    /// (`block` divides `n`).
    Lu { n: usize, block: usize },
    /// The shortest round trip through `cities` cities (at most 64); partial tours of
    /// fewer than `split` cities go back to the shared queue, longer ones are searched
    /// by the thread that took them.
    Tsp { cities: usize, split: usize },
    /// Radix sort of `keys` 32-bit keys, 8 bits a pass.
    Radix { keys: usize },
    /// NBody with the paper's sequential phase: after each step one thread corrects
    /// every body's velocity by the mean.
    NbodyW { bodies: usize, steps: usize },
}

/// How a kernel's threads synchronise: barriers, and locks named by numbers.
pub trait Team {
    /// Waits for every thread.
    fn barrier(&self);
    /// Takes lock `i`.
    fn lock(&self, i: usize);
    /// Gives lock `i` back.
    fn unlock(&self, i: usize);
    /// A hint: this thread takes locks `locks` soon (their tokens may be asked for
    /// ahead). Nothing by default.
    fn prefetch(&self, _locks: std::ops::Range<usize>) {}
}

/// The sequential run's team: one thread, nothing to wait for.
struct Alone;

impl Team for Alone {
    fn barrier(&self) {}
    fn lock(&self, _: usize) {}
    fn unlock(&self, _: usize) {}
}

impl Team for DsmThread<'_> {
    fn barrier(&self) {
        DsmThread::barrier(self)
    }
    fn lock(&self, i: usize) {
        DsmLock::new(i as u32).acquire(self)
    }
    fn unlock(&self, i: usize) {
        // The kernels release only what they hold.
        DsmLock::new(i as u32).release(self).expect("lock held")
    }
    fn prefetch(&self, locks: std::ops::Range<usize>) {
        DsmLock::prefetch(self, locks.start as u32..locks.end as u32)
    }
}

/// An array of 64-bit words (read as `f64` or `u64`) that the application's threads
/// share: a `Vec` in the sequential run, the shared region in the parallel one.
#[derive(Clone, Copy)]
pub struct Mem {
    ptr: *mut f64,
    len: usize,
}

// SAFETY: see `Mem::new`: the creator promises the memory outlives every use and that
// the threads' accesses are free of data races (separated by barriers).
unsafe impl Send for Mem {}
// SAFETY: as for Send.
unsafe impl Sync for Mem {}

impl Mem {
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` elements for as long as the
    /// `Mem` (or a copy) is used, and the threads using it must not write an element
    /// that another thread reads or writes without a barrier between.
    pub unsafe fn new(ptr: *mut f64, len: usize) -> Mem {
        Mem { ptr, len }
    }
    /// Element `i`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        assert!(i < self.len, "index {i} of {}", self.len);
        // SAFETY: in bounds; valid and race-free by `new`'s contract.
        unsafe { self.ptr.add(i).read() }
    }
    /// Sets element `i`.
    #[inline]
    pub fn set(&self, i: usize, v: f64) {
        assert!(i < self.len, "index {i} of {}", self.len);
        // SAFETY: as for `get`.
        unsafe { self.ptr.add(i).write(v) }
    }
    /// Element `i` as an integer (its bits).
    #[inline]
    pub fn get_u64(&self, i: usize) -> u64 {
        self.get(i).to_bits()
    }
    /// Sets element `i` to the bits of integer `v`.
    #[inline]
    pub fn set_u64(&self, i: usize, v: u64) {
        self.set(i, f64::from_bits(v))
    }
}

/// An application written once for any number of threads.
trait Kernel: Sync {
    /// Elements of the shared array for `all` threads.
    fn words(&self, all: usize) -> usize;
    /// Thread `id` of `all` initialises its part.
    fn init(&self, m: Mem, id: usize, all: usize);
    /// Thread `id` of `all` computes, synchronising through `team`.
    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team);
    /// The result to compare with the sequential run's; by default the order-fixed sum
    /// of the first `words` elements as bits.
    fn checksum(&self, m: Mem, words: usize) -> u64 {
        (0..words).map(|i| m.get(i)).sum::<f64>().to_bits()
    }
    /// Whether the result is right by the kernel's own test (beyond matching the
    /// sequential run).
    fn check(&self, _m: Mem) -> bool {
        true
    }
}

fn kernel(app: &App) -> Box<dyn Kernel> {
    match *app {
        App::Sor { n, iters } => Box::new(sor::Sor { n, iters }),
        App::Nbody { bodies, steps } => Box::new(nbody::Nbody {
            bodies,
            steps,
            sequential_phase: false,
        }),
        App::Water { molecules, steps } => Box::new(water::Water { molecules, steps }),
        App::Lu { n, block } => Box::new(lu::Lu { n, block }),
        App::Tsp { cities, split } => Box::new(tsp::Tsp::new(cities, split)),
        App::Radix { keys } => Box::new(radix::Radix { keys }),
        App::NbodyW { bodies, steps } => Box::new(nbody::Nbody {
            bodies,
            steps,
            sequential_phase: true,
        }),
    }
}

/// A timed run: seconds of the compute phase (initialisation excluded), the CPU time of
/// the busiest PE in it (its application threads and its service thread; the one thread
/// of a sequential run), the checksum, whether the kernel's own check of its result
/// passed, and for a parallel run the protocol counters summed over the PEs.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    pub seconds: f64,
    pub cpu_seconds: f64,
    pub checksum: u64,
    pub valid: bool,
    pub stats: DsmStats,
}

/// The sequential run: the same code with one thread and no barriers.
pub fn run_sequential(app: &App) -> Outcome {
    let k = kernel(app);
    let words = k.words(1);
    let mut v = vec![0.0; words];
    // SAFETY: the vector outlives the run and only this thread touches it.
    let m = unsafe { Mem::new(v.as_mut_ptr(), v.len()) };
    k.init(m, 0, 1);
    let start = Instant::now();
    let cpu_start = cpu::this_thread_ns();
    k.compute(m, 0, 1, &Alone);
    let cpu_ns = cpu::this_thread_ns() - cpu_start;
    let seconds = start.elapsed().as_secs_f64();
    Outcome {
        seconds,
        cpu_seconds: cpu_ns as f64 * 1e-9,
        checksum: k.checksum(m, words),
        valid: k.check(m),
        stats: DsmStats::default(),
    }
}

/// Collective: the parallel run on the shared memory with `threads` application threads
/// per PE; every PE returns the same outcome (PE 0's time).
pub fn run_dsm(ctx: &Ctx, app: &App, threads: usize) -> Outcome {
    run_dsm_with(ctx, app, threads, DsmConfig::default())
}

/// [`run_dsm`] with the protocol's options (interval policy, homes) taken from `options`;
/// its thread count and region size are set here.
pub fn run_dsm_with(ctx: &Ctx, app: &App, threads: usize, options: DsmConfig) -> Outcome {
    let k = kernel(app);
    let words = k.words(ctx.num_pes() * threads);
    let bytes = words * 8;
    let config = options.threads(threads).region_bytes(bytes + (1 << 20));
    let dsm = Dsm::new(ctx, config).unwrap_or_else(|e| panic!("rhizome: error: {e}"));
    let shared = dsm
        .alloc::<f64>(words)
        .unwrap_or_else(|e| panic!("rhizome: error: {e}"));
    // SAFETY: the allocation lives as long as `dsm`; the kernels are data-race free
    // (each thread writes its own part, with barriers between reading and writing).
    let m = unsafe { Mem::new(shared.as_ptr(), words) };
    // This thread serves the application threads while they run: its CPU time counts.
    let service = cpu::ThreadClock::current();
    let out = dsm.run(ctx, |t| {
        let (id, all) = (t.global_id(), t.global_threads());
        k.init(m, id, all);
        t.barrier();
        let start = Instant::now();
        let (cpu_start, service_start) = (cpu::this_thread_ns(), service.ns());
        k.compute(m, id, all, t);
        t.barrier();
        let seconds = start.elapsed().as_secs_f64();
        let cpu_ns = cpu::this_thread_ns() - cpu_start;
        // Thread 0 of each PE also counts the service thread's share (alive: it is
        // serving this very run).
        let service_ns = if t.thread() == 0 {
            service.ns() - service_start
        } else {
            0
        };
        (
            seconds,
            cpu_ns + service_ns,
            (id == 0).then(|| (k.checksum(m, words), k.check(m))),
        )
    });
    let (seconds, _, sum) = out[0];
    let (sum, valid) = sum.unzip();
    let pe_cpu_ns: u64 = out.iter().map(|o| o.1).sum();
    let cpu_ns = ctx.allreduce(pe_cpu_ns, |a, b| a.max(b));
    let stats = ctx.allreduce(dsm.stats(), |a, b| a + b);
    let seconds = ctx.broadcast(seconds, 0);
    let checksum = ctx.broadcast(sum.unwrap_or(0), 0);
    let valid = ctx.broadcast(valid.unwrap_or(false), 0);
    Outcome {
        seconds,
        cpu_seconds: cpu_ns as f64 * 1e-9,
        checksum,
        valid,
        stats,
    }
}
