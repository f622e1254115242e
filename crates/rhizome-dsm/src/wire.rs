//! The protocol's messages and their handlers.
//!
//! Every handler answers at once from the state it finds (a page, a diff applied, a list
//! of write notices, a lock queued or granted): none waits, so the PEs' service threads
//! cannot wait for each other in a cycle.

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

/// From a lock's manager: `(lock, slot, vt)` may enter.
type Grant = Am<(u32, u32, Vec<u32>)>;

/// The message ids of the protocol, the same on every PE.
#[derive(Clone, Copy)]
pub(crate) struct Wire {
    /// Page `p`'s contents, from its home.
    pub(crate) get_page: CallAm<u32, Bytes>,
    /// Apply a diff of page `p` at its home; the reply acknowledges it.
    pub(crate) diff: CallAm<(u32, Bytes), ()>,
    /// To a first-touch page's decider: `(p, pe)` touches page `p`; the reply is its home
    /// (`pe` if nobody claimed it before).
    pub(crate) claim: CallAm<(u32, u32), u32>,
    /// A PE's own write notices of intervals `(from, to]`, flattened.
    pub(crate) notices: CallAm<(u32, u32), Vec<u32>>,
    /// To a lock's manager: `(lock, pe, slot)` wants it.
    pub(crate) acquire: Am<(u32, u32, u32)>,
    /// To a lock's manager: `(lock, vt)` is free again; `vt` is the releaser's.
    pub(crate) release: Am<(u32, Vec<u32>)>,
}

impl Wire {
    /// Collective: registers the handlers (every PE in the same order).
    pub(crate) fn register(ctx: &Ctx, shared: &Arc<Shared>, pe: &Rc<RefCell<Pe>>) -> Wire {
        let sh = shared.clone();
        let get_page = ctx.register_call(move |_ctx, p: u32| {
            Bytes(sh.region.with_page(p as usize, |d| d.to_vec()))
        });
        let (sh, st) = (shared.clone(), pe.clone());
        let diff = ctx.register_call(move |_ctx, (p, d): (u32, Bytes)| {
            sh.region
                .with_page(p as usize, |page| diff::apply(&d.0, page));
            st.borrow_mut().stats.diffs_applied += 1;
        });
        let st = pe.clone();
        let notices = ctx.register_call(move |_ctx, (from, to): (u32, u32)| {
            let pe = st.borrow();
            assert!(
                from >= pe.log_base && to <= pe.log_base + pe.log.len() as u32,
                "rhizome: write notices ({from}, {to}] asked of PE {}, which keeps ({}, {}]",
                pe.me,
                pe.log_base,
                pe.log_base + pe.log.len() as u32
            );
            flatten(&pe.log[(from - pe.log_base) as usize..(to - pe.log_base) as usize])
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
        // The grant id is needed by the manager's handlers, registered before it: every
        // PE registers in the same order, so the id is the one after `release`'s.
        let st = pe.clone();
        let grant_slot: Rc<std::cell::Cell<Option<Grant>>> = Rc::default();
        let gs = grant_slot.clone();
        let acquire = ctx.register(move |ctx, (lock, from, slot): (u32, u32, u32)| {
            let mut pe = st.borrow_mut();
            let pes = pe.pes;
            let next = pe.locks.entry(lock).or_default().acquire((from, slot), pes);
            send_grant(ctx, &gs, &mut pe, lock, next);
        });
        let (st, gs) = (pe.clone(), grant_slot.clone());
        let release = ctx.register(move |ctx, (lock, vt): (u32, Vec<u32>)| {
            let mut pe = st.borrow_mut();
            let l = pe
                .locks
                .get_mut(&lock)
                .expect("a released lock was granted");
            let next = l.release(&vt);
            send_grant(ctx, &gs, &mut pe, lock, next);
        });
        let st = pe.clone();
        let grant = ctx.register(move |_ctx, g: (u32, u32, Vec<u32>)| {
            st.borrow_mut().grants.push_back(g);
        });
        grant_slot.set(Some(grant));
        Wire {
            get_page,
            diff,
            claim,
            notices,
            acquire,
            release,
        }
    }
}

/// A lock's manager lets `next` (a PE and its thread's slot) in, if anyone: the grant
/// carries the vector timestamp of all releases so far.
fn send_grant(
    ctx: &Ctx,
    grant: &std::cell::Cell<Option<Grant>>,
    pe: &mut Pe,
    lock: u32,
    next: Option<(u32, u32)>,
) {
    if let Some((to, slot)) = next {
        let vt = pe.locks[&lock].vt.clone();
        pe.stats.messages += 1;
        ctx.send(
            to as usize,
            grant.get().expect("registered"),
            &(lock, slot, vt),
        );
    }
}
