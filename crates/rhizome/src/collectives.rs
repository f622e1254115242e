//! Collectives: barrier, reductions, broadcast, gather, all-to-all.
//!
//! `barrier` and the `u64` reductions are the transport's own collectives. The generic
//! ones (any [`Message`] type) travel as uncounted active messages tagged with a sequence
//! number, so PEs keep handling other messages while they wait.

use crate::am::message::{Message, encode_prefixed, take_prefixed};
use crate::am::registry::COLLECTIVE_ID;
use crate::backoff::Backoff;
use crate::context::Ctx;
use crate::error::ok;
use crate::transport::{Collectives, ReduceOp};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Duration;

/// How a PE waits for another's part of a collective: a PE that waits long (a sliced
/// exploration's rank whose slice has no new states while another saturates its own)
/// naps after some thousands of yields, so that it stops burning a core in
/// `sched_yield` (collision.5 `sat` on 2 ranks: 1.5 to 2.5 s of system time in all,
/// against 0.5 s with the nap).
const COLLECTIVE_WAIT: Backoff = Backoff::with_nap(64, 4096, Duration::from_micros(50));

/// Collective traffic of one PE that arrived before it was waited for.
#[derive(Default)]
pub(crate) struct State {
    inbox: RefCell<HashMap<(u64, usize), Vec<u8>>>,
    seq: Cell<u64>,
}

/// The handler of [`COLLECTIVE_ID`].
pub(crate) fn receive(ctx: &Ctx, src: usize, input: &mut &[u8]) {
    let seq = u64::decode(input);
    let bytes = take_prefixed(input).to_vec();
    ctx.collectives.inbox.borrow_mut().insert((seq, src), bytes);
}

impl Ctx {
    /// Collective: returns once every PE has entered it; implies `quiet` on every PE (see
    /// [`crate::memory`] for what becomes visible). Does not run message handlers.
    pub fn barrier(&self) {
        ok(self.mem.t.barrier())
    }

    /// Collective: the element-wise reduction of `values` over all PEs, on every PE.
    pub fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) {
        ok(self.mem.t.allreduce_u64(values, op))
    }
    /// Collective: the sum of `v` over all PEs.
    pub fn sum_u64(&self, v: u64) -> u64 {
        self.reduce_one(v, ReduceOp::Sum)
    }
    /// Collective: the minimum of `v` over all PEs.
    pub fn min_u64(&self, v: u64) -> u64 {
        self.reduce_one(v, ReduceOp::Min)
    }
    /// Collective: the maximum of `v` over all PEs.
    pub fn max_u64(&self, v: u64) -> u64 {
        self.reduce_one(v, ReduceOp::Max)
    }
    fn reduce_one(&self, v: u64, op: ReduceOp) -> u64 {
        let mut a = [v];
        self.allreduce_u64(&mut a, op);
        a[0]
    }

    fn next_seq(&self) -> u64 {
        let s = self.collectives.seq.get();
        self.collectives.seq.set(s + 1);
        s
    }

    fn send_collective<T: Message>(&self, pe: usize, seq: u64, value: &T) {
        self.send_uncounted(pe, COLLECTIVE_ID, |buf| {
            seq.encode(buf);
            encode_prefixed(buf, |buf| value.encode(buf));
        });
        self.flush_to(pe);
    }

    fn receive_collective<T: Message>(&self, seq: u64, src: usize) -> T {
        let mut bytes = None;
        self.wait_until_with(COLLECTIVE_WAIT, |ctx| {
            bytes = ctx.collectives.inbox.borrow_mut().remove(&(seq, src));
            bytes.is_some()
        });
        let bytes = bytes.expect("loop ends with the bytes");
        T::decode(&mut &bytes[..])
    }

    /// Every PE's value in PE order: this PE's own `value` and the others' received.
    fn collect<T: Message>(&self, value: T, seq: u64) -> Vec<T> {
        let mut value = Some(value);
        (0..self.pes)
            .map(|src| {
                if src == self.pe {
                    value.take().expect("own value used once")
                } else {
                    self.receive_collective(seq, src)
                }
            })
            .collect()
    }

    /// Collective: every PE gets `root`'s `value` (the others' `value` is ignored).
    pub fn broadcast<T: Message + Clone>(&self, value: T, root: usize) -> T {
        self.check_root(root);
        let seq = self.next_seq();
        if self.pe == root {
            for pe in (0..self.pes).filter(|&p| p != root) {
                self.send_collective(pe, seq, &value);
            }
            value
        } else {
            self.receive_collective(seq, root)
        }
    }

    /// Collective: `root` gets every PE's `value` in PE order; the others get `None`.
    pub fn gather<T: Message>(&self, value: T, root: usize) -> Option<Vec<T>> {
        self.check_root(root);
        let seq = self.next_seq();
        if self.pe == root {
            Some(self.collect(value, seq))
        } else {
            self.send_collective(root, seq, &value);
            None
        }
    }

    /// Collective: every PE gets every PE's `value`, in PE order.
    pub fn allgather<T: Message>(&self, value: T) -> Vec<T> {
        let seq = self.next_seq();
        for pe in (0..self.pes).filter(|&p| p != self.pe) {
            self.send_collective(pe, seq, &value);
        }
        self.collect(value, seq)
    }

    /// Collective: every PE sends `values[q]` to PE `q` (`values` has one entry per PE,
    /// its own included) and gets what every PE sent it, in PE order: an all-to-all
    /// exchange, where [`allgather`](Ctx::allgather) would send every entry everywhere.
    ///
    /// ```
    /// rhizome::World::builder().pes(3).run(|ctx| {
    ///     let me = ctx.my_pe();
    ///     let got = ctx.alltoall((0..3).map(|to| vec![me, to]).collect());
    ///     assert_eq!(got, (0..3).map(|from| vec![from, me]).collect::<Vec<_>>());
    /// }).unwrap();
    /// ```
    pub fn alltoall<T: Message>(&self, values: Vec<T>) -> Vec<T> {
        assert_eq!(
            values.len(),
            self.pes,
            "rhizome: alltoall takes one value per PE"
        );
        let seq = self.next_seq();
        let mut own = None;
        for (pe, value) in values.into_iter().enumerate() {
            if pe == self.pe {
                own = Some(value);
            } else {
                self.send_collective(pe, seq, &value);
            }
        }
        self.collect(own.expect("one value per PE"), seq)
    }

    /// Collective: `root` gets the fold of all PEs' values with `op` (in PE order); the
    /// others get `None`.
    pub fn reduce<T: Message>(&self, value: T, root: usize, op: impl Fn(T, T) -> T) -> Option<T> {
        self.gather(value, root)
            .map(|all| all.into_iter().reduce(op).expect("at least one PE"))
    }

    /// Collective: every PE gets the fold of all PEs' values with `op` (in PE order, so
    /// the result is identical everywhere even for floating point).
    pub fn allreduce<T: Message>(&self, value: T, op: impl Fn(T, T) -> T) -> T {
        self.allgather(value)
            .into_iter()
            .reduce(op)
            .expect("at least one PE")
    }

    fn check_root(&self, root: usize) {
        assert!(
            root < self.pes,
            "rhizome: collective root {root} is not a PE (there are {} PEs)",
            self.pes
        );
    }
}
