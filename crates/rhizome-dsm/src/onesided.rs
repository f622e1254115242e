//! Diffs and write notices written with one-sided puts ([`Transfer::OneSided`]), the
//! paper's RDMA alternative to packing them into messages (its Table 2).
//!
//! **Why a landing area, not the home's page.** Over VIA the paper writes each contiguous
//! run of a diff straight into the home's page (one RDMA write per run), then sends one
//! regular message per home saying which pages were updated. Here a home's pages live in
//! the DSM's `memfd`, which the transport cannot address: exposing it would need a window
//! over existing memory in each of the `mpi` transport's three one-sided modes (and its
//! shared-memory windows can only be allocated by MPI, not laid over a file). So the
//! memory a put may target is set aside in the transport's global memory at
//! [`crate::Dsm::new`], as VIA's registered buffers are set aside at start-up:
//!
//! - **Diffs**: every PE keeps a *ring* per writer. At the end of an interval a writer
//!   packs its diffs for one home as records (`page: u32, len: u32, runs`) and puts them
//!   into its ring at that home with one put (two where the ring wraps), then sends the
//!   home one short message, *landed* `(writer, start, bytes, diffs)`, the paper's "at
//!   least one regular message ... informing the home node which pages were updated".
//!   The home applies the records from its own memory through its runtime view and
//!   answers *applied* `(home, bytes)`, which frees the ring space and counts as the
//!   diff's acknowledgement, so every wait for acknowledged diffs works unchanged. A
//!   writer whose ring at a home is full waits (serving messages) for *applied*.
//! - **Write notices**: every PE keeps a replica of the *bins* (the paper's Fig. 5): one
//!   cyclic stack of 32-bit words per PE, holding that PE's intervals flattened (a page
//!   count, then the pages), each word at the same logical index on every PE. A PE that
//!   passes notices on (a lock grant, a barrier arrival) puts the words the receiver
//!   lacks straight into the receiver's replica, one put per stack (two at the wrap), and
//!   the message carries only `(pe, first interval, intervals, position, words)` per
//!   stack. The index of a PE's first interval since the last barrier is known alike
//!   everywhere (every PE learns every interval at a barrier), so all replicas agree. The
//!   words of two barrier epochs must fit a stack (a PE may still read the last epoch's
//!   arrivals while others write the next one's); more ends the run with an error naming
//!   [`crate::DsmConfig::one_sided_sizes`], where the paper's fixed stacks would be overwritten.
//!
//! A put completes before the message that announces it is sent, so the message's handler
//! sees the data (the runtime's ordering rule for messages).

use crate::Shared;
use crate::config::{DsmConfig, Transfer};
use crate::diff;
use crate::protocol::{Pe, Protocol};
use crate::wire::{flatten, pack_notices, unflatten, unpack_notices};
use rhizome::{Am, Ctx, GlobalArray, Memory};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// The positions of one PE's one-sided traffic, kept with its protocol state.
pub(crate) struct Cursors {
    /// Bytes this PE has put into its ring at each home, and bytes each home applied.
    ring_head: Vec<u64>,
    ring_freed: Vec<u64>,
    /// Per PE `q`: the logical word index in `q`'s bins stack of the first interval after
    /// the last barrier, and of the one after the barrier before it.
    bin_base: Vec<u64>,
    bin_floor: Vec<u64>,
}

impl Cursors {
    pub(crate) fn new(pes: usize) -> Cursors {
        Cursors {
            ring_head: vec![0; pes],
            ring_freed: vec![0; pes],
            bin_base: vec![0; pes],
            bin_floor: vec![0; pes],
        }
    }
}

/// Advances the bins' bases past the intervals of the epoch a barrier just closed: call it
/// when every PE's intervals up to the barrier are in `pe.logs`, before they are cleared.
pub(crate) fn close_bins_epoch(pe: &mut Pe) {
    for q in 0..pe.pes {
        let words: usize = pe.logs[q].iter().map(|i| 1 + i.len()).sum();
        let c = &mut pe.cursors;
        c.bin_floor[q] = c.bin_base[q];
        c.bin_base[q] += words as u64;
    }
}

/// The one-sided side of a PE: the memory puts land in, and its two messages.
pub(crate) struct OneSided {
    diffs: Transfer,
    notices: Transfer,
    mem: Memory,
    /// `pes` rings of `ring_bytes` per PE (writer `q`'s at byte `q * ring_bytes`).
    rings: Option<GlobalArray<u8>>,
    ring_bytes: usize,
    /// `pes` stacks of `bin_words` per PE (PE `q`'s at word `q * bin_words`).
    bins: Option<GlobalArray<u32>>,
    bin_words: usize,
    /// To a home: `(writer, ring start, bytes, diffs)` landed in the writer's ring.
    landed: Am<(u32, u64, u32, u32)>,
}

/// Copies `out.len()` bytes (or words) from the circular area of `cap` elements at
/// `base` on this PE, starting `start` elements in.
fn read_circular<T: rhizome::Pod>(
    mem: &Memory,
    area: GlobalArray<T>,
    base: usize,
    cap: usize,
    start: u64,
    out: &mut [T],
) {
    let me = mem.my_pe();
    let pos = (start % cap as u64) as usize;
    let first = out.len().min(cap - pos);
    let (a, b) = out.split_at_mut(first);
    mem.get_into(area.ptr(me, base + pos), a);
    if !b.is_empty() {
        mem.get_into(area.ptr(me, base), b);
    }
}

/// Puts `src` into PE `to`'s circular area of `cap` elements at `base`, starting `start`
/// elements in; returns the puts issued.
fn put_circular<T: rhizome::Pod>(
    mem: &Memory,
    area: GlobalArray<T>,
    to: usize,
    (base, cap): (usize, usize),
    start: u64,
    src: &[T],
) -> u64 {
    let pos = (start % cap as u64) as usize;
    let first = src.len().min(cap - pos);
    mem.put_slice(area.ptr(to, base + pos), &src[..first]);
    if first < src.len() {
        mem.put_slice(area.ptr(to, base), &src[first..]);
        return 2;
    }
    1
}

impl OneSided {
    /// Collective: allocates the rings and bins the configuration asks for, and registers
    /// the two messages (on every PE, whatever the configuration, so ids stay in step).
    pub(crate) fn new(
        ctx: &Ctx,
        config: &DsmConfig,
        shared: &Arc<Shared>,
        pe: &Rc<RefCell<Pe>>,
    ) -> OneSided {
        let pes = ctx.num_pes();
        let rings =
            (config.diffs == Transfer::OneSided).then(|| ctx.alloc::<u8>(pes * config.ring_bytes));
        let bins = (config.notices == Transfer::OneSided)
            .then(|| ctx.alloc::<u32>(pes * config.bin_words));
        let st = pe.clone();
        let applied = ctx.register(move |_ctx, (home, bytes): (u32, u32)| {
            let mut pe = st.borrow_mut();
            pe.unacked[home as usize] -= 1;
            pe.cursors.ring_freed[home as usize] += bytes as u64;
        });
        let (sh, st, ring_bytes) = (shared.clone(), pe.clone(), config.ring_bytes);
        let landed = ctx.register(
            move |ctx, (from, start, len, count): (u32, u64, u32, u32)| {
                let rings = rings.expect("one-sided diffs land only where rings exist");
                let mut buf = vec![0u8; len as usize];
                let base = from as usize * ring_bytes;
                read_circular(ctx.memory(), rings, base, ring_bytes, start, &mut buf);
                let mut rest = &buf[..];
                for _ in 0..count {
                    let (head, tail) = rest.split_at(8);
                    let p = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
                    let n = u32::from_le_bytes(head[4..].try_into().expect("4 bytes")) as usize;
                    let (d, tail) = tail.split_at(n);
                    sh.region.with_page(p as usize, |page| diff::apply(d, page));
                    rest = tail;
                }
                assert!(rest.is_empty(), "rhizome: malformed one-sided diff batch");
                let mut pe = st.borrow_mut();
                pe.stats.diffs_applied += count as u64;
                pe.stats.messages += 1;
                ctx.send(from as usize, applied, &(pe.me as u32, len));
            },
        );
        OneSided {
            diffs: config.diffs,
            notices: config.notices,
            mem: ctx.memory().clone(),
            rings,
            ring_bytes: config.ring_bytes,
            bins,
            bin_words: config.bin_words,
            landed,
        }
    }

    /// Whether diffs go by puts.
    pub(crate) fn diffs_by_put(&self) -> bool {
        self.diffs == Transfer::OneSided
    }

    /// The payload that passes write notices `list` (`(pe, from, intervals)` as
    /// [`Pe::notices_beyond`] gives them) on to PE `to`: the packed notices, or, by puts,
    /// their place in `to`'s bins. Returns it, the puts issued and the bytes they wrote.
    pub(crate) fn ship_notices(
        &self,
        pe: &Pe,
        to: usize,
        list: &[(u32, u32, &[Vec<u32>])],
    ) -> (Vec<u32>, u64, u64) {
        let Some(bins) = self.bins.filter(|_| self.notices == Transfer::OneSided) else {
            return (pack_notices(list), 0, 0);
        };
        let cap = self.bin_words;
        let mut out = Vec::with_capacity(list.len() * 5);
        let (mut puts, mut bytes) = (0, 0);
        for &(q, from, intervals) in list {
            let qi = q as usize;
            let skip = (from - pe.bases[qi]) as usize;
            let before: usize = pe.logs[qi][..skip].iter().map(|i| 1 + i.len()).sum();
            let start = pe.cursors.bin_base[qi] + before as u64;
            let words = flatten(intervals);
            let end = start + words.len() as u64;
            if end - pe.cursors.bin_floor[qi] > cap as u64 {
                panic!(
                    "rhizome: error: the write notices of PE {q} since the barrier before last take {} words, more than the {cap} of a bins stack (raise the bin_words of DsmConfig::one_sided_sizes)",
                    end - pe.cursors.bin_floor[qi]
                );
            }
            if !words.is_empty() {
                puts += put_circular(&self.mem, bins, to, (qi * cap, cap), start, &words);
                bytes += 4 * words.len() as u64;
            }
            let pos = (start % cap as u64) as u32;
            out.extend([q, from, intervals.len() as u32, pos, words.len() as u32]);
        }
        (out, puts, bytes)
    }

    /// The notices a payload of [`OneSided::ship_notices`] passed to this PE.
    pub(crate) fn receive_notices(&self, payload: &[u32]) -> Vec<(usize, u32, Vec<Vec<u32>>)> {
        let Some(bins) = self.bins.filter(|_| self.notices == Transfer::OneSided) else {
            return unpack_notices(payload);
        };
        let cap = self.bin_words;
        payload
            .chunks_exact(5)
            .map(|h| {
                let (q, from, count, pos, len) = (h[0] as usize, h[1], h[2], h[3], h[4]);
                let mut words = vec![0u32; len as usize];
                read_circular(&self.mem, bins, q * cap, cap, pos as u64, &mut words);
                let intervals = unflatten(&words);
                assert_eq!(intervals.len(), count as usize, "rhizome: torn bins stack");
                (q, from, intervals)
            })
            .collect()
    }
}

impl Protocol {
    /// Sends `diffs` (`(page, diff)`) to their homes by puts into this PE's rings there,
    /// one batch per home (several if a batch would take more than a quarter ring), each
    /// announced by a *landed* message. Not waiting for the homes to apply them.
    pub(crate) fn put_diffs(&self, ctx: &Ctx, diffs: Vec<(usize, Vec<u8>)>) {
        let mut batches: Vec<(Vec<u8>, u32)> = vec![(Vec::new(), 0); ctx.num_pes()];
        let cap = self.onesided.ring_bytes;
        for (p, d) in diffs {
            let home = self.pe.borrow().homes[p] as usize;
            if batches[home].0.len() + 8 + d.len() > cap / 4 {
                let batch = std::mem::take(&mut batches[home]);
                self.put_batch(ctx, home, batch);
            }
            let (bytes, count) = &mut batches[home];
            bytes.extend_from_slice(&(p as u32).to_le_bytes());
            bytes.extend_from_slice(&(d.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&d);
            *count += 1;
            let mut pe = self.pe.borrow_mut();
            pe.stats.diffs_created += 1;
            pe.stats.bytes += d.len() as u64;
        }
        for (home, batch) in batches.into_iter().enumerate() {
            self.put_batch(ctx, home, batch);
        }
    }

    /// Puts one batch of `count` diff records into this PE's ring at `home`, once there is
    /// room, and announces it.
    fn put_batch(&self, ctx: &Ctx, home: usize, (bytes, count): (Vec<u8>, u32)) {
        if count == 0 {
            return;
        }
        let os = &self.onesided;
        let rings = os.rings.expect("one-sided diffs have rings");
        let cap = os.ring_bytes as u64;
        let room = || {
            let pe = self.pe.borrow();
            cap - (pe.cursors.ring_head[home] - pe.cursors.ring_freed[home])
        };
        if room() < bytes.len() as u64 {
            // Full: serve messages until the home has applied enough of the ring.
            ctx.flush();
            let mut backoff = rhizome::backoff::Backoff::new(64);
            while room() < bytes.len() as u64 {
                if ctx.progress() > 0 {
                    ctx.flush();
                    backoff.reset();
                } else {
                    backoff.snooze();
                }
            }
        }
        let mut pe = self.pe.borrow_mut();
        let me = pe.me;
        let start = pe.cursors.ring_head[home];
        let at = (me * os.ring_bytes, os.ring_bytes);
        pe.stats.puts += put_circular(&os.mem, rings, home, at, start, &bytes);
        pe.stats.put_bytes += bytes.len() as u64;
        pe.cursors.ring_head[home] += bytes.len() as u64;
        pe.unacked[home] += 1;
        pe.stats.messages += 1;
        drop(pe);
        let len = bytes.len() as u32;
        ctx.send(home, os.landed, &(me as u32, start, len, count));
    }

    /// [`OneSided::ship_notices`] of what `to` lacks beyond its vector timestamp `vt`,
    /// counting the puts.
    pub(crate) fn notices_for(&self, to: usize, vt: &[u32]) -> Vec<u32> {
        let (payload, puts, bytes) = {
            let pe = self.pe.borrow();
            let list = pe.notices_beyond(vt);
            self.onesided.ship_notices(&pe, to, &list)
        };
        let mut pe = self.pe.borrow_mut();
        pe.stats.puts += puts;
        pe.stats.put_bytes += bytes;
        payload
    }
}
