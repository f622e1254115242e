//! [`GlobalStack`] and [`GlobalQueue`]: one flat-combining structure of pushes and pops,
//! with the order (last-in-first-out or first-in-first-out) as a parameter.
//!
//! Rules (seed 003, section 4.1), and what the paper leaves open:
//! - **Stack elimination.** A pop that finds a push pending in its PE's proxy takes that
//!   value at once and completes the push; a push that finds a pending pop hands its
//!   value over. The pair never reaches the master: it is linearized at the match, when
//!   both were pending. So a stack proxy holds only pushes or only pops.
//! - **Queue batches.** A queue cannot match on a PE (the queue may hold older values),
//!   so its proxy commits its pushes and its pops together in one message; the master
//!   appends the pushes, then serves the pops (beyond the paper, which serializes push
//!   batches and pop batches).
//! - **Batches** (`push_all_then_pop`) are one operation of the proxy standing for many:
//!   their values join the commit's chunk and their pops its count, never matched on the
//!   PE; the master appends before it pops, so a batch's pops follow its pushes.
//! - **Pop on empty** returns `None` at once: it does not wait for a push. The operations
//!   of one commit are concurrent (each was pending when the commit started and is
//!   answered after it), so the master may order them as it likes.
//! - **Storage.** A stack keeps its values whole at the master: a pop commit's answer
//!   carries them, one round trip ([`StackProxy`], module `stack`, says why). A queue
//!   spreads them over the PEs (as the paper's Grappa queue, whose chunks live at
//!   different cores; [`PushPopProxy`], which also keeps a last-in-first-out order if
//!   asked): a push batch's values stay on the pushing PE, as one *chunk*, and
//!   the commit carries only (PE, chunk, length) to the master (PE 0), which keeps the
//!   order of the elements as runs of chunks, oldest first. A pop batch is answered with
//!   the runs it took; the committing PE then reads its own runs in place and fetches
//!   the others, one request per PE holding some, all in flight together, before its
//!   pops return. The pushes are linearized where the master appends their run, the pops
//!   where it takes theirs (the values never change once pushed, so reading them later
//!   is safe); a chunk is freed when its last value is fetched. A chunk that one pop
//!   batch of its own PE takes whole is handed to that batch as the vector it was
//!   pushed as, with no copy (module `chunks`).
//! - **Capacity and growth.** Each PE's chunks grow with what it pushed and nobody has
//!   popped yet; the master's index holds one entry per run (a few words per batch).
//! - **Size and iteration** are not offered: a size is stale once read while other
//!   PEs push, and a program that needs everything drains with `pop` until `None`.

use super::chunks::PushPopStore;
use super::flat::{Combine, Flat, Offer};
use super::ops::Batches;
pub use super::ops::{PushPopOp, Taken};
use super::stack::StackProxy;
use super::{Mode, Stats};
use rhizome::Message;
use rhizome::coop::Coop;
use std::marker::PhantomData;

/// The order of a push-pop structure: last in first out (a stack, which also
/// eliminates push-pop pairs on a PE) or first in first out.
pub trait Order: 'static {
    /// Whether this is a stack: a pop takes the newest value, and may take a push
    /// pending on the same PE.
    const ELIMINATES: bool;
    /// The proxy of the structure: a stack keeps its values at the master
    /// ([`StackProxy`]: a pop commit's answer carries them), a queue spreads them over
    /// the PEs that pushed them ([`PushPopProxy`]).
    type Proxy<T: Message>: Combine<Op = PushPopOp<T>, Out = Taken<T>>;
}

/// Last in, first out.
pub enum Lifo {}
/// First in, first out.
pub enum Fifo {}

impl Order for Lifo {
    const ELIMINATES: bool = true;
    type Proxy<T: Message> = StackProxy<T>;
}

impl Order for Fifo {
    const ELIMINATES: bool = false;
    type Proxy<T: Message> = PushPopProxy<T, Fifo>;
}

/// The proxy of a push-pop structure on one PE: pending pushes and pops, by index.
pub struct PushPopProxy<T, O> {
    pushes: Vec<(usize, T)>,
    pops: Vec<usize>,
    /// The pending batches (a batch is never matched on the PE: its values and pops go
    /// to the master as they are).
    batches: Batches<T>,
    /// The pushes of the batch in flight, whose values have left for their chunk.
    committed_pushes: Vec<usize>,
    /// The popped values of the commit in flight, in the order of `pops` (those read in
    /// place filled, the fetched ones not yet), or the one chunk of this PE they all are.
    popped: Popped<T>,
    /// Per fetch request of the commit in flight: the (position in `popped`, length) of
    /// the runs it reads, in order.
    fetched_into: Vec<Vec<(usize, usize)>>,
    _o: PhantomData<O>,
}

impl<T, O> Default for PushPopProxy<T, O> {
    fn default() -> Self {
        PushPopProxy {
            pushes: Vec::new(),
            pops: Vec::new(),
            batches: Batches::default(),
            committed_pushes: Vec::new(),
            popped: Popped::default(),
            fetched_into: Vec::new(),
            _o: PhantomData,
        }
    }
}

/// The values a commit's pops took, until they are handed to its operations.
enum Popped<T> {
    /// By position, `None` for those still to be fetched from other PEs.
    Slots(Vec<Option<T>>),
    /// All of one chunk of this PE, taken whole, as it was pushed.
    Whole(Vec<T>),
}

impl<T> Default for Popped<T> {
    fn default() -> Self {
        Popped::Slots(Vec::new())
    }
}

/// Consecutive elements of one chunk: (PE, chunk number, first position, length).
pub type Run = (u64, u64, u64, u64);

impl<T: Message, O: Order> Combine for PushPopProxy<T, O> {
    type Op = PushPopOp<T>;
    /// A pop's value (`None` for a push and for a pop of an empty structure), or a
    /// batch's popped values.
    type Out = Taken<T>;
    /// (run of the pushed values, or a length of 0, number of pops).
    type Batch = (Run, u64);
    /// The runs the pops took, in the order of the pops.
    type Answer = Vec<Run>;
    type Master = PushPopStore<T>;
    /// (chunk, first, length) of the runs to read at a PE.
    type Fetch = Vec<(u64, u64, u64)>;
    /// Their values, run after run.
    type Fetched = Vec<T>;
    const LOCKED: bool = true;

    fn weight(op: &PushPopOp<T>) -> u64 {
        op.weight()
    }

    fn offer(&mut self, op: PushPopOp<T>, index: usize) -> Offer<Taken<T>> {
        match op {
            PushPopOp::Batch(values, pops) => self.batches.offer(values, pops, index),
            PushPopOp::Push(v) if O::ELIMINATES && !self.pops.is_empty() => {
                let pop = self.pops.pop().expect("checked");
                Offer::Done {
                    mine: Taken::One(None),
                    partner: Some((pop, Taken::One(Some(v)))),
                }
            }
            PushPopOp::Pop if O::ELIMINATES && !self.pushes.is_empty() => {
                let (push, v) = self.pushes.pop().expect("checked");
                Offer::Done {
                    mine: Taken::One(Some(v)),
                    partner: Some((push, Taken::One(None))),
                }
            }
            PushPopOp::Push(v) => {
                self.pushes.push((index, v));
                Offer::Pending
            }
            PushPopOp::Pop => {
                self.pops.push(index);
                Offer::Pending
            }
        }
    }

    fn pending(&self) -> usize {
        self.pushes.len() + self.pops.len() + self.batches.ops
    }

    fn batch(
        &mut self,
        me: usize,
        _pes: usize,
        local: &mut PushPopStore<T>,
    ) -> Vec<(usize, (Run, u64))> {
        let (indices, mut values): (Vec<usize>, Vec<T>) =
            std::mem::take(&mut self.pushes).into_iter().unzip();
        let batched = std::mem::take(&mut self.batches.values);
        if values.is_empty() {
            // A batch's vector becomes the chunk as it is, not copied.
            values = batched;
        } else {
            values.extend(batched);
        }
        self.committed_pushes = indices;
        let pops = self.pops.len() as u64 + self.batches.pops();
        self.batches.ops = 0;
        let len = values.len() as u64;
        let chunk = if len > 0 { local.put(values) } else { 0 };
        let run = (me as u64, chunk, 0, len);
        vec![(MASTER, (run, pops))]
    }

    fn fetches(
        &mut self,
        answers: Vec<Vec<Run>>,
        me: usize,
        local: &mut PushPopStore<T>,
    ) -> Vec<(usize, Self::Fetch)> {
        self.fetched_into.clear();
        let runs: Vec<Run> = answers.into_iter().flatten().collect();
        if let [(pe, chunk, first, len)] = runs[..]
            && pe as usize == me
            && let Some(values) = local.take_whole(chunk, first, len)
        {
            self.popped = Popped::Whole(values);
            return Vec::new();
        }
        let mut popped: Vec<Option<T>> = Vec::new();
        let mut requests: Vec<(usize, Self::Fetch)> = Vec::new();
        for (pe, chunk, first, len) in runs {
            let at = popped.len();
            if pe as usize == me {
                local.take_into(chunk, first, len, &mut popped);
                continue;
            }
            popped.extend((0..len).map(|_| None));
            let k = match requests.iter().position(|(p, _)| *p == pe as usize) {
                Some(k) => k,
                None => {
                    requests.push((pe as usize, Vec::new()));
                    self.fetched_into.push(Vec::new());
                    requests.len() - 1
                }
            };
            requests[k].1.push((chunk, first, len));
            self.fetched_into[k].push((at, len as usize));
        }
        self.popped = Popped::Slots(popped);
        requests
    }

    fn serve(local: &mut PushPopStore<T>, fetch: Self::Fetch) -> Vec<T> {
        let mut out = Vec::new();
        for (chunk, first, len) in fetch {
            local.take(chunk, first, len, &mut out);
        }
        out
    }

    fn resolve(&mut self, fetched: Vec<Vec<T>>) -> Vec<(usize, Taken<T>)> {
        let (mut popped, whole) = match std::mem::take(&mut self.popped) {
            Popped::Slots(slots) => (slots, None),
            Popped::Whole(values) => (Vec::new(), Some(values)),
        };
        for (values, runs) in fetched
            .into_iter()
            .zip(std::mem::take(&mut self.fetched_into))
        {
            let mut values = values.into_iter();
            for (at, len) in runs {
                for slot in &mut popped[at..at + len] {
                    *slot = values.next();
                }
            }
        }
        let pushes = std::mem::take(&mut self.committed_pushes);
        let pops = std::mem::take(&mut self.pops);
        let batches = std::mem::take(&mut self.batches.list);
        let mut out: Vec<(usize, Taken<T>)> =
            pushes.into_iter().map(|i| (i, Taken::One(None))).collect();
        if let Some(mut values) = whole {
            if pops.is_empty()
                && let Some((&(first, _), others)) = batches.split_first()
            {
                // Only batches took the whole chunk: the others' values are split off its
                // end, and the first batch gets the rest, the vector as it was pushed
                // (one batch alone: all of it, uncopied).
                for &(i, n) in others {
                    let at = values.len().saturating_sub(n as usize);
                    out.push((i, Taken::Many(values.split_off(at))));
                }
                out.push((first, Taken::Many(values)));
                return out;
            }
            popped = values.into_iter().map(Some).collect();
        }
        // The single pops take the first values, each batch then as many as it asked
        // for (the master's order; all of them were pending together).
        let mut popped = popped.into_iter();
        out.extend(
            pops.into_iter()
                .map(|i| (i, Taken::One(popped.next().flatten()))),
        );
        for (i, n) in batches {
            let values = popped.by_ref().take(n as usize).flatten().collect();
            out.push((i, Taken::Many(values)));
        }
        out
    }

    fn apply(store: &mut PushPopStore<T>, (pushed, pops): (Run, u64)) -> Vec<Run> {
        if pushed.3 > 0 {
            store.runs.push_back(pushed);
        }
        let mut wanted = pops;
        let mut taken = Vec::new();
        while wanted > 0 {
            let run = if O::ELIMINATES {
                store.runs.back_mut()
            } else {
                store.runs.front_mut()
            };
            let Some((pe, chunk, first, len)) = run else {
                break;
            };
            let n = wanted.min(*len);
            let from = if O::ELIMINATES {
                *first + *len - n
            } else {
                *first
            };
            taken.push((*pe, *chunk, from, n));
            *len -= n;
            if !O::ELIMINATES {
                *first += n;
            }
            if *len == 0 {
                if O::ELIMINATES {
                    store.runs.pop_back();
                } else {
                    store.runs.pop_front();
                }
            }
            wanted -= n;
        }
        taken
    }
}

/// A global push-pop structure: [`GlobalStack`] or [`GlobalQueue`].
pub struct PushPop<'c, T: Message, O: Order> {
    flat: Flat<'c, O::Proxy<T>>,
}

/// A linearizable global stack with flat combining (see the module docs for the rules).
pub type GlobalStack<'c, T> = PushPop<'c, T, Lifo>;
/// A linearizable global queue with flat combining (see the module docs for the rules).
pub type GlobalQueue<'c, T> = PushPop<'c, T, Fifo>;

/// The PE that keeps the index of the elements (where they are, in order).
const MASTER: usize = 0;

/// The paper's combining buffer: operations one proxy holds at most.
pub const DEFAULT_CAPACITY: usize = 1024;

impl<'c, T: Message, O: Order> PushPop<'c, T, O> {
    /// Collective: an empty structure, indexed at PE 0, combining in `mode` with a
    /// buffer of [`DEFAULT_CAPACITY`] operations per PE.
    pub fn new(coop: &Coop<'c>, mode: Mode) -> Self {
        Self::with_capacity(coop, mode, DEFAULT_CAPACITY)
    }

    /// Collective: as [`new`](Self::new), with `capacity` operations per proxy.
    pub fn with_capacity(coop: &Coop<'c>, mode: Mode, capacity: usize) -> Self {
        PushPop {
            flat: Flat::new(coop, mode, capacity),
        }
    }

    /// Adds `v`; returns when the push has taken effect (it may have been popped already).
    pub async fn push(&self, v: T) {
        self.flat.apply(PushPopOp::Push(v)).await;
    }

    /// Removes a value: the newest of a stack, the oldest of a queue; `None` if empty.
    pub async fn pop(&self) -> Option<T> {
        self.flat.apply(PushPopOp::Pop).await.into_one()
    }

    /// Pushes every value of `values`, as concurrent pushes of this task (they have no
    /// order among them: a queue keeps them together, in any order), waiting once
    /// ([`Flat::apply_all`]).
    pub async fn push_all(&self, values: Vec<T>) {
        self.flat
            .apply_all(values.into_iter().map(PushPopOp::Push).collect())
            .await;
    }

    /// Makes `n` concurrent pops, waiting once; their values, `None` for those that
    /// found the structure empty (in no particular order).
    pub async fn pop_all(&self, n: usize) -> Vec<Option<T>> {
        let pops = (0..n).map(|_| PushPopOp::Pop).collect();
        let taken = self.flat.apply_all(pops).await;
        taken.into_iter().map(Taken::into_one).collect()
    }

    /// Pushes every value of `values` (concurrent pushes of this task), then, once they
    /// have all taken effect, makes `n` concurrent pops; the values popped (fewer than
    /// `n` if the structure ran empty), waiting once.
    ///
    /// With distributed combining this is one operation of the proxy (its values go
    /// into the commit's chunk, its pops into the commit's count, with no slot each) and
    /// the master appends a commit's pushes before it serves its pops, so the pops see
    /// the pushes. So if every PE pushes and pops the same number of values this way on
    /// an empty queue, each gets its own values back, read in place: the master serves
    /// each commit's pops from the run it has just appended (the graph kernels' frontier
    /// moves from one level to the next so). In the other modes the pops start when the
    /// pushes have returned, each operation alone as the mode says.
    pub async fn push_all_then_pop(&self, values: Vec<T>, n: usize) -> Vec<T> {
        if self.flat.mode() == Mode::Distributed {
            let batch = PushPopOp::Batch(values, n as u64);
            return self.flat.apply(batch).await.into_vec();
        }
        self.push_all(values).await;
        self.pop_all(n).await.into_iter().flatten().collect()
    }

    /// This PE's counters so far.
    pub fn stats(&self) -> Stats {
        self.flat.stats()
    }
}
