//! Locks: a token per lock that stays where it was last used, found through the lock's
//! manager, handed over with the write notices the next holder lacks.
//!
//! Each lock has one *token*. A PE holding it lets its own threads in with no message at
//! all: a thread that finds the token here and free takes it at once (the lock stays
//! *cached* on the PE that released it last), and one that finds it held waits in the
//! PE's local queue. Only a PE without the token asks the lock's *manager* (PE
//! `lock mod n`), once for all its waiting threads; the manager keeps only the last PE
//! that asked (the tail of the distributed queue) and forwards the request to it. That PE
//! either has the token free and grants it at once, or remembers the request and grants
//! it when its holder releases: the grant is one message from the releaser to the next
//! holder, carrying every write notice the releaser knows and the requester did not (the
//! request carries the requester's vector timestamp). An acquisition thus costs nothing
//! when the lock is cached, two messages (request, grant) when the manager is the
//! requester or the holder, three otherwise.
//!
//! A release sends nothing by itself: the interval it ends (under
//! [`Intervals::Aggressive`]) sends its diffs home without waiting for them, and under
//! [`Intervals::Lazy`] the interval ends only when the token leaves the PE (the paper's
//! lazy scheme: a grant to another node), or at a barrier. Before the token leaves, the
//! releaser waits for the acknowledgements of diffs it sent to homes other than the next
//! holder, so that the next holder's page fetches find them applied; a diff to the next
//! holder itself needs no wait, since messages between two PEs arrive in order.
//!
//! The service thread is not needed at all while a lock stays on one PE and nobody else
//! asks for it (under [`Intervals::Lazy`], where neither a release nor an acquire ends
//! the interval): the PE publishes such a lock's state in a word that its application
//! threads change themselves ([`FastLocks`]): *cached* (free here) to *held by thread
//! `s`* at an acquire, and back at the release. Before the service thread does anything
//! with a lock it takes the word back (an atomic swap to *slow*, learning who holds it),
//! so a thread and the service thread never both decide; the word is published again
//! when the lock is left with its token here, no thread of this PE waiting for it and no
//! other PE's request pending.
//!
//! When a thread releases while threads of this PE wait, the next of them gets the lock
//! with no message, even if another PE's request waits too (the paper's multithreaded
//! design: a lock stays on the node while its threads want it, so that a hand-off between
//! two threads of one PE never crosses the network). To keep that fair, at most
//! [`LOCAL_TURNS`] local hand-offs pass over a waiting PE's request; the next release
//! grants it the token (and this PE's threads still waiting ask again), so no PE starves.
//!
//! **A token crossing a barrier.** A token asked for ahead may be granted by a PE that
//! has passed a barrier to a PE that has not finished it yet (it is in the barrier: the
//! granter could not pass it without its arrival). The grant carries the notices the
//! requester lacks *since that barrier*, counting on the barrier for the ones before, so
//! the receiver keeps such a grant (it names the barriers its sender had finished) until
//! its own barrier is done: served earlier, the notices would start beyond what it knows,
//! and the barrier's end, which clears the logs, would drop them before they were passed
//! on.
//!
//! A thread that knows which locks it takes next may ask for their tokens ahead
//! ([`crate::DsmLock::prefetch`]): the PE asks the managers for the tokens not here and
//! not asked for yet, and the thread goes on at once. A token that arrives with no thread
//! of this PE waiting stays cached here (or goes on at once to a PE that asked after
//! this one), so the acquisitions that follow find it here; the round trips of a run of
//! acquisitions overlap instead of following each other. A prefetch only moves tokens, as
//! any request does: what a holder sees is decided at its acquisition, as before.

use crate::Intervals;
use crate::fault::Done;
use crate::protocol::Protocol;
use rhizome::Ctx;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A lock word: the service thread decides.
const SLOW: u32 = 0;
/// A lock word: the token is here and the lock free.
const CACHED: u32 = 1;
/// A lock word: held by the thread of slot `s` (the word is `HELD + s`).
const HELD: u32 = 2;

/// Hand-offs to threads of this PE that may pass over another PE's waiting request
/// before the token goes to that PE. A few are enough to keep a lock's hand-offs on the
/// PE while its threads take turns (each turn saved is a round trip or two), and the
/// waiting PE waits for at most this many critical sections of this PE's threads.
pub(crate) const LOCAL_TURNS: u32 = 8;

/// The lock words that application threads may change themselves (see the module
/// documentation), and the acquisitions they made so.
#[derive(Default)]
pub(crate) struct FastLocks {
    words: Mutex<HashMap<u32, Arc<AtomicU32>>>,
    pub(crate) acquires: AtomicU64,
}

impl FastLocks {
    fn word(&self, lock: u32) -> Option<Arc<AtomicU32>> {
        let words = self.words.lock().unwrap_or_else(|e| e.into_inner());
        words.get(&lock).cloned()
    }

    /// Thread `slot` takes `lock` if it is cached here and free.
    pub(crate) fn try_acquire(&self, lock: u32, slot: usize) -> bool {
        let Some(w) = self.word(lock) else {
            return false;
        };
        let taken = w
            .compare_exchange(
                CACHED,
                HELD + slot as u32,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok();
        if taken {
            self.acquires.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Thread `slot` gives `lock` back if nobody needs the service thread to act on it.
    pub(crate) fn try_release(&self, lock: u32, slot: usize) -> bool {
        self.word(lock).is_some_and(|w| {
            w.compare_exchange(
                HELD + slot as u32,
                CACHED,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
        })
    }

    /// Whether `lock`'s token is here with its word published (free or held by a thread
    /// of this PE): nothing to ask for.
    pub(crate) fn here(&self, lock: u32) -> bool {
        self.word(lock)
            .is_some_and(|w| w.load(Ordering::Relaxed) != SLOW)
    }

    /// The service thread takes `lock` back: returns what the word said, if it was
    /// published.
    fn reclaim(&self, lock: u32) -> Option<u32> {
        Some(self.word(lock)?.swap(SLOW, Ordering::AcqRel))
    }

    /// The service thread publishes `lock`'s word.
    fn publish(&self, lock: u32, word: u32) {
        let mut words = self.words.lock().unwrap_or_else(|e| e.into_inner());
        let w = words.entry(lock).or_default();
        w.store(word, Ordering::Release);
    }
}

/// One lock as one PE sees it.
pub(crate) struct LockState {
    /// This PE has the token: a thread of it holds the lock, or it is cached here.
    token: bool,
    /// The slot of the thread holding the lock.
    holder: Option<usize>,
    /// This PE's threads waiting for it, in arrival order.
    waiters: VecDeque<usize>,
    /// A request for the token is out (at the manager or forwarded).
    requested: bool,
    /// Another PE's request forwarded here: `(pe, its vector timestamp)`, granted at a
    /// release once no thread of this PE waits or [`LOCAL_TURNS`] have passed it over.
    next: Option<(u32, Vec<u32>)>,
    /// Local hand-offs that passed over `next` so far.
    passed_over: u32,
}

/// Who gets a lock its holder releases.
#[derive(Debug, PartialEq, Eq)]
enum Handoff {
    /// The thread of this slot, waiting on this PE: no message.
    Local(usize),
    /// The PE that asked, with its vector timestamp: the token leaves.
    Remote(u32, Vec<u32>),
    /// Nobody waits: the token stays cached here.
    Keep,
}

impl LockState {
    /// A lock not used yet: its token starts at its manager.
    pub(crate) fn new(lock: u32, me: usize, pes: usize) -> LockState {
        LockState {
            token: manager(lock, pes) == me,
            holder: None,
            waiters: VecDeque::new(),
            requested: false,
            next: None,
            passed_over: 0,
        }
    }

    /// The holder released: decides who is next. This PE's waiting threads first, unless
    /// another PE's request has been passed over [`LOCAL_TURNS`] times already.
    fn hand_off(&mut self) -> Handoff {
        self.holder = None;
        let remote_due = self.next.is_some() && self.passed_over >= LOCAL_TURNS;
        if !remote_due && let Some(w) = self.waiters.pop_front() {
            self.passed_over += self.next.is_some() as u32;
            self.holder = Some(w);
            return Handoff::Local(w);
        }
        match self.next.take() {
            Some((to, vt)) => {
                self.passed_over = 0;
                Handoff::Remote(to, vt)
            }
            None => Handoff::Keep,
        }
    }
}

impl crate::protocol::Pe {
    /// This PE's state of `lock` (made on first use).
    fn lock_state(&mut self, lock: u32) -> &mut LockState {
        let (me, pes) = (self.me, self.pes);
        self.lock_states
            .entry(lock)
            .or_insert_with(|| LockState::new(lock, me, pes))
    }
}

/// The manager of `lock` among `pes` PEs.
pub(crate) fn manager(lock: u32, pes: usize) -> usize {
    lock as usize % pes
}

impl Protocol {
    /// Serves thread `slot`'s acquire of `lock` (one the thread could not take itself).
    pub(crate) fn acquire(&self, ctx: &Ctx, slot: usize, lock: u32) {
        self.take_back(lock);
        self.acquire_here(ctx, slot, lock);
        self.republish(lock);
    }

    /// Serves thread `slot`'s release of `lock` (one the thread could not do itself).
    pub(crate) fn release(&self, ctx: &Ctx, slot: usize, lock: u32) -> Result<(), String> {
        self.take_back(lock);
        let r = self.release_here(ctx, slot, lock);
        self.republish(lock);
        r
    }

    /// Serves another PE's request for `lock`, forwarded here.
    pub(crate) fn serve_forward(&self, ctx: &Ctx, lock: u32, from: u32, vt: Vec<u32>) {
        self.take_back(lock);
        self.forwarded(ctx, lock, from, vt);
        self.republish(lock);
    }

    /// Serves the arrival of `lock`'s token.
    pub(crate) fn serve_grant(&self, ctx: &Ctx, lock: u32, notices: Vec<u32>) {
        self.take_back(lock);
        self.granted(ctx, lock, notices);
        self.republish(lock);
    }

    /// Serves a thread's prefetch of locks `first..first + count`: asks for every token
    /// that is not here and not asked for yet, and waits for none of them.
    pub(crate) fn prefetch(&self, ctx: &Ctx, first: u32, count: u32) {
        for lock in first..first.saturating_add(count) {
            let ask = {
                let mut pe = self.pe.borrow_mut();
                let st = pe.lock_state(lock);
                let ask = !st.token && !st.requested;
                st.requested |= ask;
                pe.stats.lock_prefetches += ask as u64;
                ask
            };
            if ask {
                self.ask_manager(ctx, lock);
            }
        }
    }

    /// Takes `lock`'s word back from the application threads, learning who took it.
    fn take_back(&self, lock: u32) {
        let word = self.shared.fast_locks.reclaim(lock);
        let mut pe = self.pe.borrow_mut();
        let st = pe.lock_state(lock);
        match word {
            Some(CACHED) => st.holder = None,
            Some(w) if w >= HELD => st.holder = Some((w - HELD) as usize),
            _ => {}
        }
    }

    /// Lets the application threads take and give back `lock` themselves again, if its
    /// token is here and nothing waits for it (lazy intervals only).
    fn republish(&self, lock: u32) {
        let mut pe = self.pe.borrow_mut();
        if pe.intervals != Intervals::Lazy {
            return;
        }
        let st = pe.lock_state(lock);
        if st.token && st.waiters.is_empty() && st.next.is_none() {
            let word = st.holder.map_or(CACHED, |s| HELD + s as u32);
            self.shared.fast_locks.publish(lock, word);
        }
    }

    /// A thread asks for `lock`: let in at once if the token is here and free, else
    /// queued here (and the token asked for, if it is not here and not asked for yet).
    fn acquire_here(&self, ctx: &Ctx, slot: usize, lock: u32) {
        let mut pe = self.pe.borrow_mut();
        let me = pe.me;
        let st = pe.lock_state(lock);
        if st.holder == Some(slot) {
            drop(pe);
            let s = &self.shared.slots[slot];
            *s.error.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                "rhizome: error: PE {me} thread {slot} acquired DSM lock {lock}, which it holds already"
            );
            return s.complete(Done::Refused);
        }
        if st.token && st.holder.is_none() {
            st.holder = Some(slot);
            pe.stats.lock_acquires += 1;
            pe.stats.lock_local += 1;
            drop(pe);
            return self.enter(ctx, slot);
        }
        st.waiters.push_back(slot);
        let ask = !st.token && !st.requested;
        if ask {
            st.requested = true;
        }
        drop(pe);
        if ask {
            self.ask_manager(ctx, lock);
        }
    }

    /// Lets thread `slot` in: under aggressive intervals its acquire ends the interval.
    fn enter(&self, ctx: &Ctx, slot: usize) {
        if self.pe.borrow().intervals == Intervals::Aggressive {
            self.close_interval(ctx);
        }
        self.shared.slots[slot].complete(Done::Ok);
    }

    /// Sends this PE's request for `lock` to its manager (or manages it here).
    fn ask_manager(&self, ctx: &Ctx, lock: u32) {
        let (me, pes, vt) = {
            let pe = self.pe.borrow();
            (pe.me, pe.pes, pe.vt.clone())
        };
        let m = manager(lock, pes);
        if m == me {
            let to = self.pe.borrow_mut().manage(lock, me as u32);
            self.forward(ctx, to, lock, me as u32, vt);
        } else {
            self.pe.borrow_mut().stats.messages += 1;
            ctx.send(m, self.wire.request, &(lock, me as u32, vt));
        }
    }

    /// The manager passes a request of PE `from` on to `to`, the last PE that asked.
    pub(crate) fn forward(&self, ctx: &Ctx, to: u32, lock: u32, from: u32, vt: Vec<u32>) {
        let mut pe = self.pe.borrow_mut();
        if to as usize == pe.me {
            pe.forwards.push_back((lock, from, vt));
        } else {
            pe.stats.messages += 1;
            drop(pe);
            ctx.send(to as usize, self.wire.forward, &(lock, from, vt));
        }
    }

    /// A request of PE `from` reached this PE, the last one to ask before it: granted now
    /// if the token is here and free, else at the next release.
    fn forwarded(&self, ctx: &Ctx, lock: u32, from: u32, vt: Vec<u32>) {
        let mut pe = self.pe.borrow_mut();
        let st = pe.lock_state(lock);
        if st.token && st.holder.is_none() {
            drop(pe);
            self.grant(ctx, lock, from, &vt);
        } else {
            assert!(st.next.is_none(), "one forwarded request per token holder");
            st.next = Some((from, vt));
        }
    }

    /// Hands the token to PE `to`, whose vector timestamp was `vt`: the interval ends
    /// (lazy intervals), diffs to third homes are acknowledged, and the grant carries
    /// every write notice `to` lacks. If threads of this PE wait, it asks again.
    fn grant(&self, ctx: &Ctx, lock: u32, to: u32, vt: &[u32]) {
        self.close_interval(ctx);
        self.wait_for_diffs(ctx, Some(to as usize));
        let notices = self.notices_for(to as usize, vt);
        let mut pe = self.pe.borrow_mut();
        let epoch = pe.barriers_done;
        let st = pe.lock_states.get_mut(&lock).expect("granted lock");
        st.token = false;
        let ask = !st.waiters.is_empty();
        st.requested = ask;
        pe.stats.messages += 1;
        drop(pe);
        ctx.send(to as usize, self.wire.grant, &(lock, epoch, notices));
        if ask {
            self.ask_manager(ctx, lock);
        }
    }

    /// The token of `lock` arrives with write notices: they are applied, then this PE's
    /// first waiting thread enters.
    fn granted(&self, ctx: &Ctx, lock: u32, notices: Vec<u32>) {
        if self.pe.borrow().intervals == Intervals::Aggressive {
            self.close_interval(ctx);
        }
        for (q, from, intervals) in self.onesided.receive_notices(&notices) {
            self.apply_notices(ctx, q, from, &intervals);
        }
        let mut pe = self.pe.borrow_mut();
        let st = pe.lock_states.get_mut(&lock).expect("a requested lock");
        st.token = true;
        st.requested = false;
        let Some(slot) = st.waiters.pop_front() else {
            // A prefetched token nobody here waits for yet: cached here, unless another
            // PE asked for it since, which gets it now.
            let next = st.next.take();
            drop(pe);
            if let Some((to, vt)) = next {
                self.grant(ctx, lock, to, &vt);
            }
            return;
        };
        st.holder = Some(slot);
        pe.stats.lock_acquires += 1;
        drop(pe);
        self.shared.slots[slot].complete(Done::Ok);
    }

    /// Thread `slot` releases `lock`: the lock goes to a waiting thread here (unless a
    /// waiting PE's turn has come), else to a waiting PE, else stays cached here.
    fn release_here(&self, ctx: &Ctx, slot: usize, lock: u32) -> Result<(), String> {
        let mut pe = self.pe.borrow_mut();
        let me = pe.me;
        let holds = pe
            .lock_states
            .get(&lock)
            .is_some_and(|st| st.holder == Some(slot));
        if !holds {
            return Err(format!(
                "rhizome: error: PE {me} thread {slot} released DSM lock {lock}, which it does not hold"
            ));
        }
        let aggressive = pe.intervals == Intervals::Aggressive;
        let st = pe.lock_states.get_mut(&lock).expect("held");
        match st.hand_off() {
            Handoff::Remote(to, vt) => {
                drop(pe);
                self.grant(ctx, lock, to, &vt);
            }
            Handoff::Local(w) => {
                pe.stats.lock_acquires += 1;
                pe.stats.lock_local += 1;
                drop(pe);
                if aggressive {
                    self.close_interval(ctx);
                }
                self.shared.slots[w].complete(Done::Ok);
            }
            Handoff::Keep if aggressive => {
                drop(pe);
                self.close_interval(ctx);
            }
            Handoff::Keep => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Handoff, LOCAL_TURNS, LockState};

    /// A PE whose threads keep asking for a lock hands it among them at most
    /// `LOCAL_TURNS` times while another PE waits; then that PE gets the token.
    #[test]
    fn local_threads_go_first_but_a_waiting_pe_gets_its_turn() {
        let mut st = LockState::new(0, 0, 2);
        assert!(st.token, "PE 0 manages lock 0");
        st.holder = Some(0);
        // Nobody waits: the token stays.
        assert_eq!(st.hand_off(), Handoff::Keep);
        st.holder = Some(0);
        st.waiters.push_back(1);
        // No PE waits: local, and nothing is passed over.
        assert_eq!(st.hand_off(), Handoff::Local(1));
        assert_eq!(st.passed_over, 0);
        st.next = Some((1, vec![0, 3]));
        // Under constant local demand (the other thread queues again at every turn).
        for turn in 0..LOCAL_TURNS as usize {
            st.waiters.push_back(turn % 2);
            assert_eq!(st.hand_off(), Handoff::Local(turn % 2), "turn {turn}");
        }
        st.waiters.push_back(0);
        assert_eq!(st.hand_off(), Handoff::Remote(1, vec![0, 3]));
        assert_eq!(st.holder, None);
        assert_eq!(st.waiters.len(), 1, "the passed-over thread still waits");
        // The count starts afresh for the next PE's request.
        assert_eq!(st.passed_over, 0);
    }
}
