//! `rhizome info`: build features and machine facts.

use crate::RuntimeOpts;
use clap::Args;

#[derive(Args)]
pub struct InfoArgs {
    #[command(flatten)]
    runtime: RuntimeOpts,
}

pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    args.runtime.check_bounds()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("rhizome {}", env!("CARGO_PKG_VERSION"));
    println!(
        "mpi transport: {}",
        if cfg!(feature = "mpi") {
            "built in"
        } else {
            "not built (cargo feature `mpi`)"
        }
    );
    println!("cores: {cores}");
    println!("pes (local): {}", args.runtime.pes.unwrap_or(1));
    println!("workers per pe: {}", args.runtime.workers.unwrap_or(cores));
    Ok(())
}
