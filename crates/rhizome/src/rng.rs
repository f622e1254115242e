//! The runtime's one pseudo-random generator: Marsaglia's xorshift64.
//!
//! Victim selection in work stealing and the inputs of the benchmark kernels need numbers
//! that are cheap (three shifts) and reproducible from a seed, not numbers of statistical
//! or cryptographic quality; so one small generator serves them all.
//!
//! ```
//! use rhizome::rng::XorShift64;
//! let mut a = XorShift64::for_stream(3);
//! let mut b = XorShift64::for_stream(3);
//! assert_eq!(a.next_u64(), b.next_u64());
//! assert!(a.below(10) < 10);
//! assert!((0.0..1.0).contains(&a.next_f64()));
//! ```

/// A xorshift64 generator. Never yields 0, and has period 2^64 - 1.
#[derive(Clone, Debug)]
pub struct XorShift64 {
    state: u64,
}

/// 2^64 divided by the golden ratio: spreads small seeds over all bits.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl XorShift64 {
    /// A generator starting from `state` (0, which xorshift cannot leave, is replaced).
    pub const fn new(state: u64) -> XorShift64 {
        XorShift64 {
            state: if state == 0 { GOLDEN } else { state },
        }
    }

    /// The generator of stream `index` (a worker, a PE): distinct indices give unrelated
    /// sequences.
    pub const fn for_stream(index: u64) -> XorShift64 {
        XorShift64::new(GOLDEN ^ index.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    /// The state that follows `x`; for generators kept in an atomic word.
    #[inline]
    pub const fn step(mut x: u64) -> u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = XorShift64::step(self.state);
        self.state
    }

    /// A number in `0..n` (`n > 0`; slightly biased towards small values when `n` does not
    /// divide 2^64, which victim selection does not mind).
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A double in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_xorshift64_sequence() {
        // Marsaglia (2003), shifts 13, 7, 17, from state 1.
        let mut g = XorShift64::new(1);
        let first: Vec<u64> = (0..3).map(|_| g.next_u64()).collect();
        let mut x = 1u64;
        let expected: Vec<u64> = (0..3)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        assert_eq!(first, expected);
        assert_eq!(first[0], 1082269761);
    }

    #[test]
    fn zero_is_not_a_fixed_point_and_streams_differ() {
        let mut z = XorShift64::new(0);
        assert_ne!(z.next_u64(), 0);
        assert_ne!(
            XorShift64::for_stream(0).next_u64(),
            XorShift64::for_stream(1).next_u64()
        );
        let mut g = XorShift64::for_stream(7);
        assert!((0..1000).all(|_| g.below(3) < 3));
    }
}
