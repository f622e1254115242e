//! Find-or-put on a partition this process holds in its own memory: the same probe and
//! claim protocol as the one-sided path ([`super::probe`]), with native atomics on the
//! partition's words instead of the one-sided layer.
//!
//! Where the transport offers the words directly ([`rhizome::Memory::direct_words`]: every
//! PE's partition with the `local` transport and with MPI ranks on one node (shared
//! windows), the own one where MPI one-sided operations are messages), a get of a chunk would only copy memory this thread can read in place,
//! and its allocation, bounds checks and fences cost more than the probe itself. The
//! scan here reads each bucket word with an acquire load (pairing with the writer's
//! release of the written bit, so the key words read after it are the key), claims with a
//! compare-and-swap and publishes with a release store: atomic with respect to other PEs'
//! one-sided operations on the same words, which the transport applies as native atomics.
//!
//! Chunks are counted as the one-sided path counts them (one per `C` buckets looked at),
//! so the round trips of Lemma 1 read the same in both; no gets, atomics or puts are
//! counted for reads, only the claim, the written bit and the waits for it.

use super::layout::{Home, KeyWords, OCCUPIED, WRITTEN};
use super::probe::Partitions;
use super::{Full, Stats};
use rhizome::backoff::Backoff;
use std::sync::atomic::{AtomicU64, Ordering};

impl Partitions {
    /// [`Partitions::find_or_put`] on `words`, the partition of `home.pe` in this
    /// process's memory.
    pub(crate) fn probe_direct(
        &self,
        words: &[AtomicU64],
        home: Home,
        key: &KeyWords,
        stats: &mut Stats,
    ) -> Result<(usize, bool), Full> {
        stats.ops += 1;
        let e = self.geo.entry_words();
        let slots = self.geo.slots;
        let reach = (self.chunk * self.max_chunks).min(slots);
        let key = key.as_slice();
        let mut slot = home.slot;
        for i in 0..reach {
            if i % self.chunk == 0 {
                stats.chunks += 1;
            }
            let entry = &words[slot * e..(slot + 1) * e];
            let mut word = entry[0].load(Ordering::Acquire);
            if word == 0 {
                stats.atomics += 1;
                let claim = OCCUPIED | home.fingerprint;
                match entry[0].compare_exchange(0, claim, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => {
                        for (w, &k) in entry[1..].iter().zip(key) {
                            w.store(k, Ordering::Relaxed);
                        }
                        // Release: whoever sees the written bit sees the key words.
                        entry[0].store(claim | WRITTEN, Ordering::Release);
                        stats.puts += 1;
                        stats.atomics += 1;
                        stats.inserted += 1;
                        return Ok((slot, true));
                    }
                    Err(now) => word = now,
                }
            }
            if word & !OCCUPIED & !WRITTEN == home.fingerprint && word & OCCUPIED != 0 {
                // The written bit comes right after the writer's claim: spin, then yield the core,
                // which on an oversubscribed machine the writer may need.
                let mut wait = Backoff::new(64);
                while word & WRITTEN == 0 {
                    stats.atomics += 1;
                    wait.snooze();
                    word = entry[0].load(Ordering::Acquire);
                }
                // After the acquire that saw the written bit: the key words are the key.
                if entry[1..]
                    .iter()
                    .zip(key)
                    .all(|(w, &k)| w.load(Ordering::Relaxed) == k)
                {
                    return Ok((slot, false));
                }
            }
            slot += 1;
            if slot == slots {
                slot = 0;
            }
        }
        Err(Full { pe: home.pe })
    }
}
