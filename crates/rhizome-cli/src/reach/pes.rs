//! `reach` on one PE or several: the world it runs in, the node table of each PE, and the
//! per-PE peak memory of the report.
//!
//! One PE (no `--pes`, no mpirun) runs the manager on the PE's pool with the shared-memory
//! table, growing as it needs. On N PEs (`--pes N` on the local transport, or one PE per
//! rank under `mpirun -np N`) the node table is a [`DistNodeStore`]: each PE holds one
//! partition, of the size `--memory` allows a PE, so the table holds N times the nodes one
//! PE could. PE 0 loads the model, explores it with its workers and reports; the other PEs
//! only hold their partitions until it is done (in the final barrier). Every strategy
//! runs unchanged on PE 0 over the distributed table, so the answers are those of one PE
//! by construction; spreading the *work* over the PEs as well is not built.

use super::{Outputs, ReachArgs, drive};
use crate::reach::sizes::peak_rss_bytes;
use rhizome::{Ctx, World};
use rhizome_bdd::{Config, DistNodeStore, Manager, SharedOpCache};
use std::cell::Cell;
use std::sync::{Arc, Mutex};

/// Slots of each PE's partition without `--memory`: 8M nodes, about 200 MB a PE (the
/// partitions do not grow, and the local transport commits them when it creates them).
const DEFAULT_SLOTS_PER_PE: usize = 1 << 23;

/// Runs `reach` on the PEs of `args` (`--pes`, or mpirun's ranks) and returns PE 0's
/// outcome (or the first failing PE's).
pub(super) fn run(
    args: &ReachArgs,
    config: Config,
    memory: usize,
    outputs: Outputs,
) -> anyhow::Result<()> {
    let outputs = Mutex::new(outputs);
    let results = World::builder()
        .pes(args.runtime.pes.unwrap_or(1))
        .workers(config.workers)
        .run(|ctx| {
            let peaks = Peaks {
                ctx,
                gathered: Cell::new(false),
            };
            let outcome = on_pe(ctx, args, &config, memory, &outputs, &peaks);
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
    outputs: &Mutex<Outputs>,
    peaks: &Peaks<'_>,
) -> anyhow::Result<()> {
    let pool = Arc::clone(ctx.pool());
    if ctx.num_pes() == 1 {
        let m = Manager::with_pool(config.clone(), pool);
        return drive(args, m, memory, outputs, peaks);
    }
    // `--memory` is per PE: one partition of that size on every PE, and PE 0's operation
    // cache the size one PE starts with, not in proportion to the whole table.
    let slots = match args.memory {
        Some(_) => config.max_nodes,
        None => DEFAULT_SLOTS_PER_PE.min(config.max_nodes),
    };
    let store = DistNodeStore::new(ctx, slots, ctx.workers());
    if ctx.my_pe() != 0 {
        return Ok(());
    }
    let nodes = store.slots_per_pe().min(config.initial_nodes);
    let entries = (nodes as f64 * config.cache_ratio) as usize;
    let cache = SharedOpCache::new(entries, entries);
    let m = Manager::from_parts_on_pool(store, cache, config.clone(), pool);
    drive(args, m, memory, outputs, peaks)
}

/// The per-PE peak memory of the report: gathered on PE 0 once the exploration is done.
pub(super) struct Peaks<'a> {
    ctx: &'a Ctx,
    gathered: Cell<bool>,
}

impl Peaks<'_> {
    /// PEs of the run.
    pub(super) fn pes(&self) -> usize {
        self.ctx.num_pes()
    }

    /// The transport's name.
    pub(super) fn transport(&self) -> &'static str {
        self.ctx.transport_name()
    }

    /// Collective (PE 0 calls it from the report, every other PE when its part ends):
    /// every PE's peak resident memory so far, in PE order, on PE 0.
    pub(super) fn gather(&self) -> Vec<Option<u64>> {
        self.gathered.set(true);
        let own = peak_rss_bytes().unwrap_or(0);
        self.ctx
            .gather(own, 0)
            .unwrap_or_default()
            .into_iter()
            .map(|b| (b > 0).then_some(b))
            .collect()
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
