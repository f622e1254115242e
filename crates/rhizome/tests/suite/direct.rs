//! Direct access to global memory (`Memory::direct_words`) against the one-sided
//! operations on the same words: where a transport maps another PE's block into this
//! process (the local transport, MPI ranks on one node), both must be one memory.

use rhizome::Ctx;
use std::sync::atomic::Ordering;

/// Which PEs' words a PE should reach directly, if the launcher says
/// (`RHIZOME_TEST_DIRECT=all|own|none`): the MPI tests check which path is in use.
fn expected_reach(ctx: &Ctx) -> Option<Vec<bool>> {
    let (n, me) = (ctx.num_pes(), ctx.my_pe());
    let want = std::env::var("RHIZOME_TEST_DIRECT").ok()?;
    Some(match want.as_str() {
        "all" => vec![true; n],
        "own" => (0..n).map(|pe| pe == me).collect(),
        "none" => vec![false; n],
        other => panic!("RHIZOME_TEST_DIRECT={other:?} is not all, own or none"),
    })
}

/// Every PE adds to every word of every PE from two threads, half of the adds as native
/// atomics on the directly mapped words (where it has them), half as one-sided
/// `fetch_add`; a compare-and-swap race on one word mixes both too; puts are read back
/// both ways. Lost or doubled updates show in the sums.
pub fn direct_words_agree(ctx: &Ctx) {
    const WORDS: usize = 16;
    const ROUNDS: u64 = 2_000;
    const THREADS: u64 = 2;
    let (n, me) = (ctx.num_pes(), ctx.my_pe());
    let a = ctx.alloc::<u64>(WORDS);
    let mem = ctx.memory();
    let reach: Vec<bool> = (0..n).map(|pe| mem.direct_words(a, pe).is_some()).collect();
    if let Some(want) = expected_reach(ctx) {
        assert_eq!(reach, want, "PE {me}: which PEs' words are mapped here");
    }
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let mem = mem.clone();
            s.spawn(move || {
                for r in 0..ROUNDS {
                    for pe in 0..n {
                        let k = (r as usize + pe + t as usize) % WORDS;
                        match mem.direct_words(a, pe) {
                            Some(w) if (r + t) % 2 == 0 => {
                                w[k].fetch_add(1, Ordering::SeqCst);
                            }
                            _ => {
                                mem.fetch_add(a.ptr(pe, k), 1);
                            }
                        }
                    }
                }
            });
        }
    });
    ctx.barrier();
    let total: u64 = (0..WORDS).map(|k| mem.load(a.ptr(me, k))).sum();
    assert_eq!(
        total,
        n as u64 * THREADS * ROUNDS,
        "PE {me}: lost or doubled adds"
    );
    if let Some(w) = mem.direct_words(a, me) {
        let direct: u64 = w.iter().map(|x| x.load(Ordering::Acquire)).sum();
        assert_eq!(direct, total, "PE {me}: direct words differ from loads");
    }
    ctx.barrier();

    // One claim of word 0 on the last PE: direct CAS or one-sided, exactly one winner.
    let target = n - 1;
    let p = a.ptr(target, 0);
    let before = mem.load(p);
    ctx.barrier();
    let claim = 1_000_000 + me as u64;
    let won = match mem.direct_words(a, target) {
        Some(w) if me % 2 == 0 => w[0]
            .compare_exchange(before, claim, Ordering::AcqRel, Ordering::Acquire)
            .is_ok(),
        _ => mem.compare_exchange(p, before, claim).is_ok(),
    };
    let winners = ctx.allreduce(won as u64, |x, y| x + y);
    assert_eq!(winners, 1, "exactly one PE claims the word");
    let winner = mem.load(p) - 1_000_000;
    assert!((winner as usize) < n && (winner as usize == me) == won);
    ctx.barrier();

    // A put is read back by a direct load, and a direct store by a get.
    let right = (me + 1) % n;
    mem.put(a.ptr(right, 1), 0xA000 + me as u64);
    if let Some(w) = mem.direct_words(a, right) {
        w[2].store(0xB000 + me as u64, Ordering::Release);
    } else {
        mem.put(a.ptr(right, 2), 0xB000 + me as u64);
    }
    ctx.barrier();
    let left = ((me + n - 1) % n) as u64;
    assert_eq!(mem.get(a.ptr(me, 1)), 0xA000 + left);
    assert_eq!(mem.get(a.ptr(me, 2)), 0xB000 + left);
    if let Some(w) = mem.direct_words(a, me) {
        assert_eq!(w[1].load(Ordering::Acquire), 0xA000 + left);
    }
    ctx.barrier();
}
