//! [`GlobalMap`] and [`GlobalSet`]: keys hashed to owner PEs, each owner's cells a hash
//! map that only its message handlers touch (seed 003, section 4.2).
//!
//! Rules, and what the paper leaves open:
//! - **Inserts deduplicated.** Pending inserts of one key on a PE travel as one entry;
//!   on a map, the last value offered is the one sent (the others are linearized just
//!   before it, as they were all pending together).
//! - **Lookups shared per key.** Pending lookups of one key travel as one entry and all
//!   get its answer. A lookup is never answered from an insert pending on its PE: the
//!   insert is not in the structure until its commit, and another PE may be looking.
//! - **One commit, one batch per owner**, all in flight together; each owner applies its
//!   batch's inserts, then its lookups, in one handler (they are all concurrent).
//! - **Duplicate insert on a map** replaces the value (an upsert); on a set it does
//!   nothing. **Delete and size** are not offered (a size read while other PEs insert
//!   is stale at once; no application here needs them). **Iteration** only of a
//!   quiescent structure, each PE reading the entries it owns (`owned_keys`,
//!   `owned_entries`): a set written in one phase and read in the next (connected
//!   components' root pairs). **Capacity**: an owner's cells grow with the keys it holds.

use super::flat::{Combine, Flat, Offer};
use super::{Mode, Stats};
use rhizome::Message;
use rhizome::coop::Coop;
use std::collections::HashMap;

/// The PE that owns `key`, among `pes`: a multiplicative hash, so that consecutive keys
/// spread over the PEs.
pub fn owner(key: u64, pes: usize) -> usize {
    ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % pes as u64) as usize
}

/// An insert or a lookup.
pub enum MapOp<V> {
    /// Sets the key's value.
    Insert(u64, V),
    /// Reads it.
    Lookup(u64),
}

/// Travels as (is an insert, key, value of an insert) (to the centralized combiner).
impl<V: Message> Message for MapOp<V> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MapOp::Insert(key, v) => {
                true.encode(out);
                key.encode(out);
                v.encode(out);
            }
            MapOp::Lookup(key) => {
                false.encode(out);
                key.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        if bool::decode(input) {
            let key = u64::decode(input);
            MapOp::Insert(key, V::decode(input))
        } else {
            MapOp::Lookup(u64::decode(input))
        }
    }
}

/// The proxy of a map on one PE: pending inserts and lookups, by key.
pub struct MapProxy<V> {
    /// Per key: the value to insert and the inserts waiting for it.
    inserts: HashMap<u64, (V, Vec<usize>)>,
    /// Per key: the lookups waiting for its value.
    lookups: HashMap<u64, Vec<usize>>,
    /// The commit in flight: its inserts, and per batch the lookups, in batch order.
    committed: (Vec<usize>, Vec<Vec<Vec<usize>>>),
    /// Its answers, once in.
    answers: Vec<Vec<Option<V>>>,
}

impl<V> Default for MapProxy<V> {
    fn default() -> Self {
        MapProxy {
            inserts: HashMap::new(),
            lookups: HashMap::new(),
            committed: (Vec::new(), Vec::new()),
            answers: Vec::new(),
        }
    }
}

/// One owner's share of a commit: (inserts, looked-up keys).
type MapBatch<V> = (Vec<(u64, V)>, Vec<u64>);

impl<V: Message + Clone> Combine for MapProxy<V> {
    type Op = MapOp<V>;
    /// A lookup's value; `None` for an insert and for a key not present.
    type Out = Option<V>;
    type Batch = MapBatch<V>;
    /// The looked-up keys' values, in the batch's order.
    type Answer = Vec<Option<V>>;
    type Master = HashMap<u64, V>;
    /// Nothing: an owner's answer is final.
    type Fetch = ();
    type Fetched = ();
    const LOCKED: bool = false;

    fn offer(&mut self, op: MapOp<V>, index: usize) -> Offer<Option<V>> {
        match op {
            MapOp::Insert(key, v) => {
                let entry = self
                    .inserts
                    .entry(key)
                    .or_insert_with(|| (v.clone(), Vec::new()));
                entry.0 = v;
                entry.1.push(index);
            }
            MapOp::Lookup(key) => self.lookups.entry(key).or_default().push(index),
        }
        Offer::Pending
    }

    fn pending(&self) -> usize {
        self.inserts.len() + self.lookups.len()
    }

    fn joins(&self, op: &MapOp<V>) -> bool {
        match op {
            MapOp::Insert(key, _) => self.inserts.contains_key(key),
            MapOp::Lookup(key) => self.lookups.contains_key(key),
        }
    }

    fn batch(&mut self, _me: usize, pes: usize, _: &mut Self::Master) -> Vec<(usize, MapBatch<V>)> {
        let mut per_owner: Vec<(MapBatch<V>, Vec<Vec<usize>>)> = Vec::new();
        per_owner.resize_with(pes, Default::default);
        let mut insert_indices = Vec::new();
        for (key, (v, waiting)) in self.inserts.drain() {
            per_owner[owner(key, pes)].0.0.push((key, v));
            insert_indices.extend(waiting);
        }
        for (key, waiting) in self.lookups.drain() {
            let (batch, lookups) = &mut per_owner[owner(key, pes)];
            batch.1.push(key);
            lookups.push(waiting);
        }
        let (batches, lookups): (Vec<_>, Vec<_>) = per_owner
            .into_iter()
            .enumerate()
            .filter(|(_, (b, _))| !b.0.is_empty() || !b.1.is_empty())
            .map(|(pe, (b, l))| ((pe, b), l))
            .unzip();
        self.committed = (insert_indices, lookups);
        batches
    }

    fn fetches(
        &mut self,
        answers: Vec<Vec<Option<V>>>,
        _: usize,
        _: &mut Self::Master,
    ) -> Vec<(usize, ())> {
        self.answers = answers;
        Vec::new()
    }

    fn serve(_: &mut Self::Master, _: ()) {}

    fn resolve(&mut self, _: Vec<()>) -> Vec<(usize, Option<V>)> {
        let (inserts, lookups) = std::mem::take(&mut self.committed);
        let answers = std::mem::take(&mut self.answers);
        let mut out: Vec<(usize, Option<V>)> = inserts.into_iter().map(|i| (i, None)).collect();
        for (values, waiting) in answers.into_iter().zip(lookups) {
            for (v, indices) in values.into_iter().zip(waiting) {
                out.extend(indices.into_iter().map(|i| (i, v.clone())));
            }
        }
        out
    }

    fn apply(cells: &mut HashMap<u64, V>, (inserts, lookups): MapBatch<V>) -> Vec<Option<V>> {
        cells.extend(inserts);
        lookups.iter().map(|k| cells.get(k).cloned()).collect()
    }
}

/// A linearizable global map from `u64` keys to `V`, with flat combining (see the module
/// docs for the rules). Without combining (`Mode::None`) each operation is one message
/// to its key's owner; with `Mode::Centralized`, one message to the single combiner.
pub struct GlobalMap<'c, V: Message + Clone> {
    flat: Flat<'c, MapProxy<V>>,
}

impl<'c, V: Message + Clone> GlobalMap<'c, V> {
    /// Collective: an empty map combining in `mode` with a buffer of
    /// [`DEFAULT_CAPACITY`](super::DEFAULT_CAPACITY) keys per PE.
    pub fn new(coop: &Coop<'c>, mode: Mode) -> Self {
        Self::with_capacity(coop, mode, super::DEFAULT_CAPACITY)
    }

    /// Collective: as [`new`](Self::new), with `capacity` keys pending per proxy.
    pub fn with_capacity(coop: &Coop<'c>, mode: Mode, capacity: usize) -> Self {
        GlobalMap {
            flat: Flat::new(coop, mode, capacity),
        }
    }

    /// Sets `key`'s value to `v`; returns when it has taken effect.
    pub async fn insert(&self, key: u64, v: V) {
        self.flat.apply(MapOp::Insert(key, v)).await;
    }

    /// Inserts every `(key, value)` of `entries`, as concurrent inserts of this task
    /// (in no order among them: of two values of one key, either may stay), waiting
    /// once ([`Flat::apply_all`](super::Flat::apply_all)).
    pub async fn insert_all(&self, entries: Vec<(u64, V)>) {
        let ops = entries
            .into_iter()
            .map(|(k, v)| MapOp::Insert(k, v))
            .collect();
        self.flat.apply_all(ops).await;
    }

    /// The value of `key`, if it has one.
    pub async fn lookup(&self, key: u64) -> Option<V> {
        self.flat.apply(MapOp::Lookup(key)).await
    }

    /// The entries this PE owns (in no particular order). Not an operation of the
    /// structure: read it only when the map is quiescent (after [`Coop::run`] returned
    /// on every PE), for instance to read out in one phase what the previous one wrote.
    pub fn owned_entries(&self) -> Vec<(u64, V)> {
        let cells = self.flat.master();
        cells.iter().map(|(&k, v)| (k, v.clone())).collect()
    }

    /// This PE's counters so far.
    pub fn stats(&self) -> Stats {
        self.flat.stats()
    }
}

/// A linearizable global set of `u64` keys: a [`GlobalMap`] without values.
pub struct GlobalSet<'c> {
    map: GlobalMap<'c, ()>,
}

impl<'c> GlobalSet<'c> {
    /// Collective: an empty set combining in `mode`.
    pub fn new(coop: &Coop<'c>, mode: Mode) -> Self {
        GlobalSet {
            map: GlobalMap::new(coop, mode),
        }
    }

    /// Collective: as [`new`](Self::new), with `capacity` keys pending per proxy.
    pub fn with_capacity(coop: &Coop<'c>, mode: Mode, capacity: usize) -> Self {
        GlobalSet {
            map: GlobalMap::with_capacity(coop, mode, capacity),
        }
    }

    /// Adds `key`; returns when it has taken effect.
    pub async fn insert(&self, key: u64) {
        self.map.insert(key, ()).await;
    }

    /// Inserts every key of `keys`, as concurrent inserts of this task, waiting once.
    pub async fn insert_all(&self, keys: Vec<u64>) {
        self.map
            .insert_all(keys.into_iter().map(|k| (k, ())).collect())
            .await;
    }

    /// Whether `key` is in the set.
    pub async fn contains(&self, key: u64) -> bool {
        self.map.lookup(key).await.is_some()
    }

    /// The keys this PE owns (in no particular order); as
    /// [`GlobalMap::owned_entries`], only when the set is quiescent. Every key of the set
    /// is owned by exactly one PE.
    pub fn owned_keys(&self) -> Vec<u64> {
        self.map.flat.master().keys().copied().collect()
    }

    /// This PE's counters so far.
    pub fn stats(&self) -> Stats {
        self.map.stats()
    }
}
