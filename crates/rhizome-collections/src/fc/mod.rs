//! Flat combining for global data structures (seed 003: Holt et al., "Flat Combining
//! Synchronized Global Data Structures", Grappa).
//!
//! Each PE keeps a *proxy* per structure. The PE's cooperative tasks
//! ([`rhizome::coop`]) put their operations in it; an operation is satisfied on the PE
//! (a stack's pop takes a pending push), or waits for the next commit. One waiting task
//! becomes the combiner: it swaps a fresh proxy in (so no request is ever answered from
//! a proxy being committed) and sends every pending operation to the structure's master
//! in one message; the others keep filling the fresh proxy meanwhile. At most one commit
//! per PE and structure is in flight; when it returns, one operation waiting in the new
//! proxy is chosen to commit next. A proxy holds a bounded number of pending operations
//! (the combining buffer): when full, further operations wait until it is committed.
//!
//! A task may also make several operations at once ([`Flat::apply_all`]: `push_all`,
//! `pop_all`, `insert_all`): they are concurrent operations of the task, go in the
//! proxy together and are waited for once, with no task and no waker each (the graph
//! kernels push a frontier, or insert the root pairs found, this way).
//!
//! Linearizability: a commit's operations were all pending when it started and are all
//! answered after the master applied it in one message handler (atomic at the master),
//! so each is linearized at that handler; a matched pair, at the match, when both were
//! pending. Tasks are not preempted between `.await` points, so the proxy needs no lock.
//!
//! Modes ([`Mode`]), for the paper's comparison: `None` (each operation of a stack or
//! queue takes the master's global lock, runs, releases: three messages, still
//! aggregated per destination by the runtime; each operation of a set or map is one
//! message to its key's owner), `Centralized` (each operation is one message to the
//! combiner, PE 0, whose single proxy combines what arrives from all PEs and commits it,
//! one commit at a time: `central`) and `Distributed` (the proxies above).
//!
//! - `flat`: the framework ([`Flat`], the [`Combine`] trait a structure implements).
//! - `central`: the centralized mode's one combiner.
//! - `pushpop`: [`GlobalStack`] and [`GlobalQueue`]; `stack`: the stack's proxy.
//! - `hash`: [`GlobalMap`] and [`GlobalSet`], keys hashed over all PEs.
//!
//! ```
//! use rhizome::World;
//! use rhizome::coop::Coop;
//! use rhizome_collections::fc::{GlobalStack, Mode};
//! use std::cell::Cell;
//! let popped = World::builder().pes(2).run(|ctx| {
//!     let coop = Coop::new(ctx);
//!     let stack = GlobalStack::<u64>::new(&coop, Mode::Distributed);
//!     let got = Cell::new(0);
//!     coop.run(|s| {
//!         for i in 0..100 {
//!             let (stack, got) = (&stack, &got);
//!             s.spawn(async move {
//!                 stack.push(i).await;
//!                 // Read `got` after the await: other tasks run while this one waits.
//!                 let popped = stack.pop().await;
//!                 got.set(got.get() + popped.is_some() as u64);
//!             });
//!         }
//!     });
//!     got.get()
//! }).unwrap();
//! // Every pop follows its task's push, so none finds the stack empty.
//! assert_eq!(popped, vec![100, 100]);
//! ```

mod central;
mod chunks;
mod flat;
mod hash;
mod ops;
mod pushpop;
mod stack;

pub use chunks::PushPopStore;
pub use flat::{Combine, Flat, Offer};
pub use hash::{GlobalMap, GlobalSet, MapOp, MapProxy, owner};
pub use pushpop::{
    DEFAULT_CAPACITY, Fifo, GlobalQueue, GlobalStack, Lifo, Order, PushPop, PushPopOp,
    PushPopProxy, Run, Taken,
};
pub use stack::StackProxy;

/// How a structure synchronizes (the paper's comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// No combining: each stack or queue operation locks the master, runs, unlocks; a
    /// set or map operation is one message to its key's owner.
    None,
    /// Combining at one PE only: each operation is one message to the combiner (PE 0),
    /// whose proxy combines what arrives from all PEs and commits it to the owners.
    Centralized,
    /// Each PE combines its tasks' operations and commits them in one message.
    Distributed,
}

impl Mode {
    /// Every mode, in the paper's order.
    pub const ALL: [Mode; 3] = [Mode::None, Mode::Centralized, Mode::Distributed];

    /// The mode's name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Centralized => "centralized",
            Mode::Distributed => "distributed",
        }
    }
}

/// One PE's counters of a structure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations the PE's tasks made.
    pub ops: u64,
    /// Messages the PE sent to synchronize them (commits, lock requests and releases).
    pub messages: u64,
}

impl Stats {
    /// Operations per message; matched pairs cost none, so this can exceed the buffer.
    pub fn ops_per_message(&self) -> f64 {
        self.ops as f64 / self.messages.max(1) as f64
    }
}
