//! Centralized combining (`Mode::Centralized`, seed 003 section 3): one proxy per
//! structure, at a single combiner PE, combines the operations of every PE's tasks.
//!
//! A task sends its operation to the combiner (one message, aggregated with the others
//! to that PE) and waits. The combiner's message handler offers it to the proxy, as a
//! PE's own proxy does in distributed combining (a stack's push and pop match there; a
//! set's repeated inserts merge). If no commit is in flight, the handler starts one: it
//! swaps a fresh proxy in and sends each owner its batch; owners apply their batch in one
//! handler and send the answer back; when all answers are in, the combiner sends each
//! operation its result and commits what gathered meanwhile. So at most one commit is
//! in flight, a request is never answered from a committing proxy, and the
//! linearization point of each operation is, as in [`Flat`](super::Flat), where its
//! owner applies its batch (a matched pair's, at the match).
//!
//! The difference from distributed combining is the paper's: every operation of every PE
//! goes through the one combiner, which must handle them all. Everything happens in
//! message handlers; no task runs at the combiner on behalf of others.

use super::flat::{Combine, Offer};
use rhizome::{Am, Ctx};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::task::{Poll, Waker};

/// The PE that combines.
const COMBINER: usize = 0;

/// A commit in flight at the combiner: its proxy, where its operations came from, the
/// answers so far.
struct Committing<C: Combine> {
    proxy: C,
    origins: Vec<(usize, u64)>,
    answers: Vec<Option<C::Answer>>,
    missing: usize,
}

/// The combiner's state (used on [`COMBINER`] only).
struct Combiner<C: Combine> {
    proxy: C,
    /// Per operation index of `proxy`: (PE, ticket) to answer.
    origins: Vec<(usize, u64)>,
    committing: Option<Committing<C>>,
}

/// An operation waiting on its PE: its result once known, and its task.
struct Ticket<Out> {
    out: Option<Out>,
    waker: Option<Waker>,
}

impl<Out> Default for Ticket<Out> {
    fn default() -> Self {
        Ticket {
            out: None,
            waker: None,
        }
    }
}

/// Messages to send, gathered while state is borrowed and sent after (a send may flush,
/// and nothing here is borrowed then).
type Results<Out> = Vec<(usize, (u64, Out))>;

/// A message carrying a commit's batch or answer with its number in the commit.
type Numbered<T> = Am<(u64, T)>;

/// One PE's side of a centrally combined structure.
pub(super) struct Central<C: Combine> {
    submit: Am<(C::Op, (u64, u64))>,
    tickets: Rc<RefCell<HashMap<u64, Ticket<C::Out>>>>,
    next: Cell<u64>,
    /// Commit messages the combiner sent (on the combiner only).
    commits: Rc<Cell<u64>>,
}

/// What every handler shares: the combiner, the owners' state, the message types.
struct Shared<C: Combine> {
    combiner: RefCell<Combiner<C>>,
    master: Rc<RefCell<C::Master>>,
    result: Am<(u64, C::Out)>,
    /// Registered after the handlers that send them: set once, right after.
    apply: Cell<Option<Numbered<C::Batch>>>,
    answered: Cell<Option<Numbered<C::Answer>>>,
    commits: Rc<Cell<u64>>,
}

impl<C: Combine> Shared<C> {
    fn send_results(&self, ctx: &Ctx, results: Results<C::Out>) {
        for (pe, msg) in results {
            ctx.send(pe, self.result, &msg);
        }
    }

    /// At the combiner: takes an operation from PE `origin`.
    fn offer(&self, ctx: &Ctx, op: C::Op, origin: (usize, u64)) {
        let mut results = Vec::new();
        let start = {
            let mut c = self.combiner.borrow_mut();
            let index = c.origins.len();
            c.origins.push(origin);
            match c.proxy.offer(op, index) {
                Offer::Done { mine, partner } => {
                    results.push((origin.0, (origin.1, mine)));
                    if let Some((i, out)) = partner {
                        let (pe, ticket) = c.origins[i];
                        results.push((pe, (ticket, out)));
                    }
                    false
                }
                Offer::Pending => c.committing.is_none(),
            }
        };
        self.send_results(ctx, results);
        if start {
            self.commit(ctx);
        }
    }

    /// At the combiner, no commit in flight: commits the proxy's pending operations.
    fn commit(&self, ctx: &Ctx) {
        let batches = {
            let mut c = self.combiner.borrow_mut();
            if c.proxy.pending() == 0 {
                return;
            }
            let mut proxy = std::mem::take(&mut c.proxy);
            let origins = std::mem::take(&mut c.origins);
            let batches = proxy.batch(COMBINER, ctx.num_pes(), &mut self.master.borrow_mut());
            c.committing = Some(Committing {
                proxy,
                origins,
                answers: batches.iter().map(|_| None).collect(),
                missing: batches.len(),
            });
            batches
        };
        self.commits.set(self.commits.get() + batches.len() as u64);
        let apply = self.apply.get().expect("registered in Central::new");
        for (k, (pe, batch)) in batches.into_iter().enumerate() {
            ctx.send(pe, apply, &(k as u64, batch));
        }
    }

    /// At the combiner: answer `k` of the commit in flight; the last one completes it.
    fn answer(&self, ctx: &Ctx, k: usize, answer: C::Answer) {
        let results = {
            let mut c = self.combiner.borrow_mut();
            let done = c
                .committing
                .as_mut()
                .expect("an answer to a commit in flight");
            done.answers[k] = Some(answer);
            done.missing -= 1;
            if done.missing > 0 {
                return;
            }
            let mut done = c.committing.take().expect("checked");
            let answers = done.answers.into_iter().map(|a| a.expect("all in"));
            let mut master = self.master.borrow_mut();
            let fetches = done.proxy.fetches(answers.collect(), COMBINER, &mut master);
            // Whatever a commit leaves to fetch, the combiner left it in its own part
            // (it makes every batch of the structure), so it was read in place.
            assert!(fetches.is_empty(), "a centralized commit fetches nothing");
            let resolved = done.proxy.resolve(Vec::new());
            let results: Results<C::Out> = resolved
                .into_iter()
                .map(|(i, out)| (done.origins[i].0, (done.origins[i].1, out)))
                .collect();
            results
        };
        self.send_results(ctx, results);
        self.commit(ctx);
    }
}

impl<C: Combine> Central<C> {
    /// Collective: registers the handlers; `master` is this PE's part of the structure.
    pub(super) fn new(ctx: &Ctx, master: Rc<RefCell<C::Master>>) -> Self {
        let tickets: Rc<RefCell<HashMap<u64, Ticket<C::Out>>>> = Rc::default();
        let t = tickets.clone();
        let result = ctx.register(move |_, (ticket, out): (u64, C::Out)| {
            let mut tickets = t.borrow_mut();
            let slot = tickets.entry(ticket).or_default();
            slot.out = Some(out);
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        });
        let commits = Rc::new(Cell::new(0));
        let shared = Rc::new(Shared::<C> {
            combiner: RefCell::new(Combiner {
                proxy: C::default(),
                origins: Vec::new(),
                committing: None,
            }),
            master,
            result,
            apply: Cell::new(None),
            answered: Cell::new(None),
            commits: commits.clone(),
        });
        let s = shared.clone();
        let answered = ctx
            .register(move |ctx, (k, answer): (u64, C::Answer)| s.answer(ctx, k as usize, answer));
        shared.answered.set(Some(answered));
        let s = shared.clone();
        let apply = ctx.register(move |ctx, (k, batch): (u64, C::Batch)| {
            let answer = C::apply(&mut s.master.borrow_mut(), batch);
            let answered = s.answered.get().expect("registered before any commit");
            ctx.send(COMBINER, answered, &(k, answer));
        });
        shared.apply.set(Some(apply));
        let s = shared;
        let submit = ctx.register(move |ctx, (op, (pe, ticket)): (C::Op, (u64, u64))| {
            s.offer(ctx, op, (pe as usize, ticket))
        });
        Central {
            submit,
            tickets,
            next: Cell::new(0),
            commits,
        }
    }

    /// Messages this PE sent for the structure's commits (the combiner's only).
    pub(super) fn commits(&self) -> u64 {
        self.commits.get()
    }

    /// Runs `op` through the combiner and returns its result.
    pub(super) async fn apply(&self, ctx: &Ctx, op: C::Op) -> C::Out {
        let ticket = self.next.get();
        self.next.set(ticket + 1);
        let me = ctx.my_pe() as u64;
        ctx.send(COMBINER, self.submit, &(op, (me, ticket)));
        std::future::poll_fn(|cx| {
            let mut tickets = self.tickets.borrow_mut();
            let slot = tickets.entry(ticket).or_default();
            match slot.out.take() {
                Some(out) => {
                    tickets.remove(&ticket);
                    Poll::Ready(out)
                }
                None => {
                    slot.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}
