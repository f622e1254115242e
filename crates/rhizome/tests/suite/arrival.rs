//! The transport's arrival hook: what lets a sleeping service thread be woken by a message.

use rhizome::Ctx;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the transport offers the hook, every message that reaches a PE calls it (at
/// least once per delivered buffer); after `None` it is called no more.
pub fn arrival_hook_counts_messages(ctx: &Ctx) {
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let hooked = ctx.set_arrival_hook(Some(Arc::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
    })));
    if ctx.transport_name() == "local" {
        assert!(hooked, "the local transport offers the arrival hook");
    }
    let noop = ctx.register(|_ctx, _: u64| {});
    ctx.barrier();
    let rounds = 20u64;
    for r in 0..rounds {
        // One message to every other PE, flushed as its own buffer.
        ctx.finish(|| {
            for pe in (0..ctx.num_pes()).filter(|&p| p != ctx.my_pe()) {
                ctx.send(pe, noop, &r);
            }
        });
    }
    ctx.barrier();
    let others = ctx.num_pes() as u64 - 1;
    if hooked {
        assert!(
            calls.load(Ordering::SeqCst) >= rounds * others,
            "{} hook calls for {} messages",
            calls.load(Ordering::SeqCst),
            rounds * others
        );
    }
    ctx.set_arrival_hook(None);
    ctx.barrier();
    let before = calls.load(Ordering::SeqCst);
    ctx.finish(|| {
        for pe in 0..ctx.num_pes() {
            ctx.send(pe, noop, &0);
        }
    });
    ctx.barrier();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "no calls once removed"
    );
}
