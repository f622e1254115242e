//! Where a key lives: its hash, its home (PE and slot), its fingerprint, and how a slot is
//! laid out in the partition's words.
//!
//! A partition is `slots` entries of `1 + key words` 64-bit words each: the bucket word
//! first, the key after it. Keeping the key beside its bucket lets one get fetch a chunk
//! of buckets together with their keys, so a find that hits costs one round trip, not two
//! (the thesis kept 63-bit data inside the bucket; BDD nodes need 16 bytes).
//!
//! The bucket word is 0 when empty; otherwise [`OCCUPIED`] (set by the compare-and-swap
//! that claims it), [`WRITTEN`] (set once the key is in place) and a 62-bit fingerprint of
//! the key's hash. Equal keys have equal fingerprints, so a reader skips every bucket whose
//! fingerprint differs without looking at its key, and waits for the written bit only on
//! buckets that almost surely hold its own key.

use rhizome::Pod;

/// Set by the writer's compare-and-swap: the bucket is taken.
pub(crate) const OCCUPIED: u64 = 1 << 63;
/// Set by the writer once the key words are visible: readers may compare them.
pub(crate) const WRITTEN: u64 = 1 << 62;
/// The fingerprint bits of a bucket word.
pub(crate) const FINGERPRINT: u64 = WRITTEN - 1;

/// Largest key, in 64-bit words (32 bytes: a BDD node is 16).
pub const MAX_KEY_WORDS: usize = 4;

/// A key as the 64-bit words it is stored as (only the first `n` are used).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct KeyWords {
    pub(crate) w: [u64; MAX_KEY_WORDS],
    pub(crate) n: usize,
}

impl KeyWords {
    /// The words of `key`, whose size [`key_words`] accepted.
    #[inline]
    pub(crate) fn of<K: Pod>(key: &K) -> KeyWords {
        let n = std::mem::size_of::<K>() / 8;
        let mut w = [0u64; MAX_KEY_WORDS];
        // SAFETY: `K: Pod` has no padding, so its `8 * n` bytes are initialised; `w` has
        // room for `MAX_KEY_WORDS >= n` words and does not overlap `key`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (key as *const K).cast::<u8>(),
                w.as_mut_ptr().cast::<u8>(),
                8 * n,
            )
        };
        KeyWords { w, n }
    }

    /// The key stored as `words` (at most [`MAX_KEY_WORDS`]).
    #[inline]
    pub(crate) fn from_slice(words: &[u64]) -> KeyWords {
        let mut w = [0u64; MAX_KEY_WORDS];
        w[..words.len()].copy_from_slice(words);
        KeyWords { w, n: words.len() }
    }

    /// The words as a slice.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.w[..self.n]
    }

    /// The key these words encode.
    #[inline]
    pub(crate) fn decode<K: Pod>(words: &[u64]) -> K {
        assert_eq!(words.len() * 8, std::mem::size_of::<K>());
        // SAFETY: the slice holds exactly `size_of::<K>()` initialised bytes (checked
        // above), every bit pattern is a valid `K` (`Pod`), and the read is unaligned-safe.
        unsafe { std::ptr::read_unaligned(words.as_ptr().cast::<K>()) }
    }

    /// Whether every word is zero: the one key that a racing read of a not yet written
    /// entry (whose words are still zero) could be mistaken for.
    #[inline]
    pub(crate) fn is_zero(&self) -> bool {
        self.as_slice().iter().all(|&w| w == 0)
    }
}

/// Words of a key of type `K`, or why `K` cannot be a key.
pub(crate) fn key_words<K>() -> Result<usize, String> {
    let bytes = std::mem::size_of::<K>();
    if bytes == 0 || !bytes.is_multiple_of(8) || bytes > 8 * MAX_KEY_WORDS {
        return Err(format!(
            "a key must be 8, 16, 24 or 32 bytes, and {} is {bytes}",
            std::any::type_name::<K>()
        ));
    }
    Ok(bytes / 8)
}

/// The finaliser of MurmurHash3: every input bit affects every output bit, which linear
/// probing needs (clustered homes make long probe runs, and Lemma 1 assumes a universal
/// hash).
#[inline]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The shape of the table: PEs, slots per PE, words per entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) pes: usize,
    pub(crate) slots: usize,
    pub(crate) key_words: usize,
}

/// Where a key is looked for first, and how its buckets are recognised.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Home {
    pub(crate) pe: usize,
    pub(crate) slot: usize,
    pub(crate) fingerprint: u64,
}

impl Geometry {
    /// Words of one entry: the bucket word and the key.
    #[inline]
    pub(crate) fn entry_words(&self) -> usize {
        1 + self.key_words
    }

    /// The home of a key: a global bucket chosen uniformly over all PEs' slots, so every
    /// partition gets its share; probing then stays inside that PE's partition (so that
    /// its owner can answer for the key alone, in owner-computes mode).
    #[inline]
    pub(crate) fn home(&self, key: &KeyWords) -> Home {
        let mut h = 0x243f_6a88_85a3_08d3u64;
        for &w in key.as_slice() {
            h = mix(h ^ w);
        }
        let total = (self.pes * self.slots) as u128;
        let global = ((h as u128 * total) >> 64) as usize;
        Home {
            pe: global / self.slots,
            slot: global % self.slots,
            // Another mix, so the fingerprint is independent of the home bits.
            fingerprint: mix(h ^ 0x1319_8a2e_0370_7344) & FINGERPRINT,
        }
    }
}
