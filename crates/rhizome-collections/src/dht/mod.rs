//! A distributed hash table: `find_or_put` over the PEs' symmetric global memory.
//!
//! [`DistributedHashTable<K>`] stores fixed-size keys (8 to 32 bytes of plain data, see
//! [`Pod`]) in one partition of `slots_per_pe` buckets per PE. Each key has one home
//! bucket, chosen by its hash uniformly over all PEs' buckets; collisions are resolved by
//! linear probing inside the home's partition. [`find_or_put`](DistributedHashTable::find_or_put)
//! returns the key's global [`Index`] (PE and slot) and whether this call inserted it;
//! [`get`](DistributedHashTable::get) returns the key at an index. Keys are never removed,
//! so an index names its key for the table's lifetime (what a BDD node table needs).
//!
//! Two ways to reach a remote partition, chosen by [`Access`]:
//! - [`Access::OneSided`][]: the thesis' design (chapter 3): chunks of `C` buckets fetched
//!   with one get, the next chunk requested while the current one is scanned once a probe
//!   runs past its first, at most `M` chunks, buckets claimed with compare-and-swap, the
//!   writer publishes the key and readers wait for its written bit. No work for the
//!   owner's CPU; works from any thread. `find_or_put_many` requests the first chunks of
//!   64 keys before it waits for any (the thesis' pipelining).
//! - [`Access::OwnerComputes`][]: [`find_or_put_many`](DistributedHashTable::find_or_put_many)
//!   sends the keys of each remote partition as one active message per batch to its
//!   owner, which probes its own memory and answers the whole batch in one reply.
//!
//! Both modes keep the same layout and the same claim protocol, so they may be mixed. A
//! partition that the transport holds in this process's memory (every one with the local
//! transport, and with MPI ranks that share one node) is probed in place with native atomics, in both modes ([`Config::direct`]).
//!
//! ```
//! use rhizome::World;
//! use rhizome_collections::dht::{Config, DistributedHashTable};
//!
//! let seen = World::builder().pes(2).run(|ctx| {
//!     let table = DistributedHashTable::<[u64; 2]>::new(ctx, Config::new(1024)).unwrap();
//!     // Every PE inserts the same keys: each key gets one index, the same everywhere.
//!     let (index, _inserted) = table.find_or_put(&[7, 8]).unwrap();
//!     assert_eq!(table.get(index), Some([7, 8]));
//!     ctx.barrier();
//!     index
//! }).unwrap();
//! assert_eq!(seen[0], seen[1]);
//! ```

mod batch;
mod direct;
mod layout;
mod owner;
mod probe;

pub use layout::MAX_KEY_WORDS;

use layout::{Geometry, KeyWords, key_words};
use probe::Partitions;
use rhizome::{CallAm, Ctx, Pod};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// How [`DistributedHashTable::find_or_put_many`] reaches a remote partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Get, compare-and-swap and put on the remote memory (the thesis' chapter 3).
    OneSided,
    /// Batches of keys travel to the partition's owner as active messages.
    OwnerComputes,
}

/// The shape and probing parameters of a table; every PE must pass the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Buckets in each PE's partition.
    pub slots_per_pe: usize,
    /// `C`: buckets fetched with one get.
    pub chunk: usize,
    /// `M`: chunks probed before the partition counts as full.
    pub max_chunks: usize,
    /// The access mode of [`DistributedHashTable::find_or_put_many`].
    pub access: Access,
    /// Most keys in one owner-computes message.
    pub batch: usize,
    /// Probe partitions that the transport holds in this process's memory in place, with
    /// native atomics ([`rhizome::Memory::direct_words`]), not through one-sided
    /// operations. On by default; off only to exercise the one-sided path everywhere.
    pub direct: bool,
}

impl Config {
    /// `slots_per_pe` buckets per PE, `C = 8` (a cache line of bucket words), `M = 64`
    /// (so load factors up to 0.95 stay within reach: the thesis' Corollary 1 expects 25
    /// chunks there), one-sided access, batches of 4096 keys.
    pub fn new(slots_per_pe: usize) -> Config {
        Config {
            slots_per_pe,
            chunk: 8,
            max_chunks: 64,
            access: Access::OneSided,
            batch: 4096,
            direct: true,
        }
    }
    /// With chunk size `C`.
    pub fn chunk(self, chunk: usize) -> Config {
        Config { chunk, ..self }
    }
    /// With at most `M` chunks per probe.
    pub fn max_chunks(self, max_chunks: usize) -> Config {
        Config { max_chunks, ..self }
    }
    /// With access mode `access`.
    pub fn access(self, access: Access) -> Config {
        Config { access, ..self }
    }
    /// With at most `batch` keys per owner-computes message.
    pub fn batch(self, batch: usize) -> Config {
        Config { batch, ..self }
    }
    /// Whether partitions in this process's memory are probed in place (see
    /// [`Config::direct`]).
    pub fn direct(self, direct: bool) -> Config {
        Config { direct, ..self }
    }

    /// Why this configuration cannot hold keys of type `K`, if it cannot.
    pub fn check<K>(&self) -> Result<(), InvalidConfig> {
        fn bad(what: String) -> Result<(), InvalidConfig> {
            Err(InvalidConfig(what))
        }
        let words = key_words::<K>().map_err(InvalidConfig)?;
        if self.slots_per_pe == 0 || self.chunk == 0 || self.max_chunks == 0 || self.batch == 0 {
            return bad(format!(
                "slots per PE, chunk size, max chunks and batch must be at least 1 (got {}, {}, {}, {})",
                self.slots_per_pe, self.chunk, self.max_chunks, self.batch
            ));
        }
        // Dense indices (pe * slots + slot) and offsets in bytes must fit.
        let entry_bytes = 8 * (1 + words);
        if self.slots_per_pe.checked_mul(entry_bytes).is_none() || self.slots_per_pe > 1 << 48 {
            return bad(format!("{} slots per PE is too many", self.slots_per_pe));
        }
        Ok(())
    }
}

/// A configuration that cannot work; the text says why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidConfig(pub String);

impl std::fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid hash table configuration: {}", self.0)
    }
}
impl std::error::Error for InvalidConfig {}

/// No free bucket within `C * M` buckets of a key's home: the partition is (nearly) full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full {
    /// The PE whose partition is full.
    pub pe: usize,
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the hash table partition of PE {} is full (no free bucket within reach of the key's home)",
            self.pe
        )
    }
}
impl std::error::Error for Full {}

/// A key's global place: `pe * slots_per_pe + slot`, dense over all PEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Index(pub u64);

/// Counts of what probes did, to compare with the thesis' model (Lemma 1, Figure 3.17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// find-or-put operations.
    pub ops: u64,
    /// Of which inserted their key.
    pub inserted: u64,
    /// Chunks scanned (the round trips of Lemma 1 and Figure 3.17).
    pub chunks: u64,
    /// Gets issued: chunks (prefetches and wrapped halves included) and key reads.
    pub gets: u64,
    /// Atomics issued: claims, written bits, waits for them.
    pub atomics: u64,
    /// Puts of keys.
    pub puts: u64,
}

impl Stats {
    /// The counts in field order, e.g. to sum them over PEs with one allreduce.
    pub fn to_array(&self) -> [u64; 6] {
        [
            self.ops,
            self.inserted,
            self.chunks,
            self.gets,
            self.atomics,
            self.puts,
        ]
    }
    /// The inverse of [`to_array`](Self::to_array).
    pub fn from_array([ops, inserted, chunks, gets, atomics, puts]: [u64; 6]) -> Stats {
        Stats {
            ops,
            inserted,
            chunks,
            gets,
            atomics,
            puts,
        }
    }
    /// Adds another's counts to these.
    pub fn add(&mut self, o: &Stats) {
        *self = self.zip(o, u64::wrapping_add);
    }
    /// What happened since `earlier` (a snapshot of the same counters).
    pub fn since(&self, earlier: &Stats) -> Stats {
        self.zip(earlier, u64::wrapping_sub)
    }
    /// One-sided operations issued: gets, atomics and puts.
    pub fn rma(&self) -> u64 {
        self.gets + self.atomics + self.puts
    }
    fn zip(&self, o: &Stats, f: fn(u64, u64) -> u64) -> Stats {
        let (a, b) = (self.to_array(), o.to_array());
        Stats::from_array(std::array::from_fn(|i| f(a[i], b[i])))
    }
}

/// The hash table; see the [module docs](self). A handle on every PE, created collectively;
/// `Send + Sync`, so worker threads of a PE may share it for one-sided operations.
pub struct DistributedHashTable<K> {
    parts: Partitions,
    config: Config,
    owner: CallAm<Vec<u64>, Vec<u64>>,
    /// What this PE's owner-computes handler did for others.
    served: Arc<Mutex<Stats>>,
    _k: PhantomData<fn(K) -> K>,
}

impl<K: Pod + Eq> DistributedHashTable<K> {
    /// Collective: allocates the partitions (zeroed) and registers the owner-computes
    /// handler. Every PE must call it with the same configuration, in the same order
    /// relative to other allocations and registrations.
    pub fn new(ctx: &Ctx, config: Config) -> Result<Self, InvalidConfig> {
        config.check::<K>()?;
        let geo = Geometry {
            pes: ctx.num_pes(),
            slots: config.slots_per_pe,
            key_words: key_words::<K>().expect("checked"),
        };
        let parts = Partitions {
            mem: ctx.memory().clone(),
            words: ctx.alloc::<u64>(config.slots_per_pe * geo.entry_words()),
            geo,
            chunk: config.chunk,
            max_chunks: config.max_chunks,
            direct: config.direct,
        };
        let served = Arc::new(Mutex::new(Stats::default()));
        let owner = owner::register(ctx, parts.clone(), served.clone());
        Ok(DistributedHashTable {
            parts,
            config,
            owner,
            served,
            _k: PhantomData,
        })
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Buckets over all PEs.
    pub fn capacity(&self) -> u64 {
        (self.parts.geo.pes * self.parts.geo.slots) as u64
    }

    /// The PE holding `index`.
    pub fn pe_of(&self, index: Index) -> usize {
        (index.0 / self.parts.geo.slots as u64) as usize
    }

    fn index(&self, pe: usize, slot: usize) -> Index {
        Index((pe * self.parts.geo.slots + slot) as u64)
    }

    /// Finds `key`, or inserts it: its index and whether this call inserted it. One-sided
    /// whatever the configured access mode, so any thread of the PE may call it.
    pub fn find_or_put(&self, key: &K) -> Result<(Index, bool), Full> {
        self.find_or_put_counted(key, &mut Stats::default())
    }

    /// [`find_or_put`](Self::find_or_put), adding what the probe did to `stats`.
    pub fn find_or_put_counted(&self, key: &K, stats: &mut Stats) -> Result<(Index, bool), Full> {
        let words = KeyWords::of(key);
        let home = self.parts.geo.home(&words);
        let (slot, inserted) = self.parts.find_or_put(home, &words, stats)?;
        Ok((self.index(home.pe, slot), inserted))
    }

    /// Finds or inserts every key of `keys`, one-sided whatever the configured access mode
    /// (so any thread of the PE may call it), pipelined: the first chunks of a window of 64
    /// keys are requested before any is waited for, and the home buckets of partitions
    /// probed in place are prefetched. The results are in the order of the keys; a
    /// [`Full`] partition fails the whole call (keys before it may have been inserted).
    /// Adds what the probes did to `stats`.
    pub fn find_or_put_pipelined(
        &self,
        keys: &[K],
        stats: &mut Stats,
    ) -> Result<Vec<(Index, bool)>, Full> {
        batch::find_or_put_many(self, keys, stats)
    }

    /// Finds or inserts every key of `keys`, in the configured access mode; the results
    /// are in the order of the keys. In owner-computes mode the PE's main thread runs this
    /// (it sends active messages), and every other PE must keep making progress until
    /// this returns: run it inside [`Ctx::finish`], or end with a collective that makes
    /// progress ([`Ctx::allreduce`]).
    ///
    /// A [`Full`] partition fails the whole call (keys before it may have been inserted).
    pub fn find_or_put_many(&self, ctx: &Ctx, keys: &[K]) -> Result<Vec<(Index, bool)>, Full> {
        self.find_or_put_many_counted(ctx, keys, &mut Stats::default())
    }

    /// [`find_or_put_many`](Self::find_or_put_many), adding what this PE's probes did to
    /// `stats` (in owner-computes mode the owners' probes are counted by the owners'
    /// [`owner_stats`](Self::owner_stats)).
    pub fn find_or_put_many_counted(
        &self,
        ctx: &Ctx,
        keys: &[K],
        stats: &mut Stats,
    ) -> Result<Vec<(Index, bool)>, Full> {
        match self.config.access {
            Access::OneSided => batch::find_or_put_many(self, keys, stats),
            Access::OwnerComputes => owner::find_or_put_many(self, ctx, keys, stats),
        }
    }

    /// What this PE's owner-computes handler did for other PEs so far.
    pub fn owner_stats(&self) -> Stats {
        *self.served.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Collective: empties the table (every PE zeroes its own partition, between
    /// barriers). Indices handed out before are void afterwards.
    pub fn clear(&self, ctx: &Ctx) {
        ctx.barrier();
        let words = self.parts.words;
        let zeros = vec![0u64; words.len().min(1 << 16)];
        let mut at = 0;
        while at < words.len() {
            let n = zeros.len().min(words.len() - at);
            ctx.put_slice(words.ptr(ctx.my_pe(), at), &zeros[..n]);
            at += n;
        }
        ctx.barrier();
    }

    /// The key at `index`, or `None` if no key has been written there (or the index is
    /// beyond the table).
    pub fn get(&self, index: Index) -> Option<K> {
        if index.0 >= self.capacity() {
            return None;
        }
        let slots = self.parts.geo.slots as u64;
        let words = self
            .parts
            .read((index.0 / slots) as usize, (index.0 % slots) as usize)?;
        Some(KeyWords::decode(&words))
    }
}
