//! What cooperative tasks need to walk a distributed graph: a vertex's neighbours and a
//! claim of a vertex (set its label if it has none), made by the vertex's owner in a
//! delegate call when the vertex is remote and directly when it is local. The BFS and
//! connected-components kernels over the global queue and set are written with these.

use super::DistGraph;
use rhizome::CallAm;
use rhizome::coop::{Coop, Reply};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

/// A label no vertex has yet (BFS parent, component root).
pub const NONE: u64 = u64::MAX;

/// The delegates of one walk over a graph, and this PE's labels of its vertices.
pub(super) struct Remote<'c> {
    coop: Coop<'c>,
    graph: Rc<DistGraph>,
    labels: Rc<RefCell<Vec<u64>>>,
    adjacency: CallAm<u64, Vec<u64>>,
    claim: CallAm<(u64, u64), u64>,
    claim_many: CallAm<(Vec<u64>, u64), Vec<u64>>,
}

/// A claim in flight: answered at once for a local vertex, by its owner otherwise.
pub(super) enum Claim<'c> {
    Done(u64),
    Waiting(Reply<'c, u64>),
}

impl Claim<'_> {
    /// The vertex's label before the claim: [`NONE`] if the claim set it.
    pub(super) async fn previous(self) -> u64 {
        match self {
            Claim::Done(p) => p,
            Claim::Waiting(r) => r.await,
        }
    }
}

/// Sets `labels[i]` to `label` if it has none; returns the label it had.
fn claim_at(labels: &RefCell<Vec<u64>>, i: usize, label: u64) -> u64 {
    let mut labels = labels.borrow_mut();
    let previous = labels[i];
    if previous == NONE {
        labels[i] = label;
    }
    previous
}

impl<'c> Remote<'c> {
    /// Collective: registers the delegates; every local vertex unlabelled.
    pub(super) fn new(coop: &Coop<'c>, graph: &Rc<DistGraph>) -> Self {
        let local = graph.local().count();
        let labels = Rc::new(RefCell::new(vec![NONE; local]));
        let ctx = coop.ctx();
        let g = graph.clone();
        let adjacency = ctx.register_call(move |_, v: u64| g.neighbors(v).to_vec());
        let (g, l) = (graph.clone(), labels.clone());
        let claim =
            ctx.register_call(move |_, (v, label): (u64, u64)| claim_at(&l, g.index(v), label));
        let (g, l) = (graph.clone(), labels.clone());
        let claim_many = ctx.register_call(move |_, (vs, label): (Vec<u64>, u64)| {
            let claims = vs.iter().map(|&v| claim_at(&l, g.index(v), label));
            claims.collect::<Vec<u64>>()
        });
        Remote {
            coop: coop.clone(),
            graph: graph.clone(),
            labels,
            adjacency,
            claim,
            claim_many,
        }
    }

    /// The neighbours of `v`: borrowed if local, fetched from the owner otherwise.
    pub(super) async fn neighbors(&self, v: u64) -> Cow<'_, [u64]> {
        if self.graph.is_local(v) {
            Cow::Borrowed(self.graph.neighbors(v))
        } else {
            let owner = self.graph.owner(v);
            Cow::Owned(self.coop.call(owner, self.adjacency, &v).await)
        }
    }

    /// Starts a claim of `v` for `label` (atomic at the owner: exactly one claim of an
    /// unlabelled vertex succeeds).
    pub(super) fn claim(&self, v: u64, label: u64) -> Claim<'c> {
        if self.graph.is_local(v) {
            Claim::Done(claim_at(&self.labels, self.graph.index(v), label))
        } else {
            let owner = self.graph.owner(v);
            Claim::Waiting(self.coop.call(owner, self.claim, &(v, label)))
        }
    }

    /// Claims of all of `vs` for `label`, all in flight together, one message per owner
    /// (not per vertex); the labels they had.
    pub(super) async fn claim_all(&self, vs: &[u64], label: u64) -> Vec<u64> {
        let mut previous = vec![NONE; vs.len()];
        // The remote vertices by owner, with their places in `vs`.
        let mut remote: Vec<(usize, Vec<u64>, Vec<usize>)> = Vec::new();
        for (i, &v) in vs.iter().enumerate() {
            if self.graph.is_local(v) {
                previous[i] = claim_at(&self.labels, self.graph.index(v), label);
                continue;
            }
            let owner = self.graph.owner(v);
            let k = match remote.iter().position(|r| r.0 == owner) {
                Some(k) => k,
                None => {
                    remote.push((owner, Vec::new(), Vec::new()));
                    remote.len() - 1
                }
            };
            remote[k].1.push(v);
            remote[k].2.push(i);
        }
        let mut places = Vec::with_capacity(remote.len());
        let mut replies = Vec::with_capacity(remote.len());
        for (owner, batch, at) in remote {
            replies.push(self.coop.call(owner, self.claim_many, &(batch, label)));
            places.push(at);
        }
        for (reply, at) in replies.into_iter().zip(places) {
            for (p, i) in reply.await.into_iter().zip(at) {
                previous[i] = p;
            }
        }
        previous
    }

    /// Sets local vertex `v`'s label, whatever it was.
    pub(super) fn set_local(&self, v: u64, label: u64) {
        self.labels.borrow_mut()[self.graph.index(v)] = label;
    }

    /// This PE's labels, by local index (read once the walk is over).
    pub(super) fn take_labels(&self) -> Vec<u64> {
        std::mem::take(&mut self.labels.borrow_mut())
    }
}
