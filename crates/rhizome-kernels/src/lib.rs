//! Benchmark kernels of Rhizome, as a library that tests, benchmarks and the `rhizome
//! bench` command call.
//!
//! - [`fib`]: naive Fibonacci on the fork-join pool and as futures;
//! - [`nqueens`]: counting N-queens solutions;
//! - [`uts`]: the Unbalanced Tree Search generator and its job;
//! - [`dense`]: quicksort, matrix multiplication and tiled LU, jobs that carry their data;
//! - [`tasks`]: all kernels of the tasks layer behind one [`Instance`](tasks::Instance)
//!   type (sizes, inputs, checked results);
//! - [`bale`]: Bale's histogram and index-gather, written with one-sided operations,
//!   conveyors and aggregation contexts, results checked;
//! - [`dsm`]: the multithreaded-HLRC paper's applications on the distributed shared
//!   memory, checked against their sequential runs;
//! - [`dht`]: throughput and round trips of the distributed hash table's find-or-put;
//! - [`fc`]: throughput of the flat-combining global stack and queue in each mode;
//! - [`graph`]: Graph500 Kronecker graphs, BFS and connected components on the
//!   flat-combining queue and set and on hand-tuned frontiers, checked, in MTEPS;
//! - [`comm`]: latency and rate of one-sided operations, calls, aggregated messages and
//!   collectives;
//! - `raw_mpi` (cargo feature `mpi`): the same communication operations written
//!   directly against MPI, the baselines of [`comm`].
//!
//! ```
//! use rhizome::World;
//! use rhizome::tasks::Tasks;
//! use rhizome_kernels::tasks::{Instance, Kernel, register};
//!
//! let queens = Instance::new(Kernel::Nqueens, Some(8), Some(3), "").unwrap();
//! let out = World::builder().pes(2).run(|ctx| {
//!     let tasks = Tasks::new(ctx);
//!     register(&tasks);
//!     tasks.run(ctx, |t| (t.my_pe() == 0).then(|| queens.run_parallel(t).result))
//! }).unwrap();
//! assert_eq!(out[0], queens.expected());
//! ```

pub mod bale;
pub mod comm;
pub mod dense;
pub mod dht;
pub mod dsm;
pub mod fc;
pub mod fib;
pub mod graph;
pub mod nqueens;
pub mod probe_model;
#[cfg(feature = "mpi")]
pub mod raw_mpi;
pub mod tasks;
pub mod uts;
