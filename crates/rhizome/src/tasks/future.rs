//! The shared state behind a [`Future`], the `Future` handle itself, and the table of
//! futures whose values travel between PEs ([`Values`]).

use super::Stopped;
use super::claim::Claim;
use super::wire::Msg;
use super::worker::{current_shared, current_worker};
use crate::backoff::Backoff;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

/// Why a job produced no value: it panicked (here or on another PE).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("job failed: {0}")]
pub struct JobError(pub String);

impl JobError {
    pub(super) fn from_panic(payload: &(dyn Any + Send)) -> JobError {
        if let Some(s) = payload.downcast_ref::<&str>() {
            JobError(s.to_string())
        } else if let Some(s) = payload.downcast_ref::<String>() {
            JobError(s.clone())
        } else if let Some(e) = payload.downcast_ref::<JobError>() {
            e.clone()
        } else {
            JobError("non-string panic payload".into())
        }
    }
}

type Callback<T> = Box<dyn FnOnce(&Result<T, JobError>) + Send>;

struct Inner<T> {
    value: Option<Result<T, JobError>>,
    callbacks: Vec<Callback<T>>,
    wakers: Vec<Waker>,
}

/// Leapfrogging hint: nobody stole the job.
pub(super) const NO_THIEF: u64 = 0;
/// Hint for "stolen by local worker `w`": `LOCAL_THIEF + w`.
pub(super) const LOCAL_THIEF: u64 = 1;
/// Hint for "running on PE `p`": `REMOTE_THIEF + p`.
pub(super) const REMOTE_THIEF: u64 = 1 << 32;

/// The one-shot slot a job's result goes to.
///
/// `repr(C)` with the claim first: a deque slot points at the state through its claim
/// (see `claim.rs`).
#[repr(C)]
pub(super) struct State<T> {
    /// The job that fulfills this state, while it waits in a deque of this PE: whoever
    /// claims it first runs it, a waiter on this state included (see `claim.rs`).
    pub(super) claim: Claim,
    ready: AtomicBool,
    inner: Mutex<Inner<T>>,
    /// Who runs the job, if not the owner (see the `*_THIEF` constants).
    pub(super) thief: AtomicU64,
    /// The id under which this PE exports the state to other PEs, once serialized.
    export_id: OnceLock<u64>,
    /// For a future received from another PE: its home `(pe, id)`.
    home: Option<(u32, u64)>,
}

impl<T> State<T> {
    pub(super) fn new() -> State<T> {
        State::with_home(None)
    }

    fn with_home(home: Option<(u32, u64)>) -> State<T> {
        State {
            claim: Claim::new::<T>(),
            ready: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                value: None,
                callbacks: Vec::new(),
                wakers: Vec::new(),
            }),
            thief: AtomicU64::new(NO_THIEF),
            export_id: OnceLock::new(),
            home,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[inline]
    pub(super) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Sets the result (once), then runs the callbacks and wakes the wakers.
    pub(super) fn fulfill(&self, r: Result<T, JobError>) {
        let (callbacks, wakers) = {
            let mut g = self.lock();
            assert!(g.value.is_none(), "rhizome: a future was fulfilled twice");
            g.value = Some(r);
            self.ready.store(true, Ordering::Release);
            (
                std::mem::take(&mut g.callbacks),
                std::mem::take(&mut g.wakers),
            )
        };
        if !callbacks.is_empty() {
            let g = self.lock();
            let v = g.value.as_ref().expect("just set");
            for cb in callbacks {
                cb(v);
            }
        }
        for w in wakers {
            w.wake();
        }
    }

    /// Runs `cb` with the result: now if it is there, else when it arrives.
    fn on_ready(&self, cb: Callback<T>) {
        let mut g = self.lock();
        match &g.value {
            Some(v) => cb(v),
            None => g.callbacks.push(cb),
        }
    }

    fn with_value<R>(&self, f: impl FnOnce(&Result<T, JobError>) -> R) -> R {
        let g = self.lock();
        f(g.value
            .as_ref()
            .expect("rhizome: future read before it was ready"))
    }
}

/// The result of a job that may not have finished yet: from [`TaskCtx::spawn`],
/// [`TaskCtx::spawn_local`], [`TaskCtx::async_on`] or [`make_future`].
///
/// Futures are cheap to clone (all clones share one slot) and can be passed into other
/// jobs, also jobs that run on other PEs: a future is serializable when its value type is,
/// and a copy on another PE receives the value by a message once it is there.
///
/// [`get`](Future::get) blocks; a worker of the task runtime that blocks keeps running
/// other jobs meanwhile (first from the thief of the awaited job: leapfrogging). A future
/// is also a [`std::future::Future`], so it can be `.await`ed (see [`TaskCtx::block_on`]).
///
/// [`TaskCtx::spawn`]: super::TaskCtx::spawn
/// [`TaskCtx::spawn_local`]: super::TaskCtx::spawn_local
/// [`TaskCtx::async_on`]: super::TaskCtx::async_on
/// [`TaskCtx::block_on`]: super::TaskCtx::block_on
pub struct Future<T> {
    pub(super) state: Arc<State<T>>,
}

impl<T> Clone for Future<T> {
    fn clone(&self) -> Self {
        Future {
            state: Arc::clone(&self.state),
        }
    }
}

impl<T> std::fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Future")
            .field("ready", &self.is_ready())
            .finish()
    }
}

/// A future that is ready at once with `value`.
///
/// ```
/// let f = rhizome::tasks::make_future(42u32);
/// assert!(f.is_ready());
/// assert_eq!(f.get(), 42);
/// ```
pub fn make_future<T>(value: T) -> Future<T> {
    let s = State::new();
    s.fulfill(Ok(value));
    Future { state: Arc::new(s) }
}

impl<T> Future<T> {
    pub(super) fn from_state(state: Arc<State<T>>) -> Future<T> {
        Future { state }
    }

    /// Whether the value (or the job's error) is there; never blocks.
    pub fn is_ready(&self) -> bool {
        self.state.is_ready()
    }

    /// Blocks until the value is there. On a worker of the task runtime this runs other
    /// jobs meanwhile (see "Blocking and deadlock" in the [module docs](super)); on any
    /// other thread it spins and yields.
    pub fn wait(&self) {
        if self.state.is_ready() {
            return;
        }
        match current_worker() {
            Some(w) => w.help_until(&*self.state),
            None => {
                let mut backoff = Backoff::new(100);
                while !self.state.is_ready() {
                    backoff.snooze();
                }
            }
        }
    }

    /// Waits, then the value, or the error if the job panicked.
    pub fn try_get(&self) -> Result<T, JobError>
    where
        T: Clone,
    {
        self.wait();
        self.state.with_value(|r| r.clone())
    }

    /// Waits, then the value. If the job panicked, panics with its message (so the error
    /// travels on to whoever waits on the future of the job calling `get`).
    pub fn get(&self) -> T
    where
        T: Clone,
    {
        match self.try_get() {
            Ok(v) => v,
            // The original message travels on unchanged (not wrapped once per level).
            Err(e) => std::panic::resume_unwind(Box::new(e.0)),
        }
    }
}

impl<T: Clone> std::future::Future for Future<T> {
    type Output = T;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if !self.state.is_ready() {
            let mut g = self.state.lock();
            if g.value.is_none() {
                if !g.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    g.wakers.push(cx.waker().clone());
                }
                return Poll::Pending;
            }
        }
        Poll::Ready(self.get())
    }
}

/// Registers PE `pe`'s slot `sub` for the value of an exported future; the value leaves
/// through the sender.
type Subscribe = Box<dyn Fn(&Outbox, u32, u64) + Send + Sync>;
type Outbox = crossbeam_channel::Sender<(usize, Msg)>;

/// What a PE keeps for a future it exported: the state, and how to subscribe to it.
struct Export {
    any: Arc<dyn Any + Send + Sync>,
    subscribe: Subscribe,
}

/// The futures of one PE whose values cross PEs: slots waiting for a `Value` message,
/// futures this PE exported, and copies of other PEs' futures it imported.
pub(super) struct Values {
    /// Slot id to its fulfiller, and whether it is the result of a job this PE owns.
    pending: Mutex<HashMap<u64, (Fulfiller, bool)>>,
    exports: Mutex<HashMap<u64, Export>>,
    imports: Mutex<HashMap<(u32, u64), Arc<dyn Any + Send + Sync>>>,
    next_id: AtomicU64,
}

impl Values {
    pub(super) fn new() -> Values {
        Values {
            pending: Mutex::new(HashMap::new()),
            exports: Mutex::new(HashMap::new()),
            imports: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a slot for a value that arrives in a `Value` message; `task` says the
    /// value is the result of a job this PE owns (it completes the job for termination).
    pub(super) fn add_pending(&self, f: Fulfiller, task: bool) -> u64 {
        let id = self.next_id();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (f, task));
        id
    }

    /// Fills slot `id` of PE `pe` (this one); true if it completes a job this PE owns.
    pub(super) fn receive(&self, pe: usize, id: u64, bytes: &[u8]) -> bool {
        let entry = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let Some((f, task)) = entry else {
            panic!("rhizome: PE {pe} received a value for an unknown future")
        };
        f(bytes);
        task
    }

    /// PE `pe` wants the value of exported future `id` in its slot `sub`.
    pub(super) fn subscribe(&self, out: &Outbox, id: u64, pe: u32, sub: u64) {
        let exports = self.exports.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = exports.get(&id) else {
            panic!("rhizome: PE {pe} asked for an unknown exported future")
        };
        (e.subscribe)(out, pe, sub);
    }

    /// Forgets the exported and imported futures at the end of a run.
    pub(super) fn clear(&self) {
        self.exports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.imports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// Encodes a job's outcome for a message.
pub(super) fn encode_result<T: Serialize>(r: &Result<T, JobError>) -> Vec<u8> {
    let r: Result<&T, &str> = match r {
        Ok(v) => Ok(v),
        Err(e) => Err(&e.0),
    };
    match postcard::to_stdvec(&r) {
        Ok(b) => b,
        Err(e) => postcard::to_stdvec(&Err::<&T, String>(format!(
            "the result could not be encoded: {e}"
        )))
        .expect("a string encodes"),
    }
}

/// Decodes what [`encode_result`] wrote.
pub(super) fn decode_result<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JobError> {
    match postcard::from_bytes::<Result<T, String>>(bytes) {
        Ok(r) => r.map_err(JobError),
        Err(e) => Err(JobError(format!("the result could not be decoded: {e}"))),
    }
}

/// Fills a future's slot from the bytes of a `Value` message.
pub(super) type Fulfiller = Box<dyn FnOnce(&[u8]) + Send>;

/// A fulfiller for a state whose value arrives in a message.
pub(super) fn remote_fulfiller<T: DeserializeOwned + Send + 'static>(
    state: Arc<State<T>>,
) -> Fulfiller {
    Box::new(move |bytes| state.fulfill(decode_result(bytes)))
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Serialize for Future<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (pe, id) = match self.state.home {
            Some(h) => h,
            None => {
                let sh = current_shared().ok_or_else(|| {
                    serde::ser::Error::custom(
                        "rhizome: a Future can only be serialized inside Tasks::run",
                    )
                })?;
                let id = *self.state.export_id.get_or_init(|| sh.values.next_id());
                // (Re-)register: the table is cleared at the end of every run.
                sh.values
                    .exports
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(id)
                    .or_insert_with(|| {
                        let st = Arc::clone(&self.state);
                        let any: Arc<dyn Any + Send + Sync> = st.clone();
                        let subscribe: Subscribe =
                            Box::new(move |out: &Outbox, pe: u32, sub: u64| {
                                let out = out.clone();
                                st.on_ready(Box::new(move |r| {
                                    let _ = out.send((
                                        pe as usize,
                                        Msg::Value {
                                            id: sub,
                                            bytes: encode_result(r),
                                        },
                                    ));
                                }));
                            });
                        Export { any, subscribe }
                    });
                (sh.pe as u32, id)
            }
        };
        (pe, id).serialize(s)
    }
}

impl<'de, T: Serialize + DeserializeOwned + Send + 'static> Deserialize<'de> for Future<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (pe, id) = <(u32, u64)>::deserialize(d)?;
        let sh = current_shared().ok_or_else(|| {
            serde::de::Error::custom("rhizome: a Future can only be deserialized inside Tasks::run")
        })?;
        let wrong = || serde::de::Error::custom("rhizome: a Future was decoded as the wrong type");
        if pe as usize == sh.pe {
            let any = sh
                .values
                .exports
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&id)
                .map(|e| Arc::clone(&e.any))
                .ok_or_else(|| serde::de::Error::custom("rhizome: unknown exported future"))?;
            return any
                .downcast::<State<T>>()
                .map(Future::from_state)
                .map_err(|_| wrong());
        }
        let mut imports = sh.values.imports.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(any) = imports.get(&(pe, id)) {
            return Arc::clone(any)
                .downcast::<State<T>>()
                .map(Future::from_state)
                .map_err(|_| wrong());
        }
        let state = Arc::new(State::<T>::with_home(Some((pe, id))));
        state
            .thief
            .store(REMOTE_THIEF + pe as u64, Ordering::Relaxed);
        imports.insert((pe, id), state.clone());
        drop(imports);
        let sub = sh
            .values
            .add_pending(remote_fulfiller(Arc::clone(&state)), false);
        sh.outbox.post(
            pe as usize,
            Msg::Subscribe {
                id,
                pe: sh.pe as u32,
                sub,
            },
        );
        Ok(Future::from_state(state))
    }
}

/// Used by waiting code when the run was stopped (another PE failed).
pub(super) fn stopped() -> ! {
    std::panic::resume_unwind(Box::new(Stopped))
}
