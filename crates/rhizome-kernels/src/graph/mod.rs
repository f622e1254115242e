//! Graph500-style graph kernels on the flat-combining structures (seed 003, section 5):
//! breadth-first search and connected components over a distributed Kronecker graph,
//! each in three implementations, every result checked, rates in MTEPS as Graph500
//! reports them.
//!
//! - [`Kronecker`]: the Graph500 edge generator; [`DistGraph`]: its graph, vertices
//!   block-distributed over the PEs, CSR per PE, undirected.
//! - [`bfs`]: the frontier is the combining [`GlobalQueue`](rhizome_collections::fc::GlobalQueue)
//!   ([`Impl::Combining`], distributed mode), the same queue without combining
//!   ([`Impl::None`]), or a hand-tuned per-PE frontier with aggregated messages that
//!   switches between top-down and bottom-up levels ([`Impl::Tuned`], direction-optimizing).
//!   The queue versions switch the same way (as the paper's BFS on its queue does): the
//!   queue carries the frontier from one level to the next, and a popped vertex is
//!   expanded by its owner (`bfs_queue`). The tree is
//!   validated as Graph500 does (`validate`).
//! - [`cc`]: three-phase connected components; phase 1 inserts root pairs into the
//!   combining [`GlobalSet`](rhizome_collections::fc::GlobalSet), the non-combining one,
//!   or (tuned) keeps them in PE-local hash sets; the traversals are the same in all
//!   three (PE-local walks meeting at the arcs between PEs, exchanged by a conveyor; the
//!   set versions insert each pair as it arrives); phases 2
//!   and 3 (Shiloach-Vishkin, relabelling) are shared. Checked against a sequential
//!   [`UnionFind`] of the same edges.
//!
//! ```
//! use rhizome::World;
//! use rhizome_kernels::graph::{DistGraph, Impl, Kronecker, bfs, cc, pick_root};
//! use std::rc::Rc;
//!
//! let g = Kronecker::new(8, 16, 1).unwrap();
//! let out = World::builder().pes(2).run(|ctx| {
//!     let graph = Rc::new(DistGraph::build(ctx, &g));
//!     let root = pick_root(ctx, &graph, 0);
//!     let b = bfs(ctx, &graph, root, Impl::Tuned, 64).unwrap();
//!     let c = cc(ctx, &graph, Impl::Combining, 64).unwrap();
//!     (b.edges, c.edges)
//! }).unwrap();
//! assert_eq!(out[0], out[1]);
//! assert!(out[0].0 > 0 && out[0].1 == 16 << 8);
//! ```

mod bfs_queue;
mod bfs_tuned;
mod cc_set;
mod cc_tuned;
pub mod components;
pub mod dist;
pub mod kronecker;
pub mod level_cost;
mod timeline;
mod validate;

pub use components::{UnionFind, shiloach_vishkin};
pub use dist::DistGraph;
pub use kronecker::{DEFAULT_EDGEFACTOR, Kronecker};

use rhizome::Ctx;
use rhizome_collections::fc::{Mode, Stats};
use std::rc::Rc;

/// A label no vertex has yet (BFS parent, component root).
pub const NONE: u64 = u64::MAX;

/// Cooperative tasks per PE of the queue and set implementations, unless told.
pub const DEFAULT_TASKS: usize = 1024;

/// Which implementation of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// On the flat-combining structure (distributed combining).
    Combining,
    /// On the same structure without combining (`Mode::None`).
    None,
    /// Hand-tuned: per-PE state and aggregated messages, no global structure.
    Tuned,
}

impl Impl {
    /// All three, in the order they are reported.
    pub const ALL: [Impl; 3] = [Impl::Combining, Impl::None, Impl::Tuned];

    /// Its name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Combining => "combining",
            Impl::None => "none",
            Impl::Tuned => "tuned",
        }
    }
}

/// One PE's raw result of a kernel: the time (slowest PE), its vertices' labels (BFS
/// parents or components) and the structure's counters summed over all PEs.
struct Traversal {
    secs: f64,
    labels: Vec<u64>,
    stats: Option<Stats>,
    /// What went wrong that the result's validation cannot see (a frontier queue not
    /// drained).
    error: Option<String>,
}

/// A checked run of a kernel, the same on every PE.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// Wall time of the slowest PE, construction of the structures excluded.
    pub secs: f64,
    /// Input edges traversed, as Graph500 counts them: generated edges (self loops and
    /// repeats included) within the searched component (BFS) or all of them (CC).
    pub edges: u64,
    /// Vertices reached (BFS) or components found (CC).
    pub count: u64,
    /// The global structure's counters summed over all PEs (none for [`Impl::Tuned`]).
    pub stats: Option<Stats>,
}

impl Run {
    /// Millions of traversed edges per second.
    pub fn mteps(&self) -> f64 {
        self.edges as f64 / self.secs / 1e6
    }
}

/// Collective: a search key as Graph500 picks them, the same on every PE: a vertex of
/// degree at least one, drawn from `seed` (vertex 0 if the graph has no edge at all).
pub fn pick_root(ctx: &Ctx, graph: &DistGraph, seed: u64) -> u64 {
    let mut rng = rhizome::rng::XorShift64::for_stream(seed ^ 0x6772_6170_6835_3030);
    for _ in 0..64 {
        let v = rng.next_u64() & (graph.vertices() - 1);
        let degree = if graph.is_local(v) {
            graph.degree(v) as u64
        } else {
            0
        };
        if ctx.sum_u64(degree) > 0 {
            return v;
        }
    }
    // Unlucky draws: the smallest vertex with an edge.
    let first = graph
        .local()
        .find(|&v| graph.degree(v) > 0)
        .unwrap_or(u64::MAX);
    let first = u64::MAX - ctx.max_u64(u64::MAX - first);
    if first == u64::MAX { 0 } else { first }
}

/// Collective: a BFS from `root` with `imp`'s frontier (`tasks` cooperative tasks per PE
/// for the queue versions), its tree validated; an `Err` says what is wrong with it.
pub fn bfs(
    ctx: &Ctx,
    graph: &Rc<DistGraph>,
    root: u64,
    imp: Impl,
    tasks: usize,
) -> Result<Run, String> {
    if root >= graph.vertices() {
        return Err(format!(
            "the root {root} is not a vertex (there are {})",
            graph.vertices()
        ));
    }
    let t = match imp {
        Impl::Combining => bfs_queue::bfs(ctx, graph, root, Mode::Distributed, tasks.max(1)),
        Impl::None => bfs_queue::bfs(ctx, graph, root, Mode::None, tasks.max(1)),
        Impl::Tuned => bfs_tuned::bfs(ctx, graph, root),
    };
    if let Some(e) = t.error {
        return Err(e);
    }
    let (edges, count) = validate_bfs_tree(ctx, graph, root, &t.labels)?;
    Ok(Run {
        secs: t.secs,
        edges,
        count,
        stats: t.stats,
    })
}

/// Collective: validates a BFS tree from `root` given as this PE's vertices' parents
/// ([`NONE`] for unreached) by Graph500's rules, as [`bfs`] does with its own result;
/// the input edges within the searched component and the vertices reached.
pub fn validate_bfs_tree(
    ctx: &Ctx,
    graph: &DistGraph,
    root: u64,
    parents: &[u64],
) -> Result<(u64, u64), String> {
    validate::bfs_tree(ctx, graph, root, parents)
}

/// Collective: connected components with `imp`'s phase 1 (`tasks` cooperative tasks per
/// PE for the set versions), checked against a sequential union-find; an `Err` says
/// what differs.
pub fn cc(ctx: &Ctx, graph: &Rc<DistGraph>, imp: Impl, tasks: usize) -> Result<Run, String> {
    let t = match imp {
        Impl::Combining => cc_set::components(ctx, graph, Mode::Distributed, tasks.max(1)),
        Impl::None => cc_set::components(ctx, graph, Mode::None, tasks.max(1)),
        Impl::Tuned => cc_tuned::components(ctx, graph),
    };
    let count = validate::components(ctx, graph, &t.labels)?;
    Ok(Run {
        secs: t.secs,
        edges: graph.input_edges(),
        count,
        stats: t.stats,
    })
}
