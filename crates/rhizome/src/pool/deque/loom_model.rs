//! The deque protocol under loom: an owner pushing, popping back and waiting for thieves,
//! against thieves that steal, run (here: record) and complete tasks. Each model checks
//! that every task runs exactly once, by the owner or by one thief, that a thief reads
//! the job the owner wrote to the slot (loom's cells check the accesses do not race),
//! and that what a thief writes before completing is visible to the owner after it.

use super::super::job::JobRef;
use super::{COMPLETED, Deque, Owner, Pushed};
use ::loom::cell::UnsafeCell;
use ::loom::sync::Arc;
use ::loom::thread;

const CAPACITY: usize = 4;

/// A deque, and per slot the cell where a thief leaves what it ran (the stack job's
/// result in the real pool).
struct Bench {
    deque: Deque,
    results: [UnsafeCell<usize>; CAPACITY],
}

impl Bench {
    fn new() -> Arc<Bench> {
        Arc::new(Bench {
            deque: Deque::new(CAPACITY),
            results: std::array::from_fn(|_| UnsafeCell::new(0)),
        })
    }
}

/// Who ran a task.
#[derive(Debug, PartialEq)]
enum Ran {
    Owner,
    Thief,
}

/// Takes back the task `tag` pushed to slot `h`, as `Worker::join` does: pops it, or
/// waits for its thief and checks what the thief left. Returns who ran it.
fn take_back(b: &Bench, o: &Owner, pushed: Pushed, tag: usize) -> (Ran, usize) {
    let h = o.index_of(pushed);
    if o.pop_or_reclaim(pushed) {
        return (Ran::Owner, tag);
    }
    assert_eq!(o.begin_wait(), h);
    while o.thief_state(h) != COMPLETED {
        thread::yield_now();
    }
    // SAFETY: the thief wrote the cell before completing the slot (loom checks it).
    let ran = b.results[h].with(|r| unsafe { *r });
    assert_eq!(
        ran, tag,
        "the thief ran another job than the one in the slot"
    );
    o.end_wait(h);
    (Ran::Thief, tag)
}

/// A thief of worker `me` making `tries` attempts; returns the tags it ran.
fn thief(b: Arc<Bench>, me: usize, tries: usize) -> thread::JoinHandle<Vec<usize>> {
    thread::spawn(move || {
        let mut ran = Vec::new();
        for _ in 0..tries {
            if let Some((slot, job)) = b.deque.steal(me) {
                // SAFETY: winning the slot makes this thread its only user until it
                // completes the slot (loom checks it).
                b.results[slot].with_mut(|r| unsafe { *r = job.tag() });
                ran.push(job.tag());
                b.deque.complete(slot);
            }
        }
        ran
    })
}

/// Checks that the tags the owner and the thieves ran are `expected`, each once, and
/// that the owner waited only for tasks a thief ran.
fn check(owner: Taken, thieves: Vec<usize>, expected: &[usize]) {
    let mut all: Vec<usize> = owner
        .iter()
        .filter(|(who, _)| *who == Ran::Owner)
        .map(|&(_, t)| t)
        .chain(thieves.iter().copied())
        .collect();
    all.sort_unstable();
    assert_eq!(all, expected, "a task lost or run twice");
    for (who, tag) in &owner {
        if *who == Ran::Thief {
            assert!(
                thieves.contains(tag),
                "the owner waited for a task no thief ran"
            );
        }
    }
}

/// Runs `owner` with `tasks` tasks against one thief per entry of `tries` (making that
/// many attempts), in every interleaving, and checks the outcome.
fn model(tries: &'static [usize], tasks: usize, owner: fn(&Bench, &Owner, usize) -> Taken) {
    ::loom::model(move || {
        let b = Bench::new();
        let thieves: Vec<_> = (tries.iter().enumerate())
            .map(|(me, &n)| thief(Arc::clone(&b), me, n))
            .collect();
        // SAFETY: `b` outlives `o`, and `o` is the deque's only owner.
        let o = unsafe { Owner::new(&b.deque) };
        let taken = owner(&b, &o, tasks);
        let stolen = thieves.into_iter().flat_map(|t| t.join().unwrap());
        check(taken, stolen.collect(), &(1..=tasks).collect::<Vec<_>>());
    });
}

/// Who ran which task, as the owner saw it.
type Taken = Vec<(Ran, usize)>;

/// Nested forks: pushes tasks `1..=n`, then takes them back, newest first.
fn nested(b: &Bench, o: &Owner, n: usize) -> Taken {
    let pushed: Vec<(Pushed, usize)> = (1..=n)
        .map(|tag| (o.push(JobRef::tagged(tag)).expect("room"), tag))
        .collect();
    (pushed.iter().rev())
        .map(|&(h, tag)| take_back(b, o, h, tag))
        .collect()
}

/// Forks in sequence: pushes and takes back each of tasks `1..=n` in turn, in one slot.
fn sequential(b: &Bench, o: &Owner, n: usize) -> Taken {
    (1..=n)
        .map(|tag| {
            let h = o.push(JobRef::tagged(tag)).expect("room");
            take_back(b, o, h, tag)
        })
        .collect()
}

/// Three nested forks against one thief making two attempts: the first push is shared at
/// once, a thief finding only private tasks raises `movesplit` and the third push shares
/// half of them; pops race the thief's compare-and-swap on the split.
#[test]
fn nested_forks_against_a_thief_run_every_task_once() {
    model(&[2], 3, nested);
}

/// A slot stolen, completed and then reused for the next fork: the thief of the second
/// task must read the second job, not the first, and the owner its result.
#[test]
fn a_slot_reused_after_a_steal_carries_the_new_task() {
    model(&[2], 2, sequential);
}

/// Two thieves racing for the shared tasks of one owner: only one wins each slot.
#[test]
fn two_thieves_never_take_the_same_task() {
    model(&[1, 1], 2, nested);
}
