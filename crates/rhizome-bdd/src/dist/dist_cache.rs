//! The operation cache of a PE of a distributed manager: [`DistOpCache`], a per-PE cache,
//! or the memo cache all PEs share ([`GlobalMemo`]).
//!
//! Per PE only, each PE remembers the results its own workers computed: a sub-call
//! stolen by another PE cannot find what the first PE already knows. Shared, every PE
//! finds every PE's results. Where the shared entries are memory this process reaches in
//! place (the `local` transport, MPI ranks on one node), a lookup reads the shared entry
//! and nothing else: a local cache in front would cost a second miss on every lookup
//! that misses it, for entries no nearer than the shared ones (collision.5 `sat` with
//! PE 0 alone: 4.4 to 4.6 s with a front of a sixteenth, 3.6 to 3.9 s without, before
//! the shared cache had its full size). Where they are reached one-sided, a small local
//! cache stands in front: a lookup that misses it goes to the shared one, and a hit there
//! is copied into it; a store goes to both. The choice is made at run time (predictable
//! branches), so the distributed manager has one type.
//!
//! The local cache is collected with the table on the driving PE and emptied on the
//! others when they catch up with a collection (the generation of `dist::spread`); the
//! shared one is collected once, by the driving PE, and the others take its new size.

use super::lookup_count::LookupCount;
use super::memo::GlobalMemo;
use crate::edge::Bdd;
use crate::op_cache::{CacheStats, OpCache, SharedOpCache};
use rhizome::Ctx;

/// The local cache in front of a shared one reached one-sided has this share of a shared
/// partition's entries: big enough for the hot results of the running operations, small
/// beside the partition (it is memory every PE holds again).
const FRONT_SHARE: usize = 16;

/// The operation cache of a PE of a distributed manager; see the [module docs](self).
///
/// ```
/// use rhizome::World;
/// use rhizome_bdd::DistOpCache;
/// use rhizome_bdd::OpCache;
///
/// World::builder().pes(2).run(|ctx| {
///     let cache = DistOpCache::shared(ctx, 1 << 12, 1 << 12);
///     if ctx.my_pe() == 0 {
///         cache.put(1 << 40, 2, 0, rhizome_bdd::Bdd::TRUE);
///     }
///     ctx.barrier();
///     // PE 1 finds PE 0's result.
///     assert_eq!(cache.get(1 << 40, 2, 0), Some(rhizome_bdd::Bdd::TRUE));
///     ctx.barrier();
/// }).unwrap();
/// ```
pub struct DistOpCache {
    /// The PE's own cache: all of it per PE, the front of a shared cache reached
    /// one-sided, none in front of one reached in place.
    local: Option<SharedOpCache>,
    /// The shared cache, and the PEs it is spread over.
    shared: Option<(GlobalMemo, usize)>,
    counts: LookupCount,
}

impl DistOpCache {
    /// A PE's own cache and nothing shared (each PE's results stay its own).
    pub fn per_pe(local: SharedOpCache) -> DistOpCache {
        DistOpCache::with(Some(local), None)
    }

    /// Collective: a shared cache of `entries` entries in all (growing with the table up
    /// to `capacity`), `1/N` of them on each of the `N` PEs; where the entries are
    /// reached one-sided, with a local cache of a sixteenth of `entries` in front on each.
    /// Sized as one PE's own cache would be, it holds as many results for every PE, and
    /// each PE holds `1/N` of it. Every PE must pass the same sizes.
    pub fn shared(ctx: &Ctx, entries: usize, capacity: usize) -> DistOpCache {
        DistOpCache::shared_with(ctx, entries, capacity, false)
    }

    /// [`shared`](Self::shared), with `one_sided` forcing the shared entries to be
    /// reached by one-sided gets and puts (checked entries) even where the transport
    /// offers the memory directly (seqlock entries): for tests of that path.
    pub fn shared_with(ctx: &Ctx, entries: usize, capacity: usize, one_sided: bool) -> DistOpCache {
        let pes = ctx.num_pes();
        let memo = GlobalMemo::new(ctx, entries / pes, capacity / pes, one_sided);
        let front = (!memo.is_direct())
            .then(|| SharedOpCache::new(entries / FRONT_SHARE, capacity / FRONT_SHARE));
        DistOpCache::with(front, Some((memo, pes)))
    }

    fn with(local: Option<SharedOpCache>, shared: Option<(GlobalMemo, usize)>) -> DistOpCache {
        DistOpCache {
            local,
            shared,
            counts: LookupCount::new(),
        }
    }

    /// Whether results are shared across PEs.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Whether the shared entries are reached directly (`Some(true)`), one-sided
    /// (`Some(false)`), or there are none (`None`).
    pub fn shared_is_direct(&self) -> Option<bool> {
        self.shared.as_ref().map(|s| s.0.is_direct())
    }

    /// Entries of this PE's local cache, and of each PE's shared partition (0 if none).
    pub fn entries(&self) -> (usize, usize) {
        (
            self.local.as_ref().map_or(0, SharedOpCache::len),
            self.shared.as_ref().map_or(0, |s| s.0.len()),
        )
    }

    /// On a PE other than the driving one, after a collection there (see
    /// `dist::spread`): sizes the local cache anew to its share of a table `growth`
    /// times as large, keeping the entries whose nodes all survived where `is_live` says
    /// which did (else emptying it), and takes the shared cache's new size. No other
    /// thread of the PE may use the cache meanwhile.
    pub(crate) fn catch_up(&self, growth: usize, is_live: Option<&dyn Fn(u64) -> bool>) {
        if let Some(local) = &self.local {
            let entries = local.len() * growth.max(1);
            match is_live {
                Some(is_live) => local.collect_shared(entries, is_live),
                None => local.clear_to(entries),
            }
        }
        if let Some((s, _)) = &self.shared {
            s.catch_up();
        }
    }

    /// A lookup that missed the local cache in front, in the shared one reached
    /// one-sided. Out of line: the lookups of the other kinds stay as small as the
    /// shared-memory cache's, inlined into the operations.
    #[inline(never)]
    fn get_behind(&self, local: &SharedOpCache, k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
        let r = self.shared.as_ref()?.0.get(k0, k1, k2)?;
        self.counts.add(LookupCount::SHARED_HITS);
        local.put(k0, k1, k2, r);
        Some(r)
    }

    /// A store into the shared cache behind a local one, out of line as
    /// [`get_behind`](Self::get_behind).
    #[inline(never)]
    fn put_behind(&self, k0: u64, k1: u64, k2: u64, result: Bdd) {
        if let Some((s, _)) = &self.shared {
            s.put(k0, k1, k2, result);
        }
    }
}

impl OpCache for DistOpCache {
    fn stats(&self) -> Option<CacheStats> {
        let [lookups, local_hits, shared_hits] = self.counts.sums();
        Some(CacheStats {
            lookups,
            local_hits,
            shared_hits,
        })
    }

    fn collect(&mut self, entries: usize, is_live: &dyn Fn(u64) -> bool) {
        match (&mut self.local, &mut self.shared) {
            (local, Some((s, pes))) => {
                if let Some(local) = local {
                    local.collect(entries / FRONT_SHARE, is_live);
                }
                s.collect(entries / *pes, is_live);
            }
            (Some(local), None) => local.collect(entries, is_live),
            (None, None) => unreachable!("a cache has a local part, a shared one or both"),
        }
    }

    // Always inlined, as the shared-memory cache's lookups are: the operations go on to
    // read the nodes of their operands, and only with the lookup inline does the CPU
    // start those reads while the entry's cache miss is outstanding (out of line,
    // collision.5 `sat` on one PE of a distributed manager took 2.3 s against 1.7 s).
    #[inline(always)]
    fn get(&self, k0: u64, k1: u64, k2: u64) -> Option<Bdd> {
        let counts = self.counts.shard();
        LookupCount::bump(counts, LookupCount::LOOKUPS);
        let Some(local) = &self.local else {
            // The shared cache, in place.
            let r = self.shared.as_ref()?.0.get(k0, k1, k2);
            if r.is_some() {
                LookupCount::bump(counts, LookupCount::SHARED_HITS);
            }
            return r;
        };
        if let Some(r) = local.get(k0, k1, k2) {
            LookupCount::bump(counts, LookupCount::LOCAL_HITS);
            return Some(r);
        }
        // Per PE only, a miss ends here, without a call.
        self.shared.as_ref()?;
        self.get_behind(local, k0, k1, k2)
    }

    #[inline(always)]
    fn put(&self, k0: u64, k1: u64, k2: u64, result: Bdd) {
        let Some(local) = &self.local else {
            if let Some((s, _)) = &self.shared {
                s.put(k0, k1, k2, result);
            }
            return;
        };
        local.put(k0, k1, k2, result);
        if self.shared.is_some() {
            self.put_behind(k0, k1, k2, result);
        }
    }
}
