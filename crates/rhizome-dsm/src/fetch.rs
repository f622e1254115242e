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
//! While the service thread waits for the reply, only it could make an invalid page
//! valid or change its state, so the pages are still invalid when they are installed.

use crate::pages::{INVALID, READ};
use crate::protocol::Protocol;
use crate::region::Access;
use rhizome::Ctx;

/// Most pages one fetch brings (64 KiB of 4 KiB pages).
pub(crate) const MAX_WINDOW: usize = 16;

/// Where the last fetch ended and how far the next sequential one may reach.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Readahead {
    /// The page after the last fetched run.
    next: usize,
    /// Pages the last fetch asked for.
    window: usize,
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
}

impl Protocol {
    /// Fetches invalid page `p` from `home`, with the read-ahead's pages after it, and
    /// opens them read-only.
    pub(crate) fn fetch_pages(&self, ctx: &Ctx, p: usize, home: usize) {
        let region = &self.shared.region;
        let pages = &self.shared.pages;
        let page = region.page();
        let count = {
            let mut pe = self.pe.borrow_mut();
            let window = pe.readahead.window_at(p);
            let last = (pe.allocated / page).min(p + window);
            let t = pages.lock();
            let count = 1
                + (p + 1..last)
                    .take_while(|&q| pe.homes[q] as usize == home && t.state(q) == INVALID)
                    .count();
            pe.readahead.next = p + count;
            count
        };
        let call = ctx.call(home, self.wire.get_pages, &(p as u32, count as u32));
        let data = self.reply(ctx, call);
        assert_eq!(data.0.len(), count * page, "a home sends whole pages");
        let t = pages.lock();
        for (i, bytes) in data.0.chunks_exact(page).enumerate() {
            region.with_page(p + i, |d| d.copy_from_slice(bytes));
        }
        region.protect(p, count, Access::Read);
        for q in p..p + count {
            t.set_state(q, READ);
        }
        drop(t);
        let mut pe = self.pe.borrow_mut();
        pe.stats.page_fetches += count as u64;
        pe.stats.messages += 2;
        pe.stats.bytes += data.0.len() as u64;
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
}
