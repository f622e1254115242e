//! Messages of the `local` transport: buffers move between PEs through channels without
//! being copied, and emptied ones are kept for reuse.

use super::LocalTransport;
use crate::transport::{Messages, TransportError};
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::sync::Mutex;

/// Most emptied buffers kept per PE for reuse.
const MAX_FREE_BUFFERS: usize = 64;

pub(super) struct Inbox {
    tx: Sender<(usize, Vec<u8>)>,
    rx: Receiver<(usize, Vec<u8>)>,
    free: Mutex<Vec<Vec<u8>>>,
}

impl Inbox {
    pub(super) fn new() -> Inbox {
        let (tx, rx) = unbounded();
        Inbox {
            tx,
            rx,
            free: Mutex::new(Vec::new()),
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
            .map_err(|_| TransportError::Other("inbox closed".into()))
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
