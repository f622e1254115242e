//! The atomics of the lock-free tables, swapped for loom's in a `--cfg loom` build so the
//! unique table and the operation cache can be model-checked as they are.
//!
//! Loom's atomics carry model state, so under loom the tables cannot come from lazily
//! mapped zero pages ([`crate::zeroed`]): they are plain vectors then, and the exclusive
//! accesses of a collection go through [`read_mut`] and [`write_mut`] (loom's atomics have
//! no `get_mut`). In a normal build all of this is the standard library and compiles to
//! the same code as using it directly.

#[cfg(loom)]
pub(crate) use ::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};

/// A table of `T`s that starts all zero.
#[cfg(not(loom))]
pub(crate) type Table<T> = crate::zeroed::Zeroed<T>;
#[cfg(loom)]
pub(crate) type Table<T> = Vec<T>;

/// Values that start a [`Table`]: all-zero atomics and arrays of them.
#[cfg(not(loom))]
pub(crate) use crate::zeroed::Zeroable as Zero;

/// Values that start a [`Table`]: all-zero atomics and arrays of them.
#[cfg(loom)]
pub(crate) trait Zero {
    fn zero() -> Self;
}
#[cfg(loom)]
impl Zero for AtomicU64 {
    fn zero() -> Self {
        AtomicU64::new(0)
    }
}
#[cfg(loom)]
impl<T: Zero, const N: usize> Zero for [T; N] {
    fn zero() -> Self {
        std::array::from_fn(|_| T::zero())
    }
}

/// A table of `n` zero values (reserved address space, committed as it is touched).
#[cfg(not(loom))]
pub(crate) fn table<T: Zero>(n: usize) -> Table<T> {
    crate::zeroed::zeroed(n)
}
#[cfg(loom)]
pub(crate) fn table<T: Zero>(n: usize) -> Table<T> {
    (0..n).map(|_| T::zero()).collect()
}

/// The value of an atomic the caller has exclusive access to.
#[cfg(not(loom))]
#[inline]
pub(crate) fn read_mut(w: &mut AtomicU64) -> u64 {
    *w.get_mut()
}
#[cfg(loom)]
pub(crate) fn read_mut(w: &mut AtomicU64) -> u64 {
    w.with_mut(|v| *v)
}

/// Sets an atomic the caller has exclusive access to.
#[cfg(not(loom))]
#[inline]
pub(crate) fn write_mut(w: &mut AtomicU64, v: u64) {
    *w.get_mut() = v;
}
#[cfg(loom)]
pub(crate) fn write_mut(w: &mut AtomicU64, v: u64) {
    w.with_mut(|x| *x = v);
}

/// Bytes of `t` in memory now (all of it under loom, where tables are vectors).
#[cfg(not(loom))]
pub(crate) fn resident_bytes<T>(t: &Table<T>) -> usize {
    t.resident_bytes()
}
#[cfg(loom)]
pub(crate) fn resident_bytes<T>(t: &Table<T>) -> usize {
    t.len() * size_of::<T>()
}
