//! Tallies: numbers that ride on the commits of a round and come back summed over all PEs.
//!
//! A level-synchronous program (the graph kernels' BFS) moves its frontier through a
//! queue and then needs sums over all PEs (the frontier's size, its arcs) to decide the
//! next level. Summing them with a collective of its own costs a second synchronization
//! per level after the commit's round trip. Instead each PE's commit of the round carries
//! its *tally*; the master adds the tallies and, once it has one from every PE, sends the
//! totals to every PE in one message each (after the answer to the last commit, in the
//! same aggregation buffer), and each tally-carrying commit returns with them. So the
//! commits of a round and the sums cost one gather at the master and one message back.
//!
//! Linearizability is untouched: a tallied commit is applied at the master when it
//! arrives, as any other; only its answer waits for the round's totals (a response
//! delayed after its linearization point).

use rhizome::{Am, Ctx};
use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// The master's sums of the round under way.
#[derive(Default)]
pub(super) struct RoundSums {
    sums: Vec<u64>,
    /// The PEs whose tally has arrived this round.
    arrived: Vec<bool>,
    count: usize,
}

impl RoundSums {
    /// Adds PE `pe`'s `tally` to the round. Panics if `pe` already sent one this round
    /// (each PE sends one tally per round) or if the tallies differ in length.
    pub(super) fn add(&mut self, pe: usize, tally: &[u64]) {
        if self.arrived.len() <= pe {
            self.arrived.resize(pe + 1, false);
        }
        assert!(
            !self.arrived[pe],
            "rhizome: PE {pe} sent two tallies in one round"
        );
        if self.count == 0 {
            self.sums = vec![0; tally.len()];
        }
        assert_eq!(
            self.sums.len(),
            tally.len(),
            "rhizome: tallies of one round differ in length"
        );
        self.sums.iter_mut().zip(tally).for_each(|(s, t)| *s += t);
        self.arrived[pe] = true;
        self.count += 1;
    }

    /// The round's totals if every one of `pes` PEs has sent its tally (the next round
    /// then starts empty); `None` while some are missing.
    pub(super) fn complete(&mut self, pes: usize) -> Option<Vec<u64>> {
        if self.count < pes {
            return None;
        }
        self.count = 0;
        self.arrived.iter_mut().for_each(|a| *a = false);
        Some(std::mem::take(&mut self.sums))
    }
}

/// One PE's end of the totals: the message that brings them, and the task waiting.
#[derive(Clone)]
pub(super) struct Totals {
    am: Am<Vec<u64>>,
    inbox: Rc<RefCell<Inbox>>,
}

#[derive(Default)]
struct Inbox {
    totals: Option<Vec<u64>>,
    waker: Option<Waker>,
}

impl Totals {
    /// Collective: registers the totals message.
    pub(super) fn register(ctx: &Ctx) -> Totals {
        let inbox: Rc<RefCell<Inbox>> = Rc::default();
        let at = inbox.clone();
        let am = ctx.register(move |_, totals: Vec<u64>| {
            let mut inbox = at.borrow_mut();
            // A PE sends its next tally only after it has taken these totals.
            debug_assert!(inbox.totals.is_none(), "two rounds' totals at once");
            inbox.totals = Some(totals);
            if let Some(w) = inbox.waker.take() {
                w.wake();
            }
        });
        Totals { am, inbox }
    }

    /// On the master: sends a completed round's `totals` to every PE.
    pub(super) fn send(&self, ctx: &Ctx, totals: &Vec<u64>) {
        for pe in 0..ctx.num_pes() {
            ctx.send(pe, self.am, totals);
        }
    }

    /// The totals of the round this PE's tally went into, once they arrive.
    pub(super) async fn wait(&self) -> Vec<u64> {
        std::future::poll_fn(|cx| {
            let mut inbox = self.inbox.borrow_mut();
            match inbox.totals.take() {
                Some(t) => Poll::Ready(t),
                None => {
                    inbox.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::RoundSums;

    /// A round completes with the last PE's tally, sums element-wise, and the next
    /// round starts from zero.
    #[test]
    fn a_round_sums_one_tally_per_pe() {
        let mut r = RoundSums::default();
        r.add(1, &[1, 2]);
        assert_eq!(r.complete(2), None);
        r.add(0, &[10, 20]);
        assert_eq!(r.complete(2), Some(vec![11, 22]));
        r.add(0, &[5, 5]);
        assert_eq!(r.complete(2), None);
        r.add(1, &[0, 1]);
        assert_eq!(r.complete(2), Some(vec![5, 6]));
    }

    #[test]
    #[should_panic(expected = "two tallies in one round")]
    fn a_second_tally_of_a_pe_in_one_round_is_refused() {
        let mut r = RoundSums::default();
        r.add(0, &[1]);
        r.add(0, &[1]);
    }
}
