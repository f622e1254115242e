//! The scheduler's wire format: its messages between PEs, how a job travels (its type's
//! id, the owner of its future, its bytes), and the registry that turns those bytes back
//! into a job on the receiving PE.

use super::job::{Dest, Job, JobTask, Task};
use crate::am::message::{encode_prefixed, take_prefixed};
use crate::world::{Am, Ctx};
use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::RwLock;

/// A job encoded for another PE: its type, the owner of its future, and its bytes.
#[derive(Serialize, Deserialize)]
pub(super) struct Wire {
    pub(super) kind: u64,
    pub(super) owner: u32,
    pub(super) id: u64,
    // Encoded as one block: plain serde writes and reads a `Vec<u8>` byte by byte, which
    // made a megabyte job cost milliseconds to pass on.
    #[serde(with = "serde_bytes")]
    pub(super) bytes: Vec<u8>,
}

/// The scheduler's messages between PEs.
#[derive(Serialize, Deserialize)]
pub(super) enum Msg {
    /// PE `thief` is out of work: send it one job, or half of the stealable ones.
    StealReq { thief: u32, many: bool },
    /// Jobs for the receiver: the answer to a steal request (`reply`), or initial sharing.
    Transfer { reply: bool, tasks: Vec<Wire> },
    /// A job to run on the receiver (`async_on`).
    Run { task: Wire },
    /// The encoded outcome of a job, or of an exported future, for the receiver's slot `id`.
    Value {
        id: u64,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// PE `pe` wants the value of the receiver's exported future `id` in its slot `sub`.
    Subscribe { id: u64, pe: u32, sub: u64 },
    /// Termination wave `wave`: send your counts to PE 0.
    CountReq { wave: u64 },
    /// The sender's counts for wave `wave`.
    CountRep {
        wave: u64,
        created: u64,
        completed: u64,
    },
    /// Every job has completed: leave the run.
    Stop,
}

/// A scheduler message on the wire: postcard bytes after a length prefix, written straight
/// into the aggregation buffer and decoded straight from the receive buffer (jobs and
/// values can be megabytes, and every copy is on a steal's critical path).
pub(super) struct Packet(pub(super) Msg);

fn encode_packet(m: &Msg, out: &mut Vec<u8>) {
    encode_prefixed(out, |out| {
        *out = postcard::to_extend(m, std::mem::take(out)).expect("scheduler messages encode");
    });
}

impl crate::Message for Packet {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_packet(&self.0, out);
    }
    fn decode(input: &mut &[u8]) -> Self {
        Packet(postcard::from_bytes(take_prefixed(input)).expect("scheduler messages decode"))
    }
}

/// Sends `m` to PE `pe` (from the PE's main thread, which holds the context).
pub(super) fn send_msg(ctx: &Ctx, am: Am<Packet>, pe: usize, m: &Msg) {
    ctx.send_encoded(pe, am, |out| encode_packet(m, out));
}

/// Messages produced on any worker thread, sent by the main thread at its next poll.
pub(super) struct Outbox {
    tx: Sender<(usize, Msg)>,
    rx: Receiver<(usize, Msg)>,
}

impl Outbox {
    pub(super) fn new() -> Outbox {
        let (tx, rx) = crossbeam_channel::unbounded();
        Outbox { tx, rx }
    }

    pub(super) fn post(&self, pe: usize, m: Msg) {
        let _ = self.tx.send((pe, m));
    }

    /// A handle that posts here from a callback that outlives the borrow of the outbox.
    pub(super) fn sender(&self) -> Sender<(usize, Msg)> {
        self.tx.clone()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Takes the next queued message.
    pub(super) fn take(&self) -> Option<(usize, Msg)> {
        self.rx.try_recv().ok()
    }
}

/// The id of job type `J` on the wire.
pub(super) fn kind_of<J: 'static>() -> u64 {
    // FNV-1a of the type name: the same on every PE of one program, whatever the
    // registration order.
    std::any::type_name::<J>()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

/// Encodes job `job` for the wire.
pub(super) fn encode_job<J: Job>(job: &J, owner: u32, id: u64) -> Wire {
    let bytes = postcard::to_stdvec(job).unwrap_or_else(|e| {
        panic!(
            "rhizome: job {} could not be encoded: {e}",
            std::any::type_name::<J>()
        )
    });
    Wire {
        kind: kind_of::<J>(),
        owner,
        id,
        bytes,
    }
}

type Decoder = fn(&[u8], u32, u64) -> Task;

fn decode_job<J: Job>(bytes: &[u8], owner: u32, id: u64) -> Task {
    match postcard::from_bytes::<J>(bytes) {
        Ok(job) => Box::new(JobTask {
            job,
            dest: Dest::Remote { owner, id },
        }),
        Err(e) => panic!(
            "rhizome: job {} could not be decoded: {e}",
            std::any::type_name::<J>()
        ),
    }
}

/// The job types this PE can decode, by wire id.
#[derive(Default)]
pub(super) struct Decoders(RwLock<HashMap<u64, Decoder>>);

impl Decoders {
    pub(super) fn register<J: Job>(&self) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kind_of::<J>(), decode_job::<J>);
    }

    /// The job `w` carries; PE `pe` (this one) must have registered its type.
    pub(super) fn decode(&self, w: Wire, pe: usize) -> Task {
        let d = self
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&w.kind)
            .copied();
        let Some(d) = d else {
            panic!(
                "rhizome: PE {pe} received a job of a type it has not registered (Tasks::register must be called on every PE)"
            )
        };
        d(&w.bytes, w.owner, w.id)
    }
}
