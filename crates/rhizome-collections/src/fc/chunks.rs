//! Where a [`GlobalQueue`](super::GlobalQueue)'s values live: on the PE that pushed
//! them, one *chunk* per commit, and on the master the index of the runs of chunks.
//!
//! A chunk is kept as it was pushed (the commit's vector, moved in) until a first part of
//! it is taken; only then are its positions made taken-once slots. So a chunk popped
//! whole by the PE that pushed it (the graph kernels' frontier, each PE popping back
//! what it pushed) is handed back as the same vector: no copy and no fresh allocation
//! on the way through the queue.

use super::pushpop::Run;
use std::collections::{HashMap, VecDeque};

/// The values one commit pushed on this PE.
enum Chunk<T> {
    /// Nothing taken yet: the values as pushed.
    Whole(Vec<T>),
    /// Some taken: each position `None` once taken, and how many are still there.
    Parts(Vec<Option<T>>, u64),
}

/// A push-pop structure's part on one PE: its chunks and, on the master, the index.
pub struct PushPopStore<T> {
    /// On the master: where the elements are, oldest first.
    pub(super) runs: VecDeque<Run>,
    /// This PE's chunks by number: the values pushed in one commit not yet popped.
    chunks: HashMap<u64, Chunk<T>>,
    next_chunk: u64,
}

impl<T> Default for PushPopStore<T> {
    fn default() -> Self {
        PushPopStore {
            runs: VecDeque::new(),
            chunks: HashMap::new(),
            next_chunk: 0,
        }
    }
}

impl<T> PushPopStore<T> {
    /// Keeps `values` (not empty) as a new chunk of this PE; its number.
    pub(super) fn put(&mut self, values: Vec<T>) -> u64 {
        debug_assert!(!values.is_empty(), "an empty commit keeps no chunk");
        let chunk = self.next_chunk;
        self.next_chunk += 1;
        self.chunks.insert(chunk, Chunk::Whole(values));
        chunk
    }

    /// The whole of chunk `chunk`, moved out, if the `len` positions from `first` are
    /// all of it and none was taken before; else `None`, and nothing is taken.
    pub(super) fn take_whole(&mut self, chunk: u64, first: u64, len: u64) -> Option<Vec<T>> {
        match self.chunks.get(&chunk) {
            Some(Chunk::Whole(values)) if first == 0 && values.len() as u64 == len => {}
            _ => return None,
        }
        match self.chunks.remove(&chunk) {
            Some(Chunk::Whole(values)) => Some(values),
            _ => unreachable!("checked whole just above"),
        }
    }

    /// Takes the values of `len` positions of chunk `chunk` from `first` (each is taken
    /// once: the master hands every position to one pop); frees the chunk when empty.
    pub(super) fn take(&mut self, chunk: u64, first: u64, len: u64, out: &mut impl Extend<T>) {
        self.take_with(chunk, first, len, |v| out.extend(v.map(Option::unwrap)));
    }

    /// As [`take`](Self::take), into `out` as slots (each `Some`).
    pub(super) fn take_into(&mut self, chunk: u64, first: u64, len: u64, out: &mut Vec<Option<T>>) {
        self.take_with(chunk, first, len, |v| out.extend(v));
    }

    /// Hands the positions taken, each checked `Some`, to `f`.
    fn take_with(
        &mut self,
        chunk: u64,
        first: u64,
        len: u64,
        f: impl FnOnce(&mut dyn Iterator<Item = Option<T>>),
    ) {
        let entry = self
            .chunks
            .get_mut(&chunk)
            .expect("a chunk the master indexes");
        if let Chunk::Whole(values) = entry {
            let values = std::mem::take(values);
            let left = values.len() as u64;
            *entry = Chunk::Parts(values.into_iter().map(Some).collect(), left);
        }
        let Chunk::Parts(values, left) = entry else {
            unreachable!("made parts just above")
        };
        let slots = values[first as usize..(first + len) as usize].iter_mut();
        f(&mut slots.map(|v| {
            let taken = v.take();
            assert!(taken.is_some(), "each element is popped once");
            taken
        }));
        *left -= len;
        if *left == 0 {
            self.chunks.remove(&chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PushPopStore;

    fn store_with(chunk: Vec<u64>) -> PushPopStore<u64> {
        let mut s = PushPopStore::default();
        assert_eq!(s.put(chunk), 0);
        s
    }

    /// A chunk taken whole is moved out (the same vector, and the chunk is gone); a
    /// chunk taken in parts gives each position once, in order, is freed with its last,
    /// and can no longer be taken whole.
    #[test]
    fn a_whole_chunk_is_moved_and_parts_are_taken_once() {
        let v = vec![1, 2, 3, 4];
        let at = v.as_ptr();
        let mut s = store_with(v);
        assert_eq!(s.take_whole(0, 0, 3), None, "not all of it");
        let whole = s.take_whole(0, 0, 4).expect("all of it, untouched");
        assert_eq!((whole.as_ptr(), &whole[..]), (at, &[1, 2, 3, 4][..]));
        assert!(s.chunks.is_empty());

        let mut s = store_with(vec![1, 2, 3, 4]);
        let mut out = vec![Some(9)];
        s.take_into(0, 2, 2, &mut out);
        assert_eq!(s.take_whole(0, 0, 4), None, "a part was taken");
        s.take_into(0, 0, 2, &mut out);
        assert_eq!(out, [Some(9), Some(3), Some(4), Some(1), Some(2)]);
        assert!(s.chunks.is_empty());

        let mut s = store_with(vec![1, 2, 3]);
        let mut rest = Vec::new();
        s.take(0, 1, 1, &mut rest);
        s.take(0, 0, 1, &mut rest);
        assert_eq!(s.chunks.len(), 1, "one position left");
        s.take(0, 2, 1, &mut rest);
        assert_eq!(rest, [2, 1, 3]);
        assert!(s.chunks.is_empty());
    }

    #[test]
    #[should_panic(expected = "each element is popped once")]
    fn a_position_taken_twice_is_refused() {
        let mut s = store_with(vec![1, 2]);
        let mut out = Vec::new();
        s.take(0, 0, 1, &mut out);
        s.take(0, 0, 1, &mut out);
    }
}
