//! One-sided find-or-put on one partition: the design of the thesis' Figure 3.5.
//!
//! Linear probing over chunks of `C` buckets, each fetched with one get (two where a chunk
//! wraps around the end of the partition), at most `M` chunks. An empty bucket is claimed
//! with a compare-and-swap; the winner then writes the key and sets the written bit; a
//! reader that meets a claimed bucket with its own fingerprint waits for that bit before
//! it compares keys.
//!
//! The first chunk is read with one blocking get into a buffer kept by the thread (no
//! allocation). Only a probe that runs past it requests chunks ahead: from the second
//! chunk on, the next chunk is requested before the current one is scanned. The thesis'
//! design prefetched from the start, but at load factor 0.5 and `C = 8` 96 % of the probes
//! end in their first chunk (Lemma 1), so that prefetch was a wasted get nearly always
//! (its section 3.5.3 saw the same). A partition the transport holds in this process's
//! memory is probed in place instead ([`super::direct`]).

use super::layout::{Geometry, Home, KeyWords, OCCUPIED, WRITTEN};
use super::{Full, Stats};
use rhizome::backoff::Backoff;
use rhizome::memory::GetHandle;
use rhizome::{GlobalArray, GlobalPtr, Memory};
use std::cell::RefCell;
use std::sync::atomic::AtomicU64;

/// One PE's handle on every partition: the words and the probing parameters.
#[derive(Clone)]
pub(crate) struct Partitions {
    pub(crate) mem: Memory,
    pub(crate) words: GlobalArray<u64>,
    pub(crate) geo: Geometry,
    pub(crate) chunk: usize,
    pub(crate) max_chunks: usize,
    /// Whether partitions in this process's memory are probed in place.
    pub(crate) direct: bool,
}

thread_local! {
    /// The chunk buffer of this thread's probes, kept between operations: neither an
    /// allocation nor a zeroing per operation (a zeroed 4 KiB stack array cost more than
    /// the whole probe).
    static CHUNK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// A chunk in flight: one get, or two where it wraps.
type InFlight = Vec<GetHandle<u64>>;

impl Partitions {
    /// The bucket word of `slot` on `pe`.
    #[inline]
    pub(crate) fn bucket(&self, pe: usize, slot: usize) -> GlobalPtr<u64> {
        self.words.ptr(pe, slot * self.geo.entry_words())
    }

    /// First bucket and length of chunk `i` of a probe starting at `home`, or `None` past
    /// the last one. A probe covers at most `C * M` buckets and never the same one twice.
    #[inline]
    fn chunk_range(&self, home: usize, i: usize) -> Option<(usize, usize)> {
        let total = (self.chunk * self.max_chunks).min(self.geo.slots);
        let first = i * self.chunk;
        (first < total).then(|| {
            (
                (home + first) % self.geo.slots,
                self.chunk.min(total - first),
            )
        })
    }

    /// The pieces of `len` entries from `start`, split where they wrap.
    #[inline]
    fn pieces(&self, start: usize, len: usize) -> [(usize, usize); 2] {
        let head = len.min(self.geo.slots - start);
        [(start, head), (0, len - head)]
    }

    fn fetch_nb(&self, pe: usize, (start, len): (usize, usize), stats: &mut Stats) -> InFlight {
        let e = self.geo.entry_words();
        self.pieces(start, len)
            .into_iter()
            .filter(|&(_, n)| n > 0)
            .map(|(s, n)| {
                stats.gets += 1;
                self.mem.get_nb(self.words.ptr(pe, s * e), n * e)
            })
            .collect()
    }

    /// Reads a chunk into `buf` (exactly its size), with one blocking get per piece.
    fn fetch_into(
        &self,
        pe: usize,
        (start, len): (usize, usize),
        buf: &mut [u64],
        stats: &mut Stats,
    ) {
        let e = self.geo.entry_words();
        let mut at = 0;
        for (s, n) in self.pieces(start, len) {
            if n > 0 {
                stats.gets += 1;
                self.mem
                    .get_into(self.words.ptr(pe, s * e), &mut buf[at..at + n * e]);
                at += n * e;
            }
        }
    }

    /// Finds `key` in the partition of `home.pe`, or inserts it there: the slot, and
    /// whether this call inserted it.
    pub(crate) fn find_or_put(
        &self,
        home: Home,
        key: &KeyWords,
        stats: &mut Stats,
    ) -> Result<(usize, bool), Full> {
        if let Some(words) = self.direct_words(home.pe) {
            return self.probe_direct(words, home, key, stats);
        }
        self.with_scratch(|buf| self.probe(home, key, stats, buf, false))
    }

    /// The partition of `pe` in this process's memory, if the transport holds it there
    /// and the table may use it.
    #[inline]
    pub(crate) fn direct_words(&self, pe: usize) -> Option<&[AtomicU64]> {
        if self.direct {
            self.mem.direct_words(self.words, pe)
        } else {
            None
        }
    }

    /// Runs `f` with this thread's chunk buffer.
    #[inline]
    pub(crate) fn with_scratch<R>(&self, f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
        CHUNK.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => f(&mut buf),
            // Only if a probe ever ran inside a probe on this thread.
            Err(_) => f(&mut Vec::new()),
        })
    }

    /// Words of one chunk.
    #[inline]
    pub(crate) fn chunk_words(&self) -> usize {
        self.chunk * self.geo.entry_words()
    }

    /// Requests the first chunk of a probe from `home` into `buf` (exactly
    /// [`chunk_words`](Self::chunk_words) long, or shorter where the probe's reach is):
    /// complete after the next `quiet`.
    ///
    /// # Safety
    /// `buf` must not be read, written or freed before this PE's next `quiet`.
    pub(crate) unsafe fn request_first(&self, home: Home, buf: &mut [u64], stats: &mut Stats) {
        let e = self.geo.entry_words();
        let (start, len) = self.chunk_range(home.slot, 0).expect("a chunk");
        let mut at = 0;
        for (s, n) in self.pieces(start, len) {
            if n > 0 {
                stats.gets += 1;
                let dst = &mut buf[at..at + n * e];
                // SAFETY: `dst` stays untouched until the caller's quiet (its contract).
                unsafe { self.mem.get_nbi_into(self.words.ptr(home.pe, s * e), dst) };
                at += n * e;
            }
        }
    }

    /// The probe of the one-sided path; `scratch` holds the first chunk already if
    /// `first_fetched` (a batch requested it, see [`request_first`](Self::request_first)).
    pub(crate) fn probe(
        &self,
        home: Home,
        key: &KeyWords,
        stats: &mut Stats,
        scratch: &mut Vec<u64>,
        first_fetched: bool,
    ) -> Result<(usize, bool), Full> {
        stats.ops += 1;
        let e = self.geo.entry_words();
        let pe = home.pe;
        if scratch.len() < self.chunk_words() {
            scratch.resize(self.chunk_words(), 0);
        }
        let whole = &mut scratch[..];
        let mut next: Option<InFlight> = None;
        let mut i = 0;
        while let Some(range) = self.chunk_range(home.slot, i) {
            let buf = &mut whole[..range.1 * e];
            if i == 0 {
                if !first_fetched {
                    self.fetch_into(pe, range, buf, stats);
                }
            } else {
                // Past the first chunk: this one (unless requested ahead), and the next
                // requested before this one is scanned.
                let current = next
                    .take()
                    .unwrap_or_else(|| self.fetch_nb(pe, range, stats));
                next = self
                    .chunk_range(home.slot, i + 1)
                    .map(|r| self.fetch_nb(pe, r, stats));
                let mut at = 0;
                for h in current {
                    let piece = h.wait();
                    buf[at..at + piece.len()].copy_from_slice(&piece);
                    at += piece.len();
                }
            }
            stats.chunks += 1;
            for (j, entry) in buf.chunks_exact(e).enumerate() {
                let slot = (range.0 + j) % self.geo.slots;
                let word = entry[0];
                if word == 0 {
                    stats.atomics += 1;
                    match self.mem.compare_exchange(
                        self.bucket(pe, slot),
                        0,
                        OCCUPIED | home.fingerprint,
                    ) {
                        Ok(_) => {
                            self.publish(pe, slot, key, home.fingerprint, stats);
                            stats.inserted += 1;
                            return Ok((slot, true));
                        }
                        Err(now) if self.holds(now, home, pe, slot, key, stats) => {
                            return Ok((slot, false));
                        }
                        Err(_) => {}
                    }
                } else if word & WRITTEN != 0
                    && word & !OCCUPIED & !WRITTEN == home.fingerprint
                    && &entry[1..] == key.as_slice()
                    && !key.is_zero()
                {
                    // Key words equal to a non-zero key cannot be a stale read: an entry's
                    // words are only ever zero or its one key.
                    return Ok((slot, false));
                } else if self.holds(word, home, pe, slot, key, stats) {
                    return Ok((slot, false));
                }
            }
            i += 1;
        }
        Err(Full { pe })
    }

    /// Writes the key of a bucket this PE claimed, then sets its written bit. The put is
    /// complete (visible) before the bit is set, so a reader that sees the bit reads the key.
    fn publish(&self, pe: usize, slot: usize, key: &KeyWords, fp: u64, stats: &mut Stats) {
        let bucket = self.bucket(pe, slot);
        self.mem.put_slice(bucket.offset_by(1), key.as_slice());
        self.mem.store(bucket, OCCUPIED | WRITTEN | fp);
        stats.puts += 1;
        stats.atomics += 1;
    }

    /// Whether the bucket whose word was seen as `word` holds `key`: a different
    /// fingerprint says no at once; otherwise wait for the written bit (the writer sets it
    /// right after its claim) and compare the key words read after it.
    fn holds(
        &self,
        word: u64,
        home: Home,
        pe: usize,
        slot: usize,
        key: &KeyWords,
        stats: &mut Stats,
    ) -> bool {
        if word & OCCUPIED == 0 || word & !OCCUPIED & !WRITTEN != home.fingerprint {
            return false;
        }
        let bucket = self.bucket(pe, slot);
        // The written bit comes right after the writer's claim: spin, then yield the core,
        // which on an oversubscribed machine the writer may need.
        let mut wait = Backoff::new(64);
        while word & WRITTEN == 0 && self.mem.load(bucket) & WRITTEN == 0 {
            stats.atomics += 1;
            wait.snooze();
        }
        let mut stored = [0u64; super::layout::MAX_KEY_WORDS];
        let stored = &mut stored[..key.n];
        self.mem.get_into(bucket.offset_by(1), stored);
        stats.gets += 1;
        stored == key.as_slice()
    }

    /// The key in `slot` of `pe`, if one has been written there.
    pub(crate) fn read(&self, pe: usize, slot: usize) -> Option<Vec<u64>> {
        // The bit first, the key after: one get of both could see the bit and stale words.
        let bucket = self.bucket(pe, slot);
        (self.mem.load(bucket) & WRITTEN != 0)
            .then(|| self.mem.get_slice(bucket.offset_by(1), self.geo.key_words))
    }
}
