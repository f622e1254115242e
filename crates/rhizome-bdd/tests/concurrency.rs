//! Stress on the shared unique table and operation cache: many workers build the same
//! functions at once; canonicity (equal functions are equal edges) and exact counts
//! must survive every interleaving.

use num_bigint::BigUint;
use rhizome_bdd::{Bdd, Config, Manager, NodeStore, OpCache, OpCtx};

/// The constraint of one square, `(row, column)`.
type CellFn<'f, S, C> = dyn Fn(&OpCtx<'_, S, C>, u32, u32) -> Bdd + Sync + 'f;

/// The n-queens constraint as a BDD over n*n variables, built by one operation with
/// the rows combined in parallel.
fn queens<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, n: u32) -> Bdd {
    let var = |r: u32, col: u32| r * n + col;
    let lit = |c: &OpCtx<'_, S, C>, v: u32| c.make(v, Bdd::FALSE, Bdd::TRUE);
    // square (r, col) occupied implies no attack on it
    let cell = |c: &OpCtx<'_, S, C>, r: u32, col: u32| -> Bdd {
        let mut none = Bdd::TRUE;
        for r2 in 0..n {
            for c2 in 0..n {
                if (r2, c2) == (r, col) {
                    continue;
                }
                let attacks = r2 == r || c2 == col || r2 + col == r + c2 || r2 + c2 == r + col;
                if attacks {
                    none = c.and(none, !lit(c, var(r2, c2)));
                }
            }
        }
        c.implies(lit(c, var(r, col)), none)
    };
    fn rows<S: NodeStore, C: OpCache>(
        c: &OpCtx<'_, S, C>,
        lo: u32,
        hi: u32,
        n: u32,
        cell: &CellFn<'_, S, C>,
    ) -> Bdd {
        if hi - lo == 1 {
            let mut one = Bdd::FALSE;
            let mut ok = Bdd::TRUE;
            for col in 0..n {
                one = c.or(one, c.make(lo * n + col, Bdd::FALSE, Bdd::TRUE));
                ok = c.and(ok, cell(c, lo, col));
            }
            return c.and(one, ok);
        }
        let mid = (lo + hi) / 2;
        let (a, b) = c.join(|c| rows(c, lo, mid, n, cell), |c| rows(c, mid, hi, n, cell));
        c.and(a, b)
    }
    rows(c, 0, n, n, &cell)
}

#[test]
fn queens_counts_are_exact_for_all_worker_counts() {
    let expected = [(4u32, 2u32), (5, 10), (6, 4), (7, 40), (8, 92)];
    for workers in [1, 2, 4] {
        let mut m = Manager::with_config(Config {
            workers,
            initial_nodes: 1 << 12,
            ..Config::default()
        });
        let mut roots = Vec::new();
        let mut guards = Vec::new();
        for &(n, count) in &expected {
            let f = m.run(&[], |c| queens(c, n)).unwrap();
            guards.push(m.root(f));
            roots.push(f);
            let vars: Vec<u32> = (0..n * n).collect();
            assert_eq!(
                m.satcount(f, &vars),
                BigUint::from(count),
                "{n} queens, {workers} workers"
            );
        }
        // Building again (from a warm table, with a collection in between) gives the
        // very same edges.
        m.collect_garbage(&[]);
        for (i, &(n, _)) in expected.iter().enumerate() {
            assert_eq!(m.run(&[], |c| queens(c, n)).unwrap(), roots[i]);
        }
    }
}
