//! Sliced saturation: each rank saturates its slice of the states, and the states that
//! leave a slice are mailed to their owner as soon as they are found.
//!
//! After the split (`sliced.rs` sweeps every rank's whole set alike until then, to
//! choose it) each rank saturates its slice as one PE saturates (`saturation.rs`), with
//! every group, but each group that writes a split variable (`split_writers.rs` reads
//! this from its relation) restricted to its transitions that keep the split variables:
//! those keep a state in its slice. The *crossing* groups, whole, are applied to the
//! states the slice gained since their images were last taken; the image is cut by slice
//! and each part mailed to its owner (`slice_mail.rs`), which adds it to its set and
//! saturates again. When no rank has work left and no states are in flight (the mail's
//! termination detection), the union of the slices is the least fixpoint under every
//! group, one PE's reachable set. A slice starts from its initial states rather than
//! from what the sweeps found.
//!
//! The states travel between the rounds of a saturation, not only at its end: the rounds
//! of the fixpoint of each level are driven from here (`Slice::pass`) while the set does
//! not branch above that level, and after each the crossing images of what it added
//! leave, so that the owner starts on them while this rank goes on; states that arrive
//! break off the pass, which starts again with them, mostly from cached results. A rank's
//! first pass mails only at its end: a slice that saturates a part of its first states
//! and later the rest pays more than for all of them at once (collision.5 split by
//! variable 4: 3.4 s against 1.4 s). Against rounds in which every rank saturates and
//! then all exchange (stop 31), the ranks take fewer turns: on 2 ranks, `sat` on lifts.6
//! took 6.9 s against 8.4 s, at.5 8.3 against 9.8, resistance.1 4.2 against 5.6, and no
//! model was slower (`docs/measurements.md`).

use super::image::par_image;
use super::progress::{Run, Watch};
use super::saturation::{SatOrder, saturate_set};
use super::slice_exchange::{agree, or_decoded};
use super::slice_mail::{Mail, Woken};
use super::sliced::{LevelError, Sliced};
use super::split::Split;
use super::split_writers::Writers;
use crate::model::{Group, Model};
use rhizome::Ctx;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, Root};

/// Saturates this rank's slice of the visited states of `run`, mailing the states it
/// finds in other slices to their owners as the module describes, until no rank has work
/// left; without a split (one rank), one saturation under every group. Collective: every
/// rank calls it after the same split.
pub(super) fn saturate_slices<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    model: &Model,
    state: &mut Sliced,
    run: &mut Run<'_, S, C>,
) -> Result<(), LevelError> {
    let watch = run.watch.clone();
    let op = m.fresh_op_id();
    let Some(split) = state.split.as_ref() else {
        let all: Vec<&Group> = model.groups.iter().collect();
        let r = saturate_set(m, &all, run.visited.get(), watch.as_deref(), op)?;
        run.visited.set(r);
        return Ok(());
    };
    // Every rank classifies the groups alike: the same relations, the same split.
    let writers = state.writers.as_ref().expect("read at the split");
    let me = ctx.my_pe();
    super::timeline::mark(me, || "sat: classify".into());
    let classified = classify(m, model, writers, &split.vars);
    let none = (Vec::new(), Vec::new(), Vec::new());
    let (within, crossing, _held) = classified.as_ref().unwrap_or(&none);
    let local: Vec<&Group> = within.iter().collect();
    let order = SatOrder::new(&local, op);
    let mut mail = Mail::open(ctx);
    // Each slice saturates from its initial states, not from the states the sweeps
    // before the split found: a saturation from many scattered states recurses into many
    // distinct branches (collision.5: 23 s from the set of the 11th sweep, against 3.5 s
    // from the initial states, for the same fixpoint).
    let mine = split.slices[me].get();
    let started = m
        .and(model.initial, mine)
        .map(|start| run.visited.set(start));
    let mut slice = Slice {
        ctx,
        mail: &mut mail,
        split,
        crossing,
        applied: m.root(Bdd::FALSE),
        bytes_sent: &mut state.bytes_sent,
        first_pass: true,
    };
    // A failure here is this rank's: it tells the others, which stop at their next look
    // at the mail.
    let explored = match classified.as_ref().err().or(started.as_ref().err()) {
        Some(e) => Err(LevelError::Bdd(e.clone())),
        None => slice.explore(m, &order, run, watch.as_deref()),
    };
    if matches!(explored, Err(LevelError::Bdd(_) | LevelError::Corrupt(_))) {
        mail.fail(ctx);
    }
    super::timeline::mark(me, || "sat: explored".into());
    // One exchange of counts: every rank ends with the same outcome.
    agree(ctx, m, model, explored.map(|()| Bdd::FALSE)).map(|_| ())
}

/// One rank's part of the sliced saturation.
struct Slice<'a> {
    ctx: &'a Ctx,
    mail: &'a mut Mail,
    split: &'a Split,
    crossing: &'a [Group],
    /// The states whose crossing images have been taken.
    applied: Root,
    bytes_sent: &'a mut u64,
    /// No pass has ended yet: this one mails only at its end.
    first_pass: bool,
}

/// How a pass over the slice ended.
enum Pass {
    /// The slice is saturated and its crossing images mailed.
    Done,
    /// States arrived: the pass was broken off, to start again with them.
    Mail,
}

impl Slice<'_> {
    /// Saturates the slice in passes, merging the states mailed to it as they come,
    /// until every rank is idle.
    fn explore<S: NodeStore, C: OpCache>(
        &mut self,
        m: &mut Manager<S, C>,
        order: &SatOrder<'_>,
        run: &mut Run<'_, S, C>,
        watch: Option<&Watch>,
    ) -> Result<(), LevelError> {
        let me = self.ctx.my_pe();
        let mut dirty = run.visited.get() != Bdd::FALSE;
        loop {
            for bytes in self.mail.take_states(self.ctx) {
                let u = or_decoded(m, run.visited.get(), &bytes)?;
                dirty |= u != run.visited.get();
                run.visited.set(u);
            }
            if self.mail.peer_failed() {
                return Err(LevelError::Peer);
            }
            if !dirty {
                super::timeline::mark(me, || "sat: idle".into());
                match self.mail.wait(self.ctx) {
                    Woken::States => continue,
                    Woken::Stop => return Ok(()),
                    Woken::PeerFailed => return Err(LevelError::Peer),
                }
            }
            dirty = match self.pass(m, order, 0, run, watch)? {
                Pass::Mail => true,
                Pass::Done if self.first_pass => {
                    self.first_pass = false;
                    self.mail_and_keep(m, run)?
                }
                Pass::Done => false,
            };
        }
    }

    /// Saturates the slice under the groups from the `k`-th on as `SatOrder::saturate`
    /// does, but with the rounds of the fixpoint of each level driven from here while the
    /// set does not branch above that level, mailing after each round (after the first
    /// pass); breaks off when states arrive.
    fn pass<S: NodeStore, C: OpCache>(
        &mut self,
        m: &mut Manager<S, C>,
        order: &SatOrder<'_>,
        k: usize,
        run: &mut Run<'_, S, C>,
        watch: Option<&Watch>,
    ) -> Result<Pass, LevelError> {
        if k == order.len() {
            return Ok(Pass::Done);
        }
        let branches = order.branches(m, run.visited.get(), k);
        let count = order.level_len(k);
        loop {
            let before = m.root(run.visited.get());
            if branches {
                let sat = order.saturate(m, run.visited.get(), k, watch)?;
                run.visited.set(sat);
            } else {
                if let Pass::Mail = self.pass(m, order, k + count, run, watch)? {
                    return Ok(Pass::Mail);
                }
                let next = order.chain_level(m, run.visited.get(), k)?;
                run.visited.set(next);
            }
            let stepped = run.visited.get();
            super::timeline::mark(self.ctx.my_pe(), || {
                format!("sat: round at group {k}, {} nodes", m.node_count(stepped))
            });
            if !self.first_pass {
                self.mail_and_keep(m, run)?;
                if self.mail.has_states(self.ctx) {
                    return Ok(Pass::Mail);
                }
            }
            // Saturated when the round changed nothing, or when a whole saturation
            // (branching) gained nothing from its crossing images.
            let now = run.visited.get();
            if now == before.get() || branches && now == stepped {
                return Ok(Pass::Done);
            }
        }
    }

    /// Mails the crossing images of the states the slice gained since the last call and
    /// adds their part in this slice to it; whether that part was new.
    fn mail_and_keep<S: NodeStore, C: OpCache>(
        &mut self,
        m: &mut Manager<S, C>,
        run: &mut Run<'_, S, C>,
    ) -> Result<bool, LevelError> {
        let visited = run.visited.get();
        let own = self.mail_crossing(m, visited)?;
        let u = m.or(visited, own)?;
        run.visited.set(u);
        Ok(u != visited)
    }

    /// Takes the crossing images of the states of `visited` added since the last call,
    /// mails their part in each other slice to its owner, and returns the part in this
    /// slice (not rooted).
    fn mail_crossing<S: NodeStore, C: OpCache>(
        &mut self,
        m: &mut Manager<S, C>,
        visited: Bdd,
    ) -> Result<Bdd, LevelError> {
        // The slice's set only grows: `visited` holds every state applied before.
        let fresh = m.diff(visited, self.applied.get())?;
        self.applied.set(visited);
        if fresh == Bdd::FALSE || self.crossing.is_empty() {
            return Ok(Bdd::FALSE);
        }
        let fresh = m.root(fresh);
        let f = fresh.get();
        let crossing = self.crossing;
        let image = m.run(&[f], |c| par_image(c, crossing, f))?;
        let image = m.root(image);
        let me = self.ctx.my_pe();
        let mut own = m.root(Bdd::FALSE);
        for (q, slice) in self.split.slices.iter().enumerate() {
            let part = m.and(image.get(), slice.get())?;
            if q == me {
                own.set(part);
            } else if part != Bdd::FALSE {
                let bytes = m.encode(&[part]);
                *self.bytes_sent += bytes.len() as u64;
                self.mail.send_states(self.ctx, q, bytes);
            }
        }
        Ok(own.get())
    }
}

/// The groups as a slice sees them: every group with its transitions that change a split
/// variable taken out (the others as they are), and the groups that write a split
/// variable, whole; with the roots that keep the restricted relations alive.
#[allow(clippy::type_complexity)]
fn classify<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    writers: &Writers,
    split_vars: &[u32],
) -> Result<(Vec<Group>, Vec<Group>, Vec<Root>), BddError> {
    let mut within = Vec::with_capacity(model.groups.len());
    let mut crossing = Vec::new();
    let mut held = Vec::new();
    for (g, group) in model.groups.iter().enumerate() {
        let mut keep = m.root(group.relation);
        for &v in split_vars {
            if !writers.writes(model, v, g) {
                continue;
            }
            let at = group
                .cur_vars
                .iter()
                .position(|&x| x == v)
                .expect("a written variable is the group's");
            let (x, x_next) = (m.ithvar(v), m.ithvar(group.next_vars[at]));
            let changed = m.xor(x, x_next)?;
            let kept = m.and(keep.get(), !changed)?;
            keep.set(kept);
        }
        if keep.get() != group.relation {
            crossing.push(group.clone());
        }
        within.push(Group {
            relation: keep.get(),
            ..group.clone()
        });
        held.push(keep);
    }
    Ok((within, crossing, held))
}
