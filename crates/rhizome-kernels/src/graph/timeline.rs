//! A per-level timeline of a BFS, for finding where a level's time goes: each level's
//! direction, this PE's frontier and the wall time of each phase, printed to standard
//! error by every PE after the search when `RHIZOME_BFS_TIMELINE` is set (a diagnostic:
//! off, it costs one branch per phase).
//!
//! A line reads `bfs-timeline <impl> pe <p> level <k> <td|bu> frontier <n>` and then
//! `<phase> <microseconds>` for each phase the implementation has (for instance `queue`,
//! `sums`, `step`).

use std::time::Instant;

/// The phases of one PE's levels, or nothing when not asked for.
pub(super) struct Timeline {
    name: &'static str,
    /// `None` when the timeline is off.
    levels: Option<Vec<Level>>,
    /// When the phase being timed started.
    mark: Instant,
}

struct Level {
    bottom_up: bool,
    frontier: usize,
    phases: Vec<(&'static str, u128)>,
}

impl Timeline {
    /// A timeline of implementation `name`, on if `RHIZOME_BFS_TIMELINE` is set.
    pub(super) fn new(name: &'static str) -> Timeline {
        let on = std::env::var_os("RHIZOME_BFS_TIMELINE").is_some();
        Timeline {
            name,
            levels: on.then(Vec::new),
            mark: Instant::now(),
        }
    }

    /// A new level starts now, with `frontier` vertices on this PE.
    pub(super) fn level(&mut self, frontier: usize) {
        if let Some(levels) = &mut self.levels {
            levels.push(Level {
                bottom_up: false,
                frontier,
                phases: Vec::new(),
            });
            self.mark = Instant::now();
        }
    }

    /// The level's direction, once decided.
    pub(super) fn direction(&mut self, bottom_up: bool) {
        if let Some(level) = self.levels.as_mut().and_then(|l| l.last_mut()) {
            level.bottom_up = bottom_up;
        }
    }

    /// Phase `phase` of the current level ended now (it began at the end of the last).
    pub(super) fn phase(&mut self, phase: &'static str) {
        if let Some(level) = self.levels.as_mut().and_then(|l| l.last_mut()) {
            let now = Instant::now();
            level
                .phases
                .push((phase, now.duration_since(self.mark).as_micros()));
            self.mark = now;
        }
    }

    /// Prints the levels of PE `pe`, if the timeline is on.
    pub(super) fn print(&self, pe: usize) {
        for (k, level) in self.levels.iter().flatten().enumerate() {
            let mut line = format!(
                "bfs-timeline {} pe {pe} level {k} {} frontier {}",
                self.name,
                if level.bottom_up { "bu" } else { "td" },
                level.frontier
            );
            for (phase, us) in &level.phases {
                line.push_str(&format!(" {phase} {us}"));
            }
            eprintln!("{line}");
        }
    }
}
