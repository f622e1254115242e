//! The framework: a per-PE proxy that combines the operations of the PE's tasks and
//! commits them to the structure's master in one message, one commit at a time.

use super::central::Central;
use super::{Mode, Stats};
use rhizome::coop::{CondVar, Coop, GlobalLock, join_all, yield_now};
use rhizome::{CallAm, Message};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Poll, Waker};

/// What a structure gives the framework: its proxy (the operations of one PE waiting to
/// be committed, `Self`), the batches a commit carries (one per PE it touches: the
/// master of a stack, the owners of a set's keys) and how their PEs apply them.
pub trait Combine: Default + 'static {
    /// An operation a task asks for (it travels to the combiner in centralized mode).
    type Op: Message;
    /// Its result.
    type Out: Message;
    /// What one commit carries to one PE.
    type Batch: Message;
    /// What that PE answers.
    type Answer: Message;
    /// What a commit reads, after the answers, from one PE's part of the structure.
    type Fetch: Message;
    /// What that PE gives back.
    type Fetched: Message;
    /// The structure's part on one PE (all of it on a stack's master).
    type Master: Default + 'static;
    /// Whether the mode without combining takes a global lock at PE 0 around each
    /// operation (the paper's stack and queue; a set's cells synchronize on their own).
    const LOCKED: bool;

    /// How many of the structure's operations `op` stands for (1 unless it is a batch of
    /// them), for the counters.
    fn weight(_op: &Self::Op) -> u64 {
        1
    }
    /// Takes operation number `index` of this proxy: either satisfies it at once
    /// (possibly completing a pending partner), or keeps it pending until the commit.
    fn offer(&mut self, op: Self::Op, index: usize) -> Offer<Self::Out>;
    /// Operations pending (what the combining buffer holds).
    fn pending(&self) -> usize;
    /// Whether `op` would take no room in the buffer, joining an operation pending
    /// already (a repeated key of a set's proxy): a full proxy still takes it.
    fn joins(&self, _op: &Self::Op) -> bool {
        false
    }
    /// The batches of every pending operation, with the PE each goes to, among `pes`
    /// (the proxy then commits nothing else). `local` is this PE's (`me`'s) part of the
    /// structure: a batch may leave data there for other PEs to fetch (a queue's pushed
    /// values stay where they were pushed).
    fn batch(
        &mut self,
        me: usize,
        pes: usize,
        local: &mut Self::Master,
    ) -> Vec<(usize, Self::Batch)>;
    /// Given the answers to the batches (in their order), what the commit still has to
    /// read from other PEs, one request per PE (reads of `local`, this PE's part, are
    /// done here, without a message). Empty for a structure whose answers are final.
    fn fetches(
        &mut self,
        answers: Vec<Self::Answer>,
        me: usize,
        local: &mut Self::Master,
    ) -> Vec<(usize, Self::Fetch)>;
    /// Serves a fetch on the PE it went to, in one message handler.
    fn serve(local: &mut Self::Master, fetch: Self::Fetch) -> Self::Fetched;
    /// The results of the pending operations, by index, once the fetches are answered
    /// (in their order).
    fn resolve(&mut self, fetched: Vec<Self::Fetched>) -> Vec<(usize, Self::Out)>;
    /// Applies a batch on its PE, atomically (it runs in one message handler).
    fn apply(master: &mut Self::Master, batch: Self::Batch) -> Self::Answer;
}

/// The outcome of [`Combine::offer`].
pub enum Offer<Out> {
    /// Satisfied on this PE: the caller's result, and the pending operation it was
    /// matched with (its index and result), if any.
    Done {
        /// The caller's result.
        mine: Out,
        /// The partner completed with it.
        partner: Option<(usize, Out)>,
    },
    /// Waits for the next commit.
    Pending,
}

/// One operation's place in a proxy: its result once known, and its task.
struct Slot<Out> {
    out: Option<Out>,
    waker: Option<Waker>,
    /// Woken to become the combiner rather than with a result.
    nudged: bool,
}

/// Where the result of one operation of [`Flat::apply_all`] is: known at once, or in a
/// slot of a round.
enum Place<C: Combine> {
    Done(C::Out),
    At(Rc<RefCell<Round<C>>>, usize),
}

/// A proxy and the slots of the operations it took.
struct Round<C: Combine> {
    proxy: C,
    slots: Vec<Slot<C::Out>>,
}

impl<C: Combine> Default for Round<C> {
    fn default() -> Self {
        Round {
            proxy: C::default(),
            slots: Vec::new(),
        }
    }
}

impl<C: Combine> Round<C> {
    /// Offers `op` to the proxy as its next operation: its result if it is satisfied at
    /// once (a partner it completed is filled), else its index, pending.
    fn offer(&mut self, op: C::Op) -> Result<C::Out, usize> {
        let index = self.slots.len();
        self.slots.push(empty_slot());
        match self.proxy.offer(op, index) {
            Offer::Done { mine, partner } => {
                if let Some((i, out)) = partner {
                    self.fill(i, out);
                }
                Ok(mine)
            }
            Offer::Pending => Err(index),
        }
    }

    fn fill(&mut self, index: usize, out: C::Out) {
        let slot = &mut self.slots[index];
        slot.out = Some(out);
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }
}

/// A flat-combining structure on one PE: the current proxy, the commit in flight, the
/// counters. Made collectively (it registers the master's commit handler).
pub struct Flat<'c, C: Combine> {
    coop: Coop<'c>,
    mode: Mode,
    capacity: usize,
    commit: CallAm<C::Batch, C::Answer>,
    fetch: CallAm<C::Fetch, C::Fetched>,
    /// This PE's part of the structure, which the commit handler changes.
    master: Rc<RefCell<C::Master>>,
    lock: GlobalLock,
    current: RefCell<Rc<RefCell<Round<C>>>>,
    in_flight: Cell<bool>,
    /// Operations waiting for room in a full proxy.
    space: CondVar,
    ops: Cell<u64>,
    messages: Cell<u64>,
    central: Central<C>,
}

impl<'c, C: Combine> Flat<'c, C> {
    /// Collective: a structure combining in `mode`, at most `capacity` operations
    /// pending per proxy.
    pub fn new(coop: &Coop<'c>, mode: Mode, capacity: usize) -> Self {
        assert!(
            capacity > 0,
            "a combining buffer holds at least one operation"
        );
        let master: Rc<RefCell<C::Master>> = Rc::default();
        let state = master.clone();
        let commit = coop
            .ctx()
            .register_call(move |_, batch| C::apply(&mut state.borrow_mut(), batch));
        let state = master.clone();
        let fetch = coop
            .ctx()
            .register_call(move |_, fetch| C::serve(&mut state.borrow_mut(), fetch));
        let central = Central::new(coop.ctx(), master.clone());
        Flat {
            lock: coop.lock_on(0),
            coop: coop.clone(),
            mode,
            capacity,
            commit,
            fetch,
            master,
            current: RefCell::default(),
            in_flight: Cell::new(false),
            space: CondVar::new(),
            ops: Cell::new(0),
            messages: Cell::new(0),
            central,
        }
    }

    /// This PE's counters so far.
    pub fn stats(&self) -> Stats {
        Stats {
            ops: self.ops.get(),
            messages: self.messages.get() + self.central.commits(),
        }
    }

    /// This PE's part of the structure as it is now. Only a quiescent structure (no
    /// operation in flight on any PE, as after [`Coop::run`] returns) reads consistently:
    /// a structure written in one phase and read in the next, as the graph kernels do.
    pub fn master(&self) -> std::cell::Ref<'_, C::Master> {
        self.master.borrow()
    }

    /// The combining mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Runs `op` and returns its result: linearizable with every other operation on the
    /// structure, from any PE.
    pub async fn apply(&self, op: C::Op) -> C::Out {
        self.ops.set(self.ops.get() + C::weight(&op));
        self.one(op).await
    }

    /// Runs `ops` as concurrent operations of the calling task, as if each were awaited
    /// by a task of its own, all started together (they have no order among them), and
    /// returns their results in the order of `ops`. Each is linearizable as one
    /// [`apply`](Self::apply); combining, they all go in the current proxy (as many
    /// as its buffer takes) and the task waits once, with no task per operation.
    pub async fn apply_all(&self, ops: Vec<C::Op>) -> Vec<C::Out> {
        let weight: u64 = ops.iter().map(C::weight).sum();
        self.ops.set(self.ops.get() + weight);
        if self.mode == Mode::Distributed {
            return self.combined_all(ops).await;
        }
        let results: RefCell<Vec<Option<C::Out>>> =
            RefCell::new(ops.iter().map(|_| None).collect());
        join_all(ops.into_iter().enumerate().map(|(i, op)| {
            let results = &results;
            async move {
                let out = self.one(op).await;
                results.borrow_mut()[i] = Some(out);
            }
        }))
        .await;
        let results = results.into_inner().into_iter();
        results
            .map(|o| o.expect("every operation finished"))
            .collect()
    }

    async fn one(&self, op: C::Op) -> C::Out {
        match self.mode {
            Mode::Distributed => self.combined(op).await,
            Mode::Centralized => {
                // The message to the combiner; its commits count on the combiner.
                self.messages.set(self.messages.get() + 1);
                self.central.apply(self.coop.ctx(), op).await
            }
            Mode::None if !C::LOCKED => self.alone(op).await,
            Mode::None => {
                let _held = self.coop.acquire(self.lock).await;
                // The acquire and the release messages.
                self.messages.set(self.messages.get() + 2);
                self.alone(op).await
            }
        }
    }

    /// One operation in a commit of its own.
    async fn alone(&self, op: C::Op) -> C::Out {
        let round = RefCell::new(Round::<C>::default());
        let offered = round.borrow_mut().offer(op);
        if let Ok(mine) = offered {
            return mine;
        }
        self.send(&round).await;
        let out = round.borrow_mut().slots[0].out.take();
        out.expect("the commit answers its operation")
    }

    async fn combined(&self, op: C::Op) -> C::Out {
        // A full proxy takes nothing more until it is committed and a fresh one is in.
        let round = loop {
            let round = self.current.borrow().clone();
            if self.takes(&round.borrow().proxy, &op) {
                break round;
            }
            self.space.wait().await;
        };
        let offered = round.borrow_mut().offer(op);
        let index = match offered {
            Ok(mine) => return mine,
            Err(index) => index,
        };
        loop {
            if let Some(out) = round.borrow_mut().slots[index].out.take() {
                return out;
            }
            if !self.in_flight.get() {
                // Let the other tasks ready in this round add their operations first:
                // a task whose own commit just returned would otherwise commit its next
                // operation alone, and batches would alternate between 1 and all.
                yield_now().await;
                if !self.in_flight.get() && round.borrow().slots[index].out.is_none() {
                    self.commit_current().await;
                }
                continue;
            }
            std::future::poll_fn(|cx| {
                let mut r = round.borrow_mut();
                let slot = &mut r.slots[index];
                if slot.out.is_some() || std::mem::take(&mut slot.nudged) {
                    Poll::Ready(())
                } else {
                    slot.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
        }
    }

    /// Whether `proxy` has room for `op` (or needs none for it).
    fn takes(&self, proxy: &C, op: &C::Op) -> bool {
        proxy.pending() < self.capacity || proxy.joins(op)
    }

    /// Swaps a fresh proxy in and commits the old one; then hands the next commit to an
    /// operation waiting in the new proxy.
    async fn commit_current(&self) {
        self.in_flight.set(true);
        let round = std::mem::take(&mut *self.current.borrow_mut());
        self.space.broadcast();
        self.send(&round).await;
        self.in_flight.set(false);
        let next = self.current.borrow().clone();
        let mut next = next.borrow_mut();
        if let Some(slot) = next
            .slots
            .iter_mut()
            .find(|s| s.out.is_none() && s.waker.is_some())
        {
            slot.nudged = true;
            slot.waker.take().expect("found with a waker").wake();
        }
    }

    /// [`apply_all`](Self::apply_all) with combining: offers the operations to the
    /// current proxy, committing it (or waiting for its commit) whenever it is full,
    /// then waits for the results of those left pending.
    async fn combined_all(&self, ops: Vec<C::Op>) -> Vec<C::Out> {
        let mut places: Vec<Place<C>> = Vec::with_capacity(ops.len());
        let mut ops = ops.into_iter().peekable();
        while ops.peek().is_some() {
            let round = self.current.borrow().clone();
            {
                let mut r = round.borrow_mut();
                while let Some(op) = ops.next_if(|op| self.takes(&r.proxy, op)) {
                    places.push(match r.offer(op) {
                        Ok(mine) => Place::Done(mine),
                        Err(index) => Place::At(round.clone(), index),
                    });
                }
            }
            if ops.peek().is_none() {
                break;
            }
            // The proxy is full: commit it, or wait for the commit in flight (then this
            // task, nudged or answered, looks again).
            if !self.in_flight.get() {
                self.commit_current().await;
                continue;
            }
            let mine = places.iter().rev().find_map(|p| match p {
                Place::At(r, i) if Rc::ptr_eq(r, &round) => Some(*i),
                _ => None,
            });
            match mine {
                Some(index) => self.wait_on(&round, index).await,
                None => self.space.wait().await,
            }
        }
        // Wait until every pending one is answered, committing when no commit is in
        // flight (a round is answered all at once, so waiting on the first unanswered
        // operation suffices).
        let mut next = 0;
        loop {
            while let Some(place) = places.get(next) {
                match place {
                    Place::At(r, i) if r.borrow().slots[*i].out.is_none() => break,
                    _ => next += 1,
                }
            }
            let Some(Place::At(round, index)) = places.get(next) else {
                break;
            };
            if !self.in_flight.get() {
                yield_now().await;
                if !self.in_flight.get() && round.borrow().slots[*index].out.is_none() {
                    self.commit_current().await;
                }
                continue;
            }
            self.wait_on(round, *index).await;
        }
        let out = places.into_iter().map(|p| match p {
            Place::Done(out) => out,
            Place::At(r, i) => r.borrow_mut().slots[i].out.take().expect("answered"),
        });
        out.collect()
    }

    /// Waits until operation `index` of `round` is answered, its task is nudged to
    /// commit, or no commit is in flight any more (a task of [`combined_all`] may have
    /// left its waker on another of its operations, which a nudge found).
    async fn wait_on(&self, round: &RefCell<Round<C>>, index: usize) {
        std::future::poll_fn(|cx| {
            let mut r = round.borrow_mut();
            let slot = &mut r.slots[index];
            if slot.out.is_some() || std::mem::take(&mut slot.nudged) || !self.in_flight.get() {
                Poll::Ready(())
            } else {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Commits a round's pending operations, one batch per PE concerned, all in flight
    /// together, then the fetches their answers call for, likewise, and fills their
    /// slots. The round is not borrowed across the waits: its other operations' tasks
    /// may be polled.
    async fn send(&self, round: &RefCell<Round<C>>) {
        let ctx = self.coop.ctx();
        let (me, pes) = (ctx.my_pe(), ctx.num_pes());
        let batches = {
            let mut r = round.borrow_mut();
            if r.proxy.pending() == 0 {
                return;
            }
            r.proxy.batch(me, pes, &mut self.master.borrow_mut())
        };
        let answers = self.all_answered(self.commit, batches).await;
        let fetches = {
            let mut r = round.borrow_mut();
            r.proxy.fetches(answers, me, &mut self.master.borrow_mut())
        };
        let fetched = self.all_answered(self.fetch, fetches).await;
        let mut r = round.borrow_mut();
        for (index, out) in r.proxy.resolve(fetched) {
            r.fill(index, out);
        }
    }

    /// Sends each request to its PE, all in flight together, and returns the answers in
    /// the requests' order; counts the messages.
    async fn all_answered<Q: Message, R: Message>(
        &self,
        am: CallAm<Q, R>,
        requests: Vec<(usize, Q)>,
    ) -> Vec<R> {
        self.messages
            .set(self.messages.get() + requests.len() as u64);
        let replies: Vec<_> = requests
            .iter()
            .map(|(pe, q)| self.coop.call(*pe, am, q))
            .collect();
        let mut answers = Vec::with_capacity(replies.len());
        for reply in replies {
            answers.push(reply.await);
        }
        answers
    }
}

fn empty_slot<Out>() -> Slot<Out> {
    Slot {
        out: None,
        waker: None,
        nudged: false,
    }
}
