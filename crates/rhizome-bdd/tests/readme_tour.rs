//! The API tour of the README, kept compiling and true.

use rhizome::pool::{Pool, Worker};
use rhizome_bdd::{Bdd, Manager};

fn fib(w: &Worker, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = w.join(|w| fib(w, n - 1), |w| fib(w, n - 2));
    a + b
}

#[test]
fn readme_tour() {
    let pool = Pool::new(2);
    assert_eq!(pool.run(|w| fib(w, 30)), 832_040);

    let mut m = Manager::new(2);
    let (x, y) = (m.ithvar(0), m.ithvar(2));
    let f = m.or(x, y).unwrap();
    assert_eq!(m.satcount(f, &[0, 2]), 3u32.into());
    let g = m
        .run(&[x, y], |c| {
            let (a, b) = c.join(|c| c.and(x, y), |c| c.xor(x, y));
            c.or(a, b)
        })
        .unwrap();
    assert_eq!(g, f);
    assert_ne!(g, Bdd::FALSE);
}
