//! Page fetches in flight, so that the service thread never waits for one.
//!
//! A fetch is sent and then left: the service thread goes on serving the other
//! application threads, the other PEs and the locks, and the home's answer is installed
//! by its message handler when it arrives. The threads whose faults the fetch serves wait
//! on it as its *waiters*; a fault on a page already in flight (another thread of this
//! PE asked for it, or the barrier's prefetch did, see `fetch`) joins that fetch instead
//! of sending another. So a PE with several application threads has one fetch per page
//! however many of its threads want it, and a thread that faults on another page meanwhile
//! is not queued behind the first fetch: its own is sent at once.
//!
//! **Why it is consistent.** A fetch asked for before a write notice naming one of its
//! pages was applied here (at an acquire or a barrier) may bring the page as it was before
//! that interval's diff reached the home. Applying the notice marks the page *stale* in
//! its fetch; a stale page is not installed when the answer comes (it stays invalid), and
//! a thread waiting for it is let go to fault again, which fetches it anew. Pages not
//! named by a later notice are installed as they come: as fresh as a fetch sent at the
//! fault would be.

/// A thread waiting for a fetch: its slot, the page it faulted on, and whether it was a
/// write (the page is then opened for writing as soon as it is installed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub(crate) slot: usize,
    pub(crate) page: usize,
    pub(crate) write: bool,
}

/// One fetch of pages `first..first + count` from one home.
#[derive(Debug)]
pub(crate) struct Fetch {
    pub(crate) first: usize,
    pub(crate) count: usize,
    /// Pages (bit `i`: page `first + i`) named by a write notice applied since the
    /// fetch was sent: not installed.
    pub(crate) stale: u64,
    pub(crate) waiters: Vec<Waiter>,
}

impl Fetch {
    /// Whether page `p` of this fetch arrives stale.
    pub(crate) fn is_stale(&self, p: usize) -> bool {
        self.stale & (1 << (p - self.first)) != 0
    }
}

/// Most pages one fetch may ask for: a fetch's stale pages are one bit each of a `u64`.
pub(crate) const MAX_FETCH: usize = 64;

/// The fetches of one PE that have been sent and not answered, by number.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    fetches: Vec<Option<Fetch>>,
    /// How many are in flight.
    pending: usize,
}

impl InFlight {
    /// The number of the fetch that brings page `p`, if one is in flight.
    pub(crate) fn find(&self, p: usize) -> Option<u32> {
        self.fetches
            .iter()
            .position(|f| {
                f.as_ref()
                    .is_some_and(|f| (f.first..f.first + f.count).contains(&p))
            })
            .map(|i| i as u32)
    }

    /// Whether page `p` is in flight.
    pub(crate) fn contains(&self, p: usize) -> bool {
        self.find(p).is_some()
    }

    /// Records a fetch of `count` pages from `first` (at most [`MAX_FETCH`]); returns its
    /// number, which the home's answer carries.
    pub(crate) fn start(&mut self, first: usize, count: usize, waiter: Option<Waiter>) -> u32 {
        assert!((1..=MAX_FETCH).contains(&count), "a fetch of {count} pages");
        let fetch = Fetch {
            first,
            count,
            stale: 0,
            waiters: waiter.into_iter().collect(),
        };
        self.pending += 1;
        match self.fetches.iter().position(Option::is_none) {
            Some(i) => {
                self.fetches[i] = Some(fetch);
                i as u32
            }
            None => {
                self.fetches.push(Some(fetch));
                (self.fetches.len() - 1) as u32
            }
        }
    }

    /// A thread waits for fetch `id` too.
    pub(crate) fn join(&mut self, id: u32, waiter: Waiter) {
        self.fetches[id as usize]
            .as_mut()
            .expect("a fetch in flight")
            .waiters
            .push(waiter);
    }

    /// A write notice names page `p`: if it is in flight, it will arrive stale.
    pub(crate) fn mark_stale(&mut self, p: usize) {
        if let Some(id) = self.find(p) {
            let f = self.fetches[id as usize].as_mut().expect("found");
            f.stale |= 1 << (p - f.first);
        }
    }

    /// The answer to fetch `id` has come: the fetch, no longer in flight.
    pub(crate) fn take(&mut self, id: u32) -> Fetch {
        let f = self.fetches[id as usize]
            .take()
            .expect("an answer to a fetch in flight");
        self.pending -= 1;
        f
    }

    /// Whether no fetch is in flight.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_on_a_page_in_flight_finds_its_fetch_and_stale_pages_are_marked() {
        let mut f = InFlight::default();
        let w = |slot, page| Waiter {
            slot,
            page,
            write: false,
        };
        let a = f.start(10, 4, Some(w(0, 10)));
        let b = f.start(20, 1, None);
        assert_eq!(f.find(13), Some(a));
        assert_eq!(f.find(14), None, "past the run");
        assert_eq!(f.find(20), Some(b));
        f.join(a, w(1, 12));
        f.mark_stale(12);
        f.mark_stale(30); // not in flight: nothing
        let got = f.take(a);
        assert_eq!(got.waiters, vec![w(0, 10), w(1, 12)]);
        assert!(got.is_stale(12) && !got.is_stale(10));
        assert!(!f.contains(12) && !f.is_empty());
        // Its number is used again.
        assert_eq!(f.start(40, 2, None), a);
        f.take(a);
        f.take(b);
        assert!(f.is_empty());
    }
}
