//! Helpers the integration tests share.

use rhizome::{Ctx, World};
use std::sync::mpsc;
use std::time::Duration;

/// A named SPMD test body.
pub type Test = (&'static str, fn(&Ctx));

/// A hang fails the test instead of blocking it (nothing here measures time).
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Runs every test of an SPMD suite in a world of its own with `pes` local PEs, each
/// within [`HANG_LIMIT`].
pub fn suite_on(tests: &'static [Test], pes: usize) {
    for &(name, body) in tests {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = World::builder().pes(pes).workers(2).run(body).map(|_| ());
            let _ = tx.send(r.map_err(|e| e.to_string()));
        });
        match rx.recv_timeout(HANG_LIMIT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{name} on {pes} PEs: {e}"),
            Err(_) => panic!("{name} on {pes} PEs: no result within {HANG_LIMIT:?} (hang)"),
        }
    }
}

/// The cargo tests that run an SPMD suite on 1, 2 and 4 local PEs.
macro_rules! local_suite_tests {
    ($tests:expr) => {
        #[test]
        fn suite_on_1_pe() {
            support::suite_on($tests, 1);
        }
        #[test]
        fn suite_on_2_pes() {
            support::suite_on($tests, 2);
        }
        #[test]
        fn suite_on_4_pes() {
            support::suite_on($tests, 4);
        }
    };
}
