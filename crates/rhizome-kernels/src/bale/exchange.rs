//! The two conveyor patterns Bale's kernels are made of: a one-hop scatter (items pushed
//! to their owner, which applies them) and a two-hop gather (requests to the owner, which
//! answers on a second conveyor). Written once so each kernel's conveyor version says only
//! what it sends and what the receiver does with it.

use super::Options;
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

/// Collective: for each `(query, pe)` of `requests`, `got[i]` becomes `answer(query)`
/// computed on `pe` (Bale's conveyor index-gather): requests `[i, query]` go to the owner,
/// which answers `[i, value]` on a second conveyor; a request whose answer cannot be
/// pushed yet is put back and pulled again later.
pub(super) fn gather(
    ctx: &Ctx,
    opts: &Options,
    requests: &[(u64, usize)],
    answer: impl Fn(u64) -> u64,
    got: &mut [u64],
) {
    let mut asks = super::conveyor::<[u64; 2]>(ctx, opts);
    let mut answers = super::conveyor::<[u64; 2]>(ctx, opts);
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
        while let Some(([j, q], from)) = asks.pull() {
            if !answers.push([j, answer(q)], from) {
                asks.unpull();
                break;
            }
        }
        while let Some(([j, v], _)) = answers.pull() {
            got[j as usize] = v;
        }
    }
}
