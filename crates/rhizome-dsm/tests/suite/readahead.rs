//! Page fetches in runs: a thread reading a run of another PE's pages that a barrier
//! took away gets them back in one fetch, and always the current contents.

use super::{Mode, dsm};
use rhizome::Ctx;
use rhizome_dsm::Homes;

/// PE 0's thread 0 rewrites 32 pages homed on PE 0 each round; after a barrier every
/// other thread reads them front to back and must see this round's values. The barrier
/// takes the pages away from the other PEs, which held them, so with one thread per PE
/// the reads of a PE take one fault a round (the whole run in one batch), where a fetch
/// per page would take 32 and the read-ahead alone 6.
pub(super) fn a_run_of_pages_is_fetched_in_few_faults(ctx: &Ctx, m: Mode) {
    let d = dsm(ctx, m);
    let per_page = d.page_size() / 8;
    let (pages, rounds) = (32, 3);
    let a = d.alloc_with::<u64>(pages * per_page, Homes::Pe(0)).unwrap();
    let value = |r: usize, w: usize| (r * 1_000_003 + w) as u64;
    d.run(ctx, |t| {
        for r in 0..rounds {
            if t.global_id() == 0 {
                for w in 0..a.len() {
                    a.set(w, value(r, w));
                }
            }
            t.barrier();
            if t.pe() != 0 {
                for w in 0..a.len() {
                    assert_eq!(a.get(w), value(r, w), "round {r}, word {w}");
                }
            }
            t.barrier();
        }
    });
    let s = d.stats();
    if ctx.my_pe() != 0 && m.threads == 1 {
        assert_eq!(
            s.page_fetches,
            (pages * rounds) as u64,
            "every page, each round"
        );
        assert_eq!(s.read_faults, rounds as u64, "one fault a round");
    }
}
