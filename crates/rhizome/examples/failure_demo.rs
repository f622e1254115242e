//! Fails on purpose, to check that a failure on one PE ends the whole run with a clear
//! message and a non-zero exit status on every transport (`tests/mpi.rs` runs it under
//! `mpirun`). Usage: `failure_demo panic|call|handler|actor|actor-task|oob|alloc|job|unregistered|none`.
//!
//! - `panic`: the last PE panics while the others wait in a barrier.
//! - `call`: PE 0 panics while PE 1 waits for a reply from it and the others wait in a
//!   broadcast rooted at it.
//! - `handler`: a message handler on PE 1 panics while PE 0 waits in `finish`.
//! - `actor`: a selector's handler on the last PE panics on a message of the second hop
//!   while every other PE is still in the superstep.
//! - `actor-task`: a non-blocking task spawned by a selector's handler on the last PE
//!   panics on a worker thread.
//! - `oob`: PE 1 reads past the end of a global array.
//! - `alloc`: the PEs ask for different sizes in one collective allocation.
//! - `job`: a job sent to the last PE (`rhizome::tasks`) panics there; PE 0, which waits
//!   for its future, panics with the job's message while the others schedule jobs.
//! - `unregistered`: PE 0 sends the last PE a job of a type only the last PE has not
//!   registered (with one PE nothing crosses PEs, so the job just fails).
//! - `none`: does not fail (exit status 0).

#[path = "../tests/support/failing_selector.rs"]
mod failing_selector;

use failing_selector::failing_selector;
use rhizome::tasks::{Job, TaskCtx, Tasks};
use serde::{Deserialize, Serialize};
use std::process::ExitCode;

/// Panics on whichever PE runs it, naming that PE.
#[derive(Serialize, Deserialize)]
struct Fail;
impl Job for Fail {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        panic!("job fails on PE {}", t.my_pe())
    }
}

const MODES: &[&str] = &[
    "panic",
    "call",
    "handler",
    "actor",
    "actor-task",
    "oob",
    "alloc",
    "job",
    "unregistered",
    "none",
];

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if !MODES.contains(&mode.as_str()) {
        eprintln!("usage: failure_demo {}", MODES.join("|"));
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
            "actor" | "actor-task" => failing_selector(ctx, mode == "actor-task"),
            "oob" if me == 1 % n => {
                let _ = ctx.get(a.ptr(0, 8));
            }
            "alloc" => {
                let _ = ctx.alloc::<u64>(4 + me);
            }
            "job" | "unregistered" => {
                let tasks = Tasks::new(ctx);
                if mode == "job" || me != n - 1 {
                    tasks.register::<Fail>();
                }
                tasks.run(ctx, |t| {
                    if me == 0 {
                        t.async_on(n - 1, Fail).get();
                    }
                });
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
