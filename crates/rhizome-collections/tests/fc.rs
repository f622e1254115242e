//! The flat-combining structures on the local transport: the shared SPMD suite on 1, 2
//! and 4 PEs, and the linearizability checker against histories known to be (or not to
//! be) linearizable, so that its acceptance of the suite's histories means something.

mod fc_suite;
#[macro_use]
mod support;

use fc_suite::lincheck::{Call, Event, Spec, linearizable};

local_suite_tests!(fc_suite::TESTS);

fn ev(invoked: u64, answered: u64, call: Call) -> Event {
    Event {
        invoked,
        answered,
        call,
    }
}

#[test]
fn checker_rejects_what_no_order_explains() {
    use Call::{Pop, Push};
    // A pop of a value never pushed.
    let h = [ev(0, 1, Push(1)), ev(2, 3, Pop(Some(2)))];
    assert!(!linearizable(Spec::Stack, &h));
    // Sequential pushes of 1 then 2, then a pop: the order decides which it may get.
    let h = [ev(0, 1, Push(1)), ev(2, 3, Push(2)), ev(4, 5, Pop(Some(1)))];
    assert!(linearizable(Spec::Queue, &h));
    assert!(!linearizable(Spec::Stack, &h));
    // A pop that ends before the push starts cannot return its value...
    let h = [ev(2, 3, Push(1)), ev(0, 1, Pop(Some(1)))];
    assert!(!linearizable(Spec::Queue, &h));
    // ... but may if they overlap.
    let h = [ev(0, 3, Push(1)), ev(1, 2, Pop(Some(1)))];
    assert!(linearizable(Spec::Queue, &h));
    // Empty while a value is certainly inside.
    let h = [ev(0, 1, Push(1)), ev(2, 3, Pop(None))];
    assert!(!linearizable(Spec::Stack, &h));
    // A value popped twice.
    let h = [
        ev(0, 1, Push(1)),
        ev(2, 5, Pop(Some(1))),
        ev(3, 4, Pop(Some(1))),
    ];
    assert!(!linearizable(Spec::Stack, &h));
}
