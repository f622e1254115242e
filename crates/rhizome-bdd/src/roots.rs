//! Roots of garbage collection, held as values: a [`Root`] keeps one BDD (and every node
//! below it) alive across collections for as long as the guard lives.
//!
//! The counterpart of Sylvan's `sylvan_refs.c` (`sylvan_protect` / `sylvan_ref`): a
//! multiset of protected edges that the collector marks from. Here the multiset is shared
//! behind an `Arc` that every guard holds, so a guard releases its BDD on drop without
//! borrowing the manager: a `Root` can sit beside `&mut Manager` in a caller's locals, and
//! an early return (`?`) or a panic cannot leak a root or release one twice.

use crate::edge::Bdd;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// The protected edges of one manager, with how many guards hold each.
#[derive(Default)]
pub(crate) struct Roots {
    counts: Mutex<HashMap<Bdd, usize>>,
}

impl Roots {
    fn lock(&self) -> MutexGuard<'_, HashMap<Bdd, usize>> {
        // A panic while the lock is held leaves the map consistent (one insert or
        // remove each), so a poisoned lock is safe to keep using.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, f: Bdd) {
        // Constants have no node to keep; complement edges share their node.
        if !f.is_const() {
            *self.lock().entry(f.regular()).or_insert(0) += 1;
        }
    }

    fn remove(&self, f: Bdd) {
        if f.is_const() {
            return;
        }
        let mut counts = self.lock();
        if let Some(n) = counts.get_mut(&f.regular()) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&f.regular());
            }
        }
    }

    /// The protected nodes now, for the collector to mark from.
    pub(crate) fn snapshot(&self) -> Vec<Bdd> {
        self.lock().keys().copied().collect()
    }

    /// Distinct protected nodes (not guards).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// A BDD kept alive across garbage collections until the guard is dropped (see
/// [`Manager::root`](crate::Manager::root)). Cloning protects the BDD once more.
///
/// ```
/// use rhizome_bdd::{Bdd, Manager};
/// let mut m = Manager::new(1);
/// let (x, y) = (m.ithvar(0), m.ithvar(2));
/// let f = m.and(x, y).unwrap();
/// let f = m.root(f); // survives the collection below
/// m.collect_garbage(&[]);
/// assert_eq!(m.satcount(f.get(), &[0, 2]), 1u32.into());
/// ```
pub struct Root {
    roots: Arc<Roots>,
    bdd: Bdd,
}

impl Root {
    pub(crate) fn new(roots: &Arc<Roots>, bdd: Bdd) -> Root {
        roots.add(bdd);
        Root {
            roots: Arc::clone(roots),
            bdd,
        }
    }

    /// The protected BDD.
    #[inline]
    pub fn get(&self) -> Bdd {
        self.bdd
    }

    /// Protects `bdd` instead of the BDD held so far (which may then be collected).
    pub fn set(&mut self, bdd: Bdd) {
        // The new one first: `bdd` may lie below the old one.
        self.roots.add(bdd);
        self.roots.remove(self.bdd);
        self.bdd = bdd;
    }
}

impl Clone for Root {
    fn clone(&self) -> Root {
        Root::new(&self.roots, self.bdd)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        self.roots.remove(self.bdd);
    }
}

impl fmt::Debug for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Root").field(&self.bdd).finish()
    }
}

/// Guards are equal when they protect the same edge.
impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.bdd == other.bdd
    }
}

impl Eq for Root {}

impl PartialEq<Bdd> for Root {
    fn eq(&self, other: &Bdd) -> bool {
        self.bdd == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_stays_protected_while_any_guard_holds_it() {
        let roots = Arc::new(Roots::default());
        let f = Bdd::from_raw(7);
        let a = Root::new(&roots, f);
        let b = Root::new(&roots, !f);
        let c = a.clone();
        assert_eq!(roots.snapshot(), vec![f]);
        drop(a);
        drop(b);
        assert_eq!(roots.snapshot(), vec![f]);
        drop(c);
        assert_eq!(roots.len(), 0);
    }

    #[test]
    fn set_moves_the_protection_and_constants_take_none() {
        let roots = Arc::new(Roots::default());
        let (f, g) = (Bdd::from_raw(3), Bdd::from_raw(4));
        let mut r = Root::new(&roots, Bdd::TRUE);
        assert_eq!(roots.len(), 0);
        r.set(f);
        assert_eq!(roots.snapshot(), vec![f]);
        r.set(f);
        assert_eq!(roots.snapshot(), vec![f]);
        r.set(g);
        assert_eq!(roots.snapshot(), vec![g]);
        drop(r);
        assert_eq!(roots.len(), 0);
    }

    #[test]
    fn guards_released_on_an_early_return_leave_no_root() {
        fn fails(roots: &Arc<Roots>) -> Result<Root, ()> {
            let _held = Root::new(roots, Bdd::from_raw(9));
            Err(())
        }
        let roots = Arc::new(Roots::default());
        assert!(fails(&roots).is_err());
        assert_eq!(roots.len(), 0);
    }
}
