//! The operations of [`GlobalStack`](super::GlobalStack) and
//! [`GlobalQueue`](super::GlobalQueue) and what they give back, as they travel (to the
//! centralized combiner) and as a proxy keeps its batches.

use super::flat::Offer;
use rhizome::Message;

/// A push, a pop, or a batch of both.
pub enum PushPopOp<T> {
    /// Adds a value.
    Push(T),
    /// Removes one.
    Pop,
    /// Adds the values, then removes as many values as the count says, the pops taking
    /// effect after the pushes ([`GlobalQueue::push_all_then_pop`](super::GlobalQueue::push_all_then_pop)): one operation of
    /// the proxy, with one slot and one answer, made of many of the structure's.
    Batch(Vec<T>, u64),
}

impl<T> PushPopOp<T> {
    /// How many of the structure's operations this stands for.
    pub fn weight(&self) -> u64 {
        match self {
            PushPopOp::Batch(values, pops) => values.len() as u64 + pops,
            _ => 1,
        }
    }
}

/// Travels as a tag (0 a pop, 1 a push, 2 a batch) and its fields (to the centralized
/// combiner).
impl<T: Message> Message for PushPopOp<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            PushPopOp::Pop => 0u8.encode(out),
            PushPopOp::Push(v) => {
                1u8.encode(out);
                v.encode(out);
            }
            PushPopOp::Batch(values, pops) => {
                2u8.encode(out);
                values.encode(out);
                pops.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        match u8::decode(input) {
            0 => PushPopOp::Pop,
            1 => PushPopOp::Push(T::decode(input)),
            _ => {
                let values = Vec::decode(input);
                PushPopOp::Batch(values, u64::decode(input))
            }
        }
    }
}

/// What a push-pop operation gives back.
pub enum Taken<T> {
    /// A push's (`None`) or a pop's result: the value, `None` if the structure was empty.
    One(Option<T>),
    /// A batch's popped values (fewer than it asked for if the structure ran empty).
    Many(Vec<T>),
}

impl<T> Taken<T> {
    /// The values taken, as a list.
    pub fn into_vec(self) -> Vec<T> {
        match self {
            Taken::One(v) => v.into_iter().collect(),
            Taken::Many(values) => values,
        }
    }

    /// The value of a single pop (the last of a batch's).
    pub fn into_one(self) -> Option<T> {
        match self {
            Taken::One(v) => v,
            Taken::Many(mut values) => values.pop(),
        }
    }
}

/// Travels as a tag (0 `One`, 1 `Many`) and its fields.
impl<T: Message> Message for Taken<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Taken::One(v) => {
                0u8.encode(out);
                v.encode(out);
            }
            Taken::Many(values) => {
                1u8.encode(out);
                values.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Self {
        match u8::decode(input) {
            0 => Taken::One(Option::decode(input)),
            _ => Taken::Many(Vec::decode(input)),
        }
    }
}

/// The batches pending in a proxy: (index, pops) each, their values in order, and how
/// many of the structure's operations they stand for.
pub(super) struct Batches<T> {
    pub(super) list: Vec<(usize, u64)>,
    pub(super) values: Vec<T>,
    pub(super) ops: usize,
}

impl<T> Default for Batches<T> {
    fn default() -> Self {
        Batches {
            list: Vec::new(),
            values: Vec::new(),
            ops: 0,
        }
    }
}

impl<T> Batches<T> {
    /// Takes batch operation `index`: answered at once if it asks for nothing, else
    /// pending (it joins the next commit as it is).
    pub(super) fn offer(&mut self, values: Vec<T>, pops: u64, index: usize) -> Offer<Taken<T>> {
        if values.is_empty() && pops == 0 {
            return Offer::Done {
                mine: Taken::Many(Vec::new()),
                partner: None,
            };
        }
        self.ops += values.len() + pops as usize;
        if self.values.is_empty() {
            // The first batch's values are kept as they are, not copied.
            self.values = values;
        } else {
            self.values.extend(values);
        }
        self.list.push((index, pops));
        Offer::Pending
    }

    /// The pops they ask for, in all.
    pub(super) fn pops(&self) -> u64 {
        self.list.iter().map(|b| b.1).sum()
    }
}
