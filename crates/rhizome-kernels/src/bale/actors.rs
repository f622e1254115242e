//! The two selector patterns Bale's kernels are made of, written the HClib-Actor way: a
//! one-hop scatter (a mailbox whose handler applies each message at its owner) and a
//! two-hop gather (a request mailbox whose handler answers on a reply mailbox). Written
//! once so each kernel's selector version says only what it sends and what the handler
//! does with it; the multi-hop kernels (randperm, triangles, toposort) build their own.

use super::{Impl, Options, exchange};
use rhizome::actor::Selector;
use rhizome::{Ctx, Pod};

/// Collective: sends every `(msg, pe)` of `items` to one mailbox of `pe`, whose handler
/// runs `apply(state, msg, source PE)` there; returns this PE's state once every message
/// of every PE has been handled.
pub(super) fn scatter<T: Pod, S: 'static>(
    ctx: &Ctx,
    opts: &Options,
    state: S,
    items: impl IntoIterator<Item = (T, usize)>,
    mut apply: impl FnMut(&mut S, T, usize) + 'static,
) -> S {
    let mut sel = super::selector(ctx, opts, state);
    let mailbox = sel.mailbox::<T>();
    sel.process(mailbox, move |state, msg, from, _| apply(state, msg, from));
    sel.superstep(|mail| {
        for (msg, pe) in items {
            mail.send(mailbox, msg, pe);
        }
        mail.done(mailbox);
    });
    sel.into_state()
}

/// Collective: for each `(offset, pe)` of `requests`, entry `i` of the result becomes
/// `table[offset]` of PE `pe` (HClib-Actor's index-gather): a request mailbox whose
/// handler answers `[i, value]` on a reply mailbox, whose handler stores the value.
pub(super) fn gather(
    ctx: &Ctx,
    opts: &Options,
    table: Vec<u64>,
    requests: &[(u64, usize)],
) -> Vec<u64> {
    struct Gather {
        table: Vec<u64>,
        got: Vec<u64>,
    }
    let state = Gather {
        table,
        got: vec![0; requests.len()],
    };
    let mut sel = Selector::with_capacity(ctx, state, exchange::pair_capacity(ctx, opts));
    let request = sel.mailbox::<[u64; 2]>();
    let reply = sel.mailbox::<[u64; 2]>();
    sel.process_ahead(
        request,
        |s, &[_, off]| rhizome::hint::prefetch(&s.table[off as usize]),
        move |s, [i, off], from, mail| mail.send(reply, [i, s.table[off as usize]], from),
    );
    sel.process(reply, |s, [i, v], _, _| s.got[i as usize] = v);
    sel.superstep(|mail| {
        for (i, &(off, pe)) in requests.iter().enumerate() {
            mail.send(request, [i as u64, off], pe);
        }
        mail.done(request);
    });
    sel.into_state().got
}

/// Collective: [`scatter`] if `imp` is [`Impl::Selector`], else the conveyor scatter
/// ([`exchange::scatter`]), so a kernel whose two versions send the same items writes
/// them once.
pub(super) fn scatter_by<T: Pod, S: 'static>(
    ctx: &Ctx,
    opts: &Options,
    imp: Impl,
    mut state: S,
    items: impl IntoIterator<Item = (T, usize)>,
    mut apply: impl FnMut(&mut S, T, usize) + 'static,
) -> S {
    if imp == Impl::Selector {
        scatter(ctx, opts, state, items, apply)
    } else {
        exchange::scatter(ctx, opts, items, |msg, from| apply(&mut state, msg, from));
        state
    }
}

/// Collective: [`gather`] if `imp` is [`Impl::Selector`], else the conveyor gather
/// ([`exchange::gather`]): for each `(offset, pe)` of `requests`, `table[offset]` of PE
/// `pe`.
pub(super) fn gather_by(
    ctx: &Ctx,
    opts: &Options,
    imp: Impl,
    table: &[u64],
    requests: &[(u64, usize)],
) -> Vec<u64> {
    if imp == Impl::Selector {
        gather(ctx, opts, table.to_vec(), requests)
    } else {
        let mut got = vec![0u64; requests.len()];
        exchange::gather(ctx, opts, requests, table, &mut got);
        got
    }
}
