//! The work of one BDD operation spread over the PEs: the top of its recursion runs as
//! jobs of the cluster work stealing of [`rhizome::tasks`], so an idle PE steals a
//! sub-call and runs it on *its own* manager over the same [`DistNodeStore`].
//!
//! A sub-call of an operation is a few words: the operation and its operands, edges
//! whose node indices mean the same on every PE. So a fork near the root of the recursion
//! (above a depth cutoff) spawns its other halves as serializable [`OpJob`]s and runs the
//! first itself; below the cutoff the operations fork with the plain pool `join`, at no
//! cost on the hot path. A thief runs the job with its PE's node store (own node cache
//! and allocation cursors), its operation cache ([`DistOpCache`]: per PE, or a local one in
//! front of the cache all PEs share), and its own workers; the result (an
//! edge) travels back through the job's future. Each PE finds its manager for a job in a
//! process-wide registry, by the session number that PE 0 hands out when the managers
//! are set up ([`Manager::spread_over`]).
//!
//! Collections stay on PE 0, between operations, when no job is in flight (a fork waits
//! for all of its halves before it returns, also when one of them failed). Every job
//! carries the *generation* of the table (the collections so far): a PE that receives a
//! job of a newer generation first forgets what a collection invalidates, its node cache,
//! its allocation cursors, its full flag and its operation cache (grown as the table
//! grew). A full table anywhere
//! makes the job return [`Bdd::INVALID`]; the PE that waits for it marks its own store
//! full, so the whole operation fails and [`Manager::run`] collects and reruns it.

use super::DistNodeStore;
use super::DistOpCache;
use crate::edge::Bdd;
use crate::manager::Manager;
use crate::node_table::NodeStore;
use crate::ops::OpCtx;
use rhizome::Ctx;
use rhizome::tasks::{Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// A sub-call of a BDD operation, as it travels between PEs (edges as raw words).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(crate) enum SubOp {
    And(u64, u64),
    Or(u64, u64),
    Xor(u64, u64),
    Ite(u64, u64, u64),
    Exists(u64, u64),
    AndExists(u64, u64, u64),
    RelNext(u64, u64, u64),
    RelPrev(u64, u64, u64),
}

impl SubOp {
    /// `relprev` when `backward`, else `relnext`.
    #[inline]
    pub(crate) fn rel_image(backward: bool, s: u64, r: u64, vars: u64) -> SubOp {
        if backward {
            SubOp::RelPrev(s, r, vars)
        } else {
            SubOp::RelNext(s, r, vars)
        }
    }

    /// Runs the sub-call in `c`.
    pub(super) fn apply<S: NodeStore, C: crate::OpCache>(self, c: &OpCtx<'_, S, C>) -> Bdd {
        match self {
            SubOp::And(a, b) => c.and(Bdd(a), Bdd(b)),
            SubOp::Or(a, b) => c.or(Bdd(a), Bdd(b)),
            SubOp::Xor(a, b) => c.xor(Bdd(a), Bdd(b)),
            SubOp::Ite(f, g, h) => c.ite(Bdd(f), Bdd(g), Bdd(h)),
            SubOp::Exists(f, v) => c.exists(Bdd(f), Bdd(v)),
            SubOp::AndExists(a, b, v) => c.and_exists(Bdd(a), Bdd(b), Bdd(v)),
            SubOp::RelNext(s, r, v) => c.rel_image::<false>(Bdd(s), Bdd(r), Bdd(v)),
            SubOp::RelPrev(s, r, v) => c.rel_image::<true>(Bdd(s), Bdd(r), Bdd(v)),
        }
    }
}

/// How one PE's manager takes part in spread operations; see the [module docs](self).
/// Made by [`Manager::spread_over`]; one per PE.
pub struct Distribution {
    /// Names this set of managers (one per PE) in the registry.
    session: u64,
    /// Forks at a depth below this spawn jobs.
    cutoff: u32,
    /// Collections of the table: PE 0's count, or the last one this PE caught up with.
    generation: AtomicU64,
    /// Held while a PE catches up with a collection.
    catch_up: Mutex<()>,
    /// The manager's store and cache while it runs an operation or serves jobs: always a
    /// `DistNodeStore` and a `DistOpCache` (only such a manager gets a distribution).
    store: AtomicPtr<DistNodeStore>,
    cache: AtomicPtr<DistOpCache>,
    /// Jobs of spread operations run on this PE.
    jobs: AtomicU64,
}

/// Every live distribution of this process, by session and PE (several with the local
/// transport, where the PEs share the process).
static REGISTRY: Mutex<Vec<(u64, usize, Weak<Distribution>)>> = Mutex::new(Vec::new());
/// Session numbers handed out by PE 0s of this process.
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// PE `pe`'s distribution of `session`.
pub(super) fn lookup(session: u64, pe: usize) -> Option<Arc<Distribution>> {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.iter()
        .find(|(s, p, _)| *s == session && *p == pe)
        .and_then(|(_, _, d)| d.upgrade())
}

impl Distribution {
    /// The store and cache this PE's jobs run on.
    pub(super) fn bound(&self) -> (&DistNodeStore, &DistOpCache) {
        let (store, cache) = (
            self.store.load(Ordering::Acquire),
            self.cache.load(Ordering::Acquire),
        );
        assert!(
            !store.is_null() && !cache.is_null(),
            "rhizome: a BDD job reached a PE whose manager does not serve"
        );
        // SAFETY: bound by `Manager::run` (PE 0, which waits for every job of its
        // operation before it returns) or `Manager::serve` (the others, for the whole run
        // of the scheduler): the manager is borrowed and does not move meanwhile, and a
        // job of this distribution only runs while one of those does.
        unsafe { (&*store, &*cache) }
    }

    /// Forks less deep than this spawn jobs.
    pub(super) fn cutoff(&self) -> u32 {
        self.cutoff
    }

    /// Counts one job of a spread operation run on this PE.
    pub(super) fn count_job(&self) {
        self.jobs.fetch_add(1, Ordering::Relaxed);
    }

    /// Names this set of managers.
    pub(super) fn session(&self) -> u64 {
        self.session
    }

    /// The table's generation as this PE knows it.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Jobs of spread operations this PE has run.
    pub fn jobs_run(&self) -> u64 {
        self.jobs.load(Ordering::Relaxed)
    }

    /// Points the jobs of this PE at `store` and `cache` (the manager's, which does not
    /// move while it runs an operation or serves).
    fn bind(&self, store: &DistNodeStore, cache: &DistOpCache) {
        self.store
            .store(store as *const _ as *mut DistNodeStore, Ordering::Release);
        self.cache
            .store(cache as *const _ as *mut DistOpCache, Ordering::Release);
    }

    /// A collection of the table happened on this (the driving) PE, which has emptied its
    /// own caches: jobs from now on carry the next generation.
    pub(crate) fn collected(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Before a job of `generation` runs here: catches up with the collections since the
    /// last job. No job of an older generation is running (each operation waits for all of
    /// its jobs before a collection), and every job of this PE passes here first, so the
    /// one that catches up has the store and cache to itself.
    pub(super) fn enter(&self, generation: u64, store: &DistNodeStore, cache: &DistOpCache) {
        if self.generation() == generation {
            return;
        }
        let _g = self.catch_up.lock().unwrap_or_else(|e| e.into_inner());
        if self.generation() != generation {
            let before = store.slots_per_pe();
            // One collection behind, the table's bitmaps are still the ones it left (only
            // a collection writes them), so this PE's cached results whose nodes all
            // survived stay valid (live nodes never move); behind by more, a slot dead at
            // one collection may hold another live node at the next: forget them all.
            let one_behind = generation == self.generation() + 1;
            // SAFETY: see above: no other thread of this PE uses the store or the cache
            // until the new generation is published below.
            unsafe { store.forget_local() };
            let live = one_behind.then(|| store.live_bitmaps());
            // The cache keeps its ratio to this PE's share of the table, which may have
            // grown (and takes the shared cache's size, if it has one).
            let is_live = live.as_ref().map(|l| move |i: u64| store.is_live_in(l, i));
            let is_live = is_live.as_ref().map(|f| f as &dyn Fn(u64) -> bool);
            cache.catch_up(store.slots_per_pe() / before, is_live);
            self.generation.store(generation, Ordering::Release);
        }
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.retain(|(_, _, d)| d.strong_count() > 0);
    }
}

/// Where a sub-call belongs: its set of managers, the table's generation when it was
/// spawned, and its depth in the operation's recursion.
#[derive(Clone, Copy, Serialize, Deserialize)]
pub(super) struct Stamp {
    pub(super) session: u64,
    pub(super) generation: u64,
    pub(super) depth: u32,
}

/// A sub-call of a spread operation, stolen (or run) as a job; its output is the result
/// edge.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct OpJob(SubOp, Stamp);

impl Job for OpJob {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        let OpJob(op, stamp) = self;
        OpHome(stamp).run(t, |c| op.apply(c))
    }
}

/// Where a sendable part of a spread operation belongs ([`OpCtx::join_sendable`]): its set
/// of managers, the table's generation and the depth in the recursion. Part of the
/// description of the part, so that the PE that takes it runs it on its own manager of
/// the same set ([`OpHome::run`]).
#[derive(Clone, Copy, Serialize, Deserialize)]
pub struct OpHome(pub(super) Stamp);

impl OpHome {
    /// Runs `f` in an operation context on this PE's manager of the set the part came
    /// from (in [`Job::run`] of the part's description, on the PE that took it), and
    /// returns its result as a raw edge ([`Bdd::raw`]), the output of the description.
    /// If this PE's view of the table filled up meanwhile ([`OpCtx::aborted`]), whatever
    /// `f` returned is replaced by a mark that fails the waiting operation, which
    /// [`Manager::run`] then collects and runs again.
    pub fn run(
        self,
        t: &TaskCtx,
        f: impl FnOnce(&OpCtx<'_, DistNodeStore, DistOpCache>) -> Bdd,
    ) -> u64 {
        let OpHome(stamp) = self;
        let d = lookup(stamp.session, t.my_pe())
            .expect("rhizome: a BDD job reached a PE whose manager is gone");
        let (store, cache) = d.bound();
        d.enter(stamp.generation, store, cache);
        d.count_job();
        let c = OpCtx {
            store,
            cache,
            w: t.worker(),
            depth: stamp.depth,
            dist: Some(&d),
        };
        let r = f(&c);
        if c.aborted() { Bdd::INVALID.0 } else { r.0 }
    }
}

impl<S: NodeStore, C: crate::OpCache> OpCtx<'_, S, C> {
    /// Runs `a` and `b`, possibly in parallel, like [`join`](OpCtx::join); when the
    /// operation is spread over PEs ([`Manager::spread_over`]), `b` may also run on
    /// another PE: `desc(home)` describes it as a job whose [`run`](Job::run) computes
    /// what `b` does through [`OpHome::run`]. Here `b` runs, and nothing is encoded
    /// unless another PE takes the half. The description's type must be registered on
    /// every PE; `b` must wait only for work it starts itself. A result of
    /// [`Bdd::INVALID`] from the other PE (its view of the table filled up) fails this
    /// operation too, so that [`Manager::run`] collects and runs it again.
    #[inline]
    pub fn join_sendable<RA: Send, D: Job<Output = u64> + Sync>(
        &self,
        a: impl FnOnce(&OpCtx<'_, S, C>) -> RA + Send,
        b: impl FnOnce(&OpCtx<'_, S, C>) -> Bdd + Send,
        desc: impl FnOnce(OpHome) -> D,
    ) -> (RA, Bdd) {
        let d = match self.dist {
            Some(d) if S::SPREADS && self.depth < d.cutoff => d,
            _ => return self.join(a, b),
        };
        let depth = self.depth + 1;
        let (store, cache, dist) = (self.store, self.cache, self.dist);
        let home = OpHome(Stamp {
            session: d.session,
            generation: d.generation(),
            depth,
        });
        let (ra, rb) = self.w.join_sendable(
            move |w| a(&on_worker(store, cache, w, depth, dist)),
            move |w| b(&on_worker(store, cache, w, depth, dist)).0,
            desc(home),
        );
        if rb == Bdd::INVALID.0 {
            self.store.abort();
        }
        (ra, Bdd(rb))
    }
}

impl<S: NodeStore, C: crate::OpCache> OpCtx<'_, S, C> {
    /// Runs the sub-calls `ops` in parallel when the operation is spread and this fork is
    /// above the cutoff: the first here, the others as sendable halves (other PEs may
    /// steal them); `None` otherwise (then the caller forks on the pool).
    #[inline]
    pub(crate) fn spread<const N: usize>(&self, ops: [SubOp; N]) -> Option<[Bdd; N]> {
        if !S::SPREADS {
            return None;
        }
        match self.dist {
            Some(d) if self.depth < d.cutoff => {
                let mut out = [Bdd::FALSE; N];
                self.fork_sendable(d, &ops, &mut out);
                // Every half is back, also after a failure: nothing of the operation
                // still runs when it returns (a collection may follow). A half that
                // failed on another PE filled that PE's view of the table: fail here too.
                if out.contains(&Bdd::INVALID) {
                    self.store.abort();
                }
                Some(out)
            }
            _ => None,
        }
    }

    /// `out[i] = ops[i]` for every `i`: the last sub-call as a sendable half (pushed
    /// first, so the oldest, the one a thief takes), the rest forked the same way before
    /// the first runs here.
    fn fork_sendable(&self, d: &Distribution, ops: &[SubOp], out: &mut [Bdd]) {
        let Some((&last, rest)) = ops.split_last() else {
            return;
        };
        let depth = self.depth + 1;
        let (store, cache, dist) = (self.store, self.cache, self.dist);
        if rest.is_empty() {
            out[0] = last.apply(&OpCtx { depth, ..*self });
            return;
        }
        let stamp = Stamp {
            session: d.session,
            generation: d.generation(),
            depth,
        };
        let (first, tail) = out.split_at_mut(rest.len());
        let ((), r) = self.w.join_sendable(
            // The earlier sub-calls, one level deeper in the chain of forks but at the
            // same depth of the operation's recursion.
            move |w| on_worker(store, cache, w, depth - 1, dist).fork_sendable(d, rest, first),
            move |w| last.apply(&on_worker(store, cache, w, depth, dist)).0,
            OpJob(last, stamp),
        );
        tail[0] = Bdd(r);
    }
}

/// The context of a fork's half on worker `w`: the operation's store, cache and
/// distribution at recursion depth `depth`.
#[inline]
fn on_worker<'b, S: NodeStore, C: crate::OpCache>(
    store: &'b S,
    cache: &'b C,
    w: &'b rhizome::pool::Worker,
    depth: u32,
    dist: Option<&'b Distribution>,
) -> OpCtx<'b, S, C> {
    OpCtx {
        store,
        cache,
        w,
        depth,
        dist,
    }
}

impl Manager<DistNodeStore, DistOpCache> {
    /// Collective: makes this PE's manager one of a set, one per PE, that spreads the
    /// work of its operations over the PEs (see the [module docs](self)): forks less than
    /// `cutoff` levels deep spawn jobs on `tasks` (registered here). Operations spread
    /// while they run inside [`Tasks::run`]; outside, they run on this PE alone. PE 0
    /// drives (runs operations and collects); every other PE calls [`Manager::serve`].
    ///
    /// ```
    /// use rhizome::World;
    /// use rhizome::tasks::Tasks;
    /// use rhizome_bdd::{Bdd, Config, DistNodeStore, DistOpCache, Manager};
    /// use std::sync::Arc;
    ///
    /// let out = World::builder().pes(2).workers(1).run(|ctx| {
    ///     let store = DistNodeStore::new(ctx, 1 << 12, ctx.workers());
    ///     let cache = DistOpCache::shared(ctx, 1 << 12, 1 << 12);
    ///     let mut m = Manager::from_parts_on_pool(store, cache, Config::default(), Arc::clone(ctx.pool()));
    ///     let tasks = Tasks::new(ctx);
    ///     m.spread_over(ctx, &tasks, 4);
    ///     if ctx.my_pe() != 0 {
    ///         m.serve(ctx, &tasks);
    ///         return None;
    ///     }
    ///     let vars: Vec<u32> = (0..12).collect();
    ///     let f = tasks.run(ctx, |_| {
    ///         let lits: Vec<Bdd> = vars.iter().map(|&v| m.ithvar(v)).collect();
    ///         lits.iter().fold(Bdd::FALSE, |f, &x| m.xor(f, x).unwrap())
    ///     });
    ///     Some(m.satcount(f, &vars))
    /// }).unwrap();
    /// assert_eq!(out[0], Some(2048u32.into()));
    /// ```
    pub fn spread_over(&mut self, ctx: &Ctx, tasks: &Tasks, cutoff: u32) {
        let session = ctx.broadcast(NEXT_SESSION.fetch_add(1, Ordering::Relaxed), 0);
        tasks.register::<OpJob>();
        super::deal::register(tasks);
        let d = Arc::new(Distribution {
            session,
            cutoff,
            generation: AtomicU64::new(0),
            catch_up: Mutex::new(()),
            store: AtomicPtr::new(std::ptr::null_mut()),
            cache: AtomicPtr::new(std::ptr::null_mut()),
            jobs: AtomicU64::new(0),
        });
        REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).push((
            session,
            ctx.my_pe(),
            Arc::downgrade(&d),
        ));
        self.dist = Some(d);
        ctx.barrier();
    }

    /// Collective with the driving PE's [`Tasks::run`]: runs this PE's share of the jobs
    /// of the spread operations until the driver's run ends.
    pub fn serve(&self, ctx: &Ctx, tasks: &Tasks) {
        self.bind_dist();
        tasks.run(ctx, |_| ());
    }
}

impl<S: NodeStore, C: crate::OpCache> Manager<S, C> {
    /// Jobs of spread operations this PE has run, if the manager spreads its operations
    /// ([`Manager::spread_over`]).
    pub fn spread_jobs(&self) -> Option<u64> {
        self.dist.as_ref().map(|d| d.jobs_run())
    }

    /// Points this PE's jobs at the manager's store and cache.
    pub(crate) fn bind_dist(&self) {
        if let Some(d) = &self.dist {
            // `dist` is only set by `spread_over`, on a manager of these two types.
            let store = (&self.store as &dyn Any).downcast_ref::<DistNodeStore>();
            let cache = (&self.cache as &dyn Any).downcast_ref::<DistOpCache>();
            if let (Some(store), Some(cache)) = (store, cache) {
                d.bind(store, cache);
            }
        }
    }
}
