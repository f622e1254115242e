//! `reach` on one PE or several: the world it runs in, the node table of each PE, and the
//! per-PE figures of the report.
//!
//! One PE (no `--pes`, no mpirun) runs the manager on the PE's pool with the shared-memory
//! table, growing as it needs. On N PEs (`--pes N` on the local transport, or one PE per
//! rank under `mpirun -np N`) the node table is a [`DistNodeStore`]: each PE holds one
//! partition, which starts at its share of the table one PE starts with and may grow to
//! the size `--memory` allows a PE, so the table holds N times the nodes one PE could.
//! Every PE builds a manager on the table (its operation cache: one shared by all PEs
//! where every partition is memory the PE reaches in place, else its own; and its node
//! cache), and the managers spread the work of each operation over the PEs
//! ([`Manager::spread_over`]): PE 0 loads the model and drives the strategy; the forks
//! of every operation of the exploration near the top of its recursion (and the
//! branches of a saturation) are sendable halves, which the other
//! PEs take through the cluster work stealing ([`rhizome::tasks`]) and run on their own
//! workers while they serve ([`Manager::serve`]) until PE 0's exploration ends. A level
//! of `bfs` or `par`, the union of one image per transition group, is dealt whole
//! instead: each PE draws whole images and ORs them (`OpCtx::rel_image_union`).
//! Collections stay with PE 0, between operations. The answers are those of one PE: the
//! table is canonical whichever PE makes a node.
//!
//! With `--split states` (`sliced.rs`) there is no shared table: every PE builds a one-PE
//! manager on its own pool and explores its slice of the states
//! (`rhizome_mc::reach::reach_sliced`); PE 0 reports.

use super::{Outputs, ReachArgs, drive};
use crate::reach::pss::{PssSampler, dump_smaps, peak_pss_bytes};
use crate::reach::sizes::peak_rss_bytes;
use rhizome::tasks::Tasks;
use rhizome::transport::RemoteOps;
use rhizome::{Ctx, World};
use rhizome_bdd::{
    CacheStats, Config, DistNodeStore, DistOpCache, Manager, OpCache, SharedOpCache,
};
use std::cell::Cell;
use std::sync::{Arc, Mutex};

/// Slots each PE's partition may grow to without `--memory`: 8M nodes, about 200 MB a PE
/// (reserved; committed as the partition is used).
const DEFAULT_SLOTS_PER_PE: usize = 1 << 23;

/// Forks of an operation less deep than this are sendable halves other PEs may take. A
/// sendable half costs a plain `join` a few stores more unless another PE takes it (then
/// it is encoded, and its result comes back in a message), and a PE answers steal
/// requests from its oldest slot, which must be sendable for the answer to give
/// anything: the oldest forks are the shallow ones. Deeper forks stay plain `join`s: a
/// half taken from deep in a recursion is too small to pay for its messages. With every
/// fork sendable, `sat` with 2 PEs of 1 worker (`--pes 2`, medians of 3) took 1.86 s on
/// collision.5, 6.04 s on collision.6 and 3.13 s on lifts.6; with 40, 1.47 s, 4.51 s and
/// 2.48 s (20 and 30 were within noise of 40, a little slower on collision.6 and
/// schedule_world.3). `RHIZOME_SPREAD_DEPTH` sets it; 0 keeps every operation on PE 0.
const SPREAD_DEPTH: u32 = 40;

/// Runs `reach` on the PEs of `args` (`--pes`, or mpirun's ranks) and returns PE 0's
/// outcome (or the first failing PE's).
pub(super) fn run(
    args: &ReachArgs,
    config: Config,
    memory: usize,
    outputs: Outputs,
) -> anyhow::Result<()> {
    let outputs = Mutex::new(outputs);
    // Read before the PEs start: a bad value must end every PE alike, before any
    // collective.
    let kind = op_cache_kind()?;
    let _sampler = PssSampler::start();
    let results = World::builder()
        .pes(args.runtime.pes.unwrap_or(1))
        .workers(config.workers)
        .run(|ctx| {
            // The same answer on every PE, before any collective.
            let sliced = match super::sliced::slices_states(args, ctx.num_pes()) {
                Ok(sliced) => sliced,
                // PE 0 tells; every PE ends.
                Err(e) if ctx.my_pe() == 0 => return Err(format!("{e:#}")),
                Err(_) => return Ok(()),
            };
            let tasks = (ctx.num_pes() > 1 && !sliced).then(|| Tasks::new(ctx));
            let peaks = Peaks {
                ctx,
                gathered: Cell::new(false),
                sliced,
                tasks: tasks.as_ref(),
                explored: Cell::new(false),
                jobs: Cell::new(None),
                cache: Cell::new(None),
            };
            let outcome = if sliced {
                on_pe_sliced(ctx, args, &config, memory, &outputs, &peaks)
            } else {
                on_pe(ctx, args, &config, memory, kind, &outputs, &peaks)
            };
            // PE 0 runs the scheduler once, also when it failed before exploring: the
            // other PEs serve until it has.
            if ctx.my_pe() == 0 {
                peaks.explore(|| ());
            }
            // Every PE takes part in the gather, also when PE 0 failed before it.
            drop(peaks);
            ctx.barrier();
            outcome.map_err(|e| format!("{e:#}"))
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    results
        .into_iter()
        .try_for_each(|r| r.map_err(anyhow::Error::msg))
}

/// This PE's part: the whole run on one PE, PE 0's or a partition holder's on several.
fn on_pe(
    ctx: &Ctx,
    args: &ReachArgs,
    config: &Config,
    memory: usize,
    kind: OpCacheKind,
    outputs: &Mutex<Outputs>,
    peaks: &Peaks<'_>,
) -> anyhow::Result<()> {
    let pool = Arc::clone(ctx.pool());
    if ctx.num_pes() == 1 {
        let m = Manager::with_pool(config.clone(), pool);
        return drive(args, m, memory, outputs, peaks);
    }
    // `--memory` is per PE: every partition may grow to that size. Each starts at this
    // PE's share of the table one PE starts with, and every per-PE structure (the
    // operation cache, the node cache) is sized from that share, not from the whole, so
    // N PEs together hold what one PE would.
    let max_slots = match args.memory {
        Some(_) => config.max_nodes,
        None => DEFAULT_SLOTS_PER_PE.min(config.max_nodes),
    };
    let initial = config.initial_nodes.div_ceil(ctx.num_pes());
    let store = DistNodeStore::growing(ctx, initial, max_slots, ctx.workers());
    let entries = |slots: usize| (slots as f64 * config.cache_ratio) as usize;
    let (now, most) = (
        entries(store.slots_per_pe()),
        entries(store.capacity_per_pe()),
    );
    // The PEs must agree: a shared cache is allocated collectively.
    let in_place = ctx.allreduce(store.is_in_place(), |a, b| a && b);
    let shared = match kind {
        OpCacheKind::Auto => in_place,
        OpCacheKind::Shared => true,
        OpCacheKind::PerPe => false,
    };
    let cache = match shared {
        // Sized as one PE's own cache: each PE holds its share, as much as a per-PE
        // cache would take.
        true => DistOpCache::shared(ctx, now * ctx.num_pes(), most * ctx.num_pes()),
        false => DistOpCache::per_pe(SharedOpCache::new(now, most)),
    };
    let mut m = Manager::from_parts_on_pool(store, cache, config.clone(), pool);
    let tasks = peaks.tasks.expect("a scheduler on several PEs");
    // 0: PE 0 runs every operation alone.
    let depth = super::tuning_knob("RHIZOME_SPREAD_DEPTH").unwrap_or(SPREAD_DEPTH);
    rhizome_mc::reach::register_jobs(tasks);
    m.spread_over(ctx, tasks, depth);
    if ctx.my_pe() != 0 {
        m.serve(ctx, tasks);
        peaks.set_jobs(m.spread_jobs());
        peaks.set_cache(m.op_cache().stats());
        return Ok(());
    }
    drive(args, m, memory, outputs, peaks)
}

/// This PE's part of a sliced run (`--split states`): a one-PE manager on the PE's own
/// pool, sized for its share of the work (`Config::for_share`: with one PE's growth
/// budgets each rank's table and cache grew to one PE's size, at.5 `bfs` 16M slots on
/// both of 2 ranks); PE 0 reports, the others explore their slices.
fn on_pe_sliced(
    ctx: &Ctx,
    args: &ReachArgs,
    config: &Config,
    memory: usize,
    outputs: &Mutex<Outputs>,
    peaks: &Peaks<'_>,
) -> anyhow::Result<()> {
    let config = config.for_share(ctx.num_pes());
    let m = Manager::with_pool(config, Arc::clone(ctx.pool()));
    if ctx.my_pe() == 0 {
        drive(args, m, memory, outputs, peaks)
    } else {
        super::sliced::follow(ctx, args, m)
    }
}

/// The per-PE figures of a run, in PE order.
pub(super) struct PerPe {
    /// Peak resident memory (VmHWM).
    pub(super) rss: Vec<Option<u64>>,
    /// Peak proportional set size.
    pub(super) pss: Vec<Option<u64>>,
    /// Sub-operations run (on several PEs).
    pub(super) jobs: Vec<Option<u64>>,
    /// Operation-cache lookups and hits (where the cache counts them).
    pub(super) cache: Vec<Option<CacheStats>>,
    /// One-sided operations sent to other PEs as messages (where the transport does so).
    pub(super) remote_ops: Vec<Option<RemoteOps>>,
}

/// Which operation cache the PEs' managers use (`RHIZOME_OP_CACHE`).
///
/// By default the PEs share one where they reach every partition in place (the `local`
/// transport, MPI ranks on one node): a sub-call stolen by another PE then finds what
/// the first already computed, and a lookup costs what the one-PE cache's does. On
/// collision.5 `sat` (`--split table -w 1`, medians of 3) that took 1.73 s where each
/// PE's own took 2.43 s with 2 PEs in one process, and 1.91 s against 2.37 s on 2
/// ranks. Where partitions are reached one-sided (ranks on several hosts), each PE keeps
/// its own: a shared lookup is a get over the network.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OpCacheKind {
    /// Shared where every PE reaches every partition in place, else per PE (the default).
    Auto,
    /// One cache shared by all PEs (with a small local one in front on each where the
    /// shared entries are reached one-sided).
    Shared,
    /// Each PE its own.
    PerPe,
}

/// `RHIZOME_OP_CACHE`: `shared`, `per-pe`, or unset (shared where in place).
fn op_cache_kind() -> anyhow::Result<OpCacheKind> {
    match std::env::var("RHIZOME_OP_CACHE").as_deref() {
        Err(_) => Ok(OpCacheKind::Auto),
        Ok("shared") => Ok(OpCacheKind::Shared),
        Ok("per-pe") => Ok(OpCacheKind::PerPe),
        Ok(other) => anyhow::bail!("RHIZOME_OP_CACHE is `{other}`: use `shared` or `per-pe`"),
    }
}

/// The PE's part in the run beside its manager: the scheduler that spreads the
/// exploration (on several PEs), and the per-PE figures of the report, gathered on PE 0
/// once the exploration is done.
pub(super) struct Peaks<'a> {
    ctx: &'a Ctx,
    gathered: Cell<bool>,
    /// Whether the states are sliced over the PEs (`--split states`).
    sliced: bool,
    /// The PEs' scheduler, on several PEs (spread table).
    tasks: Option<&'a Tasks>,
    /// Whether PE 0 has run the scheduler (once a run).
    explored: Cell<bool>,
    /// Sub-operations this PE ran, for the report.
    jobs: Cell<Option<u64>>,
    /// This PE's operation-cache lookups and hits, for the report.
    cache: Cell<Option<CacheStats>>,
}

impl Peaks<'_> {
    /// PEs of the run.
    pub(super) fn pes(&self) -> usize {
        self.ctx.num_pes()
    }

    /// The PEs of a sliced exploration, if the states are sliced.
    pub(super) fn sliced(&self) -> Option<&Ctx> {
        self.sliced.then_some(self.ctx)
    }

    /// The transport's name.
    pub(super) fn transport(&self) -> &'static str {
        self.ctx.transport_name()
    }

    /// Runs PE 0's exploration `f` inside the scheduler's run, which the other PEs serve
    /// (on several PEs, the first time); otherwise just runs `f`.
    pub(super) fn explore<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.tasks {
            Some(tasks) if !self.explored.replace(true) => tasks.run(self.ctx, |_| f()),
            _ => f(),
        }
    }

    /// Records the sub-operations this PE ran, for [`gather`](Peaks::gather).
    pub(super) fn set_jobs(&self, jobs: Option<u64>) {
        self.jobs.set(jobs);
    }

    /// Records this PE's operation-cache counts, for [`gather`](Peaks::gather).
    pub(super) fn set_cache(&self, stats: Option<CacheStats>) {
        self.cache.set(stats);
    }

    /// Collective (PE 0 calls it from the report, every other PE when its part ends):
    /// every PE's peak resident memory and peak proportional set size so far and
    /// sub-operations run, in PE order, on PE 0.
    pub(super) fn gather(&self) -> PerPe {
        self.gathered.set(true);
        dump_smaps(self.ctx.my_pe());
        let rss = peak_rss_bytes().unwrap_or(0);
        let pss = peak_pss_bytes().unwrap_or(0);
        let jobs = self.jobs.get().map_or(0, |j| j + 1);
        let cache = self
            .cache
            .get()
            .map(|c| [c.lookups, c.local_hits, c.shared_hits]);
        let remote = self.ctx.memory().remote_ops().map(|r| r.to_words());
        let all = self
            .ctx
            .gather(((rss, pss, jobs, cache), remote), 0)
            .unwrap_or_default();
        let some = |b: u64| (b > 0).then_some(b);
        PerPe {
            rss: all.iter().map(|(a, _)| some(a.0)).collect(),
            pss: all.iter().map(|(a, _)| some(a.1)).collect(),
            jobs: all.iter().map(|(a, _)| a.2.checked_sub(1)).collect(),
            cache: all
                .iter()
                .map(|(a, _)| {
                    a.3.map(|[lookups, local_hits, shared_hits]| CacheStats {
                        lookups,
                        local_hits,
                        shared_hits,
                    })
                })
                .collect(),
            remote_ops: all
                .iter()
                .map(|(_, r)| r.map(RemoteOps::from_words))
                .collect(),
        }
    }
}

impl Drop for Peaks<'_> {
    fn drop(&mut self) {
        // A panicking PE ends the run on every PE; a collective now would not help.
        if !self.gathered.get() && !std::thread::panicking() {
            self.gather();
        }
    }
}
