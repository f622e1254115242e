//! The two collectives that end a level of a sliced run: the all-to-all [`exchange`] in
//! which every rank sends every other the states it found in that rank's slice (encoded
//! BDDs, or a failure marker), and the allgather of counts in which the ranks [`agree`] on
//! the level's outcome, so that every rank stops at the same level with the same error.
//! Sliced `bfs`, `par` and `chaining` (`sliced.rs`) call both after the split; sliced
//! saturation (`sliced_sat.rs`) mails its states (`slice_mail.rs`) and agrees once, at
//! its end. Before the split the ranks compute the same levels and exchange nothing;
//! they only [`agree_alike`] once, when they part, on whether one of them failed.

use super::sliced::LevelError;
use super::split::Split;
use crate::model::Model;
use num_bigint::BigUint;
use rhizome::Ctx;
use rhizome_bdd::{Bdd, BddError, CodecError, Manager, NodeStore, OpCache};

/// The states of this rank's slice among `found` (this rank's states, or its failure) and
/// among those the other ranks found, after one all-to-all exchange in which every rank
/// sends every other the part of its states in that rank's slice (encoded, or a failure
/// marker if it failed). Collective. `bytes_sent` counts what this rank sent.
pub(super) fn exchange<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    split: &Split,
    found: Result<Bdd, LevelError>,
    bytes_sent: &mut u64,
) -> Result<Bdd, LevelError> {
    let me = ctx.my_pe();
    // Cut the states by slice; every rank gets one message from every other, a failure
    // marker in place of the states if this rank failed.
    let mut own = m.root(Bdd::FALSE);
    let mut outgoing: Vec<Vec<u8>> = Vec::with_capacity(split.slices.len());
    let mut failed: Option<LevelError> = None;
    match found {
        Ok(found) => {
            let found = m.root(found);
            for (q, slice) in split.slices.iter().enumerate() {
                match m.and(found.get(), slice.get()) {
                    Ok(part) if q == me => {
                        own.set(part);
                        outgoing.push(Vec::new());
                    }
                    Ok(part) => {
                        let mut bytes = vec![0u8];
                        m.encode_into(&[part], &mut bytes);
                        *bytes_sent += bytes.len() as u64;
                        outgoing.push(bytes);
                    }
                    Err(e) => {
                        failed = Some(e.into());
                        break;
                    }
                }
            }
        }
        Err(e) => failed = Some(e),
    }
    if failed.is_some() {
        outgoing = vec![vec![1u8]; split.slices.len()];
    }
    let incoming = ctx.alltoall(outgoing);
    if let Some(e) = failed {
        return Err(e);
    }
    for (q, bytes) in incoming.iter().enumerate() {
        if q == me {
            continue;
        }
        let Some((0, encoded)) = bytes.split_first() else {
            return Err(LevelError::Peer);
        };
        let u = or_decoded(m, own.get(), encoded)?;
        own.set(u);
    }
    Ok(own.get())
}

/// `set` (rooted by the caller) or the states that `bytes` encode, one BDD, as one rank
/// sends another (not rooted).
pub(super) fn or_decoded<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    set: Bdd,
    bytes: &[u8],
) -> Result<Bdd, CodecError> {
    let got = m.decode(bytes)?;
    let [part] = got[..] else {
        return Err(CodecError::Corrupt(format!(
            "{} BDDs where one set of states was sent",
            got.len()
        )));
    };
    Ok(m.or(set, part)?)
}

/// The outcome of the levels that every rank computed alike before the split, agreed by
/// one allgather when the ranks part (at the split, or at the end if the exploration
/// ends first): if any rank failed, every rank gets the error of the rank that failed in
/// the earliest level (the lowest such rank) and that level (`level`: this rank's
/// current one), so that all stop alike.
/// Collective. A rank that fails calls it at once; the others call it when they reach
/// the split or the end, with nothing in between that needs the failed rank.
pub(super) fn agree_alike(
    ctx: &Ctx,
    outcome: Result<(), LevelError>,
    level: usize,
) -> Result<(), (LevelError, usize)> {
    // (status: 0 done, 1 out of nodes, 2 corrupt, 3 a peer failed; [live, capacity,
    // level])
    let mine: (u8, [u64; 3]) = match &outcome {
        Ok(()) => (0, [0; 3]),
        Err(LevelError::Bdd(BddError::OutOfNodes { live, capacity })) => {
            (1, [*live as u64, *capacity as u64, level as u64])
        }
        Err(LevelError::Corrupt(_)) => (2, [0, 0, level as u64]),
        Err(LevelError::Peer) => (3, [0, 0, level as u64]),
    };
    let all = ctx.allgather(mine);
    let Some(q) = (0..all.len())
        .filter(|&r| all[r].0 != 0)
        .min_by_key(|&r| (all[r].1[2], r))
    else {
        return Ok(());
    };
    let (status, [live, capacity, at]) = all[q];
    let e = match (outcome, status) {
        (Err(e), _) if q == ctx.my_pe() => e,
        (_, 1) => LevelError::Bdd(BddError::OutOfNodes {
            live: live as usize,
            capacity: capacity as usize,
        }),
        (_, 2) => LevelError::Corrupt(format!("rank {q} received states that do not decode")),
        _ => LevelError::Peer,
    };
    Err((e, at as usize))
}

/// Every rank's outcome of a level after the split, agreed by one exchange of counts:
/// this rank's new states, the states all ranks found and the nodes of their sets, or
/// the first failure of any rank.
pub(super) fn agree<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &Manager<S, C>,
    model: &Model,
    local: Result<Bdd, LevelError>,
) -> Result<(Bdd, BigUint, usize), LevelError> {
    // (status: 0 done, 1 out of nodes, 2 corrupt, 3 a peer failed; count; [nodes, live,
    // capacity])
    let mine: (u8, Vec<u8>, [u64; 3]) = match &local {
        Ok(new) => {
            let (count, nodes) = m.satcount_and_nodes(*new, &model.state_vars);
            (0, count.to_bytes_le(), [nodes as u64, 0, 0])
        }
        Err(LevelError::Bdd(BddError::OutOfNodes { live, capacity })) => {
            (1, Vec::new(), [0, *live as u64, *capacity as u64])
        }
        Err(LevelError::Corrupt(_)) => (2, Vec::new(), [0; 3]),
        Err(LevelError::Peer) => (3, Vec::new(), [0; 3]),
    };
    let all = ctx.allgather(mine);
    // The outcome is read from what every rank got alike, so that every rank stops at
    // the same level with the same error: the first rank's that ran out of nodes, else
    // the first corrupt exchange.
    if let Some((_, _, [_, live, capacity])) = all.iter().find(|a| a.0 == 1) {
        return Err(LevelError::Bdd(BddError::OutOfNodes {
            live: *live as usize,
            capacity: *capacity as usize,
        }));
    }
    if let Some(q) = all.iter().position(|a| a.0 != 0) {
        return Err(LevelError::Corrupt(match local {
            Err(LevelError::Corrupt(why)) => why,
            _ => format!("rank {q} received states that do not decode"),
        }));
    }
    let Ok(new) = local else {
        return Err(LevelError::Peer); // not reached: this rank's status was 0
    };
    let total = all.iter().map(|a| BigUint::from_bytes_le(&a.1)).sum();
    let nodes = all.iter().map(|a| a.2[0] as usize).sum();
    Ok((new, total, nodes))
}
