//! The built-in dining philosophers model explored state by state: the oracle its
//! symbolic runs are checked against (by `tests/builtin_oracle.rs` and the command's
//! tests, which include this file by path).

use std::collections::HashSet;

/// (states, BFS levels, deadlock states) of `philosophers:n` by explicit enumeration.
/// A state is `(s, f)` per philosopher: `s` = 0 thinking, 1 holding the left fork,
/// 2 eating; `f` = fork `i` taken.
pub fn explicit(n: usize) -> (usize, usize, usize) {
    let (per_level, dead) = explicit_levels(n);
    (
        *per_level.last().expect("level 0"),
        per_level.len() - 1,
        dead,
    )
}

/// States visited after each BFS level of `philosophers:n` (index 0: the initial state;
/// the last level, which finds nothing new, included), and the deadlock states.
pub fn explicit_levels(n: usize) -> (Vec<usize>, usize) {
    type State = Vec<(u8, u8)>;
    let succ = |st: &State| -> Vec<State> {
        let mut out = Vec::new();
        for i in 0..n {
            let r = (i + 1) % n;
            let (s, l) = st[i];
            if s == 0 && l == 0 {
                let mut t = st.clone();
                t[i] = (1, 1);
                out.push(t);
            }
            if s == 1 && st[r].1 == 0 {
                let mut t = st.clone();
                t[i].0 = 2;
                t[r].1 = 1;
                out.push(t);
            }
            if s == 2 {
                let mut t = st.clone();
                t[i] = (0, 0);
                t[r].1 = 0;
                out.push(t);
            }
        }
        out
    };
    let init: State = vec![(0, 0); n];
    let mut seen: HashSet<State> = HashSet::from([init.clone()]);
    let mut front = vec![init];
    let (mut per_level, mut dead) = (vec![1], 0);
    loop {
        let mut next = Vec::new();
        for st in &front {
            let ss = succ(st);
            dead += ss.is_empty() as usize;
            for t in ss {
                if seen.insert(t.clone()) {
                    next.push(t);
                }
            }
        }
        per_level.push(seen.len());
        if next.is_empty() {
            break;
        }
        front = next;
    }
    (per_level, dead)
}
