//! How much memory a manager holds, and how a PE that does a share of the work sizes its
//! tables.
//!
//! A manager's memory is its node table (16-byte nodes, 8-byte hash buckets, one bit of
//! bitmap per slot) and its operation cache (32-byte entries, one per slot by default),
//! reserved at their largest size and committed as they are touched; everything else of
//! a run (the relations, the frontier's roots, the encoded states of a sliced level) is
//! small beside them. [`Manager::memory_use`] says what is in memory now, table by table,
//! so that a run's peak can be taken apart instead of guessed.
//!
//! What the table grows to is decided by the growth rules of [`Config`]: beside live data
//! the table also grows at every collection forced by a full table while it is smaller
//! than [`Config::grow_on_full_below`], and after [`Config::thrashing_collections`]
//! collections at one size. Those two are budgets for the garbage of one PE's
//! exploration. A PE that explores a share of the states (a rank of a sliced
//! exploration) makes less garbage between two collections, but with one PE's budgets it
//! grows to one PE's size all the same: its table and cache end where one PE's end (at.5
//! `bfs` on 2 ranks: 16M slots on each rank, as on one). [`Config::for_share`] gives such
//! a PE its share of the budgets.

use crate::manager::{Config, Manager};
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;

/// Bytes of a node table in memory, part by part (see [`NodeStore::resident_bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableBytes {
    /// The node array.
    pub nodes: usize,
    /// The hash buckets.
    pub buckets: usize,
    /// The bitmap of slots in use.
    pub bitmap: usize,
}

/// Entries and bytes in memory of an operation cache (see [`OpCache::resident`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheBytes {
    /// Entries in use.
    pub entries: usize,
    /// Bytes in memory.
    pub bytes: usize,
}

/// Where a manager's memory is now (see [`Manager::memory_use`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// Node-table slots usable now.
    pub table_slots: usize,
    /// Slots in use or handed out since the last collection: the live nodes and the
    /// garbage of the operations since (an upper bound of the nodes in use).
    pub claimed: usize,
    /// Nodes live after the last collection: the roots' and, if it was a collection in
    /// the middle of an operation, that operation's partial results.
    pub live_after_last_collection: usize,
    /// The node table's bytes in memory, if the store can tell.
    pub table: Option<TableBytes>,
    /// The operation cache's entries and bytes in memory, if the cache can tell.
    pub cache: Option<CacheBytes>,
}

impl<S: NodeStore, C: OpCache> Manager<S, C> {
    /// Where this manager's memory is now: the table's size and fill, and the bytes in
    /// memory of each of its tables (a diagnostic: it asks the kernel, page by page).
    ///
    /// ```
    /// use rhizome_bdd::Manager;
    /// let mut m = Manager::new(1);
    /// let (x, y) = (m.ithvar(0), m.ithvar(1));
    /// m.and(x, y).unwrap();
    /// let u = m.memory_use();
    /// assert_eq!(u.table_slots, m.table_size());
    /// assert!(u.table.unwrap().nodes > 0); // the nodes just made are in memory
    /// ```
    pub fn memory_use(&self) -> MemoryUse {
        MemoryUse {
            table_slots: self.store.size(),
            claimed: self.store.claimed(),
            live_after_last_collection: self.stats().live_after_last_collection,
            table: self.store.resident_bytes(),
            cache: self.cache.resident(),
        }
    }
}

/// The live fraction of its table above which a share manager's table grows at most: a
/// table kept more than half live would collect at nearly every operation.
const MAX_SHARE_GROW_THRESHOLD: f64 = 0.5;

impl Config {
    /// The sizes for a PE that does one `pes`-th of the work one PE would (a rank of an
    /// exploration sliced over `pes` ranks): one PE's initial table and aggressive growth
    /// bound divided by `pes`, and `pes` times the collections at one size before a full
    /// table counts as thrashing, so that the garbage it may churn through before growing
    /// is one PE's divided by `pes` as well. The table grows for live data once the live
    /// nodes pass `pes` times one PE's fraction of it (at most half), that is the same
    /// number of live nodes at which one PE's table of `pes` times the size grows: with
    /// one PE's fraction, a rank of at.5 `bfs` on 2 ranks grew to one PE's 16M slots for
    /// its roots alone (peak 0.97x of one rank), with twice it both ranks stay at 8M
    /// (0.51x, the same time). It still grows for an operation that does not fit, and up
    /// to the same `max_nodes` (the memory limit is per PE). `pes` of 1 (or 0) changes
    /// nothing.
    ///
    /// ```
    /// use rhizome_bdd::Config;
    /// let one = Config::default();
    /// let half = one.for_share(2);
    /// assert_eq!(half.grow_on_full_below, one.grow_on_full_below / 2);
    /// assert_eq!(half.initial_nodes, one.initial_nodes / 2);
    /// assert_eq!(half.grow_threshold, one.grow_threshold * 2.0);
    /// assert_eq!(half.max_nodes, one.max_nodes);
    /// assert_eq!(one.for_share(1).grow_on_full_below, one.grow_on_full_below);
    /// ```
    pub fn for_share(&self, pes: usize) -> Config {
        let pes = pes.max(1);
        Config {
            initial_nodes: self.initial_nodes.div_ceil(pes),
            grow_on_full_below: self.grow_on_full_below / pes,
            grow_threshold: (self.grow_threshold * pes as f64).min(MAX_SHARE_GROW_THRESHOLD),
            thrashing_collections: self
                .thrashing_collections
                .saturating_mul(u32::try_from(pes).unwrap_or(u32::MAX)),
            ..self.clone()
        }
    }
}
