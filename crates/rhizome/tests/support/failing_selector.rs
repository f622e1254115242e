//! A selector that fails on purpose, shared by `tests/failure.rs` (local PEs) and
//! `examples/failure_demo.rs` (under `mpirun`).

use rhizome::Ctx;
use rhizome::actor::Selector;

/// A selector whose handler, on the last PE, fails the second hop of every chain while
/// every other PE is still in the superstep: by a panic in the handler or, with `task`,
/// in a non-blocking task it spawns (on a worker thread).
pub fn failing_selector(ctx: &Ctx, task: bool) {
    let n = ctx.num_pes();
    let mut sel = Selector::new(ctx, ());
    let hop = sel.mailbox::<u64>();
    sel.process(hop, move |_, v, _, mail| match v {
        0 => mail.send(hop, 1, n - 1),
        _ if task => mail.spawn(move |_| panic!("task rejects {v}")),
        _ => panic!("selector handler rejects {v}"),
    });
    sel.superstep(|mail| {
        for dst in 0..n {
            mail.send(hop, 0, dst);
        }
    });
}
