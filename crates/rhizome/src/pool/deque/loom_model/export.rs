//! Sendable halves under loom (`pool/sendable.rs`): a half that may leave the PE sits in
//! the deque like any other, and three parties race for it: the owner popping it back
//! (`pop_private`, then `pop_shared`), a PE-mate thief (`Take::Any`), and the PE's main
//! thread taking it for another PE's steal request (`Take::Export`). An exported half's
//! slot stays `EXPORTED` until its result comes back, when the result is written into the
//! frame and the slot completed (what `ExportedHalf::fulfill` does); the owner's sync
//! waits for that and reads the result.
//!
//! The models drive the deque's real operations (`push_sendable`, `clear_sendable`,
//! `steal`, `complete`, `begin_wait`, `thief_state`, `end_wait`); only the remote run is
//! stood in for (the exporter computes the result itself). Each checks that every half
//! runs exactly once, that the result of a half run elsewhere reaches the owner (loom's
//! cells check that writing it races nothing), that an exporter takes only sendable halves
//! (never a plain half, not even one pushed to a slot a sendable half used before), and
//! that an exported half is never returned unrun.

use super::super::super::job::JobRef;
use super::super::{COMPLETED, EXPORTED, Owner, Pushed, RETURNED, Take};
use super::{Bench, steals};
use ::loom::sync::Arc;
use ::loom::thread;

/// The result a half with `tag` computes, wherever it runs.
fn result_of(tag: usize) -> usize {
    tag * 10
}

/// Who ran a half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runner {
    Owner,
    Thief,
    /// Another PE, through an export.
    Remote,
}

/// A thief taking what `take` allows, making `tries` attempts (a slot it won but may not
/// take, it returns to the owner inside `steal`): it runs a half it won and
/// writes the result into the frame (here: the slot's cell), then completes the slot. As
/// an exporter (`Take::Export`) that is the result message's `fulfill`; as a PE-mate
/// (`Take::Any`) it is `steal_from`. Returns the tags it ran.
fn taker(b: Arc<Bench>, me: usize, take: Take, tries: usize) -> thread::JoinHandle<Vec<usize>> {
    steals(b, me, take, tries, move |b, s| {
        let tag = s.job.tag();
        assert!(!s.is_job, "these models push halves only");
        assert_eq!(
            s.exported,
            take == Take::Export,
            "a half is exported exactly when an exporter takes it"
        );
        if take == Take::Export {
            assert_eq!(tag % 2, 1, "an exporter took a plain half ({tag})");
        }
        // SAFETY: the slot is this thread's until it completes it (loom checks it).
        b.results[s.slot].with_mut(|r| unsafe { *r = result_of(tag) });
        b.deque.complete(s.slot);
        Some(tag)
    })
}

/// Pushes half `tag`: odd tags are sendable halves (`join_sendable`), even ones plain.
fn push(o: &Owner, tag: usize) -> Pushed {
    let job = JobRef::tagged(tag);
    let pushed = if tag % 2 == 1 {
        o.push_sendable(job)
    } else {
        o.push(job)
    };
    pushed.expect("room")
}

/// The sync of half `tag` in slot `pushed`, as `join_sendable` (odd) or `join` (even)
/// does it: pops it back, or waits for its thief or its result from another PE and reads
/// the result the thief wrote into the frame. Returns who ran it.
fn sync(b: &Bench, o: &Owner, pushed: Pushed, tag: usize) -> Runner {
    let h = o.index_of(pushed);
    let runner = if o.pop_private(pushed) || o.pop_shared(pushed) {
        Runner::Owner
    } else {
        assert_eq!(o.begin_wait(), h);
        // `join_sendable` waits in `wait_for_export` once the slot says EXPORTED; a slot
        // not yet marked is waited for as a PE-mate's theft (that wait also ends when the
        // result arrives).
        let mut exported = false;
        let state = loop {
            let s = o.thief_state(h);
            exported |= s == EXPORTED;
            if s == COMPLETED || s == RETURNED {
                break s;
            }
            thread::yield_now();
        };
        if state == RETURNED {
            // Only an exporter's stale look returns a slot: it won a plain half.
            assert!(!exported, "an exported half came back unrun");
            assert_eq!(tag % 2, 0, "the sendable half {tag} came back unrun");
            o.end_wait(h);
            Runner::Owner
        } else {
            // SAFETY: the thief wrote the cell before completing the slot (loom checks it).
            let r = b.results[h].with(|r| unsafe { *r });
            assert_eq!(
                r,
                result_of(tag),
                "the result of half {tag} did not reach its owner"
            );
            o.end_wait(h);
            if exported {
                Runner::Remote
            } else {
                Runner::Thief
            }
        }
    };
    if tag % 2 == 1 {
        o.clear_sendable(pushed);
    }
    runner
}

/// Runs `owner` against a PE-mate thief and an exporter making `thief` and `exporter`
/// attempts, in every interleaving, and checks that halves `1..=halves` ran exactly once
/// each: by the owner, or by the one taker the owner waited for.
fn model(
    thief: usize,
    exporter: usize,
    halves: usize,
    owner: fn(&Bench, &Owner) -> Vec<(usize, Runner)>,
) {
    ::loom::model(move || {
        let b = Bench::new();
        let local = taker(Arc::clone(&b), 0, Take::Any, thief);
        let remote = taker(Arc::clone(&b), 1, Take::Export, exporter);
        // SAFETY: `b` outlives `o`, and `o` is the deque's only owner.
        let o = unsafe { Owner::new(&b.deque) };
        let synced = owner(&b, &o);
        let local = local.join().unwrap();
        let remote = remote.join().unwrap();
        let mut all: Vec<usize> = (synced.iter())
            .filter(|(_, who)| *who == Runner::Owner)
            .map(|&(t, _)| t)
            .chain(local.iter().copied())
            .chain(remote.iter().copied())
            .collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (1..=halves).collect::<Vec<_>>(),
            "a half lost or run twice"
        );
        for (tag, who) in synced {
            match who {
                Runner::Owner => {}
                Runner::Thief => assert!(local.contains(&tag) || remote.contains(&tag)),
                Runner::Remote => assert!(remote.contains(&tag), "exported but not run remotely"),
            }
        }
    });
}

/// A sendable half with a plain half forked inside it: the exporter may take only the
/// sendable one, the thief either; the owner syncs the plain half, then the sendable one.
fn sendable_then_plain(b: &Bench, o: &Owner) -> Vec<(usize, Runner)> {
    let one = push(o, 1);
    let two = push(o, 2);
    let r2 = sync(b, o, two, 2);
    let r1 = sync(b, o, one, 1);
    vec![(2, r2), (1, r1)]
}

/// A sendable half synced, then a plain half forked into the same slot: an exporter that
/// looked at the slot while it held the sendable half must not export the plain one.
fn plain_after_sendable(b: &Bench, o: &Owner) -> Vec<(usize, Runner)> {
    let one = push(o, 1);
    let r1 = sync(b, o, one, 1);
    let two = push(o, 2);
    let r2 = sync(b, o, two, 2);
    vec![(1, r1), (2, r2)]
}

/// The owner syncs while a PE-mate thief and an exporter race for a sendable half below a
/// plain one.
#[test]
fn a_sendable_half_raced_by_a_thief_and_an_exporter_runs_once() {
    model(1, 1, 2, sendable_then_plain);
}

/// A slot reused for a plain half after a sendable one: the exporter's two attempts take
/// the sendable half or nothing (a stale look that wins the plain half returns it).
#[test]
fn an_exporter_never_takes_a_plain_half_in_a_reused_slot() {
    model(1, 2, 2, plain_after_sendable);
}
