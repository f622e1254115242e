//! Kronecker products of star graphs: the input Bale's `triangle` app builds with
//! `-K MODE:S1xS2x...`, here so that our triangle counting can run on the very graph
//! Bale's does and be compared with it (Bale's app has no R-MAT generator).
//!
//! The graph is the Kronecker product of the adjacency matrices of the stars
//! `K_{1,S1}`, `K_{1,S2}`, ... (a hub joined to `Si` leaves), with a self-loop on each
//! star's hub (mode 1, many triangles) or on its last leaf (mode 2, few triangles) or on
//! none (mode 0, no triangles). Nothing in it is random, so every PE can build any row,
//! and its triangles have a closed form (Sanders, Pearce, La Fond and Kepner, "On
//! large-scale graph generation with validation of diverse triangle statistics at edges
//! and vertices"), a check independent of any count.
//!
//! Vertex `r` of the product has one digit per star (the first star's the most
//! significant, radix `Si + 1`); `(r, c)` is an edge when every star has the edge between
//! the two digits. Triangle counting takes the strictly lower-triangular part, as Bale's
//! generator does: the self-loops vanish there but their products with real edges stay.

use std::fmt;
use std::str::FromStr;

/// The product's vertex count must stay within this (as the R-MAT scale's 2^28).
const MAX_VERTICES: u64 = 1 << 28;

/// Which star vertex carries a self-loop: Bale's `-K` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StarLoop {
    /// Mode 0: none; the product has no triangles.
    None,
    /// Mode 1: the hub; many triangles.
    Hub,
    /// Mode 2: the last leaf; few triangles.
    LastLeaf,
}

/// A Kronecker product of stars, as Bale's `-K MODE:S1xS2x...`.
///
/// ```
/// use rhizome_kernels::bale::KroneckerStars;
/// let g: KroneckerStars = "1:3x4x5".parse().unwrap();
/// assert_eq!(g.vertices(), 4 * 5 * 6);
/// assert_eq!(g.to_string(), "1:3x4x5");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KroneckerStars {
    /// The self-loop of each star.
    pub mode: StarLoop,
    /// The leaves of each star, most significant first.
    pub stars: Vec<u64>,
}

impl FromStr for KroneckerStars {
    type Err = String;

    /// `MODE:S1xS2x...`: mode 0, 1 or 2 and at least one star of 1 or more leaves.
    fn from_str(s: &str) -> Result<KroneckerStars, String> {
        let bad = |why: &str| {
            format!("Kronecker graph '{s}': {why} (expected MODE:S1xS2x..., as 1:3x4x5)")
        };
        let (mode, stars) = s.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let mode = match mode.trim() {
            "0" => StarLoop::None,
            "1" => StarLoop::Hub,
            "2" => StarLoop::LastLeaf,
            _ => return Err(bad("the mode must be 0, 1 or 2")),
        };
        let stars = stars
            .split('x')
            .map(|t| t.trim().parse::<u64>().ok().filter(|&m| m >= 1))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| bad("each star needs a whole number of leaves, at least 1"))?;
        let vertices = stars
            .iter()
            .try_fold(1u64, |v, &m| v.checked_mul(m + 1))
            .filter(|&v| v <= MAX_VERTICES);
        if vertices.is_none() {
            return Err(bad("more than 2^28 vertices"));
        }
        Ok(KroneckerStars { mode, stars })
    }
}

impl fmt::Display for KroneckerStars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            StarLoop::None => 0,
            StarLoop::Hub => 1,
            StarLoop::LastLeaf => 2,
        };
        let stars: Vec<String> = self.stars.iter().map(u64::to_string).collect();
        write!(f, "{mode}:{}", stars.join("x"))
    }
}

impl KroneckerStars {
    /// Vertices of the product: the product of `Si + 1`.
    pub fn vertices(&self) -> usize {
        self.stars.iter().map(|&m| m as usize + 1).product()
    }

    /// The neighbours of vertex `v` in the star of `leaves` leaves, ascending.
    fn star_neighbours(&self, leaves: u64, v: u64) -> Vec<u64> {
        let looped = match self.mode {
            StarLoop::None => false,
            StarLoop::Hub => v == 0,
            StarLoop::LastLeaf => v == leaves,
        };
        if v == 0 {
            (u64::from(!looped)..=leaves).collect()
        } else if looped {
            vec![0, v]
        } else {
            vec![0]
        }
    }

    /// The columns `c < r` of row `r` of the product, ascending: the lower-triangular
    /// adjacency Bale's `triangle` counts on.
    pub(super) fn lower_row(&self, r: u64) -> Vec<u64> {
        // Digits of r, most significant first.
        let mut digits = vec![0u64; self.stars.len()];
        let mut rest = r;
        for (d, &m) in digits.iter_mut().zip(&self.stars).rev() {
            *d = rest % (m + 1);
            rest /= m + 1;
        }
        // Columns built star by star; a prefix already above r's can only grow past r.
        let mut cols = vec![0u64];
        let mut r_prefix = 0u64;
        for (&d, &m) in digits.iter().zip(&self.stars) {
            r_prefix = r_prefix * (m + 1) + d;
            let next = self.star_neighbours(m, d);
            cols = cols
                .iter()
                .flat_map(|&c| next.iter().map(move |&n| c * (m + 1) + n))
                .filter(|&c| c <= r_prefix)
                .collect();
        }
        cols.retain(|&c| c < r);
        cols
    }

    /// The triangles of the product, in closed form (Bale's `calc_num_tri_kron_graph`):
    /// mode 0 none; mode 1 `(prod(3 Si + 1) - 3 prod(Si + 1) + 2) / 6`; mode 2
    /// `(4^k - 3 * 2^k + 2) / 6` for `k` stars.
    pub fn triangles(&self) -> u128 {
        let k = self.stars.len() as u32;
        let (many, few) = match self.mode {
            StarLoop::None => return 0,
            StarLoop::Hub => (
                self.stars
                    .iter()
                    .map(|&m| 3 * m as u128 + 1)
                    .product::<u128>(),
                self.stars.iter().map(|&m| m as u128 + 1).product::<u128>(),
            ),
            StarLoop::LastLeaf => (4u128.pow(k), 2u128.pow(k)),
        };
        (many + 2 - 3 * few) / 6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(s: &str) -> KroneckerStars {
        s.parse().unwrap()
    }

    /// The full adjacency of the product, by the definition: every star has the edge.
    fn edge(g: &KroneckerStars, r: u64, c: u64) -> bool {
        let (mut r, mut c) = (r, c);
        g.stars.iter().rev().all(|&m| {
            let (dr, dc) = (r % (m + 1), c % (m + 1));
            r /= m + 1;
            c /= m + 1;
            g.star_neighbours(m, dr).contains(&dc)
        })
    }

    #[test]
    fn rows_are_the_lower_part_of_the_product_by_definition() {
        for s in ["0:2x3", "1:2x3x1", "2:3x2x2", "1:4"] {
            let g = graph(s);
            let n = g.vertices() as u64;
            for r in 0..n {
                let want: Vec<u64> = (0..r).filter(|&c| edge(&g, r, c)).collect();
                assert_eq!(g.lower_row(r), want, "{s} row {r}");
                assert!(
                    (0..n).all(|c| edge(&g, r, c) == edge(&g, c, r)),
                    "symmetric"
                );
            }
        }
    }

    #[test]
    fn the_closed_form_counts_the_triangles_of_the_rows() {
        for s in ["0:3x4x5", "1:3x4x5", "2:3x4x5", "1:2x2x2x2", "2:1x5x2x3"] {
            let g = graph(s);
            let rows: Vec<Vec<u64>> = (0..g.vertices() as u64).map(|r| g.lower_row(r)).collect();
            let brute: u64 = rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|&j| {
                            row.iter().filter(|k| rows[j as usize].contains(k)).count() as u64
                        })
                        .sum::<u64>()
                })
                .sum();
            assert_eq!(u128::from(brute), g.triangles(), "{s}");
        }
        // Bale's app printed 6167 for -K 1:3x4x5x6 and 141547 for -K 1:3x4x5x6x7.
        assert_eq!(graph("1:3x4x5x6").triangles(), 6167);
        assert_eq!(graph("1:3x4x5x6x7").triangles(), 141_547);
        assert_eq!(graph("2:3x4x5x6x7x8").triangles(), 651);
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        for (s, why) in [
            ("3:2x3", "mode"),
            ("1-2x3", "':'"),
            ("1:2xx3", "leaves"),
            ("1:0x3", "leaves"),
            ("1:1000x1000x1000", "2^28"),
        ] {
            let e = s.parse::<KroneckerStars>().unwrap_err();
            assert!(e.contains(why) && e.contains(s), "{s}: {e}");
        }
        assert_eq!(graph(" 2 : 3x4 ").to_string(), "2:3x4");
    }
}
