//! SPMD test bodies of the CnC crate, shared by `cargo test` (local transport, 1, 2 and 4
//! PEs: `tests/cnc.rs`) and by `examples/cnc_tests.rs` (any transport, e.g. under
//! `mpirun -np 4`: `tests/mpi.rs`).
//!
//! Each body runs on every PE and panics on failure, which fails the whole run.

use rhizome::Ctx;
use rhizome_cnc::examples::{cholesky, smith_waterman};
use rhizome_cnc::{CncError, Graph};

/// A test: it runs on every PE.
type Body = fn(&Ctx);

/// Every test, with its name, in the order the example runs them.
pub const TESTS: &[(&str, Body)] = &[
    ("cholesky_checked", cholesky_checked),
    ("smith_waterman_checked", smith_waterman_checked),
    ("double_put_names_the_tag", double_put_names_the_tag),
    (
        "unsatisfied_get_reported_at_quiescence",
        unsatisfied_get_reported,
    ),
    ("step_panic_reported", step_panic_reported),
    ("stress_many_small_steps", stress_many_small_steps),
];

fn cholesky_checked(ctx: &Ctx) {
    // 5 × 5 tiles of 6: every step kind, tiles on every PE, exact comparison inside.
    let out = cholesky::run(ctx, 5, 6).unwrap_or_else(|e| panic!("cholesky: {e}"));
    assert_eq!(out.n, 30);
    assert!(out.residual < 1e-10, "residual {}", out.residual);
}

fn smith_waterman_checked(ctx: &Ctx) {
    // Ragged tiles (61 × 47 letters in tiles of 8), every tile compared inside.
    let out = smith_waterman::run(ctx, 61, 47, 8).unwrap_or_else(|e| panic!("smith-waterman: {e}"));
    let (a, b) = (
        smith_waterman::sequence(61, 1),
        smith_waterman::sequence(47, 2),
    );
    let want = smith_waterman::sequential(&a, &b)
        .into_iter()
        .max()
        .unwrap();
    assert_eq!(out.best, want);
    assert!(out.best > 0);
}

fn double_put_names_the_tag(ctx: &Ctx) {
    let g = Graph::new(ctx);
    let x = g.items::<u64, u64>("x", |t| *t as usize);
    let x2 = x.clone();
    // Step 1 puts tag 7 again, which the environment also puts; tag 3 is put once.
    let step = g.steps(
        "again",
        |t: &u64| *t as usize + 1,
        move |s, &t| {
            s.put(&x2, 7, t);
            Ok(())
        },
    );
    let tags = g.tags::<u64>("t");
    tags.prescribes(&step);
    let r = g.run(ctx, |env| {
        if env.my_pe() == env.num_pes() - 1 {
            env.put(&x, 7, 70);
            env.put(&x, 3, 30);
            env.put_tag(&tags, 1);
        }
    });
    let e: CncError = r.expect_err("a double put must fail the run");
    assert_eq!(e.double_puts, vec!["`x` tag 7".to_string()], "{e}");
    assert!(e.unsatisfied.is_empty() && e.failed_steps.is_empty(), "{e}");
    assert!(e.to_string().contains("double put (1): `x` tag 7"), "{e}");
    // The first put stays; the other tag is there.
    if x.home_of(&3) == ctx.my_pe() {
        assert_eq!(x.get_local(&3).as_deref(), Some(&30));
    }
}

fn unsatisfied_get_reported(ctx: &Ctx) {
    let g = Graph::new(ctx);
    let x = g.items::<u64, u64>("x", |t| *t as usize);
    let y = g.items::<u64, u64>("y", |t| *t as usize + 1);
    let (x2, y2) = (x.clone(), y.clone());
    // Step t gets x[t] and x[42]; x[42] is never put, so every instance waits forever.
    let step = g.steps(
        "needs42",
        |t: &u64| *t as usize,
        move |s, &t| {
            let a = s.get(&x2, &t)?;
            let b = s.get(&x2, &42)?;
            s.put(&y2, t, *a + *b);
            Ok(())
        },
    );
    let tags = g.tags::<u64>("t");
    tags.prescribes(&step);
    let r = g.run(ctx, |env| {
        if env.my_pe() == 0 {
            env.put_tag(&tags, 1);
            env.put_tag(&tags, 2);
            env.put(&x, 1, 10);
            env.put(&x, 2, 20);
        }
    });
    let e = r.expect_err("a get that can never be satisfied must fail the run");
    assert_eq!(
        e.unsatisfied,
        vec![
            "`x` tag 42 (wanted by step `needs42` tag 1)".to_string(),
            "`x` tag 42 (wanted by step `needs42` tag 2)".to_string(),
        ],
        "{e}"
    );
    assert!(e.double_puts.is_empty(), "{e}");
    assert!(y.local_items().is_empty());
    // Putting the missing item in a second run completes the graph.
    g.run(ctx, |env| {
        if env.my_pe() == 0 {
            env.put(&x, 42, 1);
            env.put_tag(&tags, 3);
            env.put(&x, 3, 30);
        }
    })
    .unwrap_or_else(|e| panic!("second run: {e}"));
    if y.home_of(&3) == ctx.my_pe() {
        assert_eq!(y.get_local(&3).as_deref(), Some(&31));
    }
}

fn step_panic_reported(ctx: &Ctx) {
    let g = Graph::new(ctx);
    let step = g.steps(
        "boom",
        |t: &u32| *t as usize,
        |_, &t| {
            if t == 3 {
                panic!("tile {t} is bad");
            }
            Ok(())
        },
    );
    let tags = g.tags::<u32>("t");
    tags.prescribes(&step);
    let e = g
        .run(ctx, |env| {
            if env.my_pe() == 0 {
                (0..6).for_each(|t| env.put_tag(&tags, t));
            }
        })
        .expect_err("a panicking step must fail the run");
    assert_eq!(
        e.failed_steps,
        vec!["step `boom` tag 3 panicked: tile 3 is bad".to_string()]
    );
}

/// x[0] = 1, x[i] = 31·x[i/2] ^ x[i/3] + i; y[i] = x[i] + 1 computed by a second step
/// collection prescribed from the first. Items and steps have different homes, tags are
/// put in reverse, so most gets cross PEs and suspend first.
fn stress_many_small_steps(ctx: &Ctx) {
    const N: u64 = 3000;
    let g = Graph::new(ctx);
    let item_home = |i: &u64| (i.wrapping_mul(2_654_435_761) >> 7) as usize;
    let x = g.items::<u64, u64>("x", item_home);
    let y = g.items::<u64, u64>("y", |i| *i as usize / 3);
    let then = g.tags::<u64>("then");
    let (x1, x2, y2, then1) = (x.clone(), x.clone(), y.clone(), then.clone());
    let compute = g.steps(
        "x",
        |i: &u64| *i as usize,
        move |s, &i| {
            let a = s.get(&x1, &(i / 2))?;
            let b = s.get(&x1, &(i / 3))?;
            s.put(&x1, i, a.wrapping_mul(31) ^ b.wrapping_add(i));
            s.put_tag(&then1, i);
            Ok(())
        },
    );
    let plus_one = g.steps(
        "y",
        |i: &u64| *i as usize + 1,
        move |s, &i| {
            let v = s.get(&x2, &i)?;
            s.put(&y2, i, *v + 1);
            Ok(())
        },
    );
    let tags = g.tags::<u64>("i");
    tags.prescribes(&compute);
    then.prescribes(&plus_one);
    let (me, pes) = (ctx.my_pe(), ctx.num_pes());
    g.run(ctx, |env| {
        for i in (1..N).rev().filter(|i| *i as usize % pes == me) {
            env.put_tag(&tags, i);
        }
        if me == pes - 1 {
            env.put(&x, 0, 1);
        }
    })
    .unwrap_or_else(|e| panic!("stress: {e}"));
    let mut want = vec![1u64; N as usize];
    for i in 1..N as usize {
        want[i] = want[i / 2].wrapping_mul(31) ^ want[i / 3].wrapping_add(i as u64);
    }
    let mut seen = 0u64;
    for (i, v) in x.local_items() {
        assert_eq!(*v, want[i as usize], "x[{i}]");
        assert_eq!(x.home_of(&i), me);
        seen += 1;
    }
    for (i, v) in y.local_items() {
        assert!(i >= 1);
        assert_eq!(*v, want[i as usize] + 1, "y[{i}]");
        seen += 1;
    }
    assert_eq!(ctx.sum_u64(seen), N + (N - 1), "every x and y exactly once");
}
