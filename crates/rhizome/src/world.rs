//! The world and its builder: how a run starts, picks its transport and ends.
//!
//! [`World::builder`] configures a run; [`WorldBuilder::run`] starts one PE per thread
//! (the `local` transport) or this rank's PE (the `mpi` transport), gives each a
//! [`Ctx`], waits for the final [`Ctx::finish`], and turns a panic on any PE into a
//! [`RunError`] for the whole run.

use crate::am::DEFAULT_AGGREGATION_BYTES;
use crate::error::{RunError, ok, panic_text};
use crate::transport::local::LocalFabric;
use crate::transport::{Backend, Collectives, Transport};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

// The tasks layer names these through `crate::world`.
pub(crate) use crate::{am::Am, context::Ctx, error::AbortUnwind};

/// Configures and starts a world. See [`World`].
#[derive(Clone, Debug, Default)]
pub struct WorldBuilder {
    pes: Option<usize>,
    workers: Option<usize>,
    aggregation_bytes: Option<usize>,
}

/// Entry point: runs an SPMD closure on every PE.
///
/// The number of PEs of the `local` transport and the worker threads per PE come from the
/// builder, else from `RHIZOME_PES` and `RHIZOME_WORKERS`, else 1 PE and 1 worker.
///
/// # Transport
/// A build with the cargo feature `mpi` that is started by an MPI launcher (`mpirun`,
/// `mpiexec`, which set `OMPI_COMM_WORLD_SIZE`, `PMI_SIZE` or `PMIX_RANK`) runs one PE per
/// MPI rank on the `mpi` transport; otherwise all PEs run in this process on the `local`
/// transport. `RHIZOME_TRANSPORT=local` or `=mpi` overrides the choice. A build without
/// the feature started by a launcher with several ranks refuses to run (each rank would
/// otherwise compute alone) with [`RunError::Config`].
///
/// ```
/// use rhizome::World;
/// let sums = World::builder().pes(4).run(|ctx| {
///     let counter = ctx.alloc::<u64>(1);
///     ctx.fetch_add(counter.ptr(0, 0), ctx.my_pe() as u64 + 1);
///     ctx.barrier();
///     ctx.load(counter.ptr(0, 0))
/// }).unwrap();
/// assert_eq!(sums, vec![10, 10, 10, 10]);
/// ```
pub struct World;

impl World {
    /// A builder with nothing set.
    pub fn builder() -> WorldBuilder {
        WorldBuilder::default()
    }
    /// Runs `f` on every PE with the configuration from the environment.
    pub fn run<R: Send>(f: impl Fn(&Ctx) -> R + Sync) -> Result<Vec<R>, RunError> {
        WorldBuilder::default().run(f)
    }
}

/// A count of the builder (`set`), else of the environment variable `var`, else 1; 0
/// is refused, naming `what` is counted.
fn count(set: Option<usize>, var: &str, what: &str) -> Result<usize, RunError> {
    match set {
        Some(0) => Err(RunError::Config(format!(
            "the number of {what} must be at least 1"
        ))),
        Some(n) => Ok(n),
        None => match std::env::var(var) {
            Err(_) => Ok(1),
            Ok(s) => match s.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(RunError::Config(format!(
                    "{var}={s:?} is not a positive integer"
                ))),
            },
        },
    }
}

impl WorldBuilder {
    /// PEs of the `local` transport (ignored by transports with one PE per process).
    pub fn pes(mut self, n: usize) -> Self {
        self.pes = Some(n);
        self
    }
    /// Worker threads per PE (reported by [`Ctx::workers`]).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }
    /// Size of each per-destination aggregation buffer (default 64 KiB).
    pub fn aggregation_bytes(mut self, n: usize) -> Self {
        self.aggregation_bytes = Some(n);
        self
    }

    /// Runs `f` once on every PE (each PE on its own thread for `local`) and returns the
    /// results of the PEs in this process, in PE order (under MPI: this rank's only).
    ///
    /// When `f` returns, the PE waits until all messages are handled everywhere (an
    /// implicit final [`Ctx::finish`]). If any PE panics or fails, every PE is stopped (PEs
    /// blocked in a barrier, collective or wait wake up) and the run returns
    /// [`RunError::Failed`] naming the first PE that failed and its panic message.
    pub fn run<R: Send>(self, f: impl Fn(&Ctx) -> R + Sync) -> Result<Vec<R>, RunError> {
        let pes = count(self.pes, "RHIZOME_PES", "PEs")?;
        let workers = count(self.workers, "RHIZOME_WORKERS", "workers")?;
        let agg = self
            .aggregation_bytes
            .unwrap_or(DEFAULT_AGGREGATION_BYTES)
            .max(16);
        match choose_transport()? {
            Choice::Local => {}
            #[cfg(feature = "mpi")]
            Choice::Mpi => return run_mpi(workers, agg, &f),
        }
        let fabric = LocalFabric::new(pes);
        let f = &f;
        let outcomes: Vec<Option<R>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..pes)
                .map(|pe| {
                    let t = Arc::new(Backend::Local(fabric.transport(pe)));
                    std::thread::Builder::new()
                        .name(format!("pe-{pe}"))
                        .stack_size(32 << 20)
                        .spawn_scoped(s, move || run_pe(t, workers, agg, f))
                        .expect("cannot spawn a PE thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(None))
                .collect()
        });
        let probe = fabric.transport(0);
        if let Some(msg) = probe.aborted() {
            return Err(RunError::Failed(msg));
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("a PE without a result but no abort"))
            .collect())
    }
}

/// The transport a run uses.
enum Choice {
    Local,
    #[cfg(feature = "mpi")]
    Mpi,
}

/// Number of ranks an MPI launcher (`mpirun`, `mpiexec`) started, if it started this
/// process; `None` otherwise. Lets a program that runs on one PE only refuse to be
/// started several times over.
///
/// ```
/// // Under `cargo test` no launcher is involved.
/// assert_eq!(rhizome::launcher_ranks(), None);
/// ```
pub fn launcher_ranks() -> Option<usize> {
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"] {
        if let Ok(v) = std::env::var(var) {
            return Some(v.trim().parse().unwrap_or(1));
        }
    }
    std::env::var_os("PMIX_RANK").map(|_| 1)
}

fn choose_transport() -> Result<Choice, RunError> {
    match std::env::var("RHIZOME_TRANSPORT").as_deref().map(str::trim) {
        Ok("local") => return Ok(Choice::Local),
        #[cfg(feature = "mpi")]
        Ok("mpi") => return Ok(Choice::Mpi),
        #[cfg(not(feature = "mpi"))]
        Ok("mpi") => {
            return Err(RunError::Config(
                "RHIZOME_TRANSPORT=mpi, but this build has no MPI support (build with `--features mpi`)"
                    .into(),
            ));
        }
        Ok(other) => {
            return Err(RunError::Config(format!(
                "RHIZOME_TRANSPORT={other:?} is neither `local` nor `mpi`"
            )));
        }
        Err(_) => {}
    }
    match launcher_ranks() {
        #[cfg(feature = "mpi")]
        Some(_) => Ok(Choice::Mpi),
        #[cfg(not(feature = "mpi"))]
        Some(n) if n > 1 => Err(RunError::Config(format!(
            "started by mpirun with {n} ranks, but this build has no MPI support: rebuild with `--features mpi` (or set RHIZOME_TRANSPORT=local to run {n} independent copies)"
        ))),
        _ => Ok(Choice::Local),
    }
}

/// Runs this rank's PE on the `mpi` transport.
#[cfg(feature = "mpi")]
fn run_mpi<R: Send>(
    workers: usize,
    agg: usize,
    f: &(impl Fn(&Ctx) -> R + Sync),
) -> Result<Vec<R>, RunError> {
    let t = crate::transport::mpi::MpiTransport::init()
        .map_err(|e| RunError::Config(format!("cannot start MPI: {e}")))?;
    let t = Arc::new(Backend::Mpi(t));
    let pe = t.my_pe();
    let outcome = std::thread::scope(|s| {
        let t = Arc::clone(&t);
        std::thread::Builder::new()
            .name(format!("pe-{pe}"))
            .stack_size(32 << 20)
            .spawn_scoped(s, move || run_pe(t, workers, agg, f))
            .expect("cannot spawn the PE thread")
            .join()
            .unwrap_or(None)
    });
    match outcome {
        Some(r) => Ok(vec![r]),
        // Unreachable in practice: a failing PE ends every process with MPI_Abort.
        None => Err(RunError::Failed(
            t.aborted().unwrap_or_else(|| format!("PE {pe} failed")),
        )),
    }
}

/// Runs one PE's share of the program; `None` if it failed or was stopped.
fn run_pe<R>(
    t: Arc<Backend>,
    workers: usize,
    agg: usize,
    f: &(impl Fn(&Ctx) -> R + Sync),
) -> Option<R> {
    let pe = t.my_pe();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ctx = Ctx::new(Arc::clone(&t), workers, agg);
        let r = f(&ctx);
        ctx.quiesce();
        ok(t.barrier());
        r
    }));
    match outcome {
        Ok(r) => Some(r),
        Err(payload) => {
            if !payload.is::<AbortUnwind>() {
                t.abort(&format!("PE {pe} panicked: {}", panic_text(&*payload)));
            }
            None
        }
    }
}
