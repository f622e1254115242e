//! The BDD manager: node store, operation cache, worker pool, roots and collection.

use crate::dist::Distribution;
use crate::edge::Bdd;
use crate::node_table::{CollectPlan, NodeStore, SharedNodeTable};
use crate::op_cache::{OpCache, SharedOpCache};
use crate::ops::OpCtx;
use crate::roots::{Root, Roots};
use rhizome::pool::Pool;
use std::collections::HashMap;
use std::sync::Arc;

/// Why an operation could not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BddError {
    /// The live nodes do not fit in the node table even at its largest size.
    #[error(
        "out of BDD nodes: {live} live nodes fill the table of {capacity} nodes (raise the memory limit)"
    )]
    OutOfNodes {
        /// Nodes still live after collection.
        live: usize,
        /// Largest table size allowed.
        capacity: usize,
    },
}

/// Sizes of a [`Manager`]; see [`Manager::with_config`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Worker threads of the fork-join pool.
    pub workers: usize,
    /// Node-table slots to start with.
    pub initial_nodes: usize,
    /// Most node-table slots the table may grow to (memory: about 24 bytes per slot).
    pub max_nodes: usize,
    /// Operation-cache entries per node-table slot (the cache grows with the table).
    pub cache_ratio: f64,
    /// Grow the table at a collection when more than this fraction of it is live.
    pub grow_threshold: f64,
    /// Double the table (and the cache) at every collection forced by a full table while
    /// it has fewer slots than this, as Sylvan's `sylvan_gc_aggressive_resize` does (0:
    /// never). The garbage between collections is the working set of the operations
    /// (their results are found again in the unique table and the cache); a table that
    /// holds little live data after each collection can still be far too small for it
    /// (BFS on 120 philosophers: 45 collections at 4M slots, 2 when growing). Beyond this
    /// size the table grows only when live data or a failing operation demands: larger
    /// tables cost memory and locality (at.5.8 BFS grew to 64M slots, 3 GiB, and ran 20%
    /// slower than at 16M).
    pub grow_on_full_below: usize,
    /// Beyond `grow_on_full_below`, a table that filled up this many times at one size
    /// grows at the next full collection all the same: it is too small for the working
    /// set (see [`Config::for_share`] for a PE that does part of the work).
    pub thrashing_collections: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            // 4M slots (about 220 MB with the cache, touched as it fills): big operations
            // such as a whole saturation rarely have to be restarted in a larger table,
            // and small models pay nothing measurable for the room.
            initial_nodes: 1 << 22,
            max_nodes: 1 << 28,
            cache_ratio: 1.0,
            grow_threshold: 0.125,
            grow_on_full_below: 1 << 24,
            thrashing_collections: 4,
        }
    }
}

impl Config {
    /// Bytes of memory a table of `nodes` slots with its cache uses at most.
    pub fn bytes_for(nodes: usize, cache_ratio: f64) -> usize {
        // 16-byte node, 8-byte bucket, 1 bit of bitmap; 36-byte cache entry.
        nodes * 24 + nodes / 8 + (nodes as f64 * cache_ratio) as usize * 36
    }

    /// The largest power-of-two table whose memory stays within `bytes`.
    pub fn max_nodes_for_bytes(bytes: usize, cache_ratio: f64) -> usize {
        let mut n = 1usize << 10;
        while n < (1 << 39) && Config::bytes_for(n * 2, cache_ratio) <= bytes {
            n *= 2;
        }
        n
    }
}

/// Counters of a manager's life so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Garbage collections run.
    pub collections: u64,
    /// Node-table slots usable now.
    pub table_size: usize,
    /// Nodes in use after the last collection.
    pub live_after_last_collection: usize,
    /// Operations that ran out of room and were resumed after a collection.
    pub retries: u64,
}

/// A BDD manager: owns the nodes, the operation cache and the worker pool that runs
/// operations in parallel. `S` is where nodes live, `C` the memo cache; the defaults are
/// the shared-memory ones of a single PE.
///
/// ```
/// use rhizome_bdd::{Bdd, Manager};
/// let mut m = Manager::new(2);
/// let (x, y) = (m.ithvar(0), m.ithvar(2));
/// let f = m.and(x, y).unwrap();
/// let g = m.or(!x, !y).unwrap();
/// assert_eq!(f, !g); // De Morgan, and canonicity makes it an equality of edges
/// assert_eq!(m.satcount(f, &[0, 2]), 1u32.into());
/// ```
pub struct Manager<S: NodeStore = SharedNodeTable, C: OpCache = SharedOpCache> {
    pub(crate) store: S,
    pub(crate) cache: C,
    pool: Arc<Pool>,
    roots: Arc<Roots>,
    config: Config,
    stats: Stats,
    next_op_id: std::sync::atomic::AtomicU64,
    /// Collections since the table last grew.
    collections_at_this_size: u32,
    /// How operations spread over the PEs, if they do (`dist::spread`).
    pub(crate) dist: Option<Arc<Distribution>>,
}

impl Manager {
    /// A manager with `workers` threads and default sizes.
    pub fn new(workers: usize) -> Manager {
        Manager::with_config(Config {
            workers,
            ..Config::default()
        })
    }

    /// A manager with the given sizes.
    pub fn with_config(config: Config) -> Manager {
        let pool = Arc::new(Pool::new(config.workers.max(1)));
        Manager::with_pool(config, pool)
    }

    /// A manager with the given sizes whose operations run on `pool` (its worker count
    /// replaces `config.workers`), e.g. a PE's pool ([`rhizome::Ctx::pool`]), so that a
    /// PE running BDD operations and jobs of [`rhizome::tasks`] has one set of worker
    /// threads. Operations started from inside a job of the pool run on the job's worker.
    ///
    /// ```
    /// use rhizome_bdd::{Config, Manager};
    /// use rhizome::pool::Pool;
    /// use std::sync::Arc;
    /// let pool = Arc::new(Pool::new(2));
    /// let mut m = Manager::with_pool(Config::default(), Arc::clone(&pool));
    /// assert_eq!(m.workers(), 2);
    /// let (x, y) = (m.ithvar(0), m.ithvar(1));
    /// assert_eq!(m.and(x, y).unwrap(), !m.or(!x, !y).unwrap());
    /// ```
    pub fn with_pool(mut config: Config, pool: Arc<Pool>) -> Manager {
        config.workers = pool.workers();
        let workers = config.workers;
        let max = config.max_nodes.max(1024).next_power_of_two();
        let initial = config.initial_nodes.min(max);
        let store = SharedNodeTable::new(initial, max, workers);
        let cache_entries = |n: usize| (n as f64 * config.cache_ratio) as usize;
        let cache = SharedOpCache::new(cache_entries(store.size()), cache_entries(max));
        Manager::from_parts_on_pool(store, cache, config, pool)
    }
}

impl<S: NodeStore, C: OpCache> Manager<S, C> {
    /// A manager over a given node store and cache.
    pub fn from_parts(store: S, cache: C, config: Config) -> Manager<S, C> {
        let pool = Arc::new(Pool::new(config.workers.max(1)));
        Manager::from_parts_on_pool(store, cache, config, pool)
    }

    /// [`from_parts`](Manager::from_parts) on a given pool (e.g. a PE's,
    /// [`rhizome::Ctx::pool`]), whose worker count replaces `config.workers`; the store
    /// must have allocation state for that many workers.
    pub fn from_parts_on_pool(
        store: S,
        cache: C,
        mut config: Config,
        pool: Arc<Pool>,
    ) -> Manager<S, C> {
        config.workers = pool.workers();
        let stats = Stats {
            table_size: store.size(),
            ..Stats::default()
        };
        Manager {
            store,
            cache,
            pool,
            roots: Arc::new(Roots::default()),
            config,
            stats,
            next_op_id: std::sync::atomic::AtomicU64::new(1),
            collections_at_this_size: 0,
            dist: None,
        }
    }

    /// Worker threads of the pool.
    pub fn workers(&self) -> usize {
        self.pool.workers()
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Nodes in use now (an upper bound between collections: includes garbage).
    pub fn table_used(&self) -> usize {
        self.store.used_count()
    }

    /// Node-table slots usable now.
    pub fn table_size(&self) -> usize {
        self.store.size()
    }

    /// Keeps `f` (and every node below it) alive across garbage collections until the
    /// returned guard is dropped. The guard does not borrow the manager.
    pub fn root(&self, f: Bdd) -> Root {
        Root::new(&self.roots, f)
    }

    /// Distinct nodes protected by [`Root`]s now.
    pub fn root_count(&self) -> usize {
        self.roots.len()
    }

    /// Collects garbage now: every node not reachable from a [`Root`] or from
    /// `extra` is freed. Edges to freed nodes must not be used afterwards.
    pub fn collect_garbage(&mut self, extra: &[Bdd]) {
        self.collect(extra, None, false);
    }

    fn collect(&mut self, extra: &[Bdd], keep_since: Option<usize>, force_grow: bool) -> bool {
        let roots = self.roots.snapshot();
        let mut it = roots.iter().chain(extra.iter()).copied();
        let grew = self.store.collect(
            &mut it,
            CollectPlan {
                keep_since,
                grow_threshold: self.config.grow_threshold,
                force_grow,
            },
        );
        let entries = (self.store.local_size() as f64 * self.config.cache_ratio) as usize;
        let store = &self.store;
        self.cache.collect(entries, &|i| store.is_live(i));
        if let Some(d) = &self.dist {
            d.collected();
        }
        self.stats.collections += 1;
        self.collections_at_this_size = if grew {
            0
        } else {
            self.collections_at_this_size + 1
        };
        self.stats.table_size = self.store.size();
        self.stats.live_after_last_collection = self.store.used_count();
        grew
    }

    /// Runs `f` on the pool as one operation, with a context for BDD operations that may
    /// fork. If the node table fills up meanwhile, collects garbage (keeping the
    /// roots and `inputs`: every BDD `f` reads must be among them), grows the table, and
    /// runs `f` again.
    ///
    /// ```
    /// use rhizome_bdd::{Bdd, Manager};
    /// let mut m = Manager::new(2);
    /// let (x, y, z) = (m.ithvar(0), m.ithvar(1), m.ithvar(2));
    /// // (x ∧ y) ∨ (y ∧ z), the two conjunctions in parallel.
    /// let f = m.run(&[x, y, z], |c| {
    ///     let (a, b) = c.join(|c| c.and(x, y), |c| c.and(y, z));
    ///     c.or(a, b)
    /// }).unwrap();
    /// assert_eq!(m.satcount(f, &[0, 1, 2]), 3u32.into());
    /// ```
    pub fn run<F>(&mut self, inputs: &[Bdd], f: F) -> Result<Bdd, BddError>
    where
        F: Fn(&OpCtx<'_, S, C>) -> Bdd + Sync,
    {
        self.run_many(inputs, |c| vec![f(c)]).map(|v| v[0])
    }

    /// Like [`run`](Manager::run), for an operation with several results.
    pub fn run_many<F>(&mut self, inputs: &[Bdd], f: F) -> Result<Vec<Bdd>, BddError>
    where
        F: Fn(&OpCtx<'_, S, C>) -> Vec<Bdd> + Sync,
    {
        // An operation that fills the table unwinds (its intermediate results live on
        // worker stacks, which a collection cannot see), the collection keeps every node
        // the operation made and every cache entry that names only surviving nodes, and
        // the operation runs again: its finished sub-results are cache hits, so it resumes
        // roughly where it stopped, without per-operation bookkeeping of live edges (as
        // Sylvan's reference stacks do) on the fast path. The collection grows the table
        // (see `Config::grow_on_full_below`). A second failure at the same size means the
        // operation itself needs more room: grow regardless. So does a failure of an
        // operation that claimed most of the table itself. At the size limit, the
        // operation gets one more run from a table without its partial results (they may
        // be what leaves it no room) before the table counts as too small.
        let mut failures_at_this_size = 0;
        let mut restarted_clean = false;
        loop {
            let claimed_before = self.store.claimed();
            let mark = self.store.alloc_mark();
            let result = {
                let this = &*self;
                this.bind_dist();
                let dist = this.dist.as_deref();
                this.pool
                    .run(|w| f(&OpCtx::new(&this.store, &this.cache, w, dist)))
            };
            if !self.store.is_full() && !result.contains(&Bdd::INVALID) {
                return Ok(result);
            }
            failures_at_this_size += 1;
            self.stats.retries += 1;
            // An operation that by itself took half of the table would fill it again
            // after any collection: grow at once instead of running it twice.
            let heavy = 2 * self.store.claimed().saturating_sub(claimed_before) > self.store.size();
            let force = failures_at_this_size >= 2 || heavy;
            // Beyond the aggressive range, a table that keeps filling up with garbage is
            // too small for the working set all the same: grow after a few collections
            // at one size.
            let thrashing = self.collections_at_this_size >= self.config.thrashing_collections;
            let grow = force || thrashing || self.store.size() < self.config.grow_on_full_below;
            if self.collect(inputs, Some(mark), grow) {
                failures_at_this_size = 0;
            } else if force {
                if restarted_clean {
                    return Err(BddError::OutOfNodes {
                        live: self.store.used_count(),
                        capacity: self.store.size(),
                    });
                }
                restarted_clean = true;
                self.collect(inputs, None, false);
            }
        }
    }

    /// The operation cache.
    pub fn op_cache(&self) -> &C {
        &self.cache
    }

    /// A fresh identifier for operations that need their own cache key space (a rename
    /// with a particular variable map, or a user-written operation; see [`OpCtx::memo_get`]).
    pub fn fresh_op_id(&self) -> u64 {
        self.next_op_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The node an edge points at, as `(var, low, high)` with the edge's complement pushed
    /// into the children; `None` for the constants.
    pub fn node(&self, f: Bdd) -> Option<(u32, Bdd, Bdd)> {
        if f.is_const() {
            return None;
        }
        let (v, l, h) = self.store.node(f.index());
        let c = f.is_complemented();
        Some((v, l.not_if(c), h.not_if(c)))
    }

    /// The variable at the root of `f` (`None` for constants).
    pub fn top_var(&self, f: Bdd) -> Option<u32> {
        self.node(f).map(|n| n.0)
    }

    /// The node `(var, low, high)`, made canonical; fails only when the table is full.
    /// Nothing is collected here (the caller may hold edges no [`Root`] keeps): to build many
    /// nodes, use [`OpCtx::make`] inside [`run`](Manager::run), which collects and retries.
    pub fn make_node(&self, var: u32, low: Bdd, high: Bdd) -> Result<Bdd, BddError> {
        let r = self
            .store
            .with_outside_slot(|slot| crate::ops::make(&self.store, slot, var, low, high));
        if r == Bdd::INVALID {
            Err(BddError::OutOfNodes {
                live: self.store.used_count(),
                capacity: self.store.size(),
            })
        } else {
            Ok(r)
        }
    }

    /// The function "variable `v` is true". Panics only if the table is full, which a
    /// single node cannot cause unless the table is at its limit.
    pub fn ithvar(&self, v: u32) -> Bdd {
        self.make_node(v, Bdd::FALSE, Bdd::TRUE)
            .expect("node table full while making a variable")
    }

    /// The conjunction of the positive literals of `vars` (a "cube", the form in which
    /// quantification and relational products take variable sets). Runs as an operation,
    /// so a full table is collected or grown rather than reported.
    pub fn cube(&mut self, vars: &[u32]) -> Result<Bdd, BddError> {
        self.run(&[], |c| c.cube(vars))
    }

    /// The variables of a cube, in order.
    pub fn cube_vars(&self, mut cube: Bdd) -> Vec<u32> {
        let mut vs = Vec::new();
        while let Some((v, _, h)) = self.node(cube) {
            vs.push(v);
            cube = h;
        }
        vs
    }
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident),*) => {
        impl<S: NodeStore, C: OpCache> Manager<S, C> {
            $(
                $(#[$doc])*
                pub fn $name(&mut self, a: Bdd, b: Bdd) -> Result<Bdd, BddError> {
                    self.run(&[a, b], |c| c.$name(a, b))
                }
            )*
        }
    };
}

binary_ops!(
    /// Conjunction.
    and,
    /// Disjunction.
    or,
    /// Exclusive or.
    xor,
    /// `a ∧ ¬b`.
    diff,
    /// `a → b`.
    implies,
    /// `a ↔ b`.
    equiv,
    /// `∃ vars. a`, with `b` the cube of the variables (see [`Manager::cube`]).
    exists,
    /// `∀ vars. a`, with `b` the cube of the variables.
    forall
);

impl<S: NodeStore, C: OpCache> Manager<S, C> {
    /// If-then-else: `(f ∧ g) ∨ (¬f ∧ h)`.
    pub fn ite(&mut self, f: Bdd, g: Bdd, h: Bdd) -> Result<Bdd, BddError> {
        self.run(&[f, g, h], |c| c.ite(f, g, h))
    }

    /// Relational product `∃ vars. a ∧ b`.
    pub fn and_exists(&mut self, a: Bdd, b: Bdd, vars: Bdd) -> Result<Bdd, BddError> {
        self.run(&[a, b, vars], |c| c.and_exists(a, b, vars))
    }

    /// Successors: `(∃ x. s(x) ∧ r(x, x'))[x' := x]` for the variable pairs in `vars` (the
    /// cube of a relation's current variables `x` and next variables `x' = x + 1`, with `x`
    /// even). `s` must only use even (current-state) variables; state variables outside
    /// `vars` are kept unchanged.
    pub fn relnext(&mut self, s: Bdd, r: Bdd, vars: Bdd) -> Result<Bdd, BddError> {
        self.run(&[s, r, vars], |c| c.relnext(s, r, vars))
    }

    /// Predecessors: `∃ x'. r(x, x') ∧ s[x := x']`, the inverse of
    /// [`relnext`](Manager::relnext), with the same conventions.
    pub fn relprev(&mut self, s: Bdd, r: Bdd, vars: Bdd) -> Result<Bdd, BddError> {
        self.run(&[s, r, vars], |c| c.relprev(s, r, vars))
    }

    /// `f` with variable `v` replaced by the function `g`.
    pub fn compose(&mut self, f: Bdd, v: u32, g: Bdd) -> Result<Bdd, BddError> {
        let id = self.fresh_op_id();
        self.run(&[f, g], |c| c.compose(f, v, g, id))
    }

    /// `f` with its variables renamed by `map` (`(from, to)` pairs; unlisted variables stay).
    /// Any map is allowed, also one that changes the variable order.
    pub fn rename(&mut self, f: Bdd, map: &[(u32, u32)]) -> Result<Bdd, BddError> {
        let id = self.fresh_op_id();
        let map: HashMap<u32, u32> = map.iter().copied().collect();
        self.run(&[f], |c| c.rename(f, &map, id))
    }
}
