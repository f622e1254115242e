//! Owner-computes access: the keys of a remote partition travel to its owner in batches
//! (one active-message call per batch), and the owner probes its own memory and answers
//! each batch with one reply. Two messages per batch instead of two or more round trips
//! per key: the network's message rate, not its latency, limits distributed BDD
//! operations (the thesis' chapter 5 conclusion).

use super::layout::KeyWords;
use super::probe::Partitions;
use super::{DistributedHashTable, Full, Index, Stats};
use rhizome::{CallAm, CallHandle, Ctx, Pod};
use std::sync::{Arc, Mutex};

/// The reply word of a key the owner could not insert.
const FULL_REPLY: u64 = u64::MAX;

/// Collective: registers the owner's handler. A request is the keys' words one after the
/// other; the reply has one word per key: `index << 1 | inserted`, or [`FULL_REPLY`].
pub(super) fn register(
    ctx: &Ctx,
    parts: Partitions,
    served: Arc<Mutex<Stats>>,
) -> CallAm<Vec<u64>, Vec<u64>> {
    ctx.register_call(move |_ctx, request: Vec<u64>| -> Vec<u64> {
        let mut stats = Stats::default();
        let slots = parts.geo.slots as u64;
        let reply = request
            .chunks_exact(parts.geo.key_words)
            .map(|words| {
                let key = KeyWords::from_slice(words);
                let home = parts.geo.home(&key);
                match parts.find_or_put(home, &key, &mut stats) {
                    Ok((slot, inserted)) => {
                        (home.pe as u64 * slots + slot as u64) << 1 | inserted as u64
                    }
                    Err(_) => FULL_REPLY,
                }
            })
            .collect();
        served.lock().unwrap_or_else(|e| e.into_inner()).add(&stats);
        reply
    })
}

/// One batch on its way: where its keys sit in the caller's slice, and the reply.
struct Batch<'a> {
    pe: usize,
    positions: Vec<usize>,
    reply: CallHandle<'a, Vec<u64>>,
}

/// [`DistributedHashTable::find_or_put_many`] in owner-computes mode. The remote batches
/// leave first, then this PE probes its own keys while they are served.
pub(super) fn find_or_put_many<K: Pod + Eq>(
    table: &DistributedHashTable<K>,
    ctx: &Ctx,
    keys: &[K],
    stats: &mut Stats,
) -> Result<Vec<(Index, bool)>, Full> {
    let me = ctx.my_pe();
    let geo = table.parts.geo;
    let batch = table.config.batch;
    let mut results = vec![(Index(0), false); keys.len()];
    let mut local = Vec::new();
    // Per PE: the positions and the words of the batch being filled.
    let mut filling: Vec<(Vec<usize>, Vec<u64>)> = vec![(Vec::new(), Vec::new()); geo.pes];
    let mut in_flight = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let words = KeyWords::of(key);
        let home = geo.home(&words);
        if home.pe == me {
            local.push((i, words, home));
            continue;
        }
        let (positions, request) = &mut filling[home.pe];
        positions.push(i);
        request.extend_from_slice(words.as_slice());
        if positions.len() == batch {
            let (positions, request) = std::mem::take(&mut filling[home.pe]);
            in_flight.push(send(table, ctx, home.pe, positions, &request));
        }
    }
    for (pe, (positions, request)) in filling.into_iter().enumerate() {
        if !positions.is_empty() {
            in_flight.push(send(table, ctx, pe, positions, &request));
        }
    }
    ctx.flush();
    for (i, words, home) in local {
        let (slot, inserted) = table.parts.find_or_put(home, &words, stats)?;
        results[i] = (table.index(home.pe, slot), inserted);
    }
    for Batch {
        pe,
        positions,
        reply,
    } in in_flight
    {
        for (i, word) in positions.into_iter().zip(reply.wait()) {
            if word == FULL_REPLY {
                return Err(Full { pe });
            }
            results[i] = (Index(word >> 1), word & 1 == 1);
        }
    }
    Ok(results)
}

fn send<'a, K: Pod + Eq>(
    table: &DistributedHashTable<K>,
    ctx: &'a Ctx,
    pe: usize,
    positions: Vec<usize>,
    request: &Vec<u64>,
) -> Batch<'a> {
    Batch {
        pe,
        positions,
        reply: ctx.call(pe, table.owner, request),
    }
}
