//! Fails on purpose, to check that a failure on one PE ends the whole run with a clear
//! message and a non-zero exit status on every transport (`tests/mpi.rs` runs it under
//! `mpirun`). Usage: `failure_demo panic|call|handler|oob|alloc|none`.
//!
//! - `panic`: the last PE panics while the others wait in a barrier.
//! - `call`: PE 0 panics while PE 1 waits for a reply from it and the others wait in a
//!   broadcast rooted at it.
//! - `handler`: a message handler on PE 1 panics while PE 0 waits in `finish`.
//! - `oob`: PE 1 reads past the end of a global array.
//! - `alloc`: the PEs ask for different sizes in one collective allocation.
//! - `none`: does not fail (exit status 0).

use std::process::ExitCode;

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if !["panic", "call", "handler", "oob", "alloc", "none"].contains(&mode.as_str()) {
        eprintln!("usage: failure_demo panic|call|handler|oob|alloc|none");
        return ExitCode::from(2);
    }
    let r = rhizome::World::run(|ctx| {
        let n = ctx.num_pes();
        let me = ctx.my_pe();
        let reply = ctx.register_call(|_ctx, x: u64| x);
        let bad = ctx.register(|_ctx, v: u64| {
            if v == 3 {
                panic!("handler rejects {v}");
            }
        });
        let a = ctx.alloc::<u64>(8);
        ctx.barrier();
        match mode.as_str() {
            "panic" => {
                if me == n - 1 {
                    panic!("boom on purpose");
                }
                ctx.barrier();
            }
            "call" => match me {
                0 => panic!("PE zero fails"),
                1 => {
                    let _ = ctx.call(0, reply, &1).wait();
                }
                _ => {
                    let _ = ctx.broadcast(0u64, 0);
                }
            },
            "handler" => ctx.finish(|| {
                if me == 0 {
                    for v in 0..5u64 {
                        ctx.send(1 % n, bad, &v);
                    }
                }
            }),
            "oob" if me == 1 % n => {
                let _ = ctx.get(a.ptr(0, 8));
            }
            "alloc" => {
                let _ = ctx.alloc::<u64>(4 + me);
            }
            _ => {}
        }
        ctx.finish(|| ());
        ctx.barrier();
    });
    match r {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("failure_demo: {e}");
            ExitCode::FAILURE
        }
    }
}
