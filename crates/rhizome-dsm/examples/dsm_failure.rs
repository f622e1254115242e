//! Fails on purpose, to check that a DSM failure on one PE ends every PE with one clear
//! line and a non-zero exit status (`tests/dsm.rs` runs it on local PEs and under
//! `mpirun`). Usage: `dsm_failure panic|outside|none`.
//!
//! - `panic`: an application thread of the last PE panics while the others wait in a
//!   barrier.
//! - `outside`: an application thread of PE 1 reads past the end of what was allocated.
//! - `none`: does not fail.

use rhizome_dsm::{Dsm, DsmConfig};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if !["panic", "outside", "none"].contains(&mode.as_str()) {
        eprintln!("usage: dsm_failure panic|outside|none");
        return ExitCode::from(2);
    }
    let r = rhizome::World::run(|ctx| {
        let dsm = Dsm::new(ctx, DsmConfig::default().region_bytes(1 << 20)).unwrap();
        let a = dsm.alloc::<u64>(8).unwrap();
        let last = ctx.num_pes() - 1;
        dsm.run(ctx, |t| {
            a.set(t.pe(), 1);
            if mode == "panic" && t.pe() == last {
                panic!("boom on purpose");
            }
            if mode == "outside" && t.pe() == 1 {
                // SAFETY: deliberately wrong: a load one page past the allocation, which
                // the DSM must refuse with an error instead of serving.
                let beyond = unsafe { a.as_ptr().byte_add(4096).read_volatile() };
                println!("read {beyond}");
            }
            t.barrier();
        });
    });
    match r {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rhizome: error: {e}");
            ExitCode::FAILURE
        }
    }
}
