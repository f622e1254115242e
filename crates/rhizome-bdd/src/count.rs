//! Read-only queries on finished BDDs: exact model counting, node counting, and picking
//! a satisfying assignment. They run on the calling thread: they are linear in the size
//! of the BDD and far cheaper than the operations that build it.

use crate::edge::Bdd;
use crate::manager::Manager;
use crate::node_table::NodeStore;
use crate::op_cache::OpCache;
use num_bigint::BigUint;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

impl<S: NodeStore, C: OpCache> Manager<S, C> {
    /// The exact number of assignments to `vars` that satisfy `f`. `f` may only depend
    /// on variables in `vars` (panics otherwise: the count would be meaningless).
    ///
    /// ```
    /// use rhizome_bdd::Manager;
    /// let mut m = Manager::new(1);
    /// let x = m.ithvar(4);
    /// // x over the 100 variables 0..100: half of 2^100.
    /// let vars: Vec<u32> = (0..100).collect();
    /// assert_eq!(m.satcount(x, &vars), num_bigint::BigUint::from(1u8) << 99);
    /// ```
    pub fn satcount(&self, f: Bdd, vars: &[u32]) -> BigUint {
        self.satcount_and_nodes(f, vars).0
    }

    /// [`satcount`](Manager::satcount) and [`node_count`](Manager::node_count) of `f`
    /// in one walk (reachability reports both after every level; each walk of a large
    /// BDD is mostly cache misses).
    ///
    /// ```
    /// use rhizome_bdd::Manager;
    /// let mut m = Manager::new(1);
    /// let (x, y) = (m.ithvar(0), m.ithvar(2));
    /// let f = m.or(x, y).unwrap();
    /// assert_eq!(m.satcount_and_nodes(f, &[0, 2]), (3u32.into(), 2));
    /// ```
    pub fn satcount_and_nodes(&self, f: Bdd, vars: &[u32]) -> (BigUint, usize) {
        let mut vs = vars.to_vec();
        vs.sort_unstable();
        vs.dedup();
        let n = vs.len() as u32;
        // Reachability counts the visited set after every level: below 2^128 (every
        // model of fewer than 128 state bits) the count runs on machine integers, several
        // times faster than on big ones.
        if n < 128 {
            let (c, nodes) = self.count_in::<u128>(f, &vs);
            (BigUint::from(c), nodes)
        } else {
            self.count_in::<BigUint>(f, &vs)
        }
    }

    /// [`satcount`](Manager::satcount) over the sorted, distinct `vars`, in numbers of
    /// type `T`, which must hold `2^vars.len()`; and the nodes of `f`.
    fn count_in<T>(&self, f: Bdd, vars: &[u32]) -> (T, usize)
    where
        T: Clone + From<u8> + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
        T: std::ops::Shl<u32, Output = T>,
    {
        let n = vars.len() as u32;
        let level = |b: Bdd| -> u32 {
            match self.node(b) {
                None => n,
                Some((v, _, _)) => vars.binary_search(&v).unwrap_or_else(|_| {
                    panic!("satcount: variable {v} is not among the counted variables")
                }) as u32,
            }
        };
        // count(b): satisfying assignments of the variables at positions >= level(b);
        // memo holds it for regular edges, a complement takes the rest of the space.
        type Memo<T> = HashMap<u64, T, BuildHasherDefault<IndexHasher>>;
        let count = |memo: &Memo<T>, c: Bdd| -> T {
            if c == Bdd::TRUE {
                T::from(1u8)
            } else if c == Bdd::FALSE {
                T::from(0u8)
            } else if c.is_complemented() {
                (T::from(1u8) << (n - level(c))) - memo[&c.index()].clone()
            } else {
                memo[&c.index()].clone()
            }
        };
        let mut memo: Memo<T> = HashMap::default();
        let mut stack = vec![f.regular()];
        while let Some(&b) = stack.last() {
            if b.is_const() || memo.contains_key(&b.index()) {
                stack.pop();
                continue;
            }
            let (_, lo, hi) = self.store.node(b.index());
            let mut pending = false;
            for c in [lo.regular(), hi.regular()] {
                if !c.is_const() && !memo.contains_key(&c.index()) {
                    stack.push(c);
                    pending = true;
                }
            }
            if pending {
                continue;
            }
            stack.pop();
            let l = level(b);
            let part = |c: Bdd| -> T { count(&memo, c) << (level(c) - l - 1) };
            let value = part(lo) + part(hi);
            memo.insert(b.index(), value);
        }
        let l = level(f);
        (count(&memo, f) << l, memo.len())
    }

    /// The number of assignments to `vars` satisfying `f`, as a float: cheap, for progress
    /// displays (rounding errors, and infinity above about 2^1023).
    pub fn satcount_approx(&self, f: Bdd, vars: &[u32]) -> f64 {
        let mut vs = vars.to_vec();
        vs.sort_unstable();
        vs.dedup();
        let n = vs.len() as i32;
        // fraction(b): the share of all assignments that satisfy b, so skipped levels need
        // no scaling (the recursion depth is at most the number of variables).
        fn fraction<S: NodeStore, C: OpCache>(
            m: &Manager<S, C>,
            b: Bdd,
            memo: &mut HashMap<u64, f64>,
        ) -> f64 {
            if b.is_const() {
                return if b == Bdd::TRUE { 1.0 } else { 0.0 };
            }
            let p = match memo.get(&b.index()) {
                Some(&p) => p,
                None => {
                    let (_, lo, hi) = m.store.node(b.index());
                    let p = 0.5 * (fraction(m, lo, memo) + fraction(m, hi, memo));
                    memo.insert(b.index(), p);
                    p
                }
            };
            if b.is_complemented() { 1.0 - p } else { p }
        }
        let mut memo = HashMap::new();
        fraction(self, f, &mut memo) * 2f64.powi(n)
    }

    /// The number of internal nodes of `f` (the constant node not counted).
    pub fn node_count(&self, f: Bdd) -> usize {
        self.node_count_many(&[f])
    }

    /// The number of distinct internal nodes of several BDDs together.
    pub fn node_count_many(&self, fs: &[Bdd]) -> usize {
        let mut walk = Walk::new(fs.iter().copied());
        while walk.step(self) {}
        walk.seen.len()
    }

    /// Whether `a` has fewer internal nodes than `b`, at the cost of about twice the
    /// smaller count: both are counted in lockstep, and the larger only until it passes
    /// the smaller.
    ///
    /// ```
    /// use rhizome_bdd::Manager;
    /// let mut m = Manager::new(1);
    /// let (x, y) = (m.ithvar(0), m.ithvar(2));
    /// let xy = m.and(x, y).unwrap();
    /// assert!(m.fewer_nodes(x, xy));
    /// assert!(!m.fewer_nodes(xy, x));
    /// assert!(!m.fewer_nodes(x, x));
    /// ```
    pub fn fewer_nodes(&self, a: Bdd, b: Bdd) -> bool {
        let (mut wa, mut wb) = (Walk::new([a]), Walk::new([b]));
        loop {
            let more_a = wa.step(self);
            let more_b = wb.step(self);
            match (more_a, more_b) {
                (true, true) => {}
                // `a` is complete: `b` only needs to be counted up to its size.
                (false, _) => {
                    while wb.seen.len() <= wa.seen.len() && wb.step(self) {}
                    return wa.seen.len() < wb.seen.len();
                }
                (true, false) => {
                    while wa.seen.len() < wb.seen.len() && wa.step(self) {}
                    return wa.seen.len() < wb.seen.len();
                }
            }
        }
    }

    /// One satisfying assignment of `f`: the variables on one path to `true`, with their
    /// values (variables not listed may take either value); `None` if `f` is `false`.
    pub fn pick_one(&self, f: Bdd) -> Option<Vec<(u32, bool)>> {
        if f == Bdd::FALSE {
            return None;
        }
        let mut path = Vec::new();
        let mut b = f;
        while let Some((v, lo, hi)) = self.node(b) {
            // Canonical BDDs have no path to false only, so a non-false child always
            // leads to true; prefer the low edge for a small example.
            if lo != Bdd::FALSE {
                path.push((v, false));
                b = lo;
            } else {
                path.push((v, true));
                b = hi;
            }
        }
        Some(path)
    }

    /// Evaluates `f` under an assignment (`value(v)` for each variable met).
    pub fn eval(&self, f: Bdd, value: impl Fn(u32) -> bool) -> bool {
        let mut b = f;
        while let Some((v, lo, hi)) = self.node(b) {
            b = if value(v) { hi } else { lo };
        }
        b == Bdd::TRUE
    }
}

/// A depth-first walk over the internal nodes reachable from some roots.
pub(crate) struct Walk {
    pub(crate) seen: HashSet<u64, BuildHasherDefault<IndexHasher>>,
    stack: Vec<u64>,
}

impl Walk {
    pub(crate) fn new(roots: impl IntoIterator<Item = Bdd>) -> Walk {
        Walk {
            seen: HashSet::default(),
            stack: roots.into_iter().map(|f| f.index()).collect(),
        }
    }

    /// Visits the next new node; false once every node has been seen.
    pub(crate) fn step<S: NodeStore, C: OpCache>(&mut self, m: &Manager<S, C>) -> bool {
        while let Some(i) = self.stack.pop() {
            if i == 0 || !self.seen.insert(i) {
                continue;
            }
            let (_, lo, hi) = m.store.node(i);
            self.stack.push(lo.index());
            self.stack.push(hi.index());
            return true;
        }
        false
    }
}

/// Hashes node indices with one multiplication. std's default SipHash made counting a
/// BDD of a million nodes, which reachability does at every level, several times slower
/// than the walk itself.
#[derive(Default)]
pub(crate) struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let h = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // The table takes its bucket from the low bits: fold the well-mixed high half in.
        self.0 = h ^ (h >> 32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use crate::{Bdd, Manager};
    use num_bigint::BigUint;

    #[test]
    fn machine_and_big_integer_counts_agree() {
        // A function with complement edges at many levels, over 40 and over 127 variables
        // (the largest machine-integer count), counted both ways.
        let mut m = Manager::new(1);
        for n in [40u32, 127] {
            let vars: Vec<u32> = (0..n).collect();
            let mut f = m.root(Bdd::FALSE);
            for i in (0..n).step_by(3) {
                let x = m.ithvar(i);
                let y = m.ithvar((i * 7 + 1) % n);
                let t = m.xor(x, y).unwrap();
                let t = m.root(t);
                let g = m.or(f.get(), t.get()).unwrap();
                let g = m.root(g);
                let z = m.ithvar((i + 2) % n);
                f.set(m.and(g.get(), !z).unwrap());
            }
            let f = f.get();
            let (small, nodes) = m.count_in::<u128>(f, &vars);
            let (big, big_nodes) = m.count_in::<BigUint>(f, &vars);
            assert_eq!(BigUint::from(small), big, "n={n}");
            assert_eq!(nodes, big_nodes);
            assert_eq!(nodes, m.node_count(f));
            assert!(big > BigUint::ZERO && big < BigUint::from(1u8) << n);
        }
    }
}
