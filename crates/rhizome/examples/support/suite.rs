//! The loop shared by the examples that run a test suite in one world (`spmd_tests`,
//! `tasks_tests`), included by path.

use rhizome::{Ctx, RunError};
use std::process::ExitCode;

/// A named test body, as the suites list them.
pub type Test = (&'static str, fn(&Ctx));

/// Runs every test whose name contains `only` (all without it) on every PE, each between
/// barriers; PE 0 prints `ok   NAME (N PEs, TRANSPORT)` after each. A failing test panics,
/// which fails the whole world.
pub fn run_tests(ctx: &Ctx, tests: &[Test], only: Option<&str>) {
    for (name, body) in tests {
        if only.is_some_and(|o| !name.contains(o)) {
            continue;
        }
        ctx.barrier();
        body(ctx);
        ctx.barrier();
        if ctx.my_pe() == 0 {
            println!(
                "ok   {name} ({} PEs, {})",
                ctx.num_pes(),
                ctx.transport_name()
            );
        }
    }
}

/// The exit status of `program` for the world's outcome, with the reason on failure.
pub fn exit_code<T>(program: &str, r: Result<T, RunError>) -> ExitCode {
    match r {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
