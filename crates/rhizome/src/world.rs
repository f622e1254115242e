//! The world, the per-PE context, active messages, `finish`, and collectives.

use crate::memory::{GlobalArray, Memory, Pod};
use crate::message::Message;
use crate::transport::local::LocalFabric;
use crate::transport::{Backend, ReduceOp, Transport, TransportError};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Default size of one per-destination aggregation buffer, in bytes.
pub const DEFAULT_AGGREGATION_BYTES: usize = 64 * 1024;

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Bad configuration (builder values or environment variables).
    #[error("configuration: {0}")]
    Config(String),
    /// A PE panicked or failed; every PE stopped. The text names the PE and the reason.
    #[error("{0}")]
    Failed(String),
}

/// Unwinds a PE that was stopped because another PE failed (no second panic message).
pub(crate) struct AbortUnwind;

/// Turns a transport error into the PE's end: a quiet unwind if the run was aborted
/// elsewhere, a panic with the error's message otherwise.
#[cold]
pub(crate) fn fail(e: TransportError) -> ! {
    match e {
        TransportError::Aborted(_) => std::panic::resume_unwind(Box::new(AbortUnwind)),
        e => panic!("rhizome: {e}"),
    }
}

/// Configures and starts a world. See [`World`].
#[derive(Clone, Debug, Default)]
pub struct WorldBuilder {
    pes: Option<usize>,
    workers: Option<usize>,
    aggregation_bytes: Option<usize>,
}

/// Entry point: runs an SPMD closure on every PE.
///
/// The number of PEs of the `local` transport and the worker threads per PE come from the
/// builder, else from `RHIZOME_PES` and `RHIZOME_WORKERS`, else 1 PE and 1 worker.
///
/// # Transport
/// A build with the cargo feature `mpi` that is started by an MPI launcher (`mpirun`,
/// `mpiexec`, which set `OMPI_COMM_WORLD_SIZE`, `PMI_SIZE` or `PMIX_RANK`) runs one PE per
/// MPI rank on the `mpi` transport; otherwise all PEs run in this process on the `local`
/// transport. `RHIZOME_TRANSPORT=local` or `=mpi` overrides the choice. A build without
/// the feature started by a launcher with several ranks refuses to run (each rank would
/// otherwise compute alone) with [`RunError::Config`].
///
/// ```
/// use rhizome::World;
/// let sums = World::builder().pes(4).run(|ctx| {
///     let counter = ctx.alloc::<u64>(1);
///     ctx.fetch_add(counter.ptr(0, 0), ctx.my_pe() as u64 + 1);
///     ctx.barrier();
///     ctx.load(counter.ptr(0, 0))
/// }).unwrap();
/// assert_eq!(sums, vec![10, 10, 10, 10]);
/// ```
pub struct World;

impl World {
    /// A builder with nothing set.
    pub fn builder() -> WorldBuilder {
        WorldBuilder::default()
    }
    /// Runs `f` on every PE with the configuration from the environment.
    pub fn run<R: Send>(f: impl Fn(&Ctx) -> R + Sync) -> Result<Vec<R>, RunError> {
        WorldBuilder::default().run(f)
    }
}

fn env_count(name: &str) -> Result<Option<usize>, RunError> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(s) => match s.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(RunError::Config(format!(
                "{name}={s:?} is not a positive integer"
            ))),
        },
    }
}

impl WorldBuilder {
    /// PEs of the `local` transport (ignored by transports with one PE per process).
    pub fn pes(mut self, n: usize) -> Self {
        self.pes = Some(n);
        self
    }
    /// Worker threads per PE (reported by [`Ctx::workers`]).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }
    /// Size of each per-destination aggregation buffer (default 64 KiB).
    pub fn aggregation_bytes(mut self, n: usize) -> Self {
        self.aggregation_bytes = Some(n);
        self
    }

    /// Runs `f` once on every PE (each PE on its own thread for `local`) and returns the
    /// results of the PEs in this process, in PE order (under MPI: this rank's only).
    ///
    /// When `f` returns, the PE waits until all messages are handled everywhere (an
    /// implicit final [`Ctx::finish`]). If any PE panics or fails, every PE is stopped (PEs
    /// blocked in a barrier, collective or wait wake up) and the run returns
    /// [`RunError::Failed`] naming the first PE that failed and its panic message.
    pub fn run<R: Send>(self, f: impl Fn(&Ctx) -> R + Sync) -> Result<Vec<R>, RunError> {
        let pes = match self.pes {
            Some(0) => {
                return Err(RunError::Config(
                    "the number of PEs must be at least 1".into(),
                ));
            }
            Some(n) => n,
            None => env_count("RHIZOME_PES")?.unwrap_or(1),
        };
        let workers = match self.workers {
            Some(0) => {
                return Err(RunError::Config(
                    "the number of workers must be at least 1".into(),
                ));
            }
            Some(n) => n,
            None => env_count("RHIZOME_WORKERS")?.unwrap_or(1),
        };
        let agg = self
            .aggregation_bytes
            .unwrap_or(DEFAULT_AGGREGATION_BYTES)
            .max(16);
        match choose_transport()? {
            Choice::Local => {}
            #[cfg(feature = "mpi")]
            Choice::Mpi => return run_mpi(workers, agg, &f),
        }
        let fabric = LocalFabric::new(pes);
        let f = &f;
        let outcomes: Vec<Option<R>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..pes)
                .map(|pe| {
                    let t = Arc::new(Backend::Local(fabric.transport(pe)));
                    std::thread::Builder::new()
                        .name(format!("pe-{pe}"))
                        .stack_size(32 << 20)
                        .spawn_scoped(s, move || run_pe(t, workers, agg, f))
                        .expect("cannot spawn a PE thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(None))
                .collect()
        });
        let probe = fabric.transport(0);
        if let Some(msg) = probe.aborted() {
            return Err(RunError::Failed(msg));
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("a PE without a result but no abort"))
            .collect())
    }
}

/// The transport a run uses.
enum Choice {
    Local,
    #[cfg(feature = "mpi")]
    Mpi,
}

/// Number of ranks an MPI launcher (`mpirun`, `mpiexec`) started, if it started this
/// process; `None` otherwise. Lets a program that runs on one PE only refuse to be
/// started several times over.
///
/// ```
/// // Under `cargo test` no launcher is involved.
/// assert_eq!(rhizome::launcher_ranks(), None);
/// ```
pub fn launcher_ranks() -> Option<usize> {
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"] {
        if let Ok(v) = std::env::var(var) {
            return Some(v.trim().parse().unwrap_or(1));
        }
    }
    std::env::var_os("PMIX_RANK").map(|_| 1)
}

fn choose_transport() -> Result<Choice, RunError> {
    match std::env::var("RHIZOME_TRANSPORT").as_deref().map(str::trim) {
        Ok("local") => return Ok(Choice::Local),
        #[cfg(feature = "mpi")]
        Ok("mpi") => return Ok(Choice::Mpi),
        #[cfg(not(feature = "mpi"))]
        Ok("mpi") => {
            return Err(RunError::Config(
                "RHIZOME_TRANSPORT=mpi, but this build has no MPI support (build with `--features mpi`)"
                    .into(),
            ));
        }
        Ok(other) => {
            return Err(RunError::Config(format!(
                "RHIZOME_TRANSPORT={other:?} is neither `local` nor `mpi`"
            )));
        }
        Err(_) => {}
    }
    match launcher_ranks() {
        #[cfg(feature = "mpi")]
        Some(_) => Ok(Choice::Mpi),
        #[cfg(not(feature = "mpi"))]
        Some(n) if n > 1 => Err(RunError::Config(format!(
            "started by mpirun with {n} ranks, but this build has no MPI support: rebuild with `--features mpi` (or set RHIZOME_TRANSPORT=local to run {n} independent copies)"
        ))),
        _ => Ok(Choice::Local),
    }
}

/// Runs this rank's PE on the `mpi` transport.
#[cfg(feature = "mpi")]
fn run_mpi<R: Send>(
    workers: usize,
    agg: usize,
    f: &(impl Fn(&Ctx) -> R + Sync),
) -> Result<Vec<R>, RunError> {
    let t = crate::transport::mpi::MpiTransport::init()
        .map_err(|e| RunError::Config(format!("cannot start MPI: {e}")))?;
    let t = Arc::new(Backend::Mpi(t));
    let pe = t.my_pe();
    let outcome = std::thread::scope(|s| {
        let t = Arc::clone(&t);
        std::thread::Builder::new()
            .name(format!("pe-{pe}"))
            .stack_size(32 << 20)
            .spawn_scoped(s, move || run_pe(t, workers, agg, f))
            .expect("cannot spawn the PE thread")
            .join()
            .unwrap_or(None)
    });
    match outcome {
        Some(r) => Ok(vec![r]),
        // Unreachable in practice: a failing PE ends every process with MPI_Abort.
        None => Err(RunError::Failed(
            t.aborted().unwrap_or_else(|| format!("PE {pe} failed")),
        )),
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

/// Runs one PE's share of the program; `None` if it failed or was stopped.
fn run_pe<R>(
    t: Arc<Backend>,
    workers: usize,
    agg: usize,
    f: &(impl Fn(&Ctx) -> R + Sync),
) -> Option<R> {
    let pe = t.my_pe();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ctx = Ctx::new(Arc::clone(&t), workers, agg);
        let r = f(&ctx);
        ctx.quiesce();
        ok(t.barrier());
        r
    }));
    match outcome {
        Ok(r) => Some(r),
        Err(payload) => {
            if !payload.is::<AbortUnwind>() {
                t.abort(&format!("PE {pe} panicked: {}", panic_text(&*payload)));
            }
            None
        }
    }
}

#[inline]
fn ok<R>(r: Result<R, TransportError>) -> R {
    match r {
        Ok(v) => v,
        Err(e) => fail(e),
    }
}

/// A registered fire-and-forget message type; obtained from [`Ctx::register`].
pub struct Am<M> {
    id: u16,
    _m: PhantomData<fn(M)>,
}
impl<M> Clone for Am<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Am<M> {}

/// A registered request-reply message type; obtained from [`Ctx::register_call`].
pub struct CallAm<Q, R> {
    id: u16,
    _m: PhantomData<fn(Q) -> R>,
}
impl<Q, R> Clone for CallAm<Q, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Q, R> Copy for CallAm<Q, R> {}

type Handler = Box<dyn Fn(&Ctx, usize, &mut &[u8])>;

const REPLY_ID: u16 = 0;
const COLLECTIVE_ID: u16 = 1;
const FIRST_USER_ID: u16 = 2;

#[derive(Default)]
struct Replies {
    slots: Vec<Option<Vec<u8>>>,
    free: Vec<u32>,
}

/// One PE's view of the world, passed to the closure of [`World::run`].
///
/// It dereferences to [`Memory`] for one-sided access (`ctx.get(..)`, `ctx.fetch_add(..)`).
/// The context belongs to the PE's main thread (it is not `Sync`); clone
/// [`Ctx::memory`] into other threads for one-sided access from them.
///
/// # Progress
/// Message handlers run on the PE's main thread whenever it calls into the runtime to
/// wait: [`Ctx::progress`], [`Ctx::finish`], [`CallHandle::wait`], and the collectives
/// other than `barrier`. A PE that computes for a long time without any of these delays
/// the handlers of the messages sent to it (as in UPC++).
pub struct Ctx {
    mem: Memory,
    pe: usize,
    pes: usize,
    workers: usize,
    agg: usize,
    handlers: RefCell<Vec<Handler>>,
    out: Box<[RefCell<Vec<u8>>]>,
    sent: Cell<u64>,
    processed: Cell<u64>,
    replies: RefCell<Replies>,
    collective_in: RefCell<HashMap<(u64, usize), Vec<u8>>>,
    collective_seq: Cell<u64>,
}

impl std::ops::Deref for Ctx {
    type Target = Memory;
    fn deref(&self) -> &Memory {
        &self.mem
    }
}

impl Ctx {
    fn new(t: Arc<Backend>, workers: usize, agg: usize) -> Ctx {
        let pe = t.my_pe();
        let pes = t.num_pes();
        let ctx = Ctx {
            mem: Memory { t },
            pe,
            pes,
            workers,
            agg,
            handlers: RefCell::new(Vec::new()),
            out: (0..pes).map(|_| RefCell::new(Vec::new())).collect(),
            sent: Cell::new(0),
            processed: Cell::new(0),
            replies: RefCell::new(Replies::default()),
            collective_in: RefCell::new(HashMap::new()),
            collective_seq: Cell::new(0),
        };
        {
            let mut h = ctx.handlers.borrow_mut();
            h.push(Box::new(|ctx: &Ctx, _src, input: &mut &[u8]| {
                let slot = u32::decode(input);
                let bytes = Vec::<u8>::decode(input);
                ctx.replies.borrow_mut().slots[slot as usize] = Some(bytes);
            }));
            h.push(Box::new(|ctx: &Ctx, src, input: &mut &[u8]| {
                let seq = u64::decode(input);
                let bytes = Vec::<u8>::decode(input);
                ctx.collective_in.borrow_mut().insert((seq, src), bytes);
            }));
            debug_assert_eq!(h.len(), FIRST_USER_ID as usize);
        }
        ctx
    }

    /// This PE's number, `0..num_pes()`.
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.pe
    }
    /// Number of PEs.
    #[inline]
    pub fn num_pes(&self) -> usize {
        self.pes
    }
    /// Worker threads per PE, as configured.
    pub fn workers(&self) -> usize {
        self.workers
    }
    /// Size of each per-destination aggregation buffer in bytes.
    pub fn aggregation_bytes(&self) -> usize {
        self.agg
    }
    /// Name of the transport in use.
    pub fn transport_name(&self) -> &'static str {
        self.mem.t.name()
    }
    /// The transport of this PE, for transport-specific tools (such as the raw-MPI
    /// baselines of `rhizome bench comm`); programs do not need it.
    pub fn backend(&self) -> &Backend {
        &self.mem.t
    }
    /// The one-sided access handle (clone it into other threads of this PE).
    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    // ----- global memory -----

    /// Collective: allocates `len` zeroed elements of `T` on every PE. Every PE must call
    /// it with the same `len`, in the same order relative to other allocations.
    pub fn alloc<T: Pod>(&self, len: usize) -> GlobalArray<T> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .unwrap_or_else(|| {
                panic!(
                    "rhizome: alloc of {len} elements of {} bytes overflows",
                    std::mem::size_of::<T>()
                )
            });
        GlobalArray::new(ok(self.mem.t.alloc_segment(bytes)), len)
    }

    // ----- active messages -----

    /// Collective: registers a fire-and-forget message type whose handler `f` runs on the
    /// target PE. Every PE registers the same handlers in the same order, before sending.
    /// Handlers may send messages and make calls, but not register or run collectives.
    pub fn register<M: Message>(&self, f: impl Fn(&Ctx, M) + 'static) -> Am<M> {
        let id = self.add_handler(Box::new(move |ctx, _src, input| f(ctx, M::decode(input))));
        Am {
            id,
            _m: PhantomData,
        }
    }

    /// Collective: registers a request-reply message type; `f` runs on the target PE and
    /// its result travels back to the caller's [`CallHandle`].
    pub fn register_call<Q: Message, R: Message>(
        &self,
        f: impl Fn(&Ctx, Q) -> R + 'static,
    ) -> CallAm<Q, R> {
        let id = self.add_handler(Box::new(move |ctx, src, input| {
            let slot = u32::decode(input);
            let r = f(ctx, Q::decode(input));
            ctx.send_raw(src, REPLY_ID, |buf| {
                slot.encode(buf);
                // Length-prefixed so the reply handler can skip it without knowing `R`.
                let at = buf.len();
                buf.extend_from_slice(&[0; 8]);
                r.encode(buf);
                let n = (buf.len() - at - 8) as u64;
                buf[at..at + 8].copy_from_slice(&n.to_le_bytes());
            });
        }));
        CallAm {
            id,
            _m: PhantomData,
        }
    }

    fn add_handler(&self, h: Handler) -> u16 {
        let mut hs = self
            .handlers
            .try_borrow_mut()
            .expect("rhizome: handlers cannot be registered from inside a handler");
        let id = u16::try_from(hs.len()).expect("rhizome: more than 65535 message types");
        hs.push(h);
        id
    }

    #[inline]
    fn send_raw(&self, pe: usize, id: u16, encode: impl FnOnce(&mut Vec<u8>)) {
        self.sent.set(self.sent.get() + 1);
        self.send_uncounted(pe, id, encode);
    }

    /// Appends a message without counting it for termination (collective traffic, which
    /// its receiver always waits for).
    #[inline]
    fn send_uncounted(&self, pe: usize, id: u16, encode: impl FnOnce(&mut Vec<u8>)) {
        let Some(cell) = self.out.get(pe) else {
            panic!(
                "rhizome: message to PE {pe}, but there are {} PEs",
                self.pes
            )
        };
        let full = {
            let mut buf = cell.borrow_mut();
            if buf.capacity() == 0 {
                *buf = self.mem.t.buffer(self.agg + 64);
            }
            buf.extend_from_slice(&id.to_le_bytes());
            encode(&mut buf);
            buf.len() >= self.agg
        };
        if full {
            self.flush_to(pe);
        }
    }

    /// Sends `msg` to PE `pe`, whose handler for `am` will run it. The message is buffered
    /// with others to the same PE and leaves when the buffer is full, on [`Ctx::flush`],
    /// or at the end of a [`Ctx::finish`]. A message larger than a buffer leaves at once.
    #[inline]
    pub fn send<M: Message>(&self, pe: usize, am: Am<M>, msg: &M) {
        self.send_raw(pe, am.id, |buf| msg.encode(buf));
    }

    /// Sends a message for `am` that `encode` writes as `M::encode` would, without an `M`
    /// value (e.g. from a borrowed form of it).
    pub(crate) fn send_encoded<M: Message>(
        &self,
        pe: usize,
        am: Am<M>,
        encode: impl FnOnce(&mut Vec<u8>),
    ) {
        self.send_raw(pe, am.id, encode);
    }

    /// Sends a request to PE `pe`; the returned handle yields the handler's result.
    /// The request is flushed when the handle is waited on.
    pub fn call<Q: Message, R: Message>(
        &self,
        pe: usize,
        am: CallAm<Q, R>,
        req: &Q,
    ) -> CallHandle<'_, R> {
        let slot = {
            let mut r = self.replies.borrow_mut();
            match r.free.pop() {
                Some(s) => s,
                None => {
                    r.slots.push(None);
                    (r.slots.len() - 1) as u32
                }
            }
        };
        self.send_raw(pe, am.id, |buf| {
            slot.encode(buf);
            req.encode(buf);
        });
        CallHandle {
            ctx: self,
            pe,
            slot,
            flushed: Cell::new(false),
            _r: PhantomData,
        }
    }

    fn flush_to(&self, pe: usize) {
        let buf = {
            let mut b = self.out[pe].borrow_mut();
            if b.is_empty() {
                return;
            }
            std::mem::take(&mut *b)
        };
        ok(self.mem.t.send(pe, buf));
    }

    /// Sends every partly filled aggregation buffer now.
    pub fn flush(&self) {
        for pe in 0..self.pes {
            self.flush_to(pe);
        }
    }

    /// Runs the handlers of all messages received so far; returns how many ran.
    pub fn progress(&self) -> usize {
        let mut n = 0;
        let mut uncounted = 0u64;
        while let Some((src, buf)) = ok(self.mem.t.try_recv()) {
            {
                let handlers = self.handlers.borrow();
                let mut input = &buf[..];
                while input.len() >= 2 {
                    let id = u16::from_le_bytes([input[0], input[1]]);
                    input = &input[2..];
                    let Some(h) = handlers.get(id as usize) else {
                        panic!(
                            "rhizome: PE {} received a message for unknown handler {id} from PE {src}: handlers must be registered on every PE in the same order",
                            self.pe
                        )
                    };
                    h(self, src, &mut input);
                    n += 1;
                    uncounted += (id == COLLECTIVE_ID) as u64;
                }
            }
            self.mem.t.recycle(buf);
        }
        self.processed
            .set(self.processed.get() + n as u64 - uncounted);
        n
    }

    /// Makes progress until `done` holds, backing off while there is nothing to do.
    fn wait_until(&self, mut done: impl FnMut(&Ctx) -> bool) {
        let mut idle = 0u32;
        loop {
            if done(self) {
                return;
            }
            if self.progress() > 0 {
                idle = 0;
                // Handlers may have buffered replies or forwards that others wait for.
                self.flush();
            } else {
                idle += 1;
                if idle < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Collective: runs `body`, then returns once every message sent inside it (on any
    /// PE), and every message those handlers sent, transitively, has been handled.
    ///
    /// Termination detection (four-counter method): each PE counts the messages it sent
    /// and handled. When a PE has flushed its buffers and has nothing left to handle, all
    /// PEs sum their counts in a wave; PEs keep handling messages while the wave runs.
    /// The scope ends when two consecutive waves see the same totals with sent equal to
    /// handled: the counters are monotone, so nothing happened between the waves and no
    /// message is in flight. PEs leave on the same wave but not at the same instant: a
    /// message sent after one PE's `finish` returned may already be handled by a PE still
    /// leaving it (put a [`Ctx::barrier`] after the scope if that matters).
    pub fn finish<R>(&self, body: impl FnOnce() -> R) -> R {
        let r = body();
        self.quiesce();
        r
    }

    fn quiesce(&self) {
        let mut previous = None;
        loop {
            loop {
                self.flush();
                if self.progress() == 0 {
                    break;
                }
            }
            // The wave is an allgather over messages, so this PE keeps handling messages
            // (e.g. answering calls) while it waits for the others.
            let all = self.allgather((self.sent.get(), self.processed.get()));
            let totals = all.iter().fold((0u64, 0u64), |(s, p), &(a, b)| {
                (s.wrapping_add(a), p.wrapping_add(b))
            });
            if totals.0 == totals.1 && previous == Some(totals) {
                return;
            }
            previous = Some(totals);
        }
    }

    // ----- collectives -----

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
        let mut a = [v];
        self.allreduce_u64(&mut a, ReduceOp::Sum);
        a[0]
    }
    /// Collective: the minimum of `v` over all PEs.
    pub fn min_u64(&self, v: u64) -> u64 {
        let mut a = [v];
        self.allreduce_u64(&mut a, ReduceOp::Min);
        a[0]
    }
    /// Collective: the maximum of `v` over all PEs.
    pub fn max_u64(&self, v: u64) -> u64 {
        let mut a = [v];
        self.allreduce_u64(&mut a, ReduceOp::Max);
        a[0]
    }

    fn next_seq(&self) -> u64 {
        let s = self.collective_seq.get();
        self.collective_seq.set(s + 1);
        s
    }

    fn send_collective<T: Message>(&self, pe: usize, seq: u64, value: &T) {
        let mut bytes = Vec::new();
        value.encode(&mut bytes);
        self.send_uncounted(pe, COLLECTIVE_ID, |buf| {
            seq.encode(buf);
            bytes.encode(buf);
        });
    }

    fn receive_collective<T: Message>(&self, seq: u64, src: usize) -> T {
        let mut bytes = None;
        self.wait_until(|ctx| {
            bytes = ctx.collective_in.borrow_mut().remove(&(seq, src));
            bytes.is_some()
        });
        let bytes = bytes.expect("loop ends with the bytes");
        let mut input = &bytes[..];
        T::decode(&mut input)
    }

    /// Collective: every PE gets `root`'s `value` (the others' `value` is ignored).
    pub fn broadcast<T: Message + Clone>(&self, value: T, root: usize) -> T {
        self.check_root(root);
        let seq = self.next_seq();
        if self.pe == root {
            for pe in (0..self.pes).filter(|&p| p != root) {
                self.send_collective(pe, seq, &value);
                self.flush_to(pe);
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
            let mut value = Some(value);
            Some(
                (0..self.pes)
                    .map(|src| {
                        if src == root {
                            value.take().expect("own value used once")
                        } else {
                            self.receive_collective(seq, src)
                        }
                    })
                    .collect(),
            )
        } else {
            self.send_collective(root, seq, &value);
            self.flush_to(root);
            None
        }
    }

    /// Collective: every PE gets every PE's `value`, in PE order.
    pub fn allgather<T: Message>(&self, value: T) -> Vec<T> {
        let seq = self.next_seq();
        for pe in (0..self.pes).filter(|&p| p != self.pe) {
            self.send_collective(pe, seq, &value);
            self.flush_to(pe);
        }
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

/// The pending result of a [`Ctx::call`].
#[must_use = "wait on the handle to obtain the reply"]
pub struct CallHandle<'a, R> {
    ctx: &'a Ctx,
    pe: usize,
    slot: u32,
    flushed: Cell<bool>,
    _r: PhantomData<fn() -> R>,
}

impl<R: Message> CallHandle<'_, R> {
    fn ensure_flushed(&self) {
        if !self.flushed.get() {
            self.ctx.flush_to(self.pe);
            self.flushed.set(true);
        }
    }

    /// Whether the reply has arrived (flushes the request and makes progress).
    pub fn is_ready(&self) -> bool {
        self.ensure_flushed();
        self.ctx.progress();
        self.ctx.replies.borrow().slots[self.slot as usize].is_some()
    }

    /// Waits for the reply, running handlers meanwhile.
    pub fn wait(self) -> R {
        self.ensure_flushed();
        let slot = self.slot as usize;
        self.ctx
            .wait_until(|ctx| ctx.replies.borrow().slots[slot].is_some());
        let bytes = {
            let mut r = self.ctx.replies.borrow_mut();
            let b = r.slots[slot].take().expect("reply present");
            r.free.push(self.slot);
            b
        };
        let mut input = &bytes[..];
        R::decode(&mut input)
    }
}
