//! Models that ship with Rhizome, built with the BDD API: a new user's first run needs
//! no downloaded file.
//!
//! `philosophers:N` is Dijkstra's dining philosophers, N ≥ 2 around a table: each
//! philosopher thinks, takes the left fork, takes the right fork, eats, and puts both
//! back. It deadlocks when everybody holds a left fork. State vector: for each
//! philosopher `i`, a 2-bit integer `s_i` (0 thinking, 1 holding the left fork, 2 eating)
//! and a 1-bit integer `f_i` (fork `i` taken); one transition group per philosopher.

use crate::model::Model;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, OpCtx};

/// The built-in models, for `--help` texts and error messages.
pub const BUILTIN_NAMES: &str = "philosophers:N (N >= 2)";

/// N of `philosophers` without `:N`: the model a bare `rhizome reach` explores, and the
/// README's example.
pub const DEFAULT_PHILOSOPHERS: usize = 64;

/// Parses a built-in model spec such as `philosophers:64` (`philosophers` alone is
/// [`DEFAULT_PHILOSOPHERS`]).
pub fn parse_spec(spec: &str) -> Result<(String, usize), String> {
    let default_n = DEFAULT_PHILOSOPHERS.to_string();
    let (name, n) = spec.split_once(':').unwrap_or((spec, &default_n));
    let n: usize = n
        .parse()
        .map_err(|_| format!("built-in model `{spec}`: `{n}` is not a number"))?;
    match name {
        "philosophers" if (2..=100_000).contains(&n) => Ok((name.to_string(), n)),
        "philosophers" => Err(format!("built-in model `{spec}`: N must be in 2..=100000")),
        _ => Err(format!(
            "unknown built-in model `{name}`; available: {BUILTIN_NAMES}"
        )),
    }
}

/// Builds a built-in model from its spec into `m`.
pub fn build<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    spec: &str,
) -> Result<Model, anyhow::Error> {
    let (name, n) = parse_spec(spec).map_err(anyhow::Error::msg)?;
    match name.as_str() {
        "philosophers" => Ok(philosophers(m, n)?),
        _ => unreachable!("parse_spec accepts only known names"),
    }
}

/// State-bit positions of philosopher `i`: `s_i` (2 bits, most significant first), `f_i`.
fn s_bits(i: usize) -> [u32; 2] {
    [3 * i as u32, 3 * i as u32 + 1]
}
fn f_bit(i: usize) -> u32 {
    3 * i as u32 + 2
}

/// `bits` (state-bit positions, most significant first) encode `value`; `next` selects
/// the next-state copies.
fn equals<S: NodeStore, C: OpCache>(
    c: &OpCtx<'_, S, C>,
    bits: &[u32],
    value: u64,
    next: bool,
) -> Bdd {
    let mut f = Bdd::TRUE;
    for (k, &b) in bits.iter().enumerate().rev() {
        let bit = value >> (bits.len() - 1 - k) & 1 == 1;
        let v = 2 * b + next as u32;
        f = if bit {
            c.make(v, Bdd::FALSE, f)
        } else {
            c.make(v, f, Bdd::FALSE)
        };
    }
    f
}

/// `x' = x` for one state bit.
fn unchanged<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, bit: u32) -> Bdd {
    let (x, xp) = (
        c.make(2 * bit, Bdd::FALSE, Bdd::TRUE),
        c.make(2 * bit + 1, Bdd::FALSE, Bdd::TRUE),
    );
    c.equiv(x, xp)
}

fn and_all<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, fs: &[Bdd]) -> Bdd {
    fs.iter().fold(Bdd::TRUE, |r, &f| c.and(r, f))
}

/// The transition relation of philosopher `i` of `n`: take the left fork, take the right
/// fork, or put both back.
fn philosopher<S: NodeStore, C: OpCache>(c: &OpCtx<'_, S, C>, i: usize, n: usize) -> Bdd {
    let s = s_bits(i);
    let (left, right) = (f_bit(i), f_bit((i + 1) % n));
    // The philosopher goes from state `from` to `to` by taking the free `fork`; the
    // `other` fork stays as it is.
    let take = |from, to, fork, other| {
        and_all(
            c,
            &[
                equals(c, &s, from, false),
                equals(c, &[fork], 0, false),
                equals(c, &s, to, true),
                equals(c, &[fork], 1, true),
                unchanged(c, other),
            ],
        )
    };
    let take_left = take(0, 1, left, right);
    let take_right = take(1, 2, right, left);
    let put_back = and_all(
        c,
        &[
            equals(c, &s, 2, false),
            equals(c, &s, 0, true),
            equals(c, &[left], 0, true),
            equals(c, &[right], 0, true),
        ],
    );
    let t = c.or(take_left, take_right);
    c.or(t, put_back)
}

/// The dining philosophers with `n` philosophers.
pub fn philosophers<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    n: usize,
) -> Result<Model, BddError> {
    assert!(n >= 2, "philosophers needs at least two philosophers");
    let state_bits: Vec<u32> = (0..n).flat_map(|_| [2, 1]).collect();
    let bits = 3 * n as u32;
    let state_vars: Vec<u32> = (0..bits).map(|p| 2 * p).collect();
    let prime_vars: Vec<u32> = (0..bits).map(|p| 2 * p + 1).collect();
    let all: Vec<u32> = (0..bits).collect();
    // Each BDD is built by one operation, so a collection in between cannot free parts
    // of it; finished BDDs are rooted until the model owns them.
    let initial = m.run(&[], |c| equals(c, &all, 0, false))?;
    let mut finished = vec![m.root(initial)];
    let mut groups = Vec::with_capacity(n);
    for i in 0..n {
        let rel = m.run(&[], |c| philosopher(c, i, n))?;
        finished.push(m.root(rel));
        let (left, right) = (f_bit(i), f_bit((i + 1) % n));
        let s = s_bits(i);
        let mut group_bits = [s[0], s[1], left, right];
        group_bits.sort_unstable();
        let cur: Vec<u32> = group_bits.iter().map(|b| 2 * b).collect();
        let next: Vec<u32> = group_bits.iter().map(|b| 2 * b + 1).collect();
        groups.push((rel, cur, next));
    }
    Model::new(
        m,
        format!("philosophers:{n}"),
        state_bits,
        state_vars,
        prime_vars,
        initial,
        groups,
    )
}
