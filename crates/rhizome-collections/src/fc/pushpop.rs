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
//! - **Pop on empty** returns `None` at once: it does not wait for a push. The operations
//!   of one commit are concurrent (each was pending when the commit started and is
//!   answered after it), so the master may order them as it likes.
//! - **Capacity and growth.** The elements live at the master (PE 0) in a growable
//!   vector, so the structure holds as much as that PE's memory; the batch travels in the
//!   commit message. (The paper stripes the storage over all cores and the combiner
//!   writes the elements one-sided; here that would cost a message per destination where
//!   one suffices.)
//! - **Size and iteration** are not offered: a size is stale once read while other
//!   PEs push, and a program that needs everything drains with `pop` until `None`.

use super::flat::{Combine, Flat, Offer};
use super::{Mode, Stats};
use rhizome::Message;
use rhizome::coop::Coop;
use std::collections::VecDeque;
use std::marker::PhantomData;

/// The order of a push-pop structure: last in first out (a stack, which also
/// eliminates push-pop pairs on a PE) or first in first out.
pub trait Order: 'static {
    /// Whether this is a stack: a pop takes the newest value, and may take a push
    /// pending on the same PE.
    const ELIMINATES: bool;
}

/// Last in, first out.
pub enum Lifo {}
/// First in, first out.
pub enum Fifo {}

impl Order for Lifo {
    const ELIMINATES: bool = true;
}

impl Order for Fifo {
    const ELIMINATES: bool = false;
}

/// A push or a pop.
pub enum PushPopOp<T> {
    /// Adds a value.
    Push(T),
    /// Removes one.
    Pop,
}

/// Travels as an `Option<T>`: `Some` a push, `None` a pop (to the centralized combiner).
impl<T: Message> Message for PushPopOp<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            PushPopOp::Push(v) => {
                true.encode(out);
                v.encode(out);
            }
            PushPopOp::Pop => false.encode(out),
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        if bool::decode(input) {
            PushPopOp::Push(T::decode(input))
        } else {
            PushPopOp::Pop
        }
    }
}

/// The proxy of a push-pop structure on one PE: pending pushes and pops, by index.
pub struct PushPopProxy<T, O> {
    pushes: Vec<(usize, T)>,
    pops: Vec<usize>,
    /// The pushes of the batch in flight, whose values have left.
    committed_pushes: Vec<usize>,
    _o: PhantomData<O>,
}

impl<T, O> Default for PushPopProxy<T, O> {
    fn default() -> Self {
        PushPopProxy {
            pushes: Vec::new(),
            pops: Vec::new(),
            committed_pushes: Vec::new(),
            _o: PhantomData,
        }
    }
}

impl<T: Message, O: Order> Combine for PushPopProxy<T, O> {
    type Op = PushPopOp<T>;
    /// A pop's value; `None` for a push and for a pop of an empty structure.
    type Out = Option<T>;
    /// (pushed values, number of pops).
    type Batch = (Vec<T>, u64);
    /// The popped values, the first pending pop's first.
    type Answer = Vec<T>;
    type Master = VecDeque<T>;
    const LOCKED: bool = true;

    fn offer(&mut self, op: PushPopOp<T>, index: usize) -> Offer<Option<T>> {
        match op {
            PushPopOp::Push(v) if O::ELIMINATES && !self.pops.is_empty() => {
                let pop = self.pops.pop().expect("checked");
                Offer::Done {
                    mine: None,
                    partner: Some((pop, Some(v))),
                }
            }
            PushPopOp::Pop if O::ELIMINATES && !self.pushes.is_empty() => {
                let (push, v) = self.pushes.pop().expect("checked");
                Offer::Done {
                    mine: Some(v),
                    partner: Some((push, None)),
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
        self.pushes.len() + self.pops.len()
    }

    fn batch(&mut self, _pes: usize) -> Vec<(usize, (Vec<T>, u64))> {
        let (indices, values) = std::mem::take(&mut self.pushes).into_iter().unzip();
        self.committed_pushes = indices;
        vec![(MASTER, (values, self.pops.len() as u64))]
    }

    fn resolve(&mut self, answers: Vec<Vec<T>>) -> Vec<(usize, Option<T>)> {
        let pushes = std::mem::take(&mut self.committed_pushes);
        let mut popped = answers.into_iter().flatten();
        let pops = std::mem::take(&mut self.pops);
        let pops = pops.into_iter().map(|i| (i, popped.next()));
        pushes.into_iter().map(|i| (i, None)).chain(pops).collect()
    }

    fn apply(store: &mut VecDeque<T>, (values, pops): (Vec<T>, u64)) -> Vec<T> {
        store.extend(values);
        let n = (pops as usize).min(store.len());
        if O::ELIMINATES {
            store.drain(store.len() - n..).rev().collect()
        } else {
            store.drain(..n).collect()
        }
    }
}

/// A global push-pop structure: [`GlobalStack`] or [`GlobalQueue`].
pub struct PushPop<'c, T: Message, O: Order> {
    flat: Flat<'c, PushPopProxy<T, O>>,
}

/// A linearizable global stack with flat combining (see the module docs for the rules).
pub type GlobalStack<'c, T> = PushPop<'c, T, Lifo>;
/// A linearizable global queue with flat combining (see the module docs for the rules).
pub type GlobalQueue<'c, T> = PushPop<'c, T, Fifo>;

/// The PE that holds the elements.
const MASTER: usize = 0;

/// The paper's combining buffer: operations one proxy holds at most.
pub const DEFAULT_CAPACITY: usize = 1024;

impl<'c, T: Message, O: Order> PushPop<'c, T, O> {
    /// Collective: an empty structure, its elements at PE 0, combining in `mode` with a
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
        self.flat.apply(PushPopOp::Pop).await
    }

    /// This PE's counters so far.
    pub fn stats(&self) -> Stats {
        self.flat.stats()
    }
}
