//! A parallel BDD package with complement edges, on the Rhizome fork-join pool.
//!
//! Binary decision diagrams represent Boolean functions canonically: two equal functions
//! are the same [`Bdd`] edge. Nodes are 16 bytes; an edge is a 64-bit word whose bit 63
//! marks complement, so negation is free. Operations (ITE, the binary operators,
//! quantification, relational products, renaming) fork their two cofactor sub-problems
//! on the work-stealing pool, share a lock-free unique table and operation cache, and
//! survive a full table by collecting garbage from explicit roots and growing the table.
//!
//! ```
//! use rhizome_bdd::{Bdd, Manager};
//! let mut m = Manager::new(2);
//! let vars = [0, 2, 4];
//! let (a, b, c) = (m.ithvar(0), m.ithvar(2), m.ithvar(4));
//! let ab = m.xor(a, b).unwrap();
//! let f = m.or(ab, c).unwrap();
//! assert_eq!(m.satcount(f, &vars), 6u32.into());
//! let cube = m.cube(&[4]).unwrap();
//! assert_eq!(m.exists(f, cube).unwrap(), Bdd::TRUE);
//! ```
//!
//! The node store and the operation cache are type parameters of [`Manager`]
//! ([`NodeStore`], [`OpCache`]), so a store partitioned across PEs can replace the
//! shared-memory one without touching the operations: [`DistNodeStore`] spreads the
//! nodes over the PEs' global memory.

mod codec;
mod count;
mod dist;
mod edge;
mod manager;
mod node_table;
mod op_cache;
mod ops;
mod roots;
mod sizing;
mod sync;
mod zeroed;

pub use codec::CodecError;
pub use dist::{DistNodeStore, DistOpCache, Distribution, OpHome};
pub use edge::{Bdd, COMPLEMENT, INDEX_MASK};
pub use manager::{BddError, Config, Manager, Stats};
pub use node_table::{CollectPlan, NodeStore, SharedNodeTable};
pub use op_cache::{CacheStats, OpCache, SharedOpCache};
pub use ops::OpCtx;
pub use roots::Root;
pub use sizing::{CacheBytes, MemoryUse, TableBytes};
pub use zeroed::{ReserveError, check_address_space};
