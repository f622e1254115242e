//! Concurrent Collections (CnC) on Rhizome: a program is a graph of *item collections*
//! (single-assignment maps from tags to values), *tag collections* (control: a put of a
//! tag prescribes one instance of each step collection it is wired to) and *step
//! collections* (the computation: an instance gets its input items by tag and puts output
//! items and tags). The program says only what depends on what; any schedule that
//! respects the gets and puts gives the same items (seed 002, "Concurrent Collections: An
//! Overview").
//!
//! ```
//! use rhizome::World;
//! use rhizome_cnc::Graph;
//!
//! // fib[i] = fib[i-1] + fib[i-2], one step instance per i, spread over 2 PEs.
//! let out = World::builder().pes(2).run(|ctx| {
//!     let g = Graph::new(ctx);
//!     let fib = g.items::<u64, u64>("fib", |i| *i as usize);
//!     let f = fib.clone();
//!     let step = g.steps("add", |i: &u64| (*i / 4) as usize, move |s, &i| {
//!         let a = s.get(&f, &(i - 1))?; // suspends this instance until fib[i-1] is put
//!         let b = s.get(&f, &(i - 2))?;
//!         s.put(&f, i, *a + *b);
//!         Ok(())
//!     });
//!     let tags = g.tags::<u64>("i");
//!     tags.prescribes(&step);
//!     g.run(ctx, |env| {
//!         if env.my_pe() == 0 {
//!             for i in (2..=40).rev() {
//!                 env.put_tag(&tags, i); // in any order
//!             }
//!             env.put(&fib, 0, 0);
//!             env.put(&fib, 1, 1);
//!         }
//!     })
//!     .unwrap();
//!     fib.get_local(&40).map(|v| *v)
//! })
//! .unwrap();
//! assert_eq!(out, vec![Some(102_334_155), None]); // fib[40] lives on PE 40 % 2 = 0
//! ```
//!
//! # Where steps run, and why there
//! Every collection has a distribution function from tag to PE (CnC's tuners): an item
//! is stored on its home PE, a step instance runs on its home PE. Placement is the
//! program's to choose because it decides what moves: a Cholesky update step placed with
//! the tile it writes reads that tile locally and fetches only the two panel tiles, once
//! per PE (fetched items are cached). Inside a PE, step instances are jobs of the PE's
//! [`rhizome::tasks`] scheduler: a prescribed or resumed instance is pushed on the deque
//! of the worker that started it, and idle workers of the PE steal it (the PE's
//! fork-join pool threads, [`rhizome::Ctx::workers`]), so steps run on the runtime's
//! work stealing. They are not stolen by other PEs: the distribution function has already
//! spread them, and a step moved away from its data would fetch every input. Everything
//! between PEs (puts to a remote home, requests for and deliveries of items, instances
//! started on another PE) travels as jobs of that scheduler sent with
//! [`TaskCtx::async_on`](rhizome::tasks::TaskCtx::async_on), so one termination detection
//! (the scheduler's) tells when the whole graph, on every PE, has quiesced. Items and tags
//! are serde types for that reason; on one PE nothing is serialized.
//!
//! # Gets never block a worker
//! A get that finds no item records the instance as waiting for that tag (asking the
//! item's home PE once for it when that is another PE) and returns [`Unavailable`]; the
//! step returns it (`?`), and the instance is started again from the beginning when the
//! item arrives. Its puts are held back until a run completes, so an abandoned run has no
//! effect (Intel CnC's abort-and-requeue). Hence step bodies must be free of other side
//! effects before their last get. At quiescence, every instance still waiting is reported
//! by [`Graph::run`] as an error naming the missing tags, never a hang; so is a second put
//! at one tag, and a step that panicked.
//!
//! # Layout
//! `graph` ([`Graph`]: the registry, the one job type, the run), `items`
//! ([`ItemCollection`]), `tags` ([`TagCollection`], [`StepCollection`]), `step`
//! ([`StepCtx`], [`Env`]), `error` ([`CncError`]), and [`examples`]: tiled Cholesky and
//! the Smith-Waterman wavefront, checked against sequential versions.

mod error;
pub mod examples;
mod graph;
mod items;
mod step;
mod tags;

pub use error::CncError;
pub use graph::Graph;
pub use items::ItemCollection;
pub use step::{Env, StepCtx, StepResult, Unavailable};
pub use tags::{StepCollection, TagCollection};

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::hash::Hash;

/// What a tag can be: hashable and comparable (it indexes collections), printable (errors
/// name it), serializable (it travels to other PEs). Implemented for every such type.
pub trait Tag:
    Serialize + DeserializeOwned + Eq + Hash + Clone + Debug + Send + Sync + 'static
{
}
impl<T> Tag for T where
    T: Serialize + DeserializeOwned + Eq + Hash + Clone + Debug + Send + Sync + 'static
{
}

/// What an item can be: serializable (it travels to other PEs) and shareable between a
/// PE's workers (gets hand out `Arc`s). Implemented for every such type.
pub trait Item: Serialize + DeserializeOwned + Send + Sync + 'static {}
impl<T> Item for T where T: Serialize + DeserializeOwned + Send + Sync + 'static {}
