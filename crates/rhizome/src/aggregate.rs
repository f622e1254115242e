//! Aggregation contexts: one-sided calls packed per destination and run at the target.
//!
//! Inside an [`AggContext`], remote writes, atomic adds and reads written as ordinary
//! one-sided calls ([`AggContext::put`], [`AggContext::add`], [`AggContext::inc`],
//! [`AggContext::get_into`]) do not cross the network one by one: each becomes a 16-byte
//! operation on a [conveyor](crate::conveyor) to the PE that owns the address, which runs
//! it on its own memory when it pulls it. [`AggContext::quiet`] (and the end of
//! [`Ctx::aggregate`]) waits until every operation of every PE has run. The results are
//! those of the same unaggregated calls followed by a barrier; operations issued before
//! one `quiet` run in no particular order relative to each other.
//!
//! ```
//! use rhizome::World;
//! let counts = World::builder().pes(2).run(|ctx| {
//!     let bins = ctx.alloc::<u64>(4);
//!     ctx.aggregate(|agg| {
//!         for i in 0..100 {
//!             agg.inc(bins.ptr(i % ctx.num_pes(), i % 4));
//!         }
//!     });
//!     ctx.get_slice(bins.ptr(ctx.my_pe(), 0), 4).iter().sum::<u64>()
//! }).unwrap();
//! assert_eq!(counts.iter().sum::<u64>(), 200);
//! ```
//!
//! Reads travel as requests on one conveyor and their values come back as writes on a
//! second one, as Bale's index-gather does: a conveyor's items may not push further items
//! on the same conveyor once its PEs have declared they are done.

use crate::context::Ctx;
use crate::conveyor::Conveyor;
use crate::error::ok;
use crate::memory::{GlobalPtr, Pod};
use crate::transport::{Addr, AtomicOp, Rma, SegmentId};
use std::cell::RefCell;
use std::collections::VecDeque;

/// One operation: word 0 packs kind, length, segment and offset of the target; word 1 is
/// the value (a put's bytes, an add's operand, or a read's destination).
type Op = [u64; 2];

const PUT: u64 = 0;
const ADD: u64 = 1;
const GET: u64 = 2;

/// Largest segment id and byte offset an operation can carry.
const SEGMENT_BITS: u32 = 16;
const OFFSET_BITS: u32 = 40;

/// Packs a kind, a length of 0..=8 bytes and a target address into one word.
fn address(kind: u64, len: usize, segment: SegmentId, offset: usize) -> u64 {
    assert!(
        (segment as u64) < 1 << SEGMENT_BITS && (offset as u64) < 1 << OFFSET_BITS,
        "rhizome: aggregation context: segment {segment}, byte {offset} is beyond its address range (segment < 2^{SEGMENT_BITS}, byte < 2^{OFFSET_BITS})"
    );
    kind | (len as u64) << 4 | (segment as u64) << 8 | (offset as u64) << (8 + SEGMENT_BITS)
}

/// (kind, length, segment, offset) of a packed address.
fn unpack(w: u64) -> (u64, usize, SegmentId, usize) {
    (
        w & 0xF,
        ((w >> 4) & 0xF) as usize,
        ((w >> 8) & ((1 << SEGMENT_BITS) - 1)) as SegmentId,
        (w >> (8 + SEGMENT_BITS)) as usize,
    )
}

/// An aggregation context: see the [module docs](self). Collective to create; every PE
/// creates its contexts (and conveyors) in the same order.
pub struct AggContext<'c> {
    ctx: &'c Ctx,
    /// Puts, adds and read requests, to the owner of the address.
    ops: RefCell<Conveyor<'c, Op>>,
    /// Values of reads, as puts back to the reader.
    replies: RefCell<Conveyor<'c, Op>>,
    /// Replies whose lane was full when their value was read, in order.
    backlog: RefCell<VecDeque<(Op, usize)>>,
}

impl Ctx {
    /// Collective: runs `body` with a fresh aggregation context, then waits until every
    /// operation issued in it, on every PE, has run. Each call creates a context (two
    /// conveyors, two message ids): in a loop, create one [`AggContext`] and call
    /// [`AggContext::quiet`] instead.
    pub fn aggregate<R>(&self, body: impl FnOnce(&AggContext<'_>) -> R) -> R {
        let agg = AggContext::new(self);
        let r = body(&agg);
        agg.quiet();
        r
    }
}

impl<'c> AggContext<'c> {
    /// Collective: a context whose conveyors have the default lane size.
    pub fn new(ctx: &'c Ctx) -> Self {
        Self::with_capacity(ctx, ctx.aggregation_bytes() / size_of::<Op>())
    }

    /// Collective: a context whose conveyors batch `capacity` operations per destination.
    pub fn with_capacity(ctx: &'c Ctx, capacity: usize) -> Self {
        AggContext {
            ctx,
            ops: RefCell::new(Conveyor::with_capacity(ctx, capacity)),
            replies: RefCell::new(Conveyor::with_capacity(ctx, capacity)),
            backlog: RefCell::new(VecDeque::new()),
        }
    }

    /// Writes `v` at `p` (a value of at most 8 bytes), as [`Memory::put`](crate::Memory::put)
    /// would, once the operation reaches `p`'s PE.
    pub fn put<T: Pod>(&self, p: GlobalPtr<T>, v: T) {
        let len = size_of::<T>();
        assert!(
            len <= 8,
            "rhizome: aggregation context: put of {len} bytes (at most 8)"
        );
        let mut bytes = [0u8; 8];
        bytes[..len].copy_from_slice(crate::conveyor::item_bytes(&v));
        self.issue(
            [
                address(PUT, len, p.segment(), p.byte_offset()),
                u64::from_ne_bytes(bytes),
            ],
            p.pe(),
        );
    }

    /// Adds `v` (wrapping) to the word at `p`, atomically with respect to other atomics
    /// on it, as [`Memory::fetch_add`](crate::Memory::fetch_add) without the result.
    pub fn add(&self, p: GlobalPtr<u64>, v: u64) {
        self.issue([address(ADD, 8, p.segment(), p.byte_offset()), v], p.pe());
    }

    /// Adds 1 to the word at `p`.
    pub fn inc(&self, p: GlobalPtr<u64>) {
        self.add(p, 1);
    }

    /// Reads the word at `src` into `dst`, which must be on this PE; `dst` holds the value
    /// after the next [`quiet`](Self::quiet).
    pub fn get_into(&self, src: GlobalPtr<u64>, dst: GlobalPtr<u64>) {
        assert_eq!(
            dst.pe(),
            self.ctx.my_pe(),
            "rhizome: aggregation context: get_into a destination on another PE"
        );
        let to = address(PUT, 8, dst.segment(), dst.byte_offset());
        self.issue(
            [address(GET, 8, src.segment(), src.byte_offset()), to],
            src.pe(),
        );
    }

    /// Collective: returns once every operation issued so far by any PE in this context
    /// has run (and, for reads, its value has landed). The context stays usable.
    pub fn quiet(&self) {
        while self.pump(true) {}
        self.ops.borrow_mut().reset();
        self.replies.borrow_mut().reset();
    }

    /// Pushes `op` towards `pe`, running received operations while its lane is full.
    fn issue(&self, op: Op, pe: usize) {
        while !self.ops.borrow_mut().push(op, pe) {
            self.pump(false);
        }
    }

    /// One round of progress on both conveyors; `false` once both are complete.
    fn pump(&self, done: bool) -> bool {
        let mut ops = self.ops.borrow_mut();
        let mut replies = self.replies.borrow_mut();
        let mut backlog = self.backlog.borrow_mut();
        // Values read earlier whose replies found their lane full go first.
        while let Some(&(r, to)) = backlog.front() {
            if !replies.push(r, to) {
                break;
            }
            backlog.pop_front();
        }
        let more = ops.advance(done);
        if backlog.is_empty() {
            let batch = pull_batch(&mut ops);
            let values = self.run_batch(&batch);
            for ((op, from), v) in batch.into_iter().zip(values) {
                let reply = [op[1], v];
                if unpack(op[0]).0 == GET && !(backlog.is_empty() && replies.push(reply, from)) {
                    backlog.push_back((reply, from));
                }
            }
        }
        // No reply can come up once the requests are complete and none waits here.
        let more_replies = replies.advance(!more && backlog.is_empty());
        self.run_batch(&pull_batch(&mut replies));
        more || more_replies || !backlog.is_empty()
    }

    /// Runs puts, adds and reads on this PE's memory, all started before one `quiet` (on
    /// MPI, one flush instead of one per operation); the value read by each read, 0 for
    /// the others.
    fn run_batch(&self, batch: &[(Op, usize)]) -> Vec<u64> {
        let (t, me) = (&self.ctx.mem.t, self.ctx.my_pe());
        let mut values = vec![0u64; batch.len()];
        for ((op, _), value) in batch.iter().zip(values.iter_mut()) {
            let (kind, len, segment, offset) = unpack(op[0]);
            let at = Addr {
                pe: me,
                segment,
                offset,
            };
            // SAFETY: `value` (an element of `values`) and the put's source bytes (`op[1]`
            // in `batch`) stay in place and untouched until the `quiet` below returns:
            // neither vector is resized or written before then. A put reads `len` <= 8
            // bytes of the 8-byte `op[1]`.
            ok(unsafe {
                match kind {
                    ADD => t.atomic_nbi(at, AtomicOp::FetchAdd(op[1]), value),
                    GET => t.atomic_nbi(at, AtomicOp::Load, value),
                    _ => t.put_nbi(at, op[1..].as_ptr() as *const u8, len),
                }
            });
        }
        if !batch.is_empty() {
            ok(t.quiet());
        }
        values
    }
}

/// Most operations pulled before they run (and one `quiet` completes them).
const BATCH_OPS: usize = 4096;

/// Pulls up to [`BATCH_OPS`] operations.
fn pull_batch(c: &mut Conveyor<'_, Op>) -> Vec<(Op, usize)> {
    let mut batch = Vec::new();
    while batch.len() < BATCH_OPS
        && let Some(x) = c.pull()
    {
        batch.push(x);
    }
    batch
}
