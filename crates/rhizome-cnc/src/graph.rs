//! The graph: the collections of one CnC program on one PE, the scheduler its steps run
//! on, the one job type that carries puts, item requests, item deliveries and step
//! instances between PEs, and the check at quiescence.
//!
//! A job that arrives from another PE carries only numbers and bytes; it finds its graph
//! on the receiving PE through a process-wide registry keyed by (graph token, PE). The
//! token is drawn on PE 0 and broadcast, so several graphs (and, with the local
//! transport, several worlds in one process) never mix.

use crate::error::CncError;
use crate::items::ItemCollection;
use crate::step::{Env, StepCtx, StepResult};
use crate::tags::{StepCollection, TagCollection};
use crate::{Item, Tag};
use rhizome::Ctx;
use rhizome::tasks::{Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

/// What a [`Wire`] job does at its destination.
#[derive(Serialize, Deserialize, Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// Store an item at its owner.
    Put,
    /// PE `from` wants an item: send it now if it is there, else when it is put.
    Want { from: u32 },
    /// An item for this PE's cache of remote items.
    Deliver,
    /// Run a step instance here.
    Step,
}

/// The one job type of the crate: an operation on collection `coll` of graph `graph` at
/// the PE it was sent to, with a postcard-encoded tag and (for items) item.
#[derive(Serialize, Deserialize)]
pub(crate) struct Wire {
    graph: u64,
    coll: u32,
    kind: Kind,
    #[serde(with = "serde_bytes")]
    tag: Vec<u8>,
    #[serde(with = "serde_bytes")]
    item: Vec<u8>,
}

impl Job for Wire {
    type Output = ();
    fn run(self, t: &TaskCtx) {
        let g = lookup(self.graph, t.my_pe());
        let coll = g.collection(self.coll);
        coll.receive(t, self.kind, &self.tag, &self.item);
    }
}

/// The part of a collection that jobs from other PEs reach, type-erased.
pub(crate) trait Collection: Send + Sync {
    /// Carries out a [`Wire`] job addressed to this collection.
    fn receive(self: Arc<Self>, t: &TaskCtx, kind: Kind, tag: &[u8], item: &[u8]);
    /// At quiescence: the gets still waiting (one line each), forgotten afterwards.
    fn take_unsatisfied(&self) -> Vec<String>;
}

/// Graphs by (token, PE).
type Registry = HashMap<(u64, usize), Arc<GraphShared>>;

/// The graphs of this process.
static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(HashMap::new()));
/// Tokens drawn by PE 0 of each graph on this process.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

fn lookup(token: u64, pe: usize) -> Arc<GraphShared> {
    let reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    match reg.get(&(token, pe)) {
        Some(g) => Arc::clone(g),
        // Jobs of a graph run only inside its `Graph::run`, while the graph is registered
        // on every PE; anything else is a bug of this crate.
        None => {
            panic!("rhizome-cnc: a job for graph {token} reached PE {pe}, which has no such graph")
        }
    }
}

/// One PE's state of a graph, shared by its collections and the jobs that reach it.
pub(crate) struct GraphShared {
    token: u64,
    pe: usize,
    pes: usize,
    collections: Mutex<Vec<Arc<dyn Collection>>>,
    /// Double puts and failed steps seen on this PE during the current run.
    double_puts: Mutex<Vec<String>>,
    failed_steps: Mutex<Vec<String>>,
}

impl GraphShared {
    pub(crate) fn pe(&self) -> usize {
        self.pe
    }

    pub(crate) fn pes(&self) -> usize {
        self.pes
    }

    fn collection(&self, id: u32) -> Arc<dyn Collection> {
        let colls = self
            .collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match colls.get(id as usize) {
            Some(c) => Arc::clone(c),
            None => panic!(
                "rhizome-cnc: collection {id} is unknown on PE {}: every PE must create the same collections in the same order",
                self.pe
            ),
        }
    }

    /// The id the next collection gets (the same on every PE when every PE creates the
    /// same collections in the same order).
    pub(crate) fn next_id(&self) -> u32 {
        self.collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len() as u32
    }

    pub(crate) fn add(&self, c: Arc<dyn Collection>) {
        self.collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(c);
    }

    /// Sends a job for collection `coll` to PE `pe`; its completion counts toward the
    /// run's termination like any job.
    pub(crate) fn send(
        &self,
        t: &TaskCtx,
        pe: usize,
        coll: u32,
        kind: Kind,
        tag: Vec<u8>,
        item: Vec<u8>,
    ) {
        let job = Wire {
            graph: self.token,
            coll,
            kind,
            tag,
            item,
        };
        drop(t.async_on(pe, job));
    }

    pub(crate) fn double_put(&self, line: String) {
        self.double_puts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }

    pub(crate) fn step_failed(&self, line: String) {
        self.failed_steps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }

    fn take_errors(&self) -> (Vec<String>, Vec<String>, Vec<String>) {
        let take = |m: &Mutex<Vec<String>>| {
            std::mem::take(&mut *m.lock().unwrap_or_else(PoisonError::into_inner))
        };
        let colls: Vec<_> = self
            .collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let unsatisfied = colls.iter().flat_map(|c| c.take_unsatisfied()).collect();
        (
            take(&self.double_puts),
            take(&self.failed_steps),
            unsatisfied,
        )
    }
}

/// A Concurrent Collections graph on one PE: create it on every PE, then its collections
/// on every PE in the same order, then [`Graph::run`] it (collectively). See the
/// [crate documentation](crate).
pub struct Graph {
    shared: Arc<GraphShared>,
    tasks: Tasks,
}

impl Graph {
    /// Collective: a graph with no collections, with its own task scheduler over the
    /// PE's workers ([`Ctx::workers`]).
    pub fn new(ctx: &Ctx) -> Graph {
        let mine = if ctx.my_pe() == 0 {
            NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
        } else {
            0
        };
        let token = ctx.broadcast(mine, 0);
        let shared = Arc::new(GraphShared {
            token,
            pe: ctx.my_pe(),
            pes: ctx.num_pes(),
            collections: Mutex::new(Vec::new()),
            double_puts: Mutex::new(Vec::new()),
            failed_steps: Mutex::new(Vec::new()),
        });
        REGISTRY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((token, ctx.my_pe()), Arc::clone(&shared));
        let tasks = Tasks::new(ctx);
        tasks.register::<Wire>();
        Graph { shared, tasks }
    }

    /// An item collection named `name` (the name appears in errors) whose item with tag
    /// `t` lives on PE `home(t) % num_pes`. Create it on every PE with the same `home`.
    pub fn items<T: Tag, I: Item>(
        &self,
        name: &str,
        home: impl Fn(&T) -> usize + Send + Sync + 'static,
    ) -> ItemCollection<T, I> {
        ItemCollection::new(&self.shared, name, Box::new(home))
    }

    /// A tag (control) collection named `name`; a put of a tag starts one instance of
    /// every step collection it [prescribes](TagCollection::prescribes).
    pub fn tags<T: Tag>(&self, name: &str) -> TagCollection<T> {
        TagCollection::new(name)
    }

    /// A step collection named `name`: the instance for tag `t` runs `body` on PE
    /// `home(t) % num_pes`. The body gets its inputs with [`StepCtx::get`] (a missing
    /// input suspends the instance until the item is put: return the `Err` with `?`)
    /// and puts its outputs with [`StepCtx::put`] and [`StepCtx::put_tag`].
    pub fn steps<T: Tag>(
        &self,
        name: &str,
        home: impl Fn(&T) -> usize + Send + Sync + 'static,
        body: impl Fn(&mut StepCtx, &T) -> StepResult + Send + Sync + 'static,
    ) -> StepCollection<T> {
        StepCollection::new(&self.shared, name, Box::new(home), Box::new(body))
    }

    /// Collective: runs `body` (the environment: initial puts of items and tags) on every
    /// PE, then every step instance it starts, transitively, on every PE, until the graph
    /// quiesces (no step can run any more). Returns the body's result, or, the same on
    /// every PE, an error listing every double put, every step that panicked and every
    /// get still waiting at quiescence (an input no one put).
    ///
    /// Items stay in their collections after the run (read them with
    /// [`ItemCollection::get_local`]); a later run continues with them.
    pub fn run<R>(&self, ctx: &Ctx, body: impl FnOnce(&Env) -> R) -> Result<R, CncError> {
        let r = self.tasks.run(ctx, |t| body(&Env::new(t)));
        let (double_puts, failed_steps, unsatisfied) = self.shared.take_errors();
        let all = ctx.allgather((double_puts, failed_steps, unsatisfied));
        let mut err = CncError::default();
        for (d, f, u) in all {
            err.double_puts.extend(d);
            err.failed_steps.extend(f);
            err.unsatisfied.extend(u);
        }
        if err.is_empty() {
            Ok(r)
        } else {
            err.double_puts.sort();
            err.failed_steps.sort();
            err.unsatisfied.sort();
            Err(err)
        }
    }

    /// The counters of the scheduler's last run on this PE (jobs run, steals, ...).
    pub fn stats(&self) -> rhizome::tasks::Stats {
        self.tasks.stats()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        REGISTRY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(self.shared.token, self.shared.pe));
        // The collections hold the shared state; dropping them here breaks the cycle.
        self.shared
            .collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// Encodes a tag or item for another PE.
pub(crate) fn encode<V: Serialize>(v: &V) -> Vec<u8> {
    postcard::to_allocvec(v).expect("rhizome-cnc: a tag or item could not be serialized")
}

/// Decodes what [`encode`] wrote on another PE (the same types on every PE).
pub(crate) fn decode<V: serde::de::DeserializeOwned>(bytes: &[u8]) -> V {
    postcard::from_bytes(bytes).expect("rhizome-cnc: a tag or item from another PE could not be decoded (do all PEs create the same collections in the same order?)")
}
