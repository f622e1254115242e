//! Dispatch: received buffers are split into messages and their handlers run.

use super::registry::COLLECTIVE_ID;
use crate::backoff::Backoff;
use crate::context::Ctx;
use crate::error::ok;
use crate::transport::Messages;

impl Ctx {
    /// Runs the handlers of all messages received so far; returns how many ran.
    pub fn progress(&self) -> usize {
        let mut n = 0;
        let mut uncounted = 0u64;
        while let Some((src, buf)) = ok(self.mem.t.try_recv()) {
            {
                let handlers = self.am.handlers.borrow();
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
        self.termination.count_handled(n as u64 - uncounted);
        n
    }

    /// Makes progress until `done` holds, backing off while there is nothing to do.
    pub(crate) fn wait_until(&self, done: impl FnMut(&Ctx) -> bool) {
        self.wait_until_with(Backoff::new(64), done)
    }

    /// [`wait_until`](Ctx::wait_until), waiting with `backoff` (a fresh one).
    pub(crate) fn wait_until_with(&self, mut backoff: Backoff, mut done: impl FnMut(&Ctx) -> bool) {
        while !done(self) {
            if self.progress() > 0 {
                backoff.reset();
                // Handlers may have buffered replies or forwards that others wait for.
                self.flush();
            } else {
                backoff.snooze();
            }
        }
    }
}
