//! Messages of the `local` transport: buffers move between PEs through channels without
//! being copied, and emptied ones are kept for reuse.

use super::LocalTransport;
use crate::transport::{ArrivalHook, Messages, TransportError};
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

/// Most emptied buffers kept per PE for reuse.
const MAX_FREE_BUFFERS: usize = 64;

pub(super) struct Inbox {
    tx: Sender<(usize, Vec<u8>)>,
    rx: Receiver<(usize, Vec<u8>)>,
    free: Mutex<Vec<Vec<u8>>>,
    /// Called after each delivery, if set: wakes a PE that sleeps until it has work.
    hook: RwLock<Option<ArrivalHook>>,
    /// Whether `hook` is set (so that a send without one takes no lock).
    hooked: AtomicBool,
}

impl Inbox {
    pub(super) fn new() -> Inbox {
        let (tx, rx) = unbounded();
        Inbox {
            tx,
            rx,
            free: Mutex::new(Vec::new()),
            hook: RwLock::new(None),
            hooked: AtomicBool::new(false),
        }
    }
}

impl Messages for LocalTransport {
    #[inline]
    fn send(&self, pe: usize, buf: Vec<u8>) -> Result<(), TransportError> {
        let inbox = self.fabric.inboxes.get(pe).ok_or_else(|| {
            TransportError::Other(format!(
                "send to PE {pe}, but there are {} PEs",
                self.fabric.pes
            ))
        })?;
        inbox
            .tx
            .send((self.pe, buf))
            .map_err(|_| TransportError::Other("inbox closed".into()))?;
        // SeqCst pairs with the store in `set_arrival_hook`: a hook set before this send
        // started is seen.
        if inbox.hooked.load(Ordering::SeqCst) {
            let hook = inbox.hook.read().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(h) = hook {
                h();
            }
        }
        Ok(())
    }

    fn set_arrival_hook(&self, hook: Option<ArrivalHook>) -> bool {
        let inbox = &self.fabric.inboxes[self.pe];
        let set = hook.is_some();
        *inbox.hook.write().unwrap_or_else(|e| e.into_inner()) = hook;
        inbox.hooked.store(set, Ordering::SeqCst);
        true
    }

    #[inline]
    fn try_recv(&self) -> Result<Option<(usize, Vec<u8>)>, TransportError> {
        self.fabric.check_abort()?;
        Ok(self.fabric.inboxes[self.pe].rx.try_recv().ok())
    }

    fn recycle(&self, mut buf: Vec<u8>) {
        buf.clear();
        let mut free = self.fabric.inboxes[self.pe]
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if free.len() < MAX_FREE_BUFFERS {
            free.push(buf);
        }
    }

    fn buffer(&self, capacity: usize) -> Vec<u8> {
        let reused = self.fabric.inboxes[self.pe]
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        match reused {
            Some(mut b) => {
                b.reserve(capacity);
                b
            }
            None => Vec::with_capacity(capacity),
        }
    }
}
