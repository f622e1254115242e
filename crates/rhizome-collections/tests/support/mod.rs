//! Helpers the integration tests share.

use rhizome::{Ctx, World};

/// A named SPMD test body.
pub type Test = (&'static str, fn(&Ctx));

/// Runs every test of an SPMD suite in a world of its own with `pes` local PEs.
pub fn suite_on(tests: &[Test], pes: usize) {
    for (name, body) in tests {
        World::builder()
            .pes(pes)
            .run(body)
            .unwrap_or_else(|e| panic!("{name} on {pes} PEs: {e}"));
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
