//! Collectives of the `local` transport: a generation-counting barrier that watches the
//! abort flag (so a failed PE wakes everybody), and a reduction through per-PE slots.

use super::LocalTransport;
use crate::backoff::Backoff;
use crate::transport::{Collectives, ReduceOp, Transport, TransportError};
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Collectives for LocalTransport {
    fn barrier(&self) -> Result<(), TransportError> {
        let f = &*self.fabric;
        f.check_abort()?;
        let generation = f.barrier_generation.load(Ordering::Acquire);
        if f.barrier_count.fetch_add(1, Ordering::AcqRel) + 1 == f.pes {
            f.barrier_count.store(0, Ordering::Relaxed);
            f.barrier_generation.fetch_add(1, Ordering::AcqRel);
            return Ok(());
        }
        let mut backoff = Backoff::with_nap(200, 20_000, Duration::from_micros(50));
        while f.barrier_generation.load(Ordering::Acquire) == generation {
            f.check_abort()?;
            backoff.snooze();
        }
        Ok(())
    }

    fn allreduce_u64(&self, values: &mut [u64], op: ReduceOp) -> Result<(), TransportError> {
        let f = &*self.fabric;
        {
            let mut slot = f.reduce_slots[self.pe]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            slot.clear();
            slot.extend_from_slice(values);
        }
        self.barrier()?;
        for (pe, slot) in f.reduce_slots.iter().enumerate() {
            let slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if slot.len() != values.len() {
                let msg = format!(
                    "allreduce: PE {} passed {} values, PE {pe} passed {}",
                    self.pe,
                    values.len(),
                    slot.len()
                );
                drop(slot);
                self.abort(&msg);
                return Err(TransportError::Collective(msg));
            }
            if pe == 0 {
                values.copy_from_slice(&slot);
            } else {
                for (v, s) in values.iter_mut().zip(slot.iter()) {
                    *v = op.apply(*v, *s);
                }
            }
        }
        // Nobody may overwrite a slot before everyone has read all of them.
        self.barrier()
    }
}
