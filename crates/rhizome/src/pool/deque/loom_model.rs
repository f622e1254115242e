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

mod export;

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
            if let Some(super::Stolen { slot, job, .. }) = b.deque.steal(me, super::Take::Any) {
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

// One deque per worker: the jobs of the layer above (futures) share the deque with the
// halves. A job slot is claimed once (here: one flag per tag, the `Claim` of
// `tasks/claim.rs`) by whoever reaches it first, the owner popping it, a thief, or a
// waiter holding the job's future; a thief completes a job slot as soon as it has read it,
// and the owner reuses a stolen slot only after that (loom's cells check the reuse does
// not race the read). A thief that may not run what it won returns it to the owner.

/// One claim flag per tag.
struct Claims([::loom::sync::atomic::AtomicBool; 4]);

impl Claims {
    fn new() -> Arc<Claims> {
        Arc::new(Claims(std::array::from_fn(|_| {
            ::loom::sync::atomic::AtomicBool::new(false)
        })))
    }

    /// Whether this caller is the one that runs job `tag`.
    fn claim(&self, tag: usize) -> bool {
        !self.0[tag].swap(true, std::sync::atomic::Ordering::AcqRel)
    }
}

/// A thread of worker `me` making `tries` steals that `take` allows; `run` handles each
/// slot it won and says which tag it ran, if any. Returns the tags it ran.
fn steals(
    b: Arc<Bench>,
    me: usize,
    take: super::Take,
    tries: usize,
    run: impl Fn(&Bench, super::Stolen) -> Option<usize> + Send + 'static,
) -> thread::JoinHandle<Vec<usize>> {
    thread::spawn(move || {
        (0..tries)
            .filter_map(|_| b.deque.steal(me, take))
            .filter_map(|s| run(&b, s))
            .collect()
    })
}

/// A thief of worker `me` that may take `take`, making `tries` attempts; returns the tags
/// it ran (a job only if it won the job's claim).
fn mixed_thief(
    b: Arc<Bench>,
    claims: Arc<Claims>,
    me: usize,
    take: super::Take,
    tries: usize,
) -> thread::JoinHandle<Vec<usize>> {
    steals(b, me, take, tries, move |b, s| {
        let tag = s.job.tag();
        assert!(
            take != super::Take::Jobs || s.is_job,
            "a thief that takes jobs only ran a half"
        );
        if s.is_job {
            return claims.claim(tag).then_some(tag);
        }
        // SAFETY: the half's slot is this thread's until it completes it.
        b.results[s.slot].with_mut(|r| unsafe { *r = tag });
        b.deque.complete(s.slot);
        Some(tag)
    })
}

/// The owner's side: pushes half 1, then job 2, runs what is left above the half (the
/// job, unless a thief or the waiter has it), reuses the slot for job 3 and runs that,
/// then takes the half back (or waits for its thief). Returns the tags the owner ran.
fn owner_with_jobs(b: &Bench, o: &Owner, claims: &Claims) -> Vec<usize> {
    let mut ran = Vec::new();
    let half = o.push(JobRef::tagged(1)).expect("room");
    let floor = o.index_of(half) + 1;
    let run_above = |ran: &mut Vec<usize>| {
        while let Some(top) = o.top_above(floor) {
            if let Some(job) = o.pop_top(top)
                && claims.claim(job.tag())
            {
                ran.push(job.tag());
            }
        }
    };
    assert!(o.push_job(JobRef::tagged(2)));
    run_above(&mut ran);
    assert!(o.push_job(JobRef::tagged(3)));
    run_above(&mut ran);
    if o.pop_private(half) || o.pop_shared(half) {
        ran.push(1);
        return ran;
    }
    let h = o.begin_wait();
    let state = loop {
        let s = o.thief_state(h);
        if s == COMPLETED || s == super::RETURNED {
            break s;
        }
        thread::yield_now();
    };
    if state == super::RETURNED {
        ran.push(1);
    } else {
        // SAFETY: the thief wrote the cell before completing the slot (loom checks it).
        assert_eq!(b.results[h].with(|r| unsafe { *r }), 1);
    }
    o.end_wait(h);
    ran
}

/// Runs the owner against thieves (`take`, tries) and a waiter that claims job 2, and
/// checks that halves and jobs 1..=3 ran exactly once each.
fn model_with_jobs(thieves: &'static [(super::Take, usize)], waiter: bool) {
    ::loom::model(move || {
        let b = Bench::new();
        let claims = Claims::new();
        let handles: Vec<_> = (thieves.iter().enumerate())
            .map(|(me, &(take, n))| mixed_thief(Arc::clone(&b), Arc::clone(&claims), me, take, n))
            .collect();
        let waiter = waiter.then(|| {
            let claims = Arc::clone(&claims);
            thread::spawn(move || if claims.claim(2) { vec![2] } else { vec![] })
        });
        // SAFETY: `b` outlives `o`, and `o` is the deque's only owner.
        let o = unsafe { Owner::new(&b.deque) };
        let mut all = owner_with_jobs(&b, &o, &claims);
        all.extend(handles.into_iter().flat_map(|t| t.join().unwrap()));
        all.extend(waiter.into_iter().flat_map(|t| t.join().unwrap()));
        all.sort_unstable();
        assert_eq!(all, [1, 2, 3], "a task lost or run twice");
    });
}

/// Owner, a thief of jobs only and a waiter claiming job 2: the thief never runs the half
/// (it returns one it won through a stale look), a job runs once, and the slot of a stolen
/// job is reused only after its thief has read it.
#[test]
fn jobs_and_a_half_against_a_job_thief_and_a_waiter_run_once() {
    model_with_jobs(&[(super::Take::Jobs, 2)], true);
}

/// Owner against a thief that takes halves only (a background worker outside a run): it
/// runs the half if it wins it, and returns a job it wins through a stale look at the
/// slot's kind to the owner, which runs it. (A thief that takes any slot is the thief of
/// the models above.)
#[test]
fn jobs_and_a_half_against_a_halves_only_thief_run_once() {
    model_with_jobs(&[(super::Take::Halves, 2)], false);
}
