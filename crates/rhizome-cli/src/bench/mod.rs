//! `rhizome bench`: runtime benchmarks with a human table and JSON records.
//!
//! The kernels live in the `rhizome-kernels` crate; this module parses the arguments,
//! runs them in a world and prints the records.

mod bale;
mod cnc;
mod comm;
mod dht;
mod dsm;
mod fc;
mod fib;
mod graph;
pub(crate) mod record;
mod tasks;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    kind: BenchKind,
}

#[derive(Subcommand)]
enum BenchKind {
    /// Fork-join pool: parallel fib(N).
    Fib(fib::FibArgs),
    /// Communication: get/put/atomics latency and rate, AM round trip, aggregated
    /// message rate, barrier and allreduce.
    Comm(comm::CommArgs),
    /// Futures and cluster work stealing: fib, nqueens, uts, pingpong, qsort, matmul, lu.
    Tasks(tasks::TasksArgs),
    /// Bale's seven kernels as one-sided code, conveyors, aggregation contexts and
    /// selectors (where a kernel has that version), results checked: items per second.
    Bale(bale::BaleArgs),
    /// Distributed hash table: find-or-put throughput (read-heavy, write-heavy, mixed;
    /// one-sided and owner-computes) and round trips per insert as the table fills.
    Dht(dht::DhtArgs),
    /// Distributed shared memory (HLRC): the paper's applications, time and speedup
    /// against their sequential runs (results checked), and the protocol's counters.
    Dsm(dsm::DsmArgs),
    /// Flat combining: global stack and queue throughput and operations per message,
    /// without combining, combining at the master and combining on every PE.
    Fc(fc::FcArgs),
    /// Graph500-style BFS and connected components on a Kronecker graph: MTEPS of the
    /// combining queue or set, the same without combining, and a hand-tuned version.
    Graph(graph::GraphArgs),
    /// Concurrent Collections: tiled Cholesky and the Smith-Waterman wavefront (results
    /// checked), 1 PE against 2.
    Cnc(cnc::CncArgs),
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.kind {
        BenchKind::Fib(a) => fib::run(a),
        BenchKind::Comm(a) => comm::run(a),
        BenchKind::Tasks(a) => tasks::run(a),
        BenchKind::Bale(a) => bale::run(a),
        BenchKind::Dht(a) => dht::run(a),
        BenchKind::Dsm(a) => dsm::run(a),
        BenchKind::Fc(a) => fc::run(a),
        BenchKind::Graph(a) => graph::run(a),
        BenchKind::Cnc(a) => cnc::run(a),
    }
}
