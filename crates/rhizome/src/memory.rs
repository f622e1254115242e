//! Global memory: symmetric arrays, global pointers, one-sided get/put and 64-bit atomics.
//!
//! [`Ctx::alloc`](crate::Ctx::alloc) collectively allocates a [`GlobalArray<T>`]: `len`
//! elements on every PE, zeroed. A [`GlobalPtr<T>`] names one element on one PE
//! (pe, segment, byte offset). [`Memory`] (reachable from the context, and cheap to clone
//! into other threads of the same PE) performs the accesses.
//!
//! # Ordering guarantees
//! - **Blocking operations** (`get*`, `put*`, atomics without `_nb`) are complete when they
//!   return: a `put` is visible to every operation any PE starts afterwards; a `get` or an
//!   atomic returns the value.
//! - **Non-blocking operations** (`*_nb`) return a handle. The operation is complete when
//!   its handle's `wait` returns, or after [`Memory::quiet`] on this PE (which completes
//!   every outstanding operation of the PE). Before that, nothing is promised about when the
//!   data lands, nor about the order in which two outstanding operations happen: two
//!   `put_nb` to the same bytes without a `quiet` in between may land in either order.
//! - **Atomics** are atomic with respect to all other atomics on the same word, from every
//!   PE and thread. They are not atomic with respect to `put`/`get` of the same word at the
//!   same time (that is a race, whose outcome is unspecified).
//! - **Barrier**: [`Ctx::barrier`](crate::Ctx::barrier) implies `quiet` on every PE: all
//!   operations any PE started before the barrier are visible to all operations started
//!   after it, on every PE.
//! - **Messages**: operations completed (blocking, waited, or quieted) before a message
//!   is sent are visible to its handler.
//!
//! # Errors
//! An access outside the array (or to a PE that does not exist), or an atomic on an
//! unaligned address, panics with a message naming the PE, segment and byte range; in a
//! [`World::run`](crate::World::run) that ends the run with that message on every PE. The
//! `try_*` forms return the [`TransportError`] instead.

use crate::error::ok;
use crate::transport::{Addr, AtomicOp, Backend, Rma, SegmentId, Transport, TransportError};
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// Plain data that may be copied to and from global memory as bytes.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value, and the type must
/// hold no pointers or padding.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: primitive numbers: no padding, every bit pattern valid.
        unsafe impl Pod for $t {}
    )*};
}
pod!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64
);
// SAFETY: an array of Pod has no padding between elements and every bit pattern is valid.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

fn as_bytes<T: Pod>(s: &[T]) -> &[u8] {
    // SAFETY: `T: Pod` has no padding, so all `size_of_val(s)` bytes are initialised.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}

fn as_bytes_mut<T: Pod>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: `T: Pod` accepts every bit pattern, so any bytes written keep `s` valid.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, std::mem::size_of_val(s)) }
}

/// The address of a `T` on some PE: (pe, segment, byte offset).
pub struct GlobalPtr<T> {
    pe: u32,
    segment: SegmentId,
    offset: usize,
    _t: PhantomData<fn() -> T>,
}

/// `Clone` and `Copy` for a typed handle whatever its `T` (a derive would require `T: Copy`;
/// the handle only names where `T`s are).
macro_rules! copy_for_any_t {
    ($($handle:ident),*) => {$(
        impl<T> Clone for $handle<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $handle<T> {}
    )*};
}
copy_for_any_t!(GlobalPtr, GlobalArray);

impl<T> PartialEq for GlobalPtr<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.pe, self.segment, self.offset) == (o.pe, o.segment, o.offset)
    }
}
impl<T> Eq for GlobalPtr<T> {}
impl<T> std::fmt::Debug for GlobalPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GlobalPtr(pe {}, segment {}, byte {})",
            self.pe, self.segment, self.offset
        )
    }
}

impl<T> GlobalPtr<T> {
    /// The pointer to byte `byte_offset` of `segment` on `pe`. Not checked here (accesses
    /// are); for views of a segment that the typed API does not express.
    pub fn from_parts(pe: usize, segment: SegmentId, byte_offset: usize) -> Self {
        GlobalPtr {
            pe: pe as u32,
            segment,
            offset: byte_offset,
            _t: PhantomData,
        }
    }
    /// Where the transport accesses it.
    fn addr(&self) -> Addr {
        Addr {
            pe: self.pe(),
            segment: self.segment,
            offset: self.offset,
        }
    }
    /// The PE holding the element.
    pub fn pe(&self) -> usize {
        self.pe as usize
    }
    /// The segment id.
    pub fn segment(&self) -> SegmentId {
        self.segment
    }
    /// Byte offset within the segment.
    pub fn byte_offset(&self) -> usize {
        self.offset
    }
    /// The pointer `n` elements further (no check: accesses are checked).
    pub fn offset_by(self, n: usize) -> Self {
        GlobalPtr {
            offset: self
                .offset
                .wrapping_add(n.wrapping_mul(std::mem::size_of::<T>())),
            ..self
        }
    }
    /// The same offset on another PE (symmetric address).
    pub fn on_pe(self, pe: usize) -> Self {
        GlobalPtr {
            pe: pe as u32,
            ..self
        }
    }
}

/// A symmetric array: `len` elements of `T` on every PE. `Copy`, so pass it around freely.
pub struct GlobalArray<T> {
    segment: SegmentId,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: Pod> GlobalArray<T> {
    pub(crate) fn new(segment: SegmentId, len: usize) -> Self {
        GlobalArray {
            segment,
            len,
            _t: PhantomData,
        }
    }
    /// Elements per PE.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The segment id.
    pub fn segment(&self) -> SegmentId {
        self.segment
    }
    /// Pointer to element `index` on PE `pe` (not checked here; accesses are).
    pub fn ptr(&self, pe: usize, index: usize) -> GlobalPtr<T> {
        GlobalPtr {
            pe: pe as u32,
            segment: self.segment,
            offset: index.wrapping_mul(std::mem::size_of::<T>()),
            _t: PhantomData,
        }
    }
}

/// Performs one-sided accesses for one PE. Clone it into other threads of the same PE.
#[derive(Clone)]
pub struct Memory {
    pub(crate) t: Arc<Backend>,
}

impl Memory {
    /// This PE.
    pub fn my_pe(&self) -> usize {
        self.t.my_pe()
    }

    /// The one-sided operations this PE has sent to other PEs as request messages so far
    /// (the `mpi` transport with `RHIZOME_MPI_RMA=messages`), by kind; `None` where the
    /// transport reaches other PEs' memory without messages.
    pub fn remote_ops(&self) -> Option<crate::transport::RemoteOps> {
        self.t.remote_ops()
    }

    /// Reads `dst.len()` elements starting at `p` into `dst`, or returns the error.
    #[inline]
    pub fn try_get_into<T: Pod>(
        &self,
        p: GlobalPtr<T>,
        dst: &mut [T],
    ) -> Result<(), TransportError> {
        self.t.get(p.addr(), as_bytes_mut(dst))
    }
    /// Writes `src` starting at `p`, or returns the error.
    #[inline]
    pub fn try_put_slice<T: Pod>(&self, p: GlobalPtr<T>, src: &[T]) -> Result<(), TransportError> {
        self.t.put(p.addr(), as_bytes(src))
    }
    /// Performs `op` on the word at `p`, or returns the error.
    #[inline]
    pub fn try_atomic(&self, p: GlobalPtr<u64>, op: AtomicOp) -> Result<u64, TransportError> {
        self.t.atomic(p.addr(), op)
    }

    /// Reads `dst.len()` elements starting at `p`.
    #[inline]
    pub fn get_into<T: Pod>(&self, p: GlobalPtr<T>, dst: &mut [T]) {
        ok(self.try_get_into(p, dst))
    }
    /// Reads one element.
    #[inline]
    pub fn get<T: Pod>(&self, p: GlobalPtr<T>) -> T {
        let mut v = [zeroed::<T>()];
        self.get_into(p, &mut v);
        v[0]
    }
    /// Reads `n` elements starting at `p`.
    pub fn get_slice<T: Pod>(&self, p: GlobalPtr<T>, n: usize) -> Vec<T> {
        let mut v = vec![zeroed::<T>(); n];
        self.get_into(p, &mut v);
        v
    }
    /// Writes one element.
    #[inline]
    pub fn put<T: Pod>(&self, p: GlobalPtr<T>, v: T) {
        ok(self.try_put_slice(p, &[v]))
    }
    /// Writes `src` starting at `p`.
    #[inline]
    pub fn put_slice<T: Pod>(&self, p: GlobalPtr<T>, src: &[T]) {
        ok(self.try_put_slice(p, src))
    }

    /// Atomically reads the word.
    #[inline]
    pub fn load(&self, p: GlobalPtr<u64>) -> u64 {
        ok(self.try_atomic(p, AtomicOp::Load))
    }
    /// Atomically writes the word.
    #[inline]
    pub fn store(&self, p: GlobalPtr<u64>, v: u64) {
        ok(self.try_atomic(p, AtomicOp::Store(v)));
    }
    /// Atomically replaces the word, returns the previous value.
    #[inline]
    pub fn swap(&self, p: GlobalPtr<u64>, v: u64) -> u64 {
        ok(self.try_atomic(p, AtomicOp::Swap(v)))
    }
    /// Atomically adds (wrapping), returns the previous value.
    #[inline]
    pub fn fetch_add(&self, p: GlobalPtr<u64>, v: u64) -> u64 {
        ok(self.try_atomic(p, AtomicOp::FetchAdd(v)))
    }
    /// If the word is `current`, replaces it with `new`: `Ok(previous)` on success,
    /// `Err(actual)` otherwise (as `std`'s `compare_exchange`).
    #[inline]
    pub fn compare_exchange(&self, p: GlobalPtr<u64>, current: u64, new: u64) -> Result<u64, u64> {
        let old = ok(self.try_atomic(p, AtomicOp::CompareExchange { current, new }));
        if old == current { Ok(old) } else { Err(old) }
    }

    /// The words of `array` on `pe` as memory this thread may access directly, where the
    /// transport holds them in this process: every PE's with the `local` transport, every
    /// rank's with the `mpi` transport when all ranks share one node (shared-memory
    /// windows mapped into each rank), this PE's own where the `mpi` transport serves
    /// one-sided operations by messages; `None` elsewhere (an MPI RMA window, whose
    /// atomics are promised atomic only with respect to each other). Native atomics on these words are atomic with respect to every PE's
    /// [`compare_exchange`](Self::compare_exchange), [`load`](Self::load), etc. on the same
    /// words; plain gets and puts racing with them are races, as between PEs. A fast path
    /// for data structures that would otherwise pay the one-sided layer for local memory.
    ///
    /// ```
    /// use rhizome::World;
    /// use std::sync::atomic::Ordering;
    ///
    /// World::builder().pes(2).run(|ctx| {
    ///     let a = ctx.alloc::<u64>(4);
    ///     if ctx.my_pe() == 0 {
    ///         ctx.memory().store(a.ptr(1, 2), 7);
    ///     }
    ///     ctx.barrier();
    ///     // The local transport holds both PEs' words in this process.
    ///     let words = ctx.memory().direct_words(a, 1).unwrap();
    ///     assert_eq!(words[2].load(Ordering::Acquire), 7);
    ///     ctx.barrier();
    /// }).unwrap();
    /// ```
    #[inline]
    pub fn direct_words(&self, array: GlobalArray<u64>, pe: usize) -> Option<&[AtomicU64]> {
        self.t.direct(array.segment(), pe)?.get(..array.len())
    }

    /// Completes every outstanding non-blocking operation of this PE (see the module docs).
    pub fn quiet(&self) {
        ok(self.t.quiet())
    }

    /// Starts reading `n` elements at `p`; the handle's `wait` returns them.
    pub fn get_nb<T: Pod>(&self, p: GlobalPtr<T>, n: usize) -> GetHandle<T> {
        let mut buf = vec![zeroed::<T>(); n];
        let bytes = as_bytes_mut(&mut buf);
        // SAFETY: `buf` is owned by the handle, its heap storage does not move when the
        // handle moves, and the handle quiets before it reads or frees it (wait and drop).
        ok(unsafe { self.t.get_nbi(p.addr(), bytes.as_mut_ptr(), bytes.len()) });
        GetHandle(Pending::new(self, buf))
    }
    /// Starts reading `dst.len()` elements at `p` into `dst`, complete after this PE's next
    /// [`quiet`](Self::quiet): [`get_nb`](Self::get_nb) without its allocation, for a
    /// caller that issues many gets into one buffer and completes them with one `quiet`.
    ///
    /// # Safety
    /// `dst` must not be read, written, moved or freed until a `quiet` of this PE has
    /// returned (including on unwinding: quiet in a drop guard declared after `dst`).
    #[inline]
    pub unsafe fn get_nbi_into<T: Pod>(&self, p: GlobalPtr<T>, dst: &mut [T]) {
        let bytes = as_bytes_mut(dst);
        // SAFETY: the caller keeps `dst` untouched and alive until the next quiet.
        ok(unsafe { self.t.get_nbi(p.addr(), bytes.as_mut_ptr(), bytes.len()) });
    }
    /// Starts writing a copy of `src` at `p`; complete at the handle's `wait` or `quiet`.
    pub fn put_nb<T: Pod>(&self, p: GlobalPtr<T>, src: &[T]) -> PutHandle {
        let buf: Vec<u8> = as_bytes(src).to_vec();
        // SAFETY: the copy is owned by the handle and is freed only after a quiet.
        ok(unsafe { self.t.put_nbi(p.addr(), buf.as_ptr(), buf.len()) });
        PutHandle(Pending::new(self, buf))
    }
    /// Starts `op` on the word at `p`; the handle's `wait` returns the previous value.
    pub fn atomic_nb(&self, p: GlobalPtr<u64>, op: AtomicOp) -> AtomicHandle {
        let mut result = Box::new(0u64);
        // SAFETY: the box is owned by the handle and read or freed only after a quiet.
        ok(unsafe { self.t.atomic_nbi(p.addr(), op, &mut *result) });
        AtomicHandle(Pending::new(self, result))
    }
    /// Non-blocking [`fetch_add`](Self::fetch_add).
    pub fn fetch_add_nb(&self, p: GlobalPtr<u64>, v: u64) -> AtomicHandle {
        self.atomic_nb(p, AtomicOp::FetchAdd(v))
    }
    /// Non-blocking compare-exchange; `wait` returns the previous value (success iff it
    /// equals `current`).
    pub fn compare_exchange_nb(&self, p: GlobalPtr<u64>, current: u64, new: u64) -> AtomicHandle {
        self.atomic_nb(p, AtomicOp::CompareExchange { current, new })
    }
}

fn zeroed<T: Pod>() -> T {
    // SAFETY: `T: Pod` accepts the all-zero bit pattern.
    unsafe { std::mem::zeroed() }
}

/// Memory that the transport may write into or read from until the next `quiet`: kept
/// alive by the handle of the operation, and released only once that operation is
/// complete (by `wait`, or by a `quiet` when the handle is dropped unwaited).
struct Pending<B> {
    mem: Memory,
    buf: Option<B>,
}

impl<B> Pending<B> {
    fn new(mem: &Memory, buf: B) -> Self {
        Pending {
            mem: mem.clone(),
            buf: Some(buf),
        }
    }

    /// Completes the operation and hands back its memory.
    fn complete(mut self) -> B {
        self.mem.quiet();
        self.buf.take().expect("completed once")
    }
}

impl<B> Drop for Pending<B> {
    fn drop(&mut self) {
        if self.buf.is_some() {
            // The transport may still use `buf`: complete before freeing it.
            let _ = self.mem.t.quiet();
        }
    }
}

/// An outstanding non-blocking get.
#[must_use = "wait on the handle to obtain the data"]
pub struct GetHandle<T: Pod>(Pending<Vec<T>>);

impl<T: Pod> GetHandle<T> {
    /// Waits for the data.
    pub fn wait(self) -> Vec<T> {
        self.0.complete()
    }
}

/// An outstanding non-blocking put.
#[must_use = "wait on the handle (or quiet) to complete the put"]
pub struct PutHandle(Pending<Vec<u8>>);

impl PutHandle {
    /// Waits until the data is visible at the target.
    pub fn wait(self) {
        self.0.complete();
    }
}

/// An outstanding non-blocking atomic.
#[must_use = "wait on the handle to obtain the previous value"]
pub struct AtomicHandle(Pending<Box<u64>>);

impl AtomicHandle {
    /// Waits and returns the previous value of the word.
    pub fn wait(self) -> u64 {
        *self.0.complete()
    }
}
