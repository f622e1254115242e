//! Helpers of the local CnC tests.

use rhizome::{Ctx, World};
use std::sync::mpsc;
use std::time::Duration;

/// A named SPMD test body.
pub type Test = (&'static str, fn(&Ctx));

/// A hang fails the test instead of blocking it (nothing here measures time).
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Runs every test of an SPMD suite in a world of its own with `pes` local PEs of
/// `workers` worker threads, each within [`HANG_LIMIT`].
pub fn suite_on(tests: &'static [Test], pes: usize, workers: usize) {
    for &(name, body) in tests {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = World::builder().pes(pes).workers(workers).run(body);
            let _ = tx.send(r.map(|_| ()).map_err(|e| e.to_string()));
        });
        let on = format!("{name} on {pes} PEs x {workers} workers");
        match rx.recv_timeout(HANG_LIMIT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{on}: {e}"),
            Err(_) => panic!("{on}: no result within {HANG_LIMIT:?} (hang)"),
        }
    }
}
