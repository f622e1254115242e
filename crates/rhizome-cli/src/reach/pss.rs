//! Peak proportional set size (PSS) of this process, beside its peak resident set
//! (VmHWM).
//!
//! Ranks on one machine under `mpirun` map every rank's partition of global memory
//! (shared windows), so a rank's resident set also counts the pages of the other ranks'
//! partitions it touched, which ranks on separate machines would not hold: VmHWM
//! overstates what each rank needs. PSS splits every shared page between the processes
//! that map it, so the PSS of all ranks adds up to the memory they use together, and a
//! rank's PSS is its fair share. The kernel keeps no peak of it: a thread samples
//! `/proc/self/smaps_rollup` while `reach` runs ([`PssSampler`]), and once more at the end.
//!
//! `RHIZOME_SMAPS_DUMP=prefix` also copies `/proc/self/smaps` to `prefix.<pe>` at the
//! end, for a look at what each mapping holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Between samples: often enough to see a table grow, rare enough to cost nothing (a
/// read of `smaps_rollup` walks the page tables, about a millisecond for 200 MB).
const INTERVAL: Duration = Duration::from_millis(100);
/// At least this many times a sample's own duration between samples: a rank of a few
/// hundred MB on a loaded machine took 19% of its CPU samples in the walk (at.5 `bfs`,
/// 2 ranks, `perf record -p`) at a fixed [`INTERVAL`]; this keeps it under 1/20.
const SAMPLE_SHARE: u32 = 20;

/// The largest PSS sampled in this process, in bytes (0: none yet).
static PEAK: AtomicU64 = AtomicU64::new(0);

/// This process's proportional set size now, in bytes.
pub fn pss_bytes() -> Option<u64> {
    super::sizes::proc_self_bytes("smaps_rollup", "Pss:")
}

/// Samples the PSS now; returns the peak so far (this sample included).
pub fn peak_pss_bytes() -> Option<u64> {
    if let Some(now) = pss_bytes() {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
    Some(PEAK.load(Ordering::Relaxed)).filter(|&b| b > 0)
}

/// Samples the PSS of this process every [`INTERVAL`] (or [`SAMPLE_SHARE`] times a
/// sample's duration, if longer) until dropped.
pub struct PssSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PssSampler {
    /// Starts sampling (nothing where `/proc/self/smaps_rollup` cannot be read).
    pub fn start() -> PssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = pss_bytes().is_some().then(|| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let start = std::time::Instant::now();
                    peak_pss_bytes();
                    std::thread::park_timeout(INTERVAL.max(start.elapsed() * SAMPLE_SHARE));
                }
            })
        });
        PssSampler { stop, thread }
    }
}

impl Drop for PssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Copies `/proc/self/smaps` to `$RHIZOME_SMAPS_DUMP.<pe>` if that variable is set;
/// a failure is reported on stderr and otherwise ignored (it is a diagnostic).
pub fn dump_smaps(pe: usize) {
    if let Ok(prefix) = std::env::var("RHIZOME_SMAPS_DUMP") {
        let to = format!("{prefix}.{pe}");
        if let Err(e) = std::fs::copy("/proc/self/smaps", &to) {
            eprintln!("rhizome: warning: cannot write {to}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_keeps_memory_touched_then_freed() {
        let Some(before) = pss_bytes() else {
            return; // no /proc here
        };
        // The sampler runs meanwhile and stops when dropped (the join would hang if not).
        let sampler = PssSampler::start();
        let mut v = vec![1u8; 64 << 20];
        v[12345] = 2;
        let during = peak_pss_bytes().expect("sampled");
        assert!(v.iter().map(|&b| b as u64).sum::<u64>() > 0);
        drop(v);
        drop(sampler);
        let peak = peak_pss_bytes().expect("sampled");
        assert!(
            during >= before + (48 << 20),
            "during {during}, before {before}"
        );
        assert!(peak >= during);
    }
}
