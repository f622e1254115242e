//! The two conveyor patterns Bale's kernels are made of: a one-hop scatter (items pushed
//! to their owner, which applies them) and a two-hop gather (requests to the owner, which
//! answers on a second conveyor). Written once so each kernel's conveyor version says only
//! what it sends and what the receiver does with it.

use super::Options;
use rhizome::conveyor::Conveyor;
use rhizome::{Ctx, Pod};

/// Collective: pushes every `(item, pe)` of `items` to `pe`; every PE calls
/// `apply(item, source PE)` for each item sent to it. Returns once every item of every
/// PE has been applied.
pub(super) fn scatter<T: Pod>(
    ctx: &Ctx,
    opts: &Options,
    items: impl IntoIterator<Item = (T, usize)>,
    mut apply: impl FnMut(T, usize),
) {
    let mut c = super::conveyor::<T>(ctx, opts);
    let mut next = items.into_iter();
    let mut pending = next.next();
    while c.advance(pending.is_none()) {
        while let Some((item, pe)) = pending {
            if !c.push(item, pe) {
                break;
            }
            pending = next.next();
        }
        while let Some((item, from)) = c.pull() {
            apply(item, from);
        }
    }
}

/// The lanes of the request/reply pair hold this many default aggregation buffers
/// (measured under `mpirun -np 2`, index-gather `-n 1000000 -T 100000`: 128 and 256 KiB
/// lanes took about 0.8x the CPU time of 64 KiB ones).
const PAIR_LANE_FACTOR: usize = 4;

/// Items of `[u64; 2]` per lane of a request/reply pair: `-b` if given, else
/// [`PAIR_LANE_FACTOR`] default buffers, since every request travels twice and fewer,
/// larger batches cost less per item.
pub(super) fn pair_capacity(ctx: &Ctx, opts: &Options) -> usize {
    opts.buffer
        .unwrap_or(PAIR_LANE_FACTOR * ctx.aggregation_bytes() / size_of::<[u64; 2]>())
}

/// How many requests ahead of the one being answered the gather asks the cache for the
/// table entry: enough to overlap several misses, few enough to stay in the batch.
const PREFETCH_DISTANCE: usize = 16;

/// Collective: for each `(offset, pe)` of `requests`, `got[i]` becomes `table[offset]` of
/// PE `pe` (Bale's conveyor index-gather): requests `[i, offset]` go to the owner, which
/// answers `[i, value]` on a second conveyor; a request whose answer cannot be pushed yet
/// is put back and pulled again later. The owner prefetches the entries of the requests
/// [`PREFETCH_DISTANCE`] ahead in the batch it pulls, so the table's cache misses overlap.
pub(super) fn gather(
    ctx: &Ctx,
    opts: &Options,
    requests: &[(u64, usize)],
    table: &[u64],
    got: &mut [u64],
) {
    let capacity = pair_capacity(ctx, opts);
    let mut asks = Conveyor::<[u64; 2]>::with_capacity(ctx, capacity);
    let mut answers = Conveyor::<[u64; 2]>::with_capacity(ctx, capacity);
    let mut i = 0;
    loop {
        let more = asks.advance(i == requests.len());
        if !(answers.advance(!more) || more) {
            break;
        }
        while let Some(&(q, pe)) = requests.get(i) {
            if !asks.push([i as u64, q], pe) {
                break;
            }
            i += 1;
        }
        // The first entries of a batch: fetched together before the first is needed.
        for &[_, q] in asks.ahead().iter().take(PREFETCH_DISTANCE) {
            rhizome::hint::prefetch(&table[q as usize]);
        }
        while let Some(([j, q], from)) = asks.pull() {
            if let Some(&[_, next]) = asks.ahead().get(PREFETCH_DISTANCE) {
                rhizome::hint::prefetch(&table[next as usize]);
            }
            if !answers.push([j, table[q as usize]], from) {
                asks.unpull();
                break;
            }
        }
        while let Some(([j, v], _)) = answers.pull() {
            got[j as usize] = v;
        }
    }
}
