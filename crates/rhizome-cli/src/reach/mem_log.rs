//! `RHIZOME_MEM_LOG=prefix`: where each PE's memory is, level by level, written to
//! `prefix.<pe>` (a diagnostic, like `RHIZOME_SMAPS_DUMP`, not an option).
//!
//! One line a level: the collections and the operations retried after one so far, the
//! nodes of the visited set (a walk of it: this PE's slice in a sliced run) and of the
//! frontier, the node table's slots, the slots claimed since the last collection
//! (live nodes and garbage) and the nodes live after it, the bytes in memory of the node
//! array, the hash buckets, the bitmap and the operation cache (asked of the kernel with
//! `mincore`), and the process's proportional set size, so that a peak can be taken
//! apart into the tables and everything else. Every PE of a sliced run writes its own
//! file; the spread table's stores do not tell their bytes (the columns stay empty).

use super::pss::pss_bytes;
use rhizome_bdd::{Manager, NodeStore, OpCache};
use rhizome_mc::reach::Progress;
use std::fs::File;
use std::io::Write;

const MIB: f64 = (1 << 20) as f64;

/// A PE's memory log, if `RHIZOME_MEM_LOG` asks for one.
pub(super) struct MemLog {
    file: Option<File>,
}

impl MemLog {
    /// The log of PE `pe`: `$RHIZOME_MEM_LOG.<pe>` with its header, or none if the
    /// variable is unset (or the file cannot be made: a warning on stderr).
    pub(super) fn open(pe: usize) -> MemLog {
        let file = std::env::var("RHIZOME_MEM_LOG").ok().and_then(|prefix| {
            let path = format!("{prefix}.{pe}");
            match File::create(&path) {
                Ok(mut f) => {
                    let _ = writeln!(
                        f,
                        "level seconds collections retries visited_nodes frontier_nodes slots claimed live_after_gc nodes_mib buckets_mib bitmap_mib cache_entries cache_mib pss_mib"
                    );
                    Some(f)
                }
                Err(e) => {
                    eprintln!("rhizome: warning: cannot write {path}: {e}");
                    None
                }
            }
        });
        MemLog { file }
    }

    /// Appends the line of the level `p` just finished on `m`.
    pub(super) fn level<S: NodeStore, C: OpCache>(&mut self, m: &Manager<S, C>, p: &Progress<'_>) {
        let Some(f) = &mut self.file else {
            return;
        };
        let u = m.memory_use();
        let mib = |b: Option<usize>| b.map_or("-".into(), |b| format!("{:.1}", b as f64 / MIB));
        let r = p.record;
        let _ = writeln!(
            f,
            "{} {:.3} {} {} {} {} {} {} {} {} {} {} {} {} {}",
            r.level,
            r.seconds,
            r.collections,
            m.stats().retries,
            m.node_count(p.visited),
            r.frontier_nodes.map_or("-".into(), |n| n.to_string()),
            u.table_slots,
            u.claimed,
            u.live_after_last_collection,
            mib(u.table.map(|t| t.nodes)),
            mib(u.table.map(|t| t.buckets)),
            mib(u.table.map(|t| t.bitmap)),
            u.cache.map_or("-".into(), |c| c.entries.to_string()),
            mib(u.cache.map(|c| c.bytes)),
            mib(pss_bytes().map(|b| b as usize)),
        );
    }
}
