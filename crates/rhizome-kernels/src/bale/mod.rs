//! Bale's kernels (histogram, index-gather), each written four ways with its result
//! checked on every run:
//!
//! - [`Impl::Agp`]: one-sided get/put/atomics, one network operation per update (Bale's
//!   "AGP" versions);
//! - [`Impl::Conveyor`]: items pushed on a [`Conveyor`](rhizome::conveyor::Conveyor) to
//!   the owner, which applies them to its local part (Bale's conveyor versions);
//! - [`Impl::Context`]: the AGP code inside an aggregation context
//!   ([`Ctx::aggregate`]): the same calls, packed per destination;
//! - [`Impl::Selector`]: sends to the mailboxes of a
//!   [`Selector`](rhizome::actor::Selector), whose handlers apply them (HClib-Actor's
//!   versions).
//!
//! Sizes are named as in Bale's apps: `-n` updates (or requests) per PE, `-T` table
//! entries per PE, `-b` items per conveyor buffer.
//!
//! ```
//! use rhizome::World;
//! use rhizome_kernels::bale::{Impl, Kernel, Options};
//! let opts = Options { updates: 1000, table: 64, buffer: None, seed: 1 };
//! let out = World::builder().pes(2).run(|ctx| {
//!     Kernel::Histogram.run(ctx, Impl::Conveyor, &opts)
//! }).unwrap();
//! assert_eq!(out[0].as_ref().unwrap().updates, 2000);
//! ```

mod histogram;
mod index_gather;

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
}

/// One run of one implementation: the same on every PE.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Updates (or requests) over all PEs.
    pub updates: u64,
    /// Time of the slowest PE, from the first update to the last one applied everywhere.
    pub seconds: f64,
}

impl Outcome {
    /// Updates per second over all PEs.
    pub fn rate(&self) -> f64 {
        self.updates as f64 / self.seconds
    }
}

impl Kernel {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Histogram => "histogram",
            Kernel::IndexGather => "index-gather",
        }
    }

    /// Collective: runs `imp` once and checks the result on every PE. `Err` (the same on
    /// every PE) names what differed from the sequential answer.
    pub fn run(self, ctx: &Ctx, imp: Impl, opts: &Options) -> Result<Outcome, String> {
        if opts.table == 0 {
            return Err("the table size (-T) must be at least 1".into());
        }
        let Some(global) = opts.table.checked_mul(ctx.num_pes()) else {
            return Err("the table size (-T) times the PEs overflows".into());
        };
        let (seconds, wrong) = match self {
            Kernel::Histogram => histogram::run(ctx, imp, opts, global),
            Kernel::IndexGather => index_gather::run(ctx, imp, opts, global),
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
            updates: opts.updates as u64 * ctx.num_pes() as u64,
            seconds,
        })
    }
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
