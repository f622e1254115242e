//! Counts of the one-sided operations a PE carried to another PE as messages.
//!
//! Where the ranks share no memory (`RHIZOME_MPI_RMA=messages`, ranks on several
//! machines) every get, put and atomic on another rank's memory is a request message and
//! its reply: a round trip over the network, the cost that decides how fast a distributed
//! computation runs there. [`RemoteOpCounter`] counts them on the origin, by kind, so a
//! run can report them ([`Memory::remote_ops`](crate::Memory::remote_ops)) and a design
//! that cuts round trips can be judged by its counts rather than by timings on a loaded
//! machine. Transports that carry no operation as a message count nothing.

use std::sync::atomic::{AtomicU64, Ordering};

/// The one-sided operations this PE sent to other PEs as messages, by kind, since the
/// transport started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteOps {
    /// Gets (each one request and one reply carrying the bytes).
    pub gets: u64,
    /// Bytes the gets brought back.
    pub get_bytes: u64,
    /// Puts.
    pub puts: u64,
    /// Compare-and-swaps.
    pub compare_exchanges: u64,
    /// Other atomics: loads, stores, swaps, fetch-and-adds.
    pub other_atomics: u64,
    /// Operations whose issuer waited for the reply at once (blocking), not at a later
    /// `quiet`: the round trips that were not overlapped.
    pub waited: u64,
}

impl RemoteOps {
    /// Every operation sent (a request message each, and a reply).
    pub fn messages(&self) -> u64 {
        self.gets + self.puts + self.compare_exchanges + self.other_atomics
    }

    /// The counts as words (to gather them from every PE), in field order.
    pub fn to_words(&self) -> [u64; 6] {
        [
            self.gets,
            self.get_bytes,
            self.puts,
            self.compare_exchanges,
            self.other_atomics,
            self.waited,
        ]
    }

    /// The counts from [`to_words`](Self::to_words).
    pub fn from_words(w: [u64; 6]) -> RemoteOps {
        RemoteOps {
            gets: w[0],
            get_bytes: w[1],
            puts: w[2],
            compare_exchanges: w[3],
            other_atomics: w[4],
            waited: w[5],
        }
    }
}

/// What one operation was, for [`RemoteOpCounter::count`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteOpKind {
    /// A get of this many bytes.
    Get(usize),
    /// A put.
    Put,
    /// A compare-and-swap.
    CompareExchange,
    /// Any other atomic.
    OtherAtomic,
}

/// Relaxed counters of [`RemoteOps`], shared by a PE's threads. A count is one relaxed
/// fetch-and-add beside a message round trip of microseconds, so it costs nothing
/// measurable.
#[derive(Debug, Default)]
pub struct RemoteOpCounter {
    gets: AtomicU64,
    get_bytes: AtomicU64,
    puts: AtomicU64,
    compare_exchanges: AtomicU64,
    other_atomics: AtomicU64,
    waited: AtomicU64,
}

impl RemoteOpCounter {
    /// Counts one operation sent to another PE; `blocking` if its issuer waits for the
    /// reply now.
    #[inline]
    pub fn count(&self, kind: RemoteOpKind, blocking: bool) {
        let add = |c: &AtomicU64, n: u64| {
            c.fetch_add(n, Ordering::Relaxed);
        };
        match kind {
            RemoteOpKind::Get(bytes) => {
                add(&self.gets, 1);
                add(&self.get_bytes, bytes as u64);
            }
            RemoteOpKind::Put => add(&self.puts, 1),
            RemoteOpKind::CompareExchange => add(&self.compare_exchanges, 1),
            RemoteOpKind::OtherAtomic => add(&self.other_atomics, 1),
        }
        if blocking {
            add(&self.waited, 1);
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RemoteOps {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RemoteOps {
            gets: get(&self.gets),
            get_bytes: get(&self.get_bytes),
            puts: get(&self.puts),
            compare_exchanges: get(&self.compare_exchanges),
            other_atomics: get(&self.other_atomics),
            waited: get(&self.waited),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_kind_and_the_waits() {
        let c = RemoteOpCounter::default();
        c.count(RemoteOpKind::Get(16), true);
        c.count(RemoteOpKind::Get(64), false);
        c.count(RemoteOpKind::Put, false);
        c.count(RemoteOpKind::CompareExchange, true);
        c.count(RemoteOpKind::OtherAtomic, true);
        let s = c.snapshot();
        assert_eq!(
            s,
            RemoteOps {
                gets: 2,
                get_bytes: 80,
                puts: 1,
                compare_exchanges: 1,
                other_atomics: 1,
                waited: 3,
            }
        );
        assert_eq!(s.messages(), 5);
        assert_eq!(RemoteOps::from_words(s.to_words()), s);
    }
}
