//! The credits of a selector's lanes, seen from outside: on the local transport both PEs
//! share this process, so a sender can read how far its receiver has got.

use super::Selector;
use crate::World;
use crate::conveyor::CREDITS;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[test]
fn the_body_never_runs_more_than_its_credits_ahead_of_a_slow_receiver() {
    // Messages handled by PE 0 (a static: every PE of the world reads it).
    static HANDLED: AtomicUsize = AtomicUsize::new(0);
    const SENT: usize = 400;
    let ahead = World::builder()
        .pes(2)
        .run(|ctx| {
            // One message per batch, so every send is a batch that needs a credit.
            let mut sel = Selector::with_capacity(ctx, (), 1);
            let mb = sel.mailbox::<u64>();
            sel.process(mb, |_, i, _, _| {
                // A slow receiver: without credits the sender would be far ahead.
                if i % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                HANDLED.fetch_add(1, Ordering::SeqCst);
            });
            let mut most_ahead = 0;
            sel.superstep(|mail| {
                if mail.my_pe() == 1 {
                    for i in 0..SENT {
                        mail.send(mb, i as u64, 0);
                        let handled = HANDLED.load(Ordering::SeqCst);
                        most_ahead = most_ahead.max(i + 1 - handled.min(i + 1));
                    }
                }
            });
            most_ahead
        })
        .unwrap();
    assert_eq!(HANDLED.load(Ordering::SeqCst), SENT);
    assert!(
        ahead[1] <= CREDITS,
        "the body sent {} batches its receiver had not handled",
        ahead[1]
    );
}
