//! Page fetches from the home, with read-ahead.
//!
//! A read fault on an invalid page costs a round trip to its home, through both PEs'
//! service threads. A program that walks another PE's data page by page (NBody reads
//! every body each step; a barrier's write notices have invalidated the other PEs'
//! pages) would pay that round trip per page. So a fault that continues a run of pages
//! fetched just before (its page is the one after the last run) doubles the *window*,
//! and fetches with the faulting page up to window - 1 of the pages after it, in one
//! request, as long as they are invalid here and have the same home; any other fault
//! starts again at one page. A run of `k` sequential pages thus takes about `log2 k`
//! round trips (up to [`MAX_WINDOW`] pages each), and random access fetches only what
//! it touches.
//!
//! Fetching a page early is as safe as fetching it on demand: the home's copy holds
//! every diff of the intervals whose notices this PE has applied (a writer waits for its
//! diffs' acknowledgements before its notices leave it, or they travel ahead of the
//! notice on the same link), and a notice applied later invalidates the page again.
//! Only the service thread makes an invalid page valid or changes its state (the
//! answer is installed by its message handler), so the pages of a fetch are still invalid
//! when they are installed; a write notice applied while they travel marks them stale.
//!
//! **Pages a barrier took away come back in one batch.** An iterative program reads at
//! each step the pages it read at the last one, and a barrier's write notices invalidate
//! them all at once (NBody: every page of the other PEs). The barrier marks the pages it
//! invalidates that this PE fetched since they were last invalidated (and still had, read-only:
//! it wanted them, so it is likely to want them again); a fault on a marked page fetches,
//! in one request, the whole run of marked invalid pages of the same home around it (up
//! to [`MAX_BATCH`]), where the read-ahead would take `log2` of the run's length in round
//! trips. Only pages fetched since their last invalidation are marked, so a batch never
//! brings more than the fetches before it did (fresh pages, valid everywhere at first, are not
//! marked). Pages a lock's notices invalidate keep the read-ahead.
//!
//! **Asked for at the barrier, not at the fault.** The marked pages are wanted at the next
//! step, so the service thread asks for them (in the same batches) as soon as the barrier
//! completes, before it lets the threads go: they travel while the threads compute on
//! what they have, and a thread that reaches one first waits for its batch (see
//! `inflight`) instead of starting a round trip of its own. A barrier's prefetch fetches
//! no page the batches would not have fetched at the first fault on them.
//!
//! Fetches are not waited for by the service thread (see `inflight`): [`install`] puts a
//! fetch's pages in place when the home's answer arrives.

use crate::Shared;
use crate::fault::Done;
use crate::inflight::Waiter;
use crate::pages::{INVALID, READ};
use crate::protocol::{Pe, Protocol};
use crate::region::Access;
use rhizome::Ctx;

/// Most pages one fetch brings (64 KiB of 4 KiB pages).
pub(crate) const MAX_WINDOW: usize = 16;

/// Most pages one batch of pages a barrier took away brings (256 KiB of 4 KiB pages).
pub(crate) const MAX_BATCH: usize = crate::inflight::MAX_FETCH;

/// Where the last fetch ended and how far the next sequential one may reach, and which
/// pages the last barrier took away from this PE.
#[derive(Clone, Debug, Default)]
pub(crate) struct Readahead {
    /// The page after the last fetched run.
    next: usize,
    /// Pages the last fetch asked for.
    window: usize,
    /// Pages valid here that a barrier's notices invalidated, one bit each, until
    /// fetched or the next barrier.
    dropped: Vec<u64>,
    /// Pages fetched and not named by a barrier's notices since, one bit each.
    fetched: Vec<u64>,
    /// Pages a barrier's prefetch brought that no thread has touched yet, one bit each:
    /// their contents are in place, but the application view keeps them closed, so that
    /// the first access shows they are wanted (and only then are they marked fetched, to
    /// be prefetched again at the next barrier).
    arrived: Vec<u64>,
    /// Lock tokens this PE had received from other PEs at the last barrier.
    grants_at_barrier: u64,
}

impl Readahead {
    /// The window for a fetch starting at page `p`: doubled if it continues the last run,
    /// else one page.
    fn window_at(&mut self, p: usize) -> usize {
        self.window = if p == self.next && self.window > 0 {
            (self.window * 2).min(MAX_WINDOW)
        } else {
            1
        };
        self.window
    }

    /// Whether page `p` was taken away by the last barrier and not fetched since.
    fn is_dropped(&self, p: usize) -> bool {
        bit(&self.dropped, p)
    }

    /// Marks page `p` as taken away by a barrier.
    fn mark_dropped(&mut self, p: usize) {
        set_bit(&mut self.dropped, p, true);
    }

    /// Pages `first..first + count` are being fetched: unmarked, and noted as fetched
    /// if a thread asked for them (`wanted`).
    fn clear_dropped(&mut self, first: usize, count: usize, wanted: bool) {
        for p in first..first + count {
            set_bit(&mut self.dropped, p, false);
            if wanted {
                set_bit(&mut self.fetched, p, true);
            }
        }
    }

    /// A write notice names page `p`: if a prefetch brought it, its contents are stale.
    pub(crate) fn forget_arrived(&mut self, p: usize) {
        if bit(&self.arrived, p) {
            set_bit(&mut self.arrived, p, false);
        }
    }

    /// The run of arrived pages around `p` (`p` included if it arrived): `(first, count)`.
    fn arrived_run(&self, p: usize) -> (usize, usize) {
        if !bit(&self.arrived, p) {
            return (p, 0);
        }
        let mut first = p;
        while first > 0 && bit(&self.arrived, first - 1) {
            first -= 1;
        }
        let mut last = p + 1;
        while bit(&self.arrived, last) {
            last += 1;
        }
        (first, last - first)
    }

    /// The run of marked pages around `p` that `fits` (same home, still invalid), at
    /// most [`MAX_BATCH`] pages below `end`: `(first, count)`, `p` included.
    fn batch_at(&self, p: usize, end: usize, fits: impl Fn(usize) -> bool) -> (usize, usize) {
        let ok = |q: usize| self.is_dropped(q) && fits(q);
        let mut first = p;
        while first > 0 && p - first + 1 < MAX_BATCH && ok(first - 1) {
            first -= 1;
        }
        let mut last = p + 1;
        while last < end && last - first < MAX_BATCH && ok(last) {
            last += 1;
        }
        (first, last - first)
    }
}

fn bit(bits: &[u64], p: usize) -> bool {
    bits.get(p / 64).is_some_and(|w| w & (1 << (p % 64)) != 0)
}

fn set_bit(bits: &mut Vec<u64>, p: usize, on: bool) {
    if bits.len() <= p / 64 {
        bits.resize(p / 64 + 1, 0);
    }
    if on {
        bits[p / 64] |= 1 << (p % 64);
    } else {
        bits[p / 64] &= !(1 << (p % 64));
    }
}

impl Protocol {
    /// Before a barrier's notices naming `ps` are applied: marks those of them that this
    /// PE fetched since the last barrier and still has read-only (homed elsewhere), which
    /// the notices will invalidate.
    pub(crate) fn mark_barrier_drops(&self, ps: impl IntoIterator<Item = u32>) {
        let pages = &self.shared.pages;
        let mut pe = self.pe.borrow_mut();
        let t = pages.lock();
        for p in ps.into_iter().map(|p| p as usize) {
            if bit(&pe.readahead.fetched, p) && !pages.home_here(p) && t.state(p) == READ {
                pe.readahead.mark_dropped(p);
            }
            // Invalid from here on: fetched again, it is noted again.
            set_bit(&mut pe.readahead.fetched, p, false);
        }
    }

    /// Forgets the last barrier's marks (at the next barrier, before its marks).
    pub(crate) fn clear_barrier_drops(&self) {
        self.pe.borrow_mut().readahead.dropped.fill(0);
    }

    /// Sends a fetch of invalid page `p` from `home`, with the pages after it the
    /// read-ahead reaches, or with the run of pages the last barrier took away around it
    /// (pages already in flight excluded), for `waiter` (none: a prefetch). The answer is
    /// installed by [`install`] when it comes; the service thread does not wait for it.
    pub(crate) fn start_fetch(&self, ctx: &Ctx, p: usize, home: usize, waiter: Option<Waiter>) {
        let page = self.shared.region.page();
        let pages = &self.shared.pages;
        let mut pe = self.pe.borrow_mut();
        let pe = &mut *pe;
        let end = pe.allocated / page;
        let dropped = pe.readahead.is_dropped(p);
        let window = if dropped {
            0
        } else {
            pe.readahead.window_at(p)
        };
        let (first, count) = {
            let t = pages.lock();
            let fits = |q: usize| {
                pe.homes[q] as usize == home && t.state(q) == INVALID && !pe.inflight.contains(q)
            };
            if dropped {
                pe.readahead.batch_at(p, end, fits)
            } else {
                let after = (p + 1..end.min(p + window)).take_while(|&q| fits(q));
                (p, 1 + after.count())
            }
        };
        let ra = &mut pe.readahead;
        if dropped {
            // A sequential fault after the batch goes on with a full window.
            ra.window = count.min(MAX_WINDOW);
        }
        ra.clear_dropped(first, count, waiter.is_some());
        ra.next = first + count;
        let id = pe.inflight.start(first, count, waiter);
        pe.stats.messages += 2;
        let me = pe.me as u32;
        ctx.send(home, self.wire.fetch, &(first as u32, count as u32, id, me));
    }

    /// A fault on invalid page `p`: if a barrier's prefetch brought it, opens it
    /// read-only with the run of arrived pages around it (a thread wants them now, so
    /// they are marked fetched) and returns true; else false.
    pub(crate) fn open_arrived(&self, p: usize) -> bool {
        let mut pe = self.pe.borrow_mut();
        let (first, count) = pe.readahead.arrived_run(p);
        if count == 0 {
            return false;
        }
        let t = self.shared.pages.lock();
        // Arrived pages are invalid until opened (a notice naming one forgets it).
        self.shared.region.protect(first, count, Access::Read);
        for q in first..first + count {
            t.set_state(q, READ);
            set_bit(&mut pe.readahead.arrived, q, false);
            set_bit(&mut pe.readahead.fetched, q, true);
        }
        true
    }

    /// At the end of a barrier: fetches back, in batches, the pages its notices took away
    /// from this PE (see the module documentation), before any thread asks; a thread that
    /// faults on one meanwhile waits for its batch.
    ///
    /// Only after an epoch in which no lock's token came from another PE: where locks
    /// move between PEs, their grants' notices take pages away again soon after (Water's
    /// molecules), and a prefetched page would mostly travel for nothing; the batch at the
    /// first fault serves those epochs.
    pub(crate) fn prefetch_dropped(&self, ctx: &Ctx) {
        {
            let mut pe = self.pe.borrow_mut();
            let grants = pe.stats.lock_acquires - pe.stats.lock_local;
            let quiet = grants == pe.readahead.grants_at_barrier;
            pe.readahead.grants_at_barrier = grants;
            if !quiet {
                return;
            }
        }
        let mut p = 0;
        loop {
            let next = {
                let pe = self.pe.borrow();
                let ra = &pe.readahead;
                (p..ra.dropped.len() * 64).find(|&q| ra.is_dropped(q))
            };
            let Some(q) = next else { return };
            let (home, valid, flying) = {
                let pe = self.pe.borrow();
                let state = self.shared.pages.lock().state(q);
                (
                    pe.homes[q] as usize,
                    state != INVALID,
                    pe.inflight.contains(q),
                )
            };
            if valid || flying {
                self.pe.borrow_mut().readahead.clear_dropped(q, 1, false);
            } else {
                self.start_fetch(ctx, q, home, None);
            }
            p = q + 1;
        }
    }
}

/// The home's answer to fetch `id` (`data`, the pages' contents) has come: installs the
/// pages no write notice has made stale since the fetch was sent, read-only, opens the
/// page of each waiting write fault for writing, and lets the waiting threads go (a thread
/// whose page came stale faults again). Runs in the answer's message handler, on the
/// service thread.
pub(crate) fn install(sh: &Shared, pe: &mut Pe, id: u32, data: &[u8]) {
    let f = pe.inflight.take(id);
    let region = &sh.region;
    let page = region.page();
    assert_eq!(data.len(), f.count * page, "a home sends whole pages");
    let t = sh.pages.lock();
    // Only the service thread makes an invalid page valid, so pages in flight are
    // still invalid unless stale.
    let fresh: Vec<usize> = (f.first..f.first + f.count)
        .filter(|&q| !f.is_stale(q) && t.state(q) == INVALID)
        .collect();
    for &q in &fresh {
        let at = (q - f.first) * page;
        region.with_page(q, |d| d.copy_from_slice(&data[at..at + page]));
    }
    if f.waiters.is_empty() {
        // A prefetch nobody has asked for yet: in place, closed until touched.
        for &q in &fresh {
            set_bit(&mut pe.readahead.arrived, q, true);
        }
    } else {
        for run in fresh.chunk_by(|a, b| a + 1 == *b) {
            region.protect(run[0], run.len(), Access::Read);
        }
        for &q in &fresh {
            t.set_state(q, READ);
            set_bit(&mut pe.readahead.fetched, q, true);
        }
    }
    for w in f.waiters.iter().filter(|w| w.write) {
        // The retried store would fault again at once: open the page for writing now
        // (one fault instead of two).
        if t.state(w.page) == READ {
            if !t.open_for_write(region, w.page) {
                region.protect(w.page, 1, Access::Write); // reports the kernel's reason
            }
            pe.stats.write_faults += 1;
        }
    }
    drop(t);
    pe.stats.page_fetches += f.count as u64;
    pe.stats.bytes += data.len() as u64;
    for w in f.waiters {
        sh.slots[w.slot].complete(Done::Ok);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_doubles_along_a_run_and_starts_again_elsewhere() {
        let mut ra = Readahead::default();
        let mut fetched = Vec::new();
        let mut p = 10;
        for _ in 0..7 {
            let w = ra.window_at(p);
            fetched.push(w);
            ra.next = p + w;
            p += w;
        }
        assert_eq!(fetched, [1, 2, 4, 8, 16, 16, 16]);
        assert_eq!(ra.window_at(3), 1, "a fault elsewhere starts again");
        assert_eq!(ra.window_at(3), 1, "the same page again is not a run");
    }

    #[test]
    fn a_batch_takes_the_marked_run_around_the_fault_up_to_the_cap() {
        let mut ra = Readahead::default();
        for p in (10..20).chain(30..30 + 2 * MAX_BATCH) {
            ra.mark_dropped(p);
        }
        assert_eq!(ra.batch_at(14, 1000, |_| true), (10, 10), "both ways");
        assert_eq!(ra.batch_at(14, 17, |_| true), (10, 7), "not past the end");
        assert_eq!(
            ra.batch_at(14, 1000, |q| q != 12),
            (13, 7),
            "only what fits"
        );
        assert_eq!(ra.batch_at(30, 1000, |_| true), (30, MAX_BATCH), "capped");
        ra.clear_dropped(10, 5, true);
        assert!(!ra.is_dropped(14) && ra.is_dropped(15));
        assert_eq!(ra.batch_at(15, 1000, |_| true), (15, 5));
    }
}
