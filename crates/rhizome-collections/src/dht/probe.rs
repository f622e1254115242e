//! One-sided find-or-put on one partition: the design of the thesis' Figure 3.5.
//!
//! Linear probing over chunks of `C` buckets, each fetched with one get (two where a chunk
//! wraps around the end of the partition), at most `M` chunks. A remote partition's next
//! chunk is requested before the current one is scanned, so that a probe that runs past
//! its first chunk does not wait a whole round trip again; a local partition is read chunk
//! by chunk, where a prefetch would only add a copy (the thesis' section 3.5.1 found the
//! same). An empty bucket is claimed with a compare-and-swap; the winner then writes the
//! key and sets the written bit; a reader that meets a claimed bucket with its own
//! fingerprint waits for that bit before it compares keys.

use super::layout::{Geometry, Home, KeyWords, OCCUPIED, WRITTEN};
use super::{Full, Stats};
use rhizome::memory::GetHandle;
use rhizome::{GlobalArray, GlobalPtr, Memory};
use std::cell::RefCell;

/// One PE's handle on every partition: the words and the probing parameters.
#[derive(Clone)]
pub(crate) struct Partitions {
    pub(crate) mem: Memory,
    pub(crate) words: GlobalArray<u64>,
    pub(crate) geo: Geometry,
    pub(crate) chunk: usize,
    pub(crate) max_chunks: usize,
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
        CHUNK.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => self.probe(home, key, stats, &mut buf),
            // Only if a probe ever ran inside a probe on this thread.
            Err(_) => self.probe(home, key, stats, &mut Vec::new()),
        })
    }

    fn probe(
        &self,
        home: Home,
        key: &KeyWords,
        stats: &mut Stats,
        scratch: &mut Vec<u64>,
    ) -> Result<(usize, bool), Full> {
        stats.ops += 1;
        let e = self.geo.entry_words();
        let pe = home.pe;
        let remote = pe != self.mem.my_pe();
        if scratch.len() < self.chunk * e {
            scratch.resize(self.chunk * e, 0);
        }
        let whole = &mut scratch[..];
        let mut next = match self.chunk_range(home.slot, 0) {
            Some(r) if remote => Some(self.fetch_nb(pe, r, stats)),
            _ => None,
        };
        let mut i = 0;
        while let Some(range) = self.chunk_range(home.slot, i) {
            let buf = &mut whole[..range.1 * e];
            if remote {
                let current = next.take().expect("requested one chunk ahead");
                next = self
                    .chunk_range(home.slot, i + 1)
                    .map(|r| self.fetch_nb(pe, r, stats));
                let mut at = 0;
                for h in current {
                    let piece = h.wait();
                    buf[at..at + piece.len()].copy_from_slice(&piece);
                    at += piece.len();
                }
            } else {
                self.fetch_into(pe, range, buf, stats);
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
        let mut spins = 0u32;
        while word & WRITTEN == 0 && self.mem.load(bucket) & WRITTEN == 0 {
            stats.atomics += 1;
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
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
