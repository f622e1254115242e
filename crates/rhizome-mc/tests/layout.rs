//! Models whose next-state variables are not interleaved with the current ones: `sat` and
//! `par` need the one-operation image such models lack, so they run `bfs`, and the report
//! says so.

use rhizome_bdd::{Bdd, Manager};
use rhizome_mc::model::Model;
use rhizome_mc::reach::Strategy;
#[path = "support/reach.rs"]
mod support;

use support::{ALL_STRATEGIES, run};

fn literal(m: &Manager, var: u32, value: bool) -> Bdd {
    let x = m.ithvar(var);
    if value { x } else { !x }
}

#[test]
fn sat_and_par_report_that_bfs_ran_on_a_model_without_interleaving() {
    let mut m = Manager::new(2);
    // A 2-bit counter x -> x + 1 mod 4: current bits on variables 0 and 1, next bits on
    // 2 and 3 (interleaving would put them on 1 and 3).
    let mut relation = Bdd::FALSE;
    for v in 0..4u32 {
        let w = (v + 1) % 4;
        let mut t = Bdd::TRUE;
        for (var, value) in [(0, v & 1), (1, v & 2), (2, w & 1), (3, w & 2)] {
            let l = literal(&m, var, value != 0);
            t = m.and(t, l).unwrap();
        }
        relation = m.or(relation, t).unwrap();
    }
    let (b0, b1) = (literal(&m, 0, false), literal(&m, 1, false));
    let initial = m.and(b0, b1).unwrap();
    let model = Model::new(
        &mut m,
        "counter".into(),
        vec![2],
        vec![0, 1],
        vec![2, 3],
        initial,
        vec![(relation, vec![0, 1], vec![2, 3])],
    )
    .unwrap();
    assert!(!model.interleaved);
    for asked in ALL_STRATEGIES {
        let r = run(&mut m, &model, asked).unwrap();
        assert_eq!(r.states, 4u32.into(), "{asked:?}");
        let ran = match asked {
            Strategy::Sat | Strategy::Par => Strategy::Bfs,
            s => s,
        };
        assert_eq!(r.strategy, ran, "{asked:?}");
        if ran == Strategy::Bfs {
            // 0 -> 1 -> 2 -> 3, then the empty image.
            assert_eq!(r.levels, Some(4), "{asked:?}");
        }
    }
}
