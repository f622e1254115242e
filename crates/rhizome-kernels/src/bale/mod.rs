//! Bale's kernels (histogram, index-gather, permute, randperm, transpose, triangles,
//! toposort), each written in up to four ways with its result checked on every run:
//!
//! - [`Impl::Agp`]: one-sided get/put/atomics, one network operation per update (Bale's
//!   "AGP" versions);
//! - [`Impl::Conveyor`]: items pushed on a [`Conveyor`](rhizome::conveyor::Conveyor) to
//!   the owner, which applies them to its local part (Bale's conveyor versions);
//! - [`Impl::Context`]: the AGP code inside an aggregation context
//!   ([`Ctx::aggregate`]): the same calls, packed per destination. Only where the AGP
//!   code fits a context: histogram, index-gather and permute. Randperm, transpose,
//!   triangles and toposort need the answer of a remote operation (a compare-and-swap,
//!   a fetch-and-add, a row read) before their next one, and a context's operations
//!   return nothing until `quiet`; [`Kernel::supports`] says so and [`Kernel::run`]
//!   refuses them with the reason;
//! - [`Impl::Selector`]: sends to the mailboxes of a
//!   [`Selector`](rhizome::actor::Selector), whose handlers apply them (HClib-Actor's
//!   versions), one mailbox per message kind; in randperm and toposort the handlers send
//!   further messages (bounced darts; pivots and cross-outs). All seven kernels.
//!
//! Sizes are named as in Bale's apps: `-n` updates (or requests, rows, entries) per PE,
//! `-T` table entries per PE, `-z` nonzeros per row, `-b` items per conveyor buffer. The
//! matrix kernels spread rows cyclically, as Bale does.
//!
//! ```
//! use rhizome::World;
//! use rhizome_kernels::bale::{Impl, Kernel, Options};
//! let opts = Options { updates: 1000, table: 64, ..Options::default() };
//! let out = World::builder().pes(2).run(|ctx| {
//!     Kernel::Histogram.run(ctx, Impl::Conveyor, &opts)
//! }).unwrap();
//! assert_eq!(out[0].as_ref().unwrap().updates, 2000);
//! ```

mod actors;
mod exchange;
mod histogram;
mod index_gather;
mod kronecker;
mod permute;
mod randperm;
mod spmat;
mod toposort;
mod transpose;
mod triangles;

pub use kronecker::{KroneckerStars, StarLoop};

use rhizome::actor::Selector;
use rhizome::conveyor::Conveyor;
use rhizome::rng::XorShift64;
use rhizome::{AggContext, Ctx};
use std::time::Instant;

/// How a kernel is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// One-sided operations, one per update.
    Agp,
    /// Conveyors.
    Conveyor,
    /// One-sided operations inside an aggregation context.
    Context,
    /// Actors with mailboxes (selectors).
    Selector,
}

impl Impl {
    /// Every implementation, in report order.
    pub const ALL: [Impl; 4] = [Impl::Agp, Impl::Conveyor, Impl::Context, Impl::Selector];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Agp => "agp",
            Impl::Conveyor => "conveyor",
            Impl::Context => "context",
            Impl::Selector => "selector",
        }
    }
}

/// The Bale kernels written so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Random increments of a distributed table.
    Histogram,
    /// Random reads of a distributed table into a local array.
    IndexGather,
    /// The rows and columns of a sparse matrix moved by random permutations.
    Permute,
    /// A uniform random permutation, by dart throwing.
    Randperm,
    /// A sparse matrix transposed.
    Transpose,
    /// The triangles of an R-MAT graph (or of a Kronecker product of stars), counted.
    Triangles,
    /// An order that makes a permuted upper-triangular matrix triangular again.
    Toposort,
}

/// Sizes and inputs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Updates (histogram) or requests (index-gather) per PE: Bale's `-n`.
    pub updates: usize,
    /// Table entries per PE: Bale's `-T`.
    pub table: usize,
    /// Items per conveyor buffer (Bale's `-b`); the runtime's default if `None`.
    pub buffer: Option<usize>,
    /// Seed of the random indices.
    pub seed: u64,
    /// Nonzeros per row on average (permute, transpose, toposort): Bale's `-z`.
    pub nonzeros: usize,
    /// The R-MAT graph of triangles has 2^`scale` vertices.
    pub scale: u32,
    /// Triangles counts this Kronecker product of stars (Bale's `-K`) instead of the
    /// R-MAT graph.
    pub kronecker: Option<KroneckerStars>,
}

impl Default for Options {
    /// Small sizes: 1000 updates, rows or entries per PE, 1000 table entries per PE, 10
    /// nonzeros per row, 2^10 vertices, the runtime's buffer size, seed 1.
    fn default() -> Options {
        Options {
            updates: 1000,
            table: 1000,
            buffer: None,
            seed: 1,
            nonzeros: 10,
            scale: 10,
            kronecker: None,
        }
    }
}

/// One run of one implementation: the same on every PE.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Items over all PEs: updates or requests (histogram, index-gather), nonzeros
    /// (permute, transpose), entries (randperm), edges (triangles), rows (toposort).
    pub updates: u64,
    /// Time of the slowest PE, from the first update to the last one applied everywhere.
    pub seconds: f64,
}

impl Outcome {
    /// Items per second over all PEs.
    pub fn rate(&self) -> f64 {
        self.updates as f64 / self.seconds
    }
}

impl Kernel {
    /// Every kernel, in Bale's order of its apps.
    pub const ALL: [Kernel; 7] = [
        Kernel::Histogram,
        Kernel::IndexGather,
        Kernel::Permute,
        Kernel::Randperm,
        Kernel::Transpose,
        Kernel::Triangles,
        Kernel::Toposort,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Histogram => "histogram",
            Kernel::IndexGather => "index-gather",
            Kernel::Permute => "permute",
            Kernel::Randperm => "randperm",
            Kernel::Transpose => "transpose",
            Kernel::Triangles => "triangles",
            Kernel::Toposort => "toposort",
        }
    }

    /// What [`Outcome::updates`] counts, per second: the unit of the kernel's rate.
    pub fn unit(self) -> &'static str {
        match self {
            Kernel::Histogram | Kernel::IndexGather => "updates/s",
            Kernel::Permute | Kernel::Transpose => "nonzeros/s",
            Kernel::Randperm => "entries/s",
            Kernel::Triangles => "edges/s",
            Kernel::Toposort => "rows/s",
        }
    }

    /// Whether the kernel has an `imp` version; if not, why.
    pub fn supports(self, imp: Impl) -> Result<(), &'static str> {
        let why = match (self, imp) {
            (Kernel::Histogram | Kernel::IndexGather, _) => return Ok(()),
            (_, Impl::Agp | Impl::Conveyor | Impl::Selector) | (Kernel::Permute, Impl::Context) => {
                return Ok(());
            }
            (Kernel::Randperm, _) => {
                "a dart's compare-and-swap answer decides whether it is thrown again"
            }
            (Kernel::Transpose, _) => "each nonzero's place is a fetch-and-add's answer",
            (Kernel::Triangles, _) => "each row read from another PE is intersected at once",
            (Kernel::Toposort, _) => {
                "each pivot's claimed place and column read decide the next operations"
            }
        };
        Err(why)
    }

    /// Collective: runs `imp` once and checks the result on every PE. `Err` (the same on
    /// every PE) names what differed from the sequential answer.
    pub fn run(self, ctx: &Ctx, imp: Impl, opts: &Options) -> Result<Outcome, String> {
        if let Err(why) = self.supports(imp) {
            return Err(format!(
                "{} has no {} version: {why}, and an aggregation context's operations return nothing",
                self.name(),
                imp.name()
            ));
        }
        if opts.updates == 0
            && !matches!(
                self,
                Kernel::Histogram | Kernel::IndexGather | Kernel::Triangles
            )
        {
            return Err("the rows or entries per PE (-n) must be at least 1".into());
        }
        if self == Kernel::Triangles && opts.kronecker.is_none() && !(1..=28).contains(&opts.scale)
        {
            return Err("the R-MAT scale must be 1 to 28".into());
        }
        if opts.table == 0 {
            return Err("the table size (-T) must be at least 1".into());
        }
        let Some(global) = opts.table.checked_mul(ctx.num_pes()) else {
            return Err("the table size (-T) times the PEs overflows".into());
        };
        let mut items = opts.updates as u64 * ctx.num_pes() as u64;
        let (seconds, wrong) = match self {
            Kernel::Histogram => histogram::run(ctx, imp, opts, global),
            Kernel::IndexGather => index_gather::run(ctx, imp, opts, global),
            Kernel::Permute => counted(permute::run(ctx, imp, opts), &mut items),
            Kernel::Randperm => counted(randperm::run(ctx, imp, opts), &mut items),
            Kernel::Transpose => counted(transpose::run(ctx, imp, opts), &mut items),
            Kernel::Triangles => counted(triangles::run(ctx, imp, opts), &mut items),
            Kernel::Toposort => counted(toposort::run(ctx, imp, opts), &mut items),
        };
        // Every PE reports the first PE whose check failed, and how.
        let first_bad = ctx.min_u64(if wrong.is_some() {
            ctx.my_pe() as u64
        } else {
            u64::MAX
        });
        if first_bad != u64::MAX {
            let why = ctx.broadcast(wrong.unwrap_or_default(), first_bad as usize);
            return Err(format!(
                "{} ({}): wrong result on PE {first_bad}: {why}",
                self.name(),
                imp.name()
            ));
        }
        Ok(Outcome {
            updates: items,
            seconds,
        })
    }
}

/// A kernel's (seconds, items, wrong) as (seconds, wrong), its items into `items`.
fn counted(
    (seconds, n, wrong): (f64, u64, Option<String>),
    items: &mut u64,
) -> (f64, Option<String>) {
    *items = n;
    (seconds, wrong)
}

/// Where global index `g` of a table spread cyclically over `pes` PEs lives: (PE, offset).
#[inline]
fn place(g: usize, pes: usize) -> (usize, usize) {
    (g % pes, g / pes)
}

/// The random global indices PE `pe` uses, `0..global`.
fn indices(opts: &Options, pe: usize, global: usize) -> impl Iterator<Item = usize> {
    let mut rng = XorShift64::for_stream(opts.seed.wrapping_mul(1 << 20) ^ pe as u64);
    (0..opts.updates).map(move |_| rng.below(global))
}

/// Collective: runs `body` between barriers; the seconds of the slowest PE.
fn timed(ctx: &Ctx, body: impl FnOnce()) -> f64 {
    ctx.barrier();
    let start = Instant::now();
    body();
    ctx.barrier();
    let nanos = start.elapsed().as_nanos() as u64;
    ctx.max_u64(nanos) as f64 * 1e-9
}

/// Collective: the conveyor of a kernel, with the buffer size of `opts`.
fn conveyor<'c, T: rhizome::Pod>(ctx: &'c Ctx, opts: &Options) -> Conveyor<'c, T> {
    match opts.buffer {
        Some(b) => Conveyor::with_capacity(ctx, b),
        None => Conveyor::new(ctx),
    }
}

/// Collective: the selector of a kernel, with state `state` and the buffer size of `opts`.
fn selector<'c, S: 'static>(ctx: &'c Ctx, opts: &Options, state: S) -> Selector<'c, S> {
    match opts.buffer {
        Some(b) => Selector::with_capacity(ctx, state, b),
        None => Selector::new(ctx, state),
    }
}

/// Collective: the aggregation context of a kernel, with the buffer size of `opts`.
fn context<'c>(ctx: &'c Ctx, opts: &Options) -> AggContext<'c> {
    match opts.buffer {
        Some(b) => AggContext::with_capacity(ctx, b),
        None => AggContext::new(ctx),
    }
}
