//! `RHIZOME_SLICE_LOG=1`: a sliced run's phases (the sweeps before the split, the split,
//! each saturation round's saturation, crossing image, exchange and agreement, the final
//! union), one line each on standard error with the PE, the wall seconds since its first
//! line and the process's CPU seconds (user, system): where a sliced run's time goes, and
//! which rank waits for which. The CPU seconds tell work from waiting on a loaded machine.

use std::sync::OnceLock;
use std::time::Instant;

static START: OnceLock<Option<Instant>> = OnceLock::new();

fn start() -> Option<Instant> {
    *START.get_or_init(|| std::env::var_os("RHIZOME_SLICE_LOG").map(|_| Instant::now()))
}

/// This process's CPU seconds so far (user, system), from `/proc/self/stat` (fields 14
/// and 15, in Linux's fixed 100 ticks a second); zeros where it cannot be read.
fn cpu() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}

/// Logs phase `what` of PE `pe`, if the log is on.
pub(super) fn mark(pe: usize, what: impl FnOnce() -> String) {
    if let Some(t0) = start() {
        let (u, s) = cpu();
        eprintln!(
            "slice-log pe {pe} {:8.3} s  cpu {u:6.2}u {s:5.2}s  {}",
            t0.elapsed().as_secs_f64(),
            what()
        );
    }
}
