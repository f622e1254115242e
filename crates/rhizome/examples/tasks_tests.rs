//! Runs the whole futures / cluster work-stealing test suite (`tests/tasks_suite`) in one
//! world, on whatever transport, PE count and worker count the environment selects (e.g.
//! `RHIZOME_PES=4 RHIZOME_WORKERS=2 cargo run --example tasks_tests`, or
//! `mpirun -np 4 target/release/examples/tasks_tests` with the `mpi` feature). Exits
//! non-zero if any test fails.
//!
//! Usage: `tasks_tests [NAME_FILTER]`. PE 0 prints a header with the world's shape, then
//! `ok   NAME (N PEs, TRANSPORT)` per test that passed.

#[path = "support/suite.rs"]
mod support;
#[path = "../tests/tasks_suite/mod.rs"]
mod tasks_suite;

use std::process::ExitCode;

fn main() -> ExitCode {
    let only: Option<String> = std::env::args().nth(1);
    let r = rhizome::World::run(|ctx| {
        // Workers per PE come from each rank's own environment: check they agree, so the
        // header (and a caller that asked for RHIZOME_WORKERS) can trust one number.
        let workers = ctx.allgather(ctx.workers() as u64);
        assert!(
            workers.iter().all(|&w| w == workers[0]),
            "PEs disagree on the number of workers: {workers:?}"
        );
        if ctx.my_pe() == 0 {
            println!(
                "tasks_tests: {} PEs x {} workers, {}",
                ctx.num_pes(),
                workers[0],
                ctx.transport_name()
            );
        }
        support::run_tests(ctx, tasks_suite::TESTS, only.as_deref());
    });
    support::exit_code("tasks_tests", r)
}
