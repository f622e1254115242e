//! `reach --split`: on several PEs, the states sliced over the PEs (each PE a one-PE
//! manager of its own, `rhizome_mc::reach::reach_sliced`) or the node table spread over
//! them (`pes.rs`), and the report's lines about the slices.
//!
//! `auto` (the default) slices where slicing runs (every strategy on a power of two of
//! PEs, without `--count-nodes`) and spreads the table otherwise, so every strategy runs
//! on any number of PEs; `states` asks for slices and refuses what they cannot run.

use super::sizes::human_bytes;
use super::{ReachArgs, load_model};
use anyhow::bail;
use rhizome::Ctx;
use rhizome_bdd::{Manager, NodeStore, OpCache};
use rhizome_mc::reach::{
    ReachOptions, SliceInfo, SliceOptions, SlicedError, reach_sliced, sliced_unsupported,
};
use serde_json::json;

/// How `reach` runs on several PEs (`--split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SplitMode {
    /// `states` where it runs (a power of two of PEs, without `--count-nodes`), else
    /// `table`.
    Auto,
    /// The states sliced over the PEs by split variables; each PE explores its slice
    /// with a manager of its own and sends the states of other slices to their owners
    /// once a level.
    States,
    /// One node table spread over the PEs; PE 0 drives and the PEs share its
    /// operations.
    Table,
}

impl SplitMode {
    /// The mode's name on the command line and in the report (`split`).
    pub(super) fn name(self) -> &'static str {
        match self {
            SplitMode::Auto => "auto",
            SplitMode::States => "states",
            SplitMode::Table => "table",
        }
    }

    /// The mode that runs: `States` if the states are sliced, else `Table`.
    pub(super) fn ran(sliced: bool) -> SplitMode {
        if sliced {
            SplitMode::States
        } else {
            SplitMode::Table
        }
    }
}

/// Whether this run of `args` on `pes` PEs slices the states; an error if `--split
/// states` was asked for where it cannot run. The same answer on every PE.
pub(super) fn slices_states(args: &ReachArgs, pes: usize) -> anyhow::Result<bool> {
    if pes == 1 {
        return Ok(false);
    }
    let opts = ReachOptions {
        count_nodes: args.count_nodes,
        ..ReachOptions::default()
    };
    let why = sliced_unsupported(pes, &opts);
    if args.split_vars.is_some() {
        let unsliced = match (args.split, &why) {
            (SplitMode::Table, _) => Some("--split table has no split variables".to_string()),
            (SplitMode::Auto, Some(why)) => Some(format!("the states are not sliced here: {why}")),
            _ => None,
        };
        if let Some(unsliced) = unsliced {
            bail!("--split-vars: {unsliced}");
        }
    }
    match (args.split, why) {
        (SplitMode::Table, _) => Ok(false),
        (SplitMode::Auto, why) => Ok(why.is_none()),
        (SplitMode::States, None) => Ok(true),
        (SplitMode::States, Some(why)) => {
            bail!("--split states: {why} (--split table runs every strategy on any number)")
        }
    }
}

/// The split threshold: `RHIZOME_SPLIT_NODES` (a tuning knob for experiments and tests,
/// not an option), else the strategy's default
/// ([`DEFAULT_SPLIT_NODES`](rhizome_mc::reach::DEFAULT_SPLIT_NODES),
/// [`DEFAULT_SAT_SPLIT_NODES`](rhizome_mc::reach::DEFAULT_SAT_SPLIT_NODES) for `sat`);
/// the split variables of `--split-vars`, if given.
pub(super) fn slice_options(args: &ReachArgs) -> SliceOptions {
    SliceOptions {
        split_nodes: super::tuning_knob("RHIZOME_SPLIT_NODES"),
        split_vars: args.split_vars.clone(),
    }
}

/// A PE other than 0 in a sliced run: loads the model into its own manager and explores
/// its slice; PE 0 prints the report, and any failure the PEs met together.
pub(super) fn follow<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    args: &ReachArgs,
    mut m: Manager<S, C>,
) -> anyhow::Result<()> {
    let (model, _) = load_model(args, &mut m, false)?;
    let mut mem_log = super::mem_log::MemLog::open(ctx.my_pe());
    let opts = ReachOptions {
        deadlocks: args.deadlocks,
        trace: args.trace,
        ..ReachOptions::default()
    };
    match reach_sliced(
        ctx,
        &mut m,
        &model,
        args.strategy,
        &opts,
        &slice_options(args),
        &mut |m, p| mem_log.level(m, p),
    ) {
        // An exchange that went wrong is this PE's to tell; running out of nodes, PE 0
        // tells for all.
        Err(SlicedError::Exchange(why)) => bail!("PE {}: {why}", ctx.my_pe()),
        _ => Ok(()),
    }
}

/// The summary's line about the slices.
pub(super) fn slices_line(s: &SliceInfo) -> String {
    let Some(level) = s.split_level else {
        return "not split: the exploration ended before the visited set was large enough, every PE explored it all".into();
    };
    let each: Vec<String> = s
        .slice_states
        .iter()
        .zip(&s.slice_nodes)
        .map(|(states, nodes)| format!("{states} states / {nodes} nodes"))
        .collect();
    let sent: u64 = s.bytes_sent.iter().sum();
    format!(
        "{} (per PE; split after level {level} by variable{} {:?}{}; {} sent)",
        each.join(", "),
        if s.split_vars.len() == 1 { "" } else { "s" },
        s.split_vars,
        if s.split_given {
            " of --split-vars"
        } else {
            ""
        },
        human_bytes(sent)
    )
}

/// The `--json` report's `slices` object.
pub(super) fn slices_json(s: &SliceInfo) -> serde_json::Value {
    json!({
        "split_vars": s.split_vars,
        "split_vars_given": s.split_given,
        "split_level": s.split_level,
        "states_per_pe": s.slice_states.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "nodes_per_pe": s.slice_nodes,
        "bytes_sent_per_pe": s.bytes_sent,
    })
}
