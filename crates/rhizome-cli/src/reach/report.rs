//! The report of a `reach` run beside the exploration's own: how the run was set up and
//! what it cost ([`RunInfo`]), the summary lines built from it, and the `--json` object.

use super::sizes::human_bytes;
use super::{Outputs, ReachArgs, sliced};
use anyhow::Context;
use rhizome_bdd::{Manager, NodeStore, OpCache};
use rhizome_mc::model::Model;
use rhizome_mc::reach::ReachReport;
use serde_json::json;
use std::path::Path;

/// The summary's line of one-sided operations sent as messages, per PE, where counted.
pub(super) fn remote_ops_line(per_pe: &[Option<rhizome::transport::RemoteOps>]) -> Option<String> {
    if per_pe.iter().all(Option::is_none) {
        return None;
    }
    let each: Vec<String> = per_pe
        .iter()
        .map(|r| {
            r.map_or("?".into(), |r| {
                format!(
                    "{} ({} gets, {} puts, {} CAS, {} other)",
                    r.messages(),
                    r.gets,
                    r.puts,
                    r.compare_exchanges,
                    r.other_atomics
                )
            })
        })
        .collect();
    Some(format!("{} (requests sent, per PE)", each.join(", ")))
}

/// How a run was set up and what it cost, beside its [`ReachReport`].
pub(super) struct RunInfo {
    /// How the PEs divided the work: `States` (sliced) or `Table` (also on one PE).
    pub(super) split: sliced::SplitMode,
    /// How they were sliced (a sliced run that completed).
    pub(super) slices: Option<rhizome_mc::reach::SliceInfo>,
    pub(super) workers: usize,
    pub(super) pes: usize,
    pub(super) transport: &'static str,
    pub(super) load_seconds: f64,
    /// This process's peak resident memory.
    pub(super) peak: Option<u64>,
    /// Every PE's (PE 0's process first).
    pub(super) peaks: Vec<Option<u64>>,
    /// Every PE's peak proportional set size (see `pss.rs`).
    pub(super) pss: Vec<Option<u64>>,
    /// Every PE's count of sub-operations it ran (on several PEs).
    pub(super) jobs: Vec<Option<u64>>,
    /// Every PE's operation-cache lookups and hits (where counted).
    pub(super) cache: Vec<Option<rhizome_bdd::CacheStats>>,
    /// Every PE's one-sided operations sent to other PEs as messages (where counted).
    pub(super) remote_ops: Vec<Option<rhizome::transport::RemoteOps>>,
}

impl RunInfo {
    /// The summary's peak memory: this process's, and each PE's on several processes.
    pub(super) fn peak_line(&self) -> Option<String> {
        let own = human_bytes(self.peak?);
        if self.pes == 1 {
            return Some(own);
        }
        if self.transport == "local" {
            return Some(format!("{own} (the {} PEs share this process)", self.pes));
        }
        Some(format!(
            "{own} on PE 0; per PE {}",
            per_pe_text(&self.peaks)
        ))
    }

    /// The summary's peak proportional set size per PE, on several processes.
    pub(super) fn pss_line(&self) -> Option<String> {
        if self.pes == 1 || self.transport == "local" {
            return None;
        }
        Some(format!(
            "per PE {} (shared pages split)",
            per_pe_text(&self.pss)
        ))
    }
}

/// Byte counts of the PEs, `?` where unknown: `149.5 MiB, 133.5 MiB`.
fn per_pe_text(bytes: &[Option<u64>]) -> String {
    let each: Vec<String> = bytes
        .iter()
        .map(|p| p.map_or("?".into(), human_bytes))
        .collect();
    each.join(", ")
}

/// The `--json` report: the summary's fields, the per-level series, the deadlocks and
/// their trace, and whether the run completed.
pub(super) fn write_json<S: NodeStore, C: OpCache>(
    path: &Path,
    args: &ReachArgs,
    m: &Manager<S, C>,
    model: &Model,
    report: &ReachReport,
    run: &RunInfo,
    outputs: &mut Outputs,
) -> anyhow::Result<()> {
    let stats = m.stats();
    let per_level: Vec<serde_json::Value> = report
        .per_level
        .iter()
        .map(|r| {
            json!({
                "level": r.level,
                "states": r.states.to_string(),
                "visited_nodes": r.visited_nodes,
                "frontier_nodes": r.frontier_nodes,
                "table_used": r.table_used,
                "table_size": r.table_size,
                "collections": r.collections,
                "seconds": r.seconds,
            })
        })
        .collect();
    let mut obj = json!({
        "model": model.name,
        "strategy": report.strategy.name(),
        "requested_strategy": args.strategy.name(),
        "workers": run.workers,
        "pes": run.pes,
        "transport": run.transport,
        // How the PEs divided the work (`--split`): null on one PE.
        "split": (run.pes > 1).then(|| run.split.name()),
        // A sliced run's split and each PE's slice at the end: states, nodes, and the
        // bytes of states it sent to the others.
        "slices": run.slices.as_ref().map(sliced::slices_json),
        "complete": report.complete,
        "states": report.states.to_string(),
        "levels": report.levels,
        "nodes": report.nodes,
        "seconds": report.seconds,
        "load_seconds": run.load_seconds,
        "peak_rss_bytes": run.peak,
        // Each PE's peak resident memory; PEs of the local transport share one process,
        // so each reports the process's.
        "peak_rss_bytes_per_pe": run.peaks,
        // Each PE's peak proportional set size: pages shared between processes (the
        // other ranks' partitions under shared windows) split between them, so the PEs'
        // figures add up to their memory together. Sampled every 100 ms and at the end.
        "peak_pss_bytes_per_pe": run.pss,
        // The sub-operations (jobs of the spread BDD operations) each PE ran.
        "jobs_per_pe": run.jobs,
        // Each PE's operation-cache lookups, hits in its own cache, and hits in the
        // cache the PEs share (null where not counted: one PE's cache).
        "op_cache_per_pe": run.cache.iter().map(|c| c.map(|c| json!({
            "lookups": c.lookups,
            "local_hits": c.local_hits,
            "shared_hits": c.shared_hits,
        }))).collect::<Vec<_>>(),
        // Each PE's one-sided operations on other PEs carried as request messages
        // (`RHIZOME_MPI_RMA=messages`), by kind; null where the transport sends none.
        "remote_ops_per_pe": run.remote_ops.iter().map(|r| r.map(|r| json!({
            "messages": r.messages(),
            "gets": r.gets,
            "get_bytes": r.get_bytes,
            "puts": r.puts,
            "compare_exchanges": r.compare_exchanges,
            "other_atomics": r.other_atomics,
            "waited": r.waited,
        }))).collect::<Vec<_>>(),
        "collections": stats.collections,
        "table_size": stats.table_size,
        "per_level": per_level,
    });
    if let Some(d) = &report.deadlocks {
        obj["deadlocks"] = json!(d.count.to_string());
        obj["deadlock_example"] = json!(d.example);
        if let Some(trace) = &d.trace {
            obj["trace"] = trace
                .iter()
                .map(|s| json!({"group": s.group, "state": s.state}))
                .collect();
            obj["trace_seconds"] = json!(d.trace_seconds);
        }
    }
    if args.count_nodes {
        obj["level_nodes"] = json!(report.level_nodes);
    }
    // `null`: the model stores no reachable set (formats A and B) or the run is partial.
    obj["check"] = json!(report.stored_check.as_ref().map(|c| c.to_string()));
    let text = serde_json::to_string_pretty(&obj)? + "\n";
    match &mut outputs.report_to_stdout {
        Some(stdout) => stdout.write(&text),
        None => std::fs::write(path, text).with_context(|| format!("writing {}", path.display())),
    }
}
