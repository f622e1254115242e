//! Prints the cost of a BFS level's synchronization in microseconds per round
//! (`rhizome_kernels::graph::level_cost`): the combining queue's round against the
//! runtime's collectives and an empty conveyor exchange, on whatever transport and PE
//! count the environment selects (`RHIZOME_PES=2 cargo run --release -p rhizome-kernels
//! --example level_cost`, or `mpirun -np 2` with the `mpi` feature).
//!
//! Usage: `level_cost [ROUNDS [NAME_FILTER]]` (rounds per run, default 2000; the large
//! rounds run a twentieth as many). Exits non-zero if a round's result is wrong.

use rhizome_kernels::graph::level_cost::{LevelCost, level_costs};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let rounds = match args.next().map(|a| a.parse::<usize>()) {
        None => 2000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("rhizome: error: ROUNDS must be a positive integer");
            return ExitCode::from(2);
        }
    };
    let only = args.next().unwrap_or_default();
    let result = rhizome::World::builder().run(|ctx| {
        let rows = level_costs(ctx, rounds, 5, &only)?;
        Ok::<(usize, usize, Vec<LevelCost>), String>((ctx.my_pe(), ctx.num_pes(), rows))
    });
    let runs = match result {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!("rhizome: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for run in runs {
        match run {
            Ok((0, pes, rows)) => {
                for row in rows {
                    println!("{:52} {pes} PEs {:10.2} us/round", row.name, row.micros);
                }
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("rhizome: error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
