//! A bounds-checked little-endian reader over a byte slice.
//!
//! Every read either succeeds or yields a [`ModelError`] naming the file and the byte offset
//! where the read started, so the parsers never index out of range and never panic.

use super::error::{Invalid, ModelError};

/// Reads little-endian integers from `bytes`, tracking the current offset.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    name: &'a str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], name: &'a str) -> Self {
        Cursor {
            bytes,
            pos: 0,
            name,
        }
    }

    /// Current offset from the start of the file.
    pub(crate) fn pos(&self) -> u64 {
        self.pos as u64
    }

    /// Bytes not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// An error located at `offset`.
    pub(crate) fn error_at(&self, offset: u64, what: Invalid) -> ModelError {
        ModelError::Invalid {
            file: self.name.to_string(),
            offset,
            what,
        }
    }

    /// An error located at the current offset.
    pub(crate) fn error(&self, what: Invalid) -> ModelError {
        self.error_at(self.pos(), what)
    }

    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ModelError> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let mut out = [0u8; N];
                out.copy_from_slice(&self.bytes[self.pos..end]);
                self.pos = end;
                Ok(out)
            }
            None => Err(self.error(Invalid::Truncated {
                what,
                needed: N as u64,
                available: self.remaining() as u64,
            })),
        }
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, ModelError> {
        self.take::<4>(what).map(u32::from_le_bytes)
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, ModelError> {
        self.take::<4>(what).map(i32::from_le_bytes)
    }

    /// Reads an `i32` that must lie in `range`; otherwise an error at its offset gives
    /// `reason`.
    pub(crate) fn i32_in(
        &mut self,
        what: &'static str,
        range: std::ops::RangeInclusive<i32>,
        reason: &'static str,
    ) -> Result<i32, ModelError> {
        let off = self.pos();
        let v = self.i32(what)?;
        if !range.contains(&v) {
            return Err(self.error_at(
                off,
                Invalid::BadValue {
                    what,
                    value: i128::from(v),
                    reason,
                },
            ));
        }
        Ok(v)
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, ModelError> {
        self.take::<8>(what).map(u64::from_le_bytes)
    }

    /// Checks that `count` elements of `elem_size` bytes each fit in the rest of the file,
    /// so that a corrupt count can never cause a huge allocation. `offset` is where the count
    /// itself was read (the error points there).
    pub(crate) fn check_fits(
        &self,
        offset: u64,
        what: &'static str,
        count: u64,
        elem_size: u64,
    ) -> Result<usize, ModelError> {
        let needed = count.checked_mul(elem_size);
        match needed {
            Some(n) if n <= self.remaining() as u64 => Ok(count as usize),
            _ => Err(self.error_at(
                offset,
                Invalid::CountTooLarge {
                    what,
                    count,
                    elem_size,
                    available: self.remaining() as u64,
                },
            )),
        }
    }

    /// Reads an `i32` count of `item`s of at least `item_bytes` bytes each: negative counts
    /// and counts that cannot fit in the rest of the file are errors at the count.
    pub(crate) fn count(
        &mut self,
        what: &'static str,
        item: &'static str,
        item_bytes: u64,
    ) -> Result<usize, ModelError> {
        let off = self.pos();
        let n = self.i32(what)?;
        if n < 0 {
            return Err(self.error_at(
                off,
                Invalid::BadValue {
                    what,
                    value: i128::from(n),
                    reason: "must not be negative",
                },
            ));
        }
        self.check_fits(off, item, n as u64, item_bytes)
    }
}
