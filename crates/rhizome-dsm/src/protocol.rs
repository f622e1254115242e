//! The page protocol of one PE: page states, twins, intervals and write notices.
//!
//! All of it runs on the PE's service thread (the PE's main thread, which also runs the
//! runtime's message handlers), so the state lives in a `RefCell`, borrowed only between
//! waits: a wait runs handlers, which borrow it too.
//!
//! - A page is *invalid* (no access), *read* (valid, read-only) or *write* (valid,
//!   read-write, written in the current interval). Pages start valid everywhere: every
//!   copy of fresh memory is zero.
//! - A read fault fetches the page from its home through the runtime view, then opens it
//!   read-only; a write fault on a non-home page makes a twin, then opens it read-write.
//!   A home page never needs a twin: the home's copy is the master.
//! - Closing an interval write-protects the pages written in it, sends each non-home
//!   page's diff against its twin to the home (the acknowledgements are awaited only where
//!   they matter: before a lock's token leaves for another PE, and before a barrier), then
//!   records the interval's write notice (its page list) under the next value of this
//!   PE's vector-timestamp entry. Under [`Intervals::Lazy`] an interval ends when a lock's
//!   token leaves this PE and at barriers (the paper's lazy scheme: a lock handed to a
//!   thread of the same PE needs no interval end); [`Intervals::Aggressive`] also ends it
//!   at every release and acquire.
//! - Applying another PE's write notices (at an acquire or a barrier) invalidates the named
//!   pages that this PE does not home. A page this PE is writing in the current interval
//!   is kept under [`Intervals::Lazy`] by two-way diffing: its diff is kept, the home's
//!   copy fetched into page and twin, the diff applied again. [`Intervals::Aggressive`]
//!   ends the interval at the acquire instead, so such a page is one written by another
//!   thread since; it is closed, its diff sent home, and dropped.
//! - Every PE keeps the notices it knows since the last barrier, its own and those it
//!   learnt, so that a lock's grant can carry all that its receiver lacks.

use crate::diff;
use crate::fetch::Readahead;
use crate::inflight::{InFlight, Waiter};
use crate::locks::{LockState, manager};
use crate::onesided::{Cursors, OneSided};
use crate::pages::{INVALID, READ, WRITE};
use crate::region::Access;
use crate::stats::DsmStats;
use crate::wire::{Bytes, Wire};
use crate::{Homes, Intervals, Shared};
use rhizome::Ctx;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

/// The home of a first-touch page nobody has claimed yet (as this PE knows).
pub(crate) const UNDECIDED: u32 = u32::MAX;

/// The protocol state of one PE.
pub(crate) struct Pe {
    pub(crate) me: usize,
    pub(crate) intervals: Intervals,
    pub(crate) pes: usize,
    pub(crate) homes: Vec<u32>,
    /// Allocated bytes of the region (the bump pointer).
    pub(crate) allocated: usize,
    /// This PE's vector timestamp: intervals of each PE whose notices it has applied.
    pub(crate) vt: Vec<u32>,
    /// The write notices this PE knows since the last barrier, per PE: entry `i` of
    /// `logs[q]` is PE `q`'s interval `bases[q] + 1 + i` (its own among them). A grant
    /// passes on the ones its receiver lacks.
    pub(crate) logs: Vec<Vec<Vec<u32>>>,
    pub(crate) bases: Vec<u32>,
    /// Pages written in the current interval whose diffs an acquire already sent home.
    flushed: BTreeSet<u32>,
    /// Diffs sent to each PE and not acknowledged yet.
    pub(crate) unacked: Vec<u32>,
    /// The locks as this PE sees them.
    pub(crate) lock_states: HashMap<u32, LockState>,
    /// For the locks this PE manages: the last PE that asked for each.
    tails: HashMap<u32, u32>,
    /// Requests forwarded to this PE and not yet served: `(lock, pe, vt)`.
    pub(crate) forwards: VecDeque<(u32, u32, Vec<u32>)>,
    /// Tokens received and not yet served: `(lock, packed notices)`.
    pub(crate) grants: VecDeque<(u32, Vec<u32>)>,
    /// Tokens sent by a PE that had passed a barrier this PE has not finished yet: served
    /// once it has (see `locks`, "A token crossing a barrier").
    pub(crate) early_grants: Vec<(u32, Vec<u32>)>,
    /// Slots waiting in the barrier.
    pub(crate) arrivals: Vec<usize>,
    /// Barriers completed, and the other PEs' arrivals received: `(barrier, pe, log)`.
    pub(crate) barriers_done: u32,
    pub(crate) barrier_logs: Vec<(u32, u32, Vec<u32>)>,
    /// Whether this PE's threads are all in the barrier (its arrival is sent).
    pub(crate) in_barrier: bool,
    /// Runs started, and PEs whose threads have ended, summed over the runs.
    pub(crate) runs: u64,
    pub(crate) ended: u64,
    pub(crate) stats: DsmStats,
    /// Where this PE's one-sided diffs and notices go.
    pub(crate) cursors: Cursors,
    /// The read-ahead of page fetches.
    pub(crate) readahead: Readahead,
    /// Page fetches sent and not answered yet.
    pub(crate) inflight: InFlight,
    /// The test hook [`DsmConfig::notice_pause`](crate::DsmConfig::notice_pause).
    #[cfg(feature = "failpoints")]
    pub(crate) notice_pause: std::time::Duration,
}

impl Pe {
    pub(crate) fn new(me: usize, pes: usize, intervals: Intervals) -> Pe {
        Pe {
            me,
            intervals,
            pes,
            homes: Vec::new(),
            allocated: 0,
            flushed: BTreeSet::new(),
            vt: vec![0; pes],
            logs: vec![Vec::new(); pes],
            bases: vec![0; pes],
            unacked: vec![0; pes],
            lock_states: HashMap::new(),
            tails: HashMap::new(),
            forwards: VecDeque::new(),
            grants: VecDeque::new(),
            early_grants: Vec::new(),
            arrivals: Vec::new(),
            barriers_done: 0,
            barrier_logs: Vec::new(),
            in_barrier: false,
            runs: 0,
            ended: 0,
            stats: DsmStats::default(),
            cursors: Cursors::new(pes),
            readahead: Readahead::default(),
            inflight: InFlight::default(),
            #[cfg(feature = "failpoints")]
            notice_pause: std::time::Duration::ZERO,
        }
    }

    /// Gives pages `first..first + count` homes.
    pub(crate) fn add_pages(&mut self, first: usize, count: usize, homes: Homes) {
        let pes = self.pes;
        self.homes.resize(first, 0);
        self.homes.extend((0..count).map(|i| match homes {
            Homes::Block => (i * pes / count) as u32,
            Homes::Cyclic => (i % pes) as u32,
            Homes::Pe(p) => (p % pes) as u32,
            Homes::FirstTouch => UNDECIDED,
        }));
    }
}

impl Pe {
    /// As `lock`'s manager: PE `from` asks for it. Returns the PE to forward the request
    /// to, the last one that asked (the manager itself, where the token starts, at first).
    pub(crate) fn manage(&mut self, lock: u32, from: u32) -> u32 {
        let first = manager(lock, self.pes) as u32;
        self.tails.insert(lock, from).unwrap_or(first)
    }

    /// The write notices this PE knows beyond vector timestamp `vt`: `(pe, from,
    /// intervals from + 1 ..)` for each PE whose intervals `vt` lacks.
    pub(crate) fn notices_beyond(&self, vt: &[u32]) -> Vec<(u32, u32, &[Vec<u32>])> {
        (0..self.pes)
            .filter(|&q| self.vt[q] > vt[q])
            .map(|q| {
                // A requester behind the last barrier knows what the barrier told (it
                // serves this grant only once it has finished that barrier too).
                let from = vt[q].max(self.bases[q]);
                let skip = (from - self.bases[q]) as usize;
                (q as u32, from, &self.logs[q][skip..])
            })
            .collect()
    }
}

/// The protocol of one PE: its shared state, its protocol state and its message ids.
pub(crate) struct Protocol {
    pub(crate) shared: Arc<Shared>,
    pub(crate) pe: Rc<RefCell<Pe>>,
    pub(crate) wire: Wire,
    pub(crate) onesided: OneSided,
}

impl Protocol {
    fn page(&self) -> usize {
        self.shared.region.page()
    }

    /// Serves a fault of the application thread of `slot`: `Ok(true)` once the access
    /// can run again, `Ok(false)` if the thread waits for a page fetch (sent now, or in
    /// flight already), which lets it go when the page is installed.
    pub(crate) fn fault(&self, ctx: &Ctx, slot: usize, arg: usize) -> Result<bool, String> {
        let offset = arg >> 2;
        let known = arg & 2 != 0;
        let write = arg & 1 != 0;
        let p = offset / self.page();
        let (home, me, allocated) = {
            let pe = self.pe.borrow();
            (pe.homes.get(p).copied(), pe.me, pe.allocated)
        };
        if offset >= allocated {
            return Err(format!(
                "rhizome: error: PE {me} accessed byte {offset} of the DSM region, beyond the {allocated} bytes allocated"
            ));
        }
        let home = self.home_of(ctx, p, home.expect("allocated pages have homes"));
        let region = &self.shared.region;
        let pages = &self.shared.pages;
        // Only this thread makes an invalid page valid, so the state read here stays
        // invalid while the page travels (the handler's fast path leaves it alone).
        let state = pages.lock().state(p);
        if state == INVALID {
            let waiter = Waiter {
                slot,
                page: p,
                write: known && write,
            };
            self.pe.borrow_mut().stats.read_faults += 1;
            if self.open_arrived(p) {
                // The barrier's prefetch brought it already.
                self.pe.borrow_mut().stats.joined_fetches += 1;
                if !(known && write) {
                    return Ok(true);
                }
            } else {
                let mut pe = self.pe.borrow_mut();
                if let Some(id) = pe.inflight.find(p) {
                    // Another thread's fetch, or the barrier's prefetch, brings it: wait
                    // for that one rather than send another.
                    pe.stats.joined_fetches += 1;
                    pe.inflight.join(id, waiter);
                } else {
                    drop(pe);
                    self.start_fetch(ctx, p, home, Some(waiter));
                }
                return Ok(false);
            }
        } else if known && !write {
            // A thread that only read, served after another thread's fetch.
            return Ok(true);
        }
        let t = pages.lock();
        if t.state(p) == READ {
            if !t.open_for_write(region, p) {
                drop(t);
                region.protect(p, 1, Access::Write); // reports the kernel's reason
            }
            self.pe.borrow_mut().stats.write_faults += 1;
        }
        // WRITE: another thread's fault opened it first: served once for all.
        Ok(true)
    }

    /// The home of page `p` (`known` as this PE's table has it): a first-touch page not
    /// known yet is claimed from its decider, which answers with the first claimant.
    fn home_of(&self, ctx: &Ctx, p: usize, known: u32) -> usize {
        if known != UNDECIDED {
            return known as usize;
        }
        let (me, pes) = {
            let pe = self.pe.borrow();
            (pe.me, pe.pes)
        };
        let home = self.reply(
            ctx,
            ctx.call(p % pes, self.wire.claim, &(p as u32, me as u32)),
        );
        let mut pe = self.pe.borrow_mut();
        pe.homes[p] = home;
        pe.stats.messages += 2;
        drop(pe);
        self.shared.pages.lock().set_home(p, home as usize == me);
        home as usize
    }

    /// Closes the written ones of `ps` (ascending) to the application threads (to
    /// `access`), with one `mprotect` per run of consecutive pages, and sends the diff of
    /// each that has a twin to its home, not waiting for the acknowledgement (see
    /// [`Protocol::wait_for_diffs`]).
    fn flush_pages(&self, ctx: &Ctx, ps: &[u32], access: Access) {
        let region = &self.shared.region;
        let pages = &self.shared.pages;
        let mut diffs = Vec::new();
        {
            let t = pages.lock();
            let written: Vec<usize> = ps
                .iter()
                .map(|&p| p as usize)
                .filter(|&p| t.state(p) == WRITE)
                .collect();
            // Closed before the diffs are taken, so no store lands between the two unseen.
            for run in written.chunk_by(|a, b| a + 1 == *b) {
                region.protect(run[0], run.len(), access);
            }
            let state = if access == Access::None {
                INVALID
            } else {
                READ
            };
            for p in written {
                t.set_state(p, state);
                if !pages.home_here(p) {
                    let mut d = Vec::new();
                    region.with_twin(p, |twin, page| diff::encode(twin, page, &mut d));
                    if !d.is_empty() {
                        diffs.push((p, d));
                    }
                }
            }
        }
        if self.onesided.diffs_by_put() {
            return self.put_diffs(ctx, diffs);
        }
        let mut pe = self.pe.borrow_mut();
        let me = pe.me as u32;
        for (p, d) in diffs {
            let home = pe.homes[p] as usize;
            pe.stats.diffs_created += 1;
            pe.stats.bytes += d.len() as u64;
            pe.stats.messages += 1;
            pe.unacked[home] += 1;
            ctx.send(home, self.wire.diff, &(p as u32, me, Bytes(d)));
        }
    }

    /// Waits until the homes have acknowledged every diff sent so far, except those sent
    /// to `except` (whose later messages from this PE arrive after them anyway).
    pub(crate) fn wait_for_diffs(&self, ctx: &Ctx, except: Option<usize>) {
        let pending = || {
            let pe = self.pe.borrow();
            pe.unacked
                .iter()
                .enumerate()
                .any(|(q, &n)| n > 0 && Some(q) != except)
        };
        if !pending() {
            return;
        }
        ctx.flush();
        self.wait_until(ctx, |_| !pending());
    }

    /// Ends the current interval: diffs sent home (not awaited), write notice recorded.
    /// Returns whether there was anything to record.
    pub(crate) fn close_interval(&self, ctx: &Ctx) -> bool {
        // Pages this PE wrote in the interval, including those an acquire since flushed
        // and invalidated (their diffs are home; the notice must still name them).
        let written: BTreeSet<u32> = {
            let mut pe = self.pe.borrow_mut();
            let mut w = std::mem::take(&mut pe.flushed);
            w.extend(self.shared.pages.lock().take_written());
            w
        };
        if written.is_empty() {
            return false;
        }
        let written: Vec<u32> = written.into_iter().collect();
        self.flush_pages(ctx, &written, Access::Read);
        let mut pe = self.pe.borrow_mut();
        let me = pe.me;
        pe.vt[me] += 1;
        pe.logs[me].push(written);
        true
    }

    /// Applies the write notices of PE `q`'s intervals `from + 1 ..= from + notices.len()`
    /// (those already applied are skipped).
    pub(crate) fn apply_notices(&self, ctx: &Ctx, q: usize, from: u32, notices: &[Vec<u32>]) {
        let known = self.pe.borrow().vt[q];
        let fresh = notices
            .iter()
            .enumerate()
            .filter(|&(i, _)| from + 1 + i as u32 > known)
            .flat_map(|(_, pages)| pages.iter().copied())
            .collect::<BTreeSet<u32>>();
        let mut dirty = Vec::new();
        let pages = &self.shared.pages;
        let lazy = self.pe.borrow().intervals == Intervals::Lazy;
        #[cfg(feature = "failpoints")]
        let pause = self.pe.borrow().notice_pause;
        {
            // A fetch sent before these notices may bring a page older than their diffs.
            let mut pe = self.pe.borrow_mut();
            for &p in &fresh {
                pe.inflight.mark_stale(p as usize);
                pe.readahead.forget_arrived(p as usize);
            }
        }
        // Sorted under one hold of the table's lock, in which the read-only pages are
        // closed too: a page found read-only and closed later could be opened for writing
        // in between by another thread's write fault (the handler's fast path), and would
        // then keep its old contents while this PE counts the notice as applied. A page
        // written in the current interval stays so until this thread changes it.
        let written: Vec<u32> = {
            let t = pages.lock();
            let mut stale = Vec::new();
            let mut written = Vec::new();
            for p in fresh.into_iter().filter(|&p| !pages.home_here(p as usize)) {
                match t.state(p as usize) {
                    WRITE => written.push(p),
                    READ => stale.push(p as usize),
                    _ => {}
                }
            }
            #[cfg(feature = "failpoints")]
            if !pause.is_zero() && !stale.is_empty() {
                std::thread::sleep(pause);
            }
            for run in stale.chunk_by(|a, b| a + 1 == *b) {
                self.shared.region.protect(run[0], run.len(), Access::None);
            }
            for &p in &stale {
                t.set_state(p, INVALID);
            }
            written
        };
        for p in written {
            if lazy {
                dirty.push(p);
            } else {
                // Written here too (false sharing, or by another thread since the acquire
                // ended the interval): its diff goes home before the page is dropped, and
                // the interval's notice will still name it.
                self.pe.borrow_mut().flushed.insert(p);
                // (A later fetch of it from its home arrives after the diff.)
                self.flush_pages(ctx, &[p], Access::None);
            }
        }
        self.two_way_update(ctx, &dirty);
        let mut pe = self.pe.borrow_mut();
        let skip = known.saturating_sub(from) as usize;
        // Holds because a grant is served only once this PE has finished every barrier
        // its sender had finished (`early_grants`): then `from`, the requester's entry or
        // the sender's base at its last barrier (every PE's entry there), is known here.
        // A token prefetched before a barrier and granted by a PE already past it would
        // otherwise arrive with the next epoch's notices at a PE still in it.
        assert!(
            from <= known,
            "write notices of PE {q} from {from}, known to {known}"
        );
        pe.logs[q].extend(notices.iter().skip(skip).cloned());
        pe.vt[q] = pe.vt[q].max(from + notices.len() as u32);
    }

    /// Two-way diffing of the dirty pages `ps`: each one's diff against its twin is kept,
    /// the home's copy is fetched into the page and the twin, and the kept diff is applied
    /// again; the page stays dirty, so its diff goes home at the interval's end. The pages
    /// are closed to the application threads meanwhile (marked invalid, so that a fault
    /// on one waits for the service thread, which reopens it first).
    fn two_way_update(&self, ctx: &Ctx, ps: &[u32]) {
        if ps.is_empty() {
            return;
        }
        let region = &self.shared.region;
        let pages = &self.shared.pages;
        let mut kept = Vec::with_capacity(ps.len());
        {
            let t = pages.lock();
            for &p in ps {
                let p = p as usize;
                region.protect(p, 1, Access::None);
                t.set_state(p, INVALID);
                let mut d = Vec::new();
                region.with_twin(p, |twin, page| diff::encode(twin, page, &mut d));
                kept.push(d);
            }
        }
        let homes: Vec<usize> = {
            let pe = self.pe.borrow();
            ps.iter().map(|&p| pe.homes[p as usize] as usize).collect()
        };
        let calls: Vec<_> = ps
            .iter()
            .zip(&homes)
            .map(|(&p, &home)| ctx.call(home, self.wire.get_pages, &(p, 1)))
            .collect();
        for ((&p, call), d) in ps.iter().zip(calls).zip(kept) {
            let fresh = self.reply(ctx, call);
            let p = p as usize;
            let t = pages.lock();
            region.with_page(p, |page| page.copy_from_slice(&fresh.0));
            region.make_twin(p);
            region.with_page(p, |page| diff::apply(&d, page));
            region.protect(p, 1, Access::Write);
            t.set_state(p, WRITE);
            drop(t);
            self.count_fetch(fresh.0.len());
            self.pe.borrow_mut().stats.two_way_updates += 1;
        }
    }

    /// Counts a page fetch of `bytes` (a request and its reply).
    fn count_fetch(&self, bytes: usize) {
        let mut pe = self.pe.borrow_mut();
        pe.stats.page_fetches += 1;
        pe.stats.messages += 2;
        pe.stats.bytes += bytes as u64;
    }
}
