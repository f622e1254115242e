//! The Graph500 Kronecker edge generator (Graph500 specification, section 3).
//!
//! A graph of `2^scale` vertices and `edgefactor * 2^scale` undirected edges. Each edge
//! descends `scale` levels of the 2x2 initiator matrix `[[A, B], [C, D]]` with
//! A = 0.57, B = 0.19, C = 0.19 (D = 0.05): at each level one bit of each endpoint is
//! drawn, the row bit with probability `C + D`, then the column bit with the probability
//! of the right column in the chosen row. Vertex numbers are then permuted, so that high
//! degree does not follow low vertex numbers. Self loops and repeated edges are kept,
//! as in the specification (the graph built from them drops them; the edge count of
//! Graph500's TEPS counts them).
//!
//! Deterministic by seed, and independent of the number of PEs: edge `i` comes from its
//! own random stream, derived from (seed, `i`), so any PE can generate any edge, each PE
//! generates its [`share`](Kronecker::share) of the edges, and a validator can
//! regenerate all of them.

use rhizome::rng::XorShift64;
use std::ops::Range;

/// Probability of the initiator's top-left quadrant.
pub const A: f64 = 0.57;
/// Probability of its top-right quadrant.
pub const B: f64 = 0.19;
/// Probability of its bottom-left quadrant.
pub const C: f64 = 0.19;
/// Graph500's default edge factor (edges per vertex).
pub const DEFAULT_EDGEFACTOR: u64 = 16;
/// Largest scale accepted (vertex numbers and root pairs must fit in 64 bits).
pub const MAX_SCALE: u32 = 30;

/// A Kronecker graph's parameters; generates its edges.
///
/// ```
/// use rhizome_kernels::graph::Kronecker;
/// let g = Kronecker::new(10, 16, 1).unwrap();
/// assert_eq!((g.vertices(), g.edges()), (1024, 16 * 1024));
/// // Any edge, anywhere, is the same.
/// assert_eq!(g.edge(77), Kronecker::new(10, 16, 1).unwrap().edge(77));
/// let (u, v) = g.edge(77);
/// assert!(u < 1024 && v < 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kronecker {
    scale: u32,
    edgefactor: u64,
    seed: u64,
    /// The vertex permutation's multipliers (odd) and addends.
    mul: [u64; 3],
    add: [u64; 3],
}

/// SplitMix64's output function: a bijection of 64-bit words that spreads every input
/// bit over all output bits, to derive independent streams from (seed, index).
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Kronecker {
    /// The graph of `2^scale` vertices and `edgefactor * 2^scale` edges from `seed`;
    /// an error if the scale is not in `1..=MAX_SCALE` or the edge factor is 0.
    pub fn new(scale: u32, edgefactor: u64, seed: u64) -> Result<Kronecker, String> {
        if !(1..=MAX_SCALE).contains(&scale) {
            return Err(format!(
                "the scale must be between 1 and {MAX_SCALE}, not {scale}"
            ));
        }
        if edgefactor == 0 || edgefactor > 1 << 10 {
            return Err(format!(
                "the edge factor must be between 1 and 1024, not {edgefactor}"
            ));
        }
        let key = |k: u64| splitmix(splitmix(seed) ^ k);
        Ok(Kronecker {
            scale,
            edgefactor,
            seed,
            mul: [key(1) | 1, key(2) | 1, key(3) | 1],
            add: [key(4), key(5), key(6)],
        })
    }

    /// log2 of the number of vertices.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// Edges per vertex.
    pub fn edgefactor(&self) -> u64 {
        self.edgefactor
    }

    /// Vertices: `2^scale`.
    pub fn vertices(&self) -> u64 {
        1 << self.scale
    }

    /// Edges generated: `edgefactor * 2^scale`.
    pub fn edges(&self) -> u64 {
        self.edgefactor << self.scale
    }

    /// The edges PE `pe` of `pes` generates: a contiguous, near-equal share.
    pub fn share(&self, pe: usize, pes: usize) -> Range<u64> {
        let cut = |p: usize| (u128::from(self.edges()) * p as u128 / pes as u128) as u64;
        cut(pe)..cut(pe + 1)
    }

    /// Edge number `i` (`i < edges()`), endpoints permuted.
    pub fn edge(&self, i: u64) -> (u64, u64) {
        let mut rng = XorShift64::new(splitmix(self.seed.wrapping_mul(0xA24B_AED4_963E_E407) ^ i));
        let ab = A + B;
        let c_norm = C / (1.0 - ab);
        let a_norm = A / ab;
        let (mut u, mut v) = (0u64, 0u64);
        for _ in 0..self.scale {
            let row = rng.next_f64() > ab;
            let column = rng.next_f64() > if row { c_norm } else { a_norm };
            u = u << 1 | u64::from(row);
            v = v << 1 | u64::from(column);
        }
        (self.permute(u), self.permute(v))
    }

    /// The vertex permutation: a bijection of `0..2^scale` made of steps that are each
    /// one (multiplication by an odd number and addition, modulo `2^scale`; a xor with
    /// the value shifted right).
    fn permute(&self, mut v: u64) -> u64 {
        let mask = self.vertices() - 1;
        let shift = self.scale / 2 + 1;
        for k in 0..3 {
            v = v.wrapping_mul(self.mul[k]).wrapping_add(self.add[k]) & mask;
            v ^= v >> shift;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permutation_is_a_bijection() {
        for scale in [1, 2, 5, 10] {
            let g = Kronecker::new(scale, 1, 9).unwrap();
            let mut seen = vec![false; g.vertices() as usize];
            for v in 0..g.vertices() {
                let p = g.permute(v) as usize;
                assert!(!seen[p], "scale {scale}: {p} twice");
                seen[p] = true;
            }
        }
    }

    #[test]
    fn shares_cover_every_edge_once() {
        let g = Kronecker::new(6, 3, 1).unwrap();
        for pes in [1, 3, 7] {
            let shares: Vec<_> = (0..pes).map(|p| g.share(p, pes)).collect();
            assert_eq!(shares[0].start, 0);
            assert_eq!(shares[pes - 1].end, g.edges());
            assert!(shares.windows(2).all(|w| w[0].end == w[1].start));
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Kronecker::new(0, 16, 1).is_err());
        assert!(Kronecker::new(MAX_SCALE + 1, 16, 1).is_err());
        assert!(Kronecker::new(4, 0, 1).is_err());
    }
}
