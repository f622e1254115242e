//! Sliced reachability: the state space partitioned over the ranks, each rank exploring
//! its slice with a manager of its own.
//!
//! The node table spread over the PEs (`DistNodeStore`) makes every node made on one
//! PE's behalf a one-sided operation on another's memory: fast under shared windows,
//! hopeless over a network (three round trips a node). Slicing moves the cut from the
//! nodes to the states (Heyman, Geist, Grumberg and Schuster 2000): every rank holds an
//! ordinary one-PE manager (its own table, cache and workers, nothing shared), `k =
//! log2(N)` split variables partition the states, and rank `p` owns the states whose
//! split variables spell `p` ([`split`](super::split)). A `bfs` (or `par`) level on rank
//! `p` takes the image of its frontier with its own manager, keeps the new states of its
//! slice and sends those of every other slice to their owner as an encoded BDD
//! ([`Manager::encode`]), all in one all-to-all exchange; each rank ORs what it received
//! into its own part and removes its visited states. The union of the ranks' frontiers is
//! exactly one PE's frontier, so states, levels and deadlocks are one PE's.
//!
//! Until the visited set reaches [`SliceOptions::split_nodes`] nodes (fewer for `sat`,
//! whose sweeps only serve to choose the split), every rank runs the
//! same levels on the whole set, with no message (they agree once, when they part,
//! whether one of them ran out of nodes meanwhile): a split chosen from the first few
//! states would say little about the later ones. Then every rank chooses the same split
//! variables from the same set (sharing the work of the choice) and keeps its slice. At
//! the end PE 0 gathers the slices and ORs them: the final node count, the deadlocks (and
//! their trace) and the check against a stored reachable set are computed there, by the
//! same code as on one PE.
//!
//! `chaining` runs the same loop with a sweep in place of the image: a rank sweeps its
//! slice with every group (the states it reaches in other slices ride along) and sends
//! what it found in other slices to their owners. A sweep distributes over union, so the
//! union of the ranks' sweeps is one PE's sweep, and the levels are one PE's. `sat`
//! sweeps the same way until the split, then each rank saturates its slice and mails the
//! states it finds in other slices to their owners as it finds them (`sliced_sat.rs`,
//! `slice_mail.rs`); both choose their split variables by the groups that write them
//! (`split_writers.rs`).

use super::bfs::{image_source, successors};
use super::chaining::sweep;
use super::progress::{Progress, Run};
use super::slice_exchange::{agree, agree_alike, exchange, or_decoded};
use super::split::{Split, choose_split, given_split};
use super::split_writers::{Writers, choose_split_by_writers};
use super::{Incomplete, ReachOptions, ReachReport, Strategy, conclude};
use crate::model::Model;
use num_bigint::BigUint;
use rhizome::Ctx;
use rhizome_bdd::{Bdd, BddError, CodecError, Manager, NodeStore, OpCache, Root};

/// The default of [`SliceOptions::split_nodes`] for `bfs`, `par` and `chaining`.
pub const DEFAULT_SPLIT_NODES: usize = 1 << 13;

/// The default of [`SliceOptions::split_nodes`] for `sat`. Its sweeps before the split
/// are on every rank's critical path and find nothing the saturation needs (each slice
/// saturates from its initial states), so it splits earlier: on collision.5 the split
/// variable of 1024, 2048 and 4096 nodes (12, after 8 sweeps) gave shorter rounds than
/// that of 8192 (16, after 11), 0.2 s less CPU time before the first round, and about
/// 0.5 s less on the rounds' critical path.
pub const DEFAULT_SAT_SPLIT_NODES: usize = 1 << 11;

/// How a sliced exploration splits the states.
#[derive(Debug, Clone, Default)]
pub struct SliceOptions {
    /// The ranks explore the whole set alike until it has this many nodes, then split it
    /// (0: at once, from the initial states); `None`: [`DEFAULT_SAT_SPLIT_NODES`] for
    /// `sat`, [`DEFAULT_SPLIT_NODES`] for the others.
    pub split_nodes: Option<usize>,
    /// The split variables, most significant first, instead of the rule's choice: BDD
    /// variable numbers of state variables, log2(ranks) of them, as
    /// [`SliceInfo::split_vars`] reports them (`None`: the rule of `split.rs`, or of
    /// `split_writers.rs` for `sat` and `chaining`, chooses). On collision.5 `sat` over 2
    /// ranks the variable decides the total work: 1.1 s with variable 4, 2.0 s with the
    /// rule's 12, over 20 s with some (`rhizome reach --split-vars`).
    pub split_vars: Option<Vec<u32>>,
}

impl SliceOptions {
    /// The split threshold for `strategy`.
    fn split_nodes_for(&self, strategy: Strategy) -> usize {
        self.split_nodes.unwrap_or(match strategy {
            Strategy::Sat => DEFAULT_SAT_SPLIT_NODES,
            _ => DEFAULT_SPLIT_NODES,
        })
    }
}

/// How the states were sliced, on every rank alike.
#[derive(Debug, Clone, Default)]
pub struct SliceInfo {
    /// The split variables, most significant first (empty: the exploration ended before
    /// the set was large enough to split, or there is one rank).
    pub split_vars: Vec<u32>,
    /// The level after which the states were split (`None`: never).
    pub split_level: Option<usize>,
    /// Each rank's states at the end (the whole set on every rank if never split).
    pub slice_states: Vec<BigUint>,
    /// Nodes of each rank's set of states at the end.
    pub slice_nodes: Vec<usize>,
    /// Whether the split variables were given ([`SliceOptions::split_vars`]) rather than
    /// chosen.
    pub split_given: bool,
    /// Bytes of encoded states each rank sent to the others, over all levels.
    pub bytes_sent: Vec<u64>,
}

/// What a sliced exploration gives each rank.
#[derive(Debug, Clone)]
pub struct SlicedOutcome {
    /// The report, on PE 0 (with the union of the slices as its reachable set).
    pub report: Option<ReachReport>,
    /// How the states were sliced.
    pub slices: SliceInfo,
}

/// Why a sliced exploration gave no report.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SlicedError {
    /// The combination cannot run sliced (every rank finds this before any message).
    #[error("{0}")]
    Unsupported(String),
    /// A rank's table filled up for good: on PE 0, what it had found (its slice).
    #[error(transparent)]
    Incomplete(Box<Incomplete>),
    /// A rank received states that do not decode (a fault, not an input error).
    #[error("the states exchanged between ranks are corrupt: {0}")]
    Exchange(String),
}

/// Why a level could not be done on this rank, or on another.
pub(super) enum LevelError {
    Bdd(BddError),
    Corrupt(String),
    /// Another rank failed: this one stops with it.
    Peer,
}

impl From<BddError> for LevelError {
    fn from(e: BddError) -> Self {
        LevelError::Bdd(e)
    }
}

impl From<CodecError> for LevelError {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::Corrupt(why) => LevelError::Corrupt(why),
            CodecError::Bdd(e) => LevelError::Bdd(e),
        }
    }
}

/// Why `opts` cannot run sliced on `ranks` ranks, if they cannot (every strategy can).
pub fn sliced_unsupported(ranks: usize, opts: &ReachOptions) -> Option<String> {
    if !ranks.is_power_of_two() {
        return Some(format!(
            "sliced exploration needs a power of two of PEs, not {ranks}"
        ));
    }
    if opts.count_nodes {
        return Some(
            "sliced exploration cannot count the nodes of the whole visited set at every level"
                .into(),
        );
    }
    None
}

/// Why `vars` cannot split the states of `model` over `ranks` ranks (a power of two), if
/// they cannot: they must be `log2(ranks)` distinct state variables of the model.
fn split_vars_unusable(model: &Model, ranks: usize, vars: &[u32]) -> Option<String> {
    let k = ranks.trailing_zeros() as usize;
    if vars.len() != k {
        return Some(format!(
            "--split-vars: {ranks} PEs are split by {k} variable{}, not {}",
            if k == 1 { "" } else { "s" },
            vars.len()
        ));
    }
    if let Some(v) = vars.iter().find(|v| !model.state_vars.contains(v)) {
        let sv = &model.state_vars;
        let shown: Vec<String> = match sv.len() {
            0..=5 => sv.iter().map(|v| v.to_string()).collect(),
            n => [sv[0], sv[1], sv[2]]
                .iter()
                .map(|v| v.to_string())
                .chain(["...".into(), sv[n - 1].to_string()])
                .collect(),
        };
        let range = format!("its {} state variables: {}", sv.len(), shown.join(", "));
        return Some(format!(
            "--split-vars: {v} is not a state variable of the model ({range})"
        ));
    }
    if let Some((i, v)) = vars
        .iter()
        .enumerate()
        .find(|(i, v)| vars[..*i].contains(v))
    {
        return Some(format!(
            "--split-vars: variable {v} given twice (position {})",
            i + 1
        ));
    }
    None
}

/// Explores `model` on the ranks of `ctx`, each rank with its own manager `m` (on which
/// the model is loaded alike), the states sliced over the ranks as the module describes.
/// Collective: every rank calls it with the same arguments. `progress` gets every level's
/// record with the counts of all ranks (its `visited` is this rank's slice).
pub fn reach_sliced<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    opts: &ReachOptions,
    slicing: &SliceOptions,
    progress: &mut dyn FnMut(&Manager<S, C>, &Progress<'_>),
) -> Result<SlicedOutcome, SlicedError> {
    let ranks = ctx.num_pes();
    if let Some(why) = sliced_unsupported(ranks, opts) {
        return Err(SlicedError::Unsupported(why));
    }
    if let Some(why) =
        (slicing.split_vars.as_deref()).and_then(|vars| split_vars_unusable(model, ranks, vars))
    {
        return Err(SlicedError::Unsupported(why));
    }
    // As on one PE: `sat` and `par` need the one-operation image of interleaved
    // variables.
    let strategy = match strategy {
        Strategy::Par | Strategy::Sat if !model.interleaved => Strategy::Bfs,
        s => s,
    };
    // Saturation has no levels: its sweeps before the split are not recorded.
    let levels_shown = strategy != Strategy::Sat;
    // Chaining has no frontier apart from the visited set (as on one PE).
    let frontier_shown = strategy != Strategy::Chaining;
    super::timeline::mark(ctx.my_pe(), || "start".into());
    let mut run = Run::start(m, model, opts, progress);
    if levels_shown {
        let (states, nodes) = m.satcount_and_nodes(model.initial, &model.state_vars);
        run.push(m, states, frontier_shown.then_some(nodes), true);
    }
    let mut state = Sliced {
        front: m.root(model.initial),
        split: None,
        split_level: None,
        writers: None,
        bytes_sent: 0,
    };
    let split_nodes = slicing.split_nodes_for(strategy);
    // Until the split every rank computes the same levels, so the ranks agree on nothing
    // level by level (a round trip each: resistance.1 sweeps 1005 levels before its
    // split); only a failure must reach them all, and they agree on that once, when they
    // part: at the split, or at the end if the exploration ends first (`agree_alike`).
    let mut parted = ranks == 1;
    // The level of the earliest failure before the split, if a rank failed.
    let mut failed_at = None;
    let explored = loop {
        if state.split.is_none() && ranks > 1 && m.node_count(run.visited.get()) >= split_nodes {
            parted = true;
            if let Err((e, at)) = agree_alike(ctx, Ok(()), run.levels) {
                failed_at = Some(at);
                break Err(e);
            }
            // The same set on every rank, the same deterministic rule: the same split.
            let given = slicing.split_vars.as_deref();
            let taken = state.take_slice(ctx, m, model, strategy, given, &mut run);
            // A rank whose table filled up while it cut its slice (after the choice's
            // last collective) stops every rank here, not in the first exchange.
            if let Err((e, at)) = agree_alike(ctx, taken.map_err(LevelError::Bdd), run.levels) {
                failed_at = Some(at);
                break Err(e);
            }
        }
        if strategy == Strategy::Sat && (state.split.is_some() || ranks == 1) {
            break super::sliced_sat::saturate_slices(ctx, m, model, &mut state, &mut run);
        }
        run.next_level();
        let local = level(ctx, m, model, strategy, &mut state, &run);
        super::timeline::mark(ctx.my_pe(), || format!("level {} computed", run.levels));
        let grown = if state.split.is_some() {
            agree(ctx, m, model, local)
        } else {
            local.map(|new| {
                let (count, nodes) = m.satcount_and_nodes(new, &model.state_vars);
                (new, count, nodes)
            })
        };
        let grown = match grown {
            Ok(g) => g,
            Err(e) => break Err(e),
        };
        let (new, total, nodes) = grown;
        let last = run
            .per_level
            .last()
            .map(|r| r.states.clone())
            .unwrap_or_default();
        super::timeline::mark(ctx.my_pe(), || {
            let how = if state.split.is_some() {
                "agreed"
            } else {
                "alike"
            };
            format!("level {} {how}: {total} states {nodes} nodes", run.levels)
        });
        if total == BigUint::ZERO {
            if levels_shown {
                run.push(m, last, frontier_shown.then_some(0), false);
            }
            break Ok(());
        }
        state.front.set(new);
        match m.or(run.visited.get(), new) {
            Ok(u) => run.visited.set(u),
            Err(e) => break Err(LevelError::Bdd(e)),
        }
        if levels_shown {
            run.push(m, last + total, frontier_shown.then_some(nodes), true);
        }
    };
    let explored = if parted {
        explored
    } else {
        agree_alike(ctx, explored, run.levels).map_err(|(e, at)| {
            failed_at = Some(at);
            e
        })
    };
    // Every rank names the level of the earliest failure; the partial report is this
    // rank's own (a rank that did not fail went on to the split or the end).
    match finish(ctx, m, model, strategy, opts, run, state, explored) {
        Err(SlicedError::Incomplete(mut i)) => {
            if let Some(at) = failed_at {
                i.level = at;
            }
            Err(SlicedError::Incomplete(i))
        }
        r => r,
    }
}

/// A rank's part of the exploration besides the visited states.
pub(super) struct Sliced {
    /// This rank's states found by the last level.
    front: Root,
    /// The split, once taken.
    pub(super) split: Option<Split>,
    split_level: Option<usize>,
    /// Which groups write which variables, read once at the split (`sat`, `chaining`).
    pub(super) writers: Option<Writers>,
    /// Bytes of encoded states sent to other ranks so far.
    pub(super) bytes_sent: u64,
}

impl Sliced {
    /// Chooses the split from the visited set (for `sat` and `chaining` by the groups
    /// that write the split variables), or takes the `given` variables (checked by the
    /// caller), and keeps this rank's slice of the visited set and of the frontier.
    fn take_slice<S: NodeStore, C: OpCache>(
        &mut self,
        ctx: &Ctx,
        m: &mut Manager<S, C>,
        model: &Model,
        strategy: Strategy,
        given: Option<&[u32]>,
        run: &mut Run<'_, S, C>,
    ) -> Result<(), BddError> {
        let k = ctx.num_pes().trailing_zeros();
        if matches!(strategy, Strategy::Sat | Strategy::Chaining) {
            // Their slices keep to the groups that leave the split variables alone.
            super::timeline::mark(ctx.my_pe(), || "split: writers".into());
            // Collective: a rank whose table fills here must not leave the others
            // waiting for it in the choice.
            self.writers = Some(super::split::alike(ctx, Writers::of(m, model))?);
        }
        super::timeline::mark(ctx.my_pe(), || "split: choose".into());
        let split = match (given, &self.writers) {
            (Some(vars), _) => given_split(m, vars, k)?,
            (None, Some(writers)) => {
                choose_split_by_writers(ctx, m, model, writers, run.visited.get(), k)?
            }
            (None, None) => choose_split(ctx, m, &model.state_vars, run.visited.get(), k)?,
        };
        super::timeline::mark(ctx.my_pe(), || format!("split: chosen {:?}", split.vars));
        let mine = split.slices[ctx.my_pe()].get();
        let v = m.and(run.visited.get(), mine)?;
        run.visited.set(v);
        let f = m.and(self.front.get(), mine)?;
        self.front.set(f);
        self.split = Some(split);
        self.split_level = Some(run.levels);
        Ok(())
    }
}

/// This rank's new states of one level: the image of its frontier (or slice) minus its
/// visited states (for `chaining` and `sat`, its slice's sweep minus them), with what the
/// other ranks found in its slice, after the exchange.
fn level<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    state: &mut Sliced,
    run: &Run<'_, S, C>,
) -> Result<Bdd, LevelError> {
    let seen = run.visited.get();
    let succ = match strategy {
        Strategy::Chaining | Strategy::Sat => sweep(m, model, seen).and_then(|s| m.diff(s, seen)),
        Strategy::Bfs | Strategy::Par => {
            let v = image_source(m, state.front.get(), seen);
            successors(m, model, strategy, v, seen)
        }
    };
    let Some(split) = &state.split else {
        return Ok(succ?);
    };
    let got = exchange(
        ctx,
        m,
        split,
        succ.map_err(LevelError::from),
        &mut state.bytes_sent,
    )?;
    // What others sent may hold states this rank visited already.
    Ok(m.diff(got, seen)?)
}

/// The end of the exploration: the slices' figures gathered everywhere, the slices
/// ORed on PE 0 and the report concluded there as on one PE.
#[allow(clippy::too_many_arguments)]
fn finish<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    strategy: Strategy,
    opts: &ReachOptions,
    mut run: Run<'_, S, C>,
    state: Sliced,
    explored: Result<(), LevelError>,
) -> Result<SlicedOutcome, SlicedError> {
    let me = ctx.my_pe();
    let explored = match explored {
        Ok(()) => Ok(()),
        Err(LevelError::Bdd(e)) => Err(e),
        Err(LevelError::Corrupt(why)) => return Err(SlicedError::Exchange(why)),
        Err(LevelError::Peer) => return Err(SlicedError::Exchange("a rank failed".into())),
    };
    super::timeline::mark(me, || "finish".into());
    let (count, nodes) = m.satcount_and_nodes(run.visited.get(), &model.state_vars);
    let figures = ctx.allgather((count.to_bytes_le(), nodes as u64, state.bytes_sent));
    super::timeline::mark(me, || "finish: figures gathered".into());
    let slices = SliceInfo {
        split_vars: state
            .split
            .as_ref()
            .map(|s| s.vars.clone())
            .unwrap_or_default(),
        split_level: state.split_level,
        split_given: state.split.as_ref().is_some_and(|s| s.given),
        slice_states: figures
            .iter()
            .map(|f| BigUint::from_bytes_le(&f.0))
            .collect(),
        slice_nodes: figures.iter().map(|f| f.1 as usize).collect(),
        bytes_sent: figures.iter().map(|f| f.2).collect(),
    };
    // Every rank stopped together (the counts are agreed); the slices meet on PE 0.
    let explored = match (explored, &state.split) {
        (Ok(()), Some(_)) => {
            let encoded = if me == 0 {
                Vec::new()
            } else {
                m.encode(&[run.visited.get()])
            };
            super::timeline::mark(me, || "finish: encoded".into());
            let gathered = ctx.gather(encoded, 0);
            super::timeline::mark(me, || "finish: gathered".into());
            match gathered {
                None => {
                    return Ok(SlicedOutcome {
                        report: None,
                        slices,
                    });
                }
                Some(all) => match union_into(m, &mut run, &all[1..]) {
                    Err(CodecError::Corrupt(why)) => return Err(SlicedError::Exchange(why)),
                    Err(CodecError::Bdd(e)) => Err(e),
                    Ok(()) => Ok(()),
                },
            }
        }
        (Ok(()), None) if me != 0 => {
            return Ok(SlicedOutcome {
                report: None,
                slices,
            });
        }
        (explored, _) => explored,
    };
    // On PE 0 the report; on every rank, after a failure, what it had found.
    super::timeline::mark(me, || "finish: union done".into());
    let concluded = conclude(m, model, strategy, opts, run, explored);
    super::timeline::mark(me, || "finish: concluded".into());
    match concluded {
        Ok(report) => Ok(SlicedOutcome {
            report: Some(report),
            slices,
        }),
        Err(incomplete) => Err(SlicedError::Incomplete(Box::new(incomplete))),
    }
}

/// ORs the encoded slices `parts` into the visited states of `run`.
fn union_into<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    run: &mut Run<'_, S, C>,
    parts: &[Vec<u8>],
) -> Result<(), CodecError> {
    for bytes in parts {
        let u = or_decoded(m, run.visited.get(), bytes)?;
        run.visited.set(u);
    }
    Ok(())
}
