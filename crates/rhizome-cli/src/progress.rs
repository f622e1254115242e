//! The live progress display of `rhizome reach` on stderr, and the per-level lines of
//! `--count-states`, `--count-nodes` and `--count-table` on stdout.
//!
//! On a terminal, one line redrawn in place. Elsewhere (a file, a pipe) with
//! `--progress always`, plain lines without control characters: one per level, and
//! for saturation, which has no levels, one every few seconds.

use indicatif::{ProgressBar, ProgressStyle};
use num_bigint::BigUint;
use rhizome_bdd::{Manager, NodeStore, OpCache};
use rhizome_mc::reach::{LevelRecord, Progress, Strategy, Watch};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often plain output reports a saturation that is still running.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Which per-level lines go to stdout (`--count-*`).
#[derive(Debug, Clone, Copy, Default)]
pub struct LevelLines {
    pub states: bool,
    pub nodes: bool,
    pub table: bool,
}

impl LevelLines {
    fn any(self) -> bool {
        self.states || self.nodes || self.table
    }

    /// The line for one level, as Sylvan's `bddmc` words it: `level 12: 2410 states,
    /// 23403 nodes, table 0.6% full (23403 of 4194304 nodes)`.
    pub fn line(self, r: &LevelRecord) -> String {
        let mut parts = Vec::new();
        if self.states {
            parts.push(format!("{} states", r.states));
        }
        if let (true, Some(n)) = (self.nodes, r.visited_nodes) {
            parts.push(format!("{n} nodes"));
        }
        if self.table {
            parts.push(format!(
                "table {:.1}% full ({} of {} nodes)",
                percent(r.table_used, r.table_size),
                r.table_used,
                r.table_size
            ));
        }
        format!("level {}: {}", r.level, parts.join(", "))
    }
}

/// How often a terminal display counts the nodes of the visited set itself (a walk of
/// the whole set: not after every level of a fast run), at most; and never so often that
/// more than a twentieth of the time goes to counting for the display.
const COUNT_NODES_EVERY: Duration = Duration::from_millis(500);
const COUNT_NODES_SHARE: u32 = 20;

/// What the display thread shows between levels.
struct Shared {
    last: Option<LevelRecord>,
    /// Nodes of the visited set at some level: (level, nodes), and when counted.
    visited_nodes: Option<(usize, usize)>,
    counted_at: Instant,
    /// How long the last count took.
    count_took: Duration,
    /// When plain output last wrote a line.
    last_plain: Instant,
}

/// The display of one run: call [`Display::level`] after every level, then
/// [`Display::finish`].
pub struct Display {
    bar: Option<ProgressBar>,
    /// Plain lines on stderr (not a terminal, `--progress always`).
    plain: bool,
    lines: LevelLines,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Display {
    /// `show`: whether progress is shown at all; `terminal`: whether stderr is one.
    pub fn new(
        show: bool,
        terminal: bool,
        strategy: Strategy,
        watch: Arc<Watch>,
        lines: LevelLines,
    ) -> Display {
        let bar = (show && terminal).then(|| {
            let b = ProgressBar::new_spinner();
            b.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        let plain = show && !terminal;
        let shared = Arc::new(Mutex::new(Shared {
            last: None,
            visited_nodes: None,
            counted_at: Instant::now() - COUNT_NODES_EVERY,
            count_took: Duration::ZERO,
            last_plain: Instant::now(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        // Saturation runs as one long operation: only a thread of its own can tell how
        // it is going. Level strategies get a live clock and RSS on a terminal too.
        let ticker = (bar.is_some() || (plain && strategy == Strategy::Sat)).then(|| {
            let (bar, shared, stop) = (bar.clone(), shared.clone(), stop.clone());
            let start = Instant::now();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    let mut s = lock(&shared);
                    let secs = start.elapsed().as_secs_f64();
                    match &bar {
                        Some(b) => b.set_message(live_line(strategy, &watch, &s, secs)),
                        None if s.last_plain.elapsed() >= PLAIN_EVERY => {
                            s.last_plain = Instant::now();
                            let line = live_line(strategy, &watch, &s, secs);
                            let _ = writeln!(std::io::stderr(), "{line}");
                        }
                        None => {}
                    }
                }
            })
        });
        Display {
            bar,
            plain,
            lines,
            shared,
            stop,
            ticker,
        }
    }

    /// Shows a finished level (level 0, the initial states, gets no line: `bddmc`
    /// counts from the first image).
    pub fn level<S: NodeStore, C: OpCache>(&self, m: &Manager<S, C>, p: &Progress<'_>) {
        let r = p.record;
        if r.level > 0 && self.lines.any() {
            self.stdout_line(&self.lines.line(r));
        }
        let mut s = lock(&self.shared);
        let nodes = match r.visited_nodes {
            Some(n) => Some(n),
            // Plain lines are one per level, each complete; a terminal line is redrawn,
            // and its node count may be a little older than its level.
            None if self.plain || (self.bar.is_some() && s.count_due()) => {
                s.counted_at = Instant::now();
                let n = m.node_count(p.visited);
                s.count_took = s.counted_at.elapsed();
                Some(n)
            }
            None => None,
        };
        if let Some(n) = nodes {
            s.visited_nodes = Some((r.level, n));
        }
        if self.plain && r.level > 0 {
            let _ = writeln!(std::io::stderr(), "{}", plain_line(r, nodes.unwrap_or(0)));
            s.last_plain = Instant::now();
        }
        s.last = Some(r.clone());
    }

    /// A line on stdout that does not tear the progress line on a shared terminal.
    fn stdout_line(&self, line: &str) {
        let write = || {
            let _ = writeln!(std::io::stdout(), "{line}");
        };
        match &self.bar {
            Some(b) => b.suspend(write),
            None => write(),
        }
    }

    /// Removes the progress line and stops the display thread.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Shared {
    /// Whether a terminal display may count the visited set's nodes again.
    fn count_due(&self) -> bool {
        self.counted_at.elapsed() >= COUNT_NODES_EVERY.max(self.count_took * COUNT_NODES_SHARE)
    }
}

fn lock(s: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// A state count for a one-line display: exact up to 15 digits, else rounded to five
/// significant digits and marked `≈` (the count itself is exact).
pub fn short_count(n: &BigUint) -> String {
    let digits = n.to_string();
    if digits.len() <= 15 {
        return digits;
    }
    format!("≈{}.{}e{}", &digits[..1], &digits[1..5], digits.len() - 1)
}

/// The plain line of one level: every field exact.
pub fn plain_line(r: &LevelRecord, visited_nodes: usize) -> String {
    let frontier = r
        .frontier_nodes
        .map_or(String::new(), |f| format!(", frontier {f} nodes"));
    format!(
        "level {}: states {}, visited {visited_nodes} nodes{frontier}, table {} of {} ({:.1}%), {} collections, {:.3} s, RSS {}",
        r.level,
        r.states,
        r.table_used,
        r.table_size,
        percent(r.table_used, r.table_size),
        r.collections,
        r.seconds,
        rss_text()
    )
}

/// The live line: the step under way, the last level's figures, time and memory.
fn live_line(strategy: Strategy, watch: &Watch, s: &Shared, secs: f64) -> String {
    let step = if strategy == Strategy::Sat {
        format!(
            "sat: saturating group {} of {}, {} fixpoint rounds",
            watch.sat_group.load(Ordering::Relaxed) + 1,
            watch.sat_groups.load(Ordering::Relaxed),
            watch.sat_rounds.load(Ordering::Relaxed)
        )
    } else {
        format!("level {}", watch.level.load(Ordering::Relaxed))
    };
    let figures = s.last.as_ref().map_or(String::new(), |r| {
        let nodes = match s.visited_nodes {
            Some((l, n)) if l == r.level => format!(", visited {n} nodes"),
            Some((l, n)) => format!(", visited {n} nodes at level {l}"),
            None => String::new(),
        };
        format!(
            " | after level {}: states {}{nodes} | table {:.1}% of {} | {} GCs",
            r.level,
            short_count(&r.states),
            percent(r.table_used, r.table_size),
            r.table_size,
            r.collections
        )
    });
    format!("{step}{figures} | {secs:.1} s | RSS {}", rss_text())
}

/// Resident memory now, for a display.
fn rss_text() -> String {
    current_rss_bytes().map_or("?".into(), crate::reach::human_bytes)
}

/// Resident memory of this process now (VmRSS), in bytes.
fn current_rss_bytes() -> Option<u64> {
    crate::reach::process_status_bytes("VmRSS:")
}
