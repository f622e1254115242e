//! Radix sort (the SPLASH-2 kernel): 32-bit keys, least significant digit first, 8 bits
//! a pass, between two shared arrays. In each pass every thread counts the digits of its
//! contiguous block of keys into its own histogram in shared memory, waits at a barrier,
//! reads every histogram to find where each of its digits starts (all smaller digits,
//! then the same digit of lower threads), writes its keys there in order, and waits
//! again. Each pass is stable whatever the split, so every run gives the sequential
//! output; the kernel checks it is the input sorted.

use super::{Kernel, Mem, Team};

pub(crate) struct Radix {
    pub(crate) keys: usize,
}

/// Bits of a key, and of a digit.
const KEY_BITS: u32 = 32;
const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;
/// An even number of passes ends with the keys back in the first array.
const PASSES: u32 = KEY_BITS / DIGIT_BITS;

impl Radix {
    fn mine(&self, id: usize, all: usize) -> std::ops::Range<usize> {
        id * self.keys / all..(id + 1) * self.keys / all
    }
    /// Key `i` of the input.
    fn key(i: usize) -> u64 {
        rhizome::rng::XorShift64::for_stream(i as u64).next_u64() >> (64 - KEY_BITS)
    }
    /// Where thread `t`'s histogram starts (after the two arrays of keys).
    fn histogram(&self, t: usize) -> usize {
        2 * self.keys + t * BUCKETS
    }
}

impl Kernel for Radix {
    fn words(&self, all: usize) -> usize {
        self.histogram(all)
    }

    fn init(&self, m: Mem, id: usize, all: usize) {
        for i in self.mine(id, all) {
            m.set_u64(i, Radix::key(i));
        }
    }

    fn compute(&self, m: Mem, id: usize, all: usize, team: &dyn Team) {
        let n = self.keys;
        for pass in 0..PASSES {
            let (from, to) = if pass % 2 == 0 { (0, n) } else { (n, 0) };
            let digit = |k: u64| (k >> (pass * DIGIT_BITS)) as usize & (BUCKETS - 1);
            let mut count = [0u64; BUCKETS];
            for i in self.mine(id, all) {
                count[digit(m.get_u64(from + i))] += 1;
            }
            for (b, &c) in count.iter().enumerate() {
                m.set_u64(self.histogram(id) + b, c);
            }
            team.barrier();
            // Start of each digit for this thread: every key of a smaller digit, then
            // this digit's keys of the threads before.
            let mut start = [0u64; BUCKETS];
            let mut below = 0;
            for (b, s) in start.iter_mut().enumerate() {
                let mut before_me = 0;
                let mut total = 0;
                for t in 0..all {
                    let c = m.get_u64(self.histogram(t) + b);
                    if t < id {
                        before_me += c;
                    }
                    total += c;
                }
                *s = below + before_me;
                below += total;
            }
            for i in self.mine(id, all) {
                let k = m.get_u64(from + i);
                let s = &mut start[digit(k)];
                m.set_u64(to + *s as usize, k);
                *s += 1;
            }
            team.barrier();
        }
    }

    /// An order-sensitive hash of the sorted keys.
    fn checksum(&self, m: Mem, _words: usize) -> u64 {
        (0..self.keys).fold(0xcbf2_9ce4_8422_2325, |h, i| {
            (h ^ m.get_u64(i)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    /// The output is the input, sorted.
    fn check(&self, m: Mem) -> bool {
        let mut want: Vec<u64> = (0..self.keys).map(Radix::key).collect();
        want.sort_unstable();
        (0..self.keys).map(|i| m.get_u64(i)).eq(want)
    }
}
