//! The proxy of [`GlobalStack`](super::GlobalStack): pushes and pops eliminated on the
//! PE, the rest committed to the stack kept whole at the master (PE 0), as the paper's
//! stack keeps its storage behind the master's top pointer (seed 003, Figures 3 to 5).
//!
//! Why the values live at the master and not, as the queue's, on the PE that pushed
//! them: a stack's pops take the newest values, which on a mixed load were mostly just
//! pushed by *another* PE, so spread storage makes every pop commit two round trips (the
//! master's answer says where the values are, then they are fetched from their PEs, one
//! more message per PE holding some). Here a commit is one message and its answer: a
//! push commit carries its values to the master, a pop commit's answer carries the
//! values popped. With elimination a proxy holds only pushes or only pops (and batches),
//! so the imbalance left on a PE commits in one message, whatever it is.
//!
//! Linearizability is the framework's: every operation of a commit was pending when it
//! started and is answered after the master applied the commit in one message handler;
//! a matched pair is linearized at the match (both pending, neither visible to others).

use super::flat::{Combine, Offer};
use super::ops::{Batches, PushPopOp, Taken};
use rhizome::Message;

/// The PE that holds the stack.
const MASTER: usize = 0;

/// The proxy of a global stack on one PE: pending pushes, pops and batches, by index.
pub struct StackProxy<T> {
    pushes: Vec<(usize, T)>,
    pops: Vec<usize>,
    /// The pending batches (never matched on the PE).
    batches: Batches<T>,
    /// The commit in flight: its pushes, single pops and batches.
    committed: (Vec<usize>, Vec<usize>, Vec<(usize, u64)>),
    /// Its answer: the values popped, newest first.
    popped: Vec<T>,
}

impl<T> Default for StackProxy<T> {
    fn default() -> Self {
        StackProxy {
            pushes: Vec::new(),
            pops: Vec::new(),
            batches: Batches::default(),
            committed: (Vec::new(), Vec::new(), Vec::new()),
            popped: Vec::new(),
        }
    }
}

impl<T: Message> Combine for StackProxy<T> {
    type Op = PushPopOp<T>;
    /// A pop's value (`None` for a push and for a pop of an empty stack), or a batch's
    /// popped values.
    type Out = Taken<T>;
    /// (values pushed, oldest first; number of pops): the master pushes, then pops.
    type Batch = (Vec<T>, u64);
    /// The values popped, newest first.
    type Answer = Vec<T>;
    /// The stack, on the master (empty elsewhere), oldest first.
    type Master = Vec<T>;
    /// Nothing: the answer carries the values.
    type Fetch = ();
    type Fetched = ();
    const LOCKED: bool = true;

    fn offer(&mut self, op: PushPopOp<T>, index: usize) -> Offer<Taken<T>> {
        match op {
            PushPopOp::Batch(values, pops) => self.batches.offer(values, pops, index),
            PushPopOp::Push(v) => match self.pops.pop() {
                // Eliminated: the pending pop takes the value, neither reaches the master.
                Some(pop) => Offer::Done {
                    mine: Taken::One(None),
                    partner: Some((pop, Taken::One(Some(v)))),
                },
                None => {
                    self.pushes.push((index, v));
                    Offer::Pending
                }
            },
            PushPopOp::Pop => match self.pushes.pop() {
                Some((push, v)) => Offer::Done {
                    mine: Taken::One(Some(v)),
                    partner: Some((push, Taken::One(None))),
                },
                None => {
                    self.pops.push(index);
                    Offer::Pending
                }
            },
        }
    }

    fn pending(&self) -> usize {
        self.pushes.len() + self.pops.len() + self.batches.ops
    }

    fn weight(op: &PushPopOp<T>) -> u64 {
        op.weight()
    }

    fn batch(&mut self, _me: usize, _pes: usize, _: &mut Vec<T>) -> Vec<(usize, (Vec<T>, u64))> {
        let (pushes, mut values): (Vec<usize>, Vec<T>) =
            std::mem::take(&mut self.pushes).into_iter().unzip();
        let batches = std::mem::take(&mut self.batches);
        let pops = std::mem::take(&mut self.pops);
        let count = pops.len() as u64 + batches.pops();
        values.extend(batches.values);
        let batches = batches.list;
        self.committed = (pushes, pops, batches);
        vec![(MASTER, (values, count))]
    }

    fn fetches(&mut self, answers: Vec<Vec<T>>, _: usize, _: &mut Vec<T>) -> Vec<(usize, ())> {
        self.popped = answers.into_iter().flatten().collect();
        Vec::new()
    }

    fn serve(_: &mut Vec<T>, _: ()) {}

    fn resolve(&mut self, _: Vec<()>) -> Vec<(usize, Taken<T>)> {
        let (pushes, pops, batches) = std::mem::take(&mut self.committed);
        let mut popped = std::mem::take(&mut self.popped).into_iter();
        let mut out: Vec<(usize, Taken<T>)> =
            pushes.into_iter().map(|i| (i, Taken::One(None))).collect();
        // The newest values are the last batch's: the batches take them first, newest
        // batch first, so that a batch popping no more than it pushed gets its own values
        // back; the single pops the rest (all were pending together: any order is one).
        for (i, n) in batches.into_iter().rev() {
            out.push((i, Taken::Many(popped.by_ref().take(n as usize).collect())));
        }
        out.extend(pops.into_iter().map(|i| (i, Taken::One(popped.next()))));
        out
    }

    fn apply(stack: &mut Vec<T>, (values, pops): (Vec<T>, u64)) -> Vec<T> {
        stack.extend(values);
        let keep = stack.len().saturating_sub(pops as usize);
        stack.drain(keep..).rev().collect()
    }
}
