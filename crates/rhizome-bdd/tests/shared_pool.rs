//! A manager on a PE's pool ([`Manager::with_pool`]): BDD operations and the jobs of
//! `rhizome::tasks` on one set of worker threads.

use rhizome::World;
use rhizome::tasks::Tasks;
use rhizome_bdd::{Bdd, Config, Manager, OpCtx, SharedNodeTable, SharedOpCache};

/// The parity of `vars`, as a tree of forked `xor`s.
fn parity(c: &OpCtx<'_, SharedNodeTable, SharedOpCache>, vars: &[Bdd]) -> Bdd {
    match vars {
        [v] => *v,
        _ => {
            let (l, r) = vars.split_at(vars.len() / 2);
            let (a, b) = c.join(|c| parity(c, l), |c| parity(c, r));
            c.xor(a, b)
        }
    }
}

#[test]
fn operations_on_the_pe_pool_run_inside_a_tasks_run() {
    const VARS: u32 = 16;
    for workers in [1, 2, 4] {
        let counts = World::builder()
            .pes(1)
            .workers(workers)
            .run(|ctx| {
                let mut m = Manager::with_pool(Config::default(), ctx.pool().clone());
                assert_eq!(m.workers(), workers);
                let vars: Vec<Bdd> = (0..VARS).map(|i| m.ithvar(i)).collect();
                let tasks = Tasks::new(ctx);
                // The run holds the pool; the manager's operations run inline on the
                // body's worker, and their forks are stolen by the run's other workers.
                let f = tasks.run(ctx, |_| m.run(&vars, |c| parity(c, &vars)).unwrap());
                m.satcount(f, &(0..VARS).collect::<Vec<_>>())
            })
            .unwrap();
        assert_eq!(counts[0], (1u32 << (VARS - 1)).into(), "{workers} workers");
    }
}
