//! The protocol counters of one PE (the breakdown of the paper's Figure 7).

use rhizome::Message;

/// What the protocol did on one PE (or, summed with `+`, on all of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DsmStats {
    /// Faults on invalid pages (a page fetch, or a page another thread fetched first).
    pub read_faults: u64,
    /// Faults on read-only pages: the first write of an interval (a twin unless home).
    pub write_faults: u64,
    /// Of the read faults, those that waited for a fetch already in flight (another
    /// thread's, or the prefetch at the end of a barrier) instead of sending one.
    pub joined_fetches: u64,
    /// Pages fetched from their home.
    pub page_fetches: u64,
    /// Diffs computed and sent to a home.
    pub diffs_created: u64,
    /// Diffs applied to this PE's home pages.
    pub diffs_applied: u64,
    /// Dirty pages updated by two-way diffing ([`crate::Intervals::Lazy`]).
    pub two_way_updates: u64,
    /// Bytes of page contents and diffs sent.
    pub bytes: u64,
    /// Protocol messages sent (requests and replies).
    pub messages: u64,
    /// One-sided puts of diffs and write notices ([`crate::Transfer::OneSided`]).
    pub puts: u64,
    /// Bytes those puts wrote (diff records with their headers, notice words).
    pub put_bytes: u64,
    /// Lock acquisitions.
    pub lock_acquires: u64,
    /// Of those, the ones served with no message: the lock's token was on this PE (cached
    /// since this PE's last release of it, or handed from one of its threads to another).
    pub lock_local: u64,
    /// Tokens asked for ahead of their acquisitions ([`crate::DsmLock::prefetch`]); an
    /// acquisition that finds its token here already counts as local.
    pub lock_prefetches: u64,
    /// Nanoseconds application threads waited in `acquire`.
    pub lock_wait_ns: u64,
    /// Barriers completed (counted once per PE).
    pub barriers: u64,
    /// Nanoseconds application threads waited in `barrier`.
    pub barrier_wait_ns: u64,
}

macro_rules! fields {
    ($m:ident) => {
        $m!(
            read_faults,
            write_faults,
            joined_fetches,
            page_fetches,
            diffs_created,
            diffs_applied,
            two_way_updates,
            bytes,
            messages,
            puts,
            put_bytes,
            lock_acquires,
            lock_local,
            lock_prefetches,
            lock_wait_ns,
            barriers,
            barrier_wait_ns
        )
    };
}

/// The field-wise sum (counters of several PEs).
impl std::ops::Add for DsmStats {
    type Output = DsmStats;
    fn add(self, o: DsmStats) -> DsmStats {
        macro_rules! sum {
            ($($f:ident),*) => { DsmStats { $($f: self.$f + o.$f),* } };
        }
        fields!(sum)
    }
}

impl DsmStats {
    /// The counters as `(name, value)` pairs, in a fixed order (for tables and JSON).
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        macro_rules! list {
            ($($f:ident),*) => { vec![$((stringify!($f), self.$f)),*] };
        }
        fields!(list)
    }
}

impl Message for DsmStats {
    fn encode(&self, out: &mut Vec<u8>) {
        for (_, v) in self.fields() {
            v.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        macro_rules! read {
            ($($f:ident),*) => { DsmStats { $($f: u64::decode(input)),* } };
        }
        fields!(read)
    }
}
