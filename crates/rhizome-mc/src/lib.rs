//! Symbolic model checking: model readers, reachability strategies, reports.
