//! The protocol's messages and their handlers.
//!
//! Every handler answers at once from the state it finds (a page, a diff applied and
//! acknowledged, a first-touch claim, a lock request passed on) or leaves what needs
//! waiting (a forwarded lock request, a grant, a barrier arrival) for the service loop:
//! none waits, so the PEs' service threads cannot wait for each other in a cycle.

use crate::Shared;
use crate::diff;
use crate::protocol::Pe;
use rhizome::{Am, CallAm, Ctx, Message};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Raw bytes in a message (a page, a diff), copied in one piece.
pub(crate) struct Bytes(pub(crate) Vec<u8>);

impl Message for Bytes {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.0.len() as u32).encode(out);
        out.extend_from_slice(&self.0);
    }
    fn decode(input: &mut &[u8]) -> Self {
        let n = u32::decode(input) as usize;
        assert!(input.len() >= n, "rhizome: truncated DSM message");
        let (head, tail) = input.split_at(n);
        *input = tail;
        Bytes(head.to_vec())
    }
}

/// Write notices as one flat list: for each interval, its page count, then its pages.
pub(crate) fn flatten(notices: &[Vec<u32>]) -> Vec<u32> {
    let mut flat = Vec::new();
    for pages in notices {
        flat.push(pages.len() as u32);
        flat.extend_from_slice(pages);
    }
    flat
}

/// The inverse of [`flatten`].
pub(crate) fn unflatten(mut flat: &[u32]) -> Vec<Vec<u32>> {
    let mut notices = Vec::new();
    while let [n, rest @ ..] = flat {
        let (pages, tail) = rest.split_at(*n as usize);
        notices.push(pages.to_vec());
        flat = tail;
    }
    notices
}

/// Write notices of several PEs as one flat list: for each PE, its number, the interval
/// before the first one listed, the count of intervals, then the intervals flattened.
pub(crate) fn pack_notices(notices: &[(u32, u32, &[Vec<u32>])]) -> Vec<u32> {
    let mut flat = Vec::new();
    for &(q, from, intervals) in notices {
        flat.extend([q, from, intervals.len() as u32]);
        flat.extend(flatten(intervals));
    }
    flat
}

/// The inverse of [`pack_notices`]: `(pe, from, intervals)`.
pub(crate) fn unpack_notices(mut flat: &[u32]) -> Vec<(usize, u32, Vec<Vec<u32>>)> {
    let mut out = Vec::new();
    while let [q, from, count, rest @ ..] = flat {
        let mut intervals = Vec::with_capacity(*count as usize);
        let mut rest = rest;
        for _ in 0..*count {
            let (n, tail) = rest.split_first().expect("a packed interval");
            let (pages, tail) = tail.split_at(*n as usize);
            intervals.push(pages.to_vec());
            rest = tail;
        }
        out.push((*q as usize, *from, intervals));
        flat = rest;
    }
    out
}

/// The contents of pages `first..first + count` at their home, for a fetch.
fn read_pages(sh: &Shared, first: u32, count: u32) -> Bytes {
    let (first, count) = (first as usize, count as usize);
    let mut out = Vec::with_capacity(count * sh.region.page());
    for p in first..first + count {
        sh.region.with_page(p, |d| out.extend_from_slice(d));
    }
    Bytes(out)
}

/// A lock request: `(lock, pe, the pe's vector timestamp)`.
type Request = Am<(u32, u32, Vec<u32>)>;

/// The message ids of the protocol, the same on every PE.
#[derive(Clone, Copy)]
pub(crate) struct Wire {
    /// `(first, count)`: the contents of pages `first..first + count`, from their home.
    pub(crate) get_pages: CallAm<(u32, u32), Bytes>,
    /// To a home, `(first, count, id, pe)`: PE `pe` fetches pages `first..first + count`
    /// as its fetch `id`; the home answers with `pages`, which installs them there
    /// (`fetch::install`).
    pub(crate) fetch: Am<(u32, u32, u32, u32)>,
    /// Apply `(p, from, diff)` to page `p` at its home, which acknowledges it to `from`.
    pub(crate) diff: Am<(u32, u32, Bytes)>,
    /// To a first-touch page's decider: `(p, pe)` touches page `p`; the reply is its home
    /// (`pe` if nobody claimed it before).
    pub(crate) claim: CallAm<(u32, u32), u32>,
    /// To a lock's manager: a PE wants the lock.
    pub(crate) request: Request,
    /// From a lock's manager to the last PE that asked: the next one wants it.
    pub(crate) forward: Request,
    /// From the lock's last holder: `(lock, barriers it had finished, packed write
    /// notices)`, the token.
    pub(crate) grant: Am<(u32, u32, Vec<u32>)>,
    /// To every other PE: `(barrier, pe, its log since the last barrier)`, the log as
    /// `OneSided::ship_notices` passes it (packed, or its place in the bins).
    pub(crate) arrive: Am<(u32, u32, Vec<u32>)>,
    /// To every other PE: this PE's application threads have ended.
    pub(crate) ended: Am<()>,
}

impl Wire {
    /// Collective: registers the handlers (every PE in the same order).
    pub(crate) fn register(ctx: &Ctx, shared: &Arc<Shared>, pe: &Rc<RefCell<Pe>>) -> Wire {
        let sh = shared.clone();
        let get_pages = ctx
            .register_call(move |_ctx, (first, count): (u32, u32)| read_pages(&sh, first, count));
        let (sh, st) = (shared.clone(), pe.clone());
        let pages = ctx.register(move |_ctx, (id, data): (u32, Bytes)| {
            crate::fetch::install(&sh, &mut st.borrow_mut(), id, &data.0);
        });
        let sh = shared.clone();
        let fetch = ctx.register(move |ctx, (first, count, id, from): (u32, u32, u32, u32)| {
            ctx.send(from as usize, pages, &(id, read_pages(&sh, first, count)));
        });
        let st = pe.clone();
        let diff_ack = ctx.register(move |_ctx, home: u32| {
            st.borrow_mut().unacked[home as usize] -= 1;
        });
        let (sh, st) = (shared.clone(), pe.clone());
        let diff = ctx.register(move |ctx, (p, from, d): (u32, u32, Bytes)| {
            sh.region
                .with_page(p as usize, |page| diff::apply(&d.0, page));
            let mut pe = st.borrow_mut();
            pe.stats.diffs_applied += 1;
            pe.stats.messages += 1;
            ctx.send(from as usize, diff_ack, &(pe.me as u32));
        });
        let (sh, st) = (shared.clone(), pe.clone());
        let claim = ctx.register_call(move |_ctx, (p, from): (u32, u32)| {
            let mut pe = st.borrow_mut();
            let home = &mut pe.homes[p as usize];
            if *home == crate::protocol::UNDECIDED {
                *home = from;
                let here = from as usize == pe.me;
                sh.pages.lock().set_home(p as usize, here);
            }
            pe.homes[p as usize]
        });
        let st = pe.clone();
        let forward = ctx.register(move |_ctx, f: (u32, u32, Vec<u32>)| {
            st.borrow_mut().forwards.push_back(f);
        });
        let st = pe.clone();
        let request = ctx.register(move |ctx, (lock, from, vt): (u32, u32, Vec<u32>)| {
            let mut pe = st.borrow_mut();
            let to = pe.manage(lock, from);
            if to as usize == pe.me {
                pe.forwards.push_back((lock, from, vt));
            } else {
                pe.stats.messages += 1;
                ctx.send(to as usize, forward, &(lock, from, vt));
            }
        });
        let st = pe.clone();
        let grant = ctx.register(move |_ctx, (lock, epoch, notices): (u32, u32, Vec<u32>)| {
            let mut pe = st.borrow_mut();
            // Its notices start past a barrier this PE is still in: they wait for it.
            if epoch > pe.barriers_done {
                pe.early_grants.push((lock, notices));
            } else {
                pe.grants.push_back((lock, notices));
            }
        });
        let st = pe.clone();
        let arrive = ctx.register(move |_ctx, a: (u32, u32, Vec<u32>)| {
            st.borrow_mut().barrier_logs.push(a);
        });
        let st = pe.clone();
        let ended = ctx.register(move |_ctx, ()| {
            st.borrow_mut().ended += 1;
        });
        Wire {
            get_pages,
            fetch,
            diff,
            claim,
            request,
            forward,
            grant,
            arrive,
            ended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_notices_unpack_to_the_same_intervals() {
        let a = vec![vec![1, 2, 3], vec![], vec![7]];
        let b = vec![vec![4]];
        let packed = pack_notices(&[(0, 5, &a[..]), (2, 0, &b[..]), (3, 9, &[])]);
        assert_eq!(
            unpack_notices(&packed),
            vec![(0, 5, a.clone()), (2, 0, b), (3, 9, vec![])]
        );
        assert_eq!(unflatten(&flatten(&a)), a);
    }
}
