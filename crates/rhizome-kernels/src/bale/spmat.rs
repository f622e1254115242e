//! Distributed sparse matrices for Bale's matrix kernels (permute, transpose, triangles,
//! toposort), and the deterministic inputs they run on.
//!
//! As in Bale, rows are spread cyclically: global row `r` is local row `r / pes` of PE
//! `r % pes`, and each PE holds its rows in compressed-sparse-row form. Every generator
//! here is a function of the seed and the row (or edge) alone, so any PE can compute any
//! row of an input: the kernels' checks use that to build their reference answers
//! without trusting the runtime that produced the result.

use super::Options;
use rhizome::rng::XorShift64;

/// This PE's rows of a square sparse matrix: CSR, columns ascending within each row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Matrix {
    /// Rows (and columns) of the whole matrix.
    pub n: usize,
    /// Local row `i` is `cols[offsets[i]..offsets[i + 1]]`.
    pub offsets: Vec<usize>,
    /// Column indices of the nonzeros.
    pub cols: Vec<u64>,
}

impl Matrix {
    /// A matrix of `n` rows from this PE's rows, in local order.
    pub fn from_rows(n: usize, rows: impl IntoIterator<Item = Vec<u64>>) -> Matrix {
        let mut m = Matrix {
            n,
            offsets: vec![0],
            cols: Vec::new(),
        };
        for row in rows {
            m.cols.extend_from_slice(&row);
            m.offsets.push(m.cols.len());
        }
        m
    }

    /// A matrix from per-row counts (`offsets` by prefix sum) and the nonzeros in place.
    pub fn from_counts(n: usize, counts: &[u64], cols: Vec<u64>) -> Matrix {
        let offsets = prefix_sums(counts);
        debug_assert_eq!(offsets.last().copied(), Some(cols.len()));
        Matrix { n, offsets, cols }
    }

    /// Local rows.
    pub fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Local nonzeros.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// The columns of local row `i`.
    pub fn row(&self, i: usize) -> &[u64] {
        &self.cols[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Sorts the columns of every row (kernels fill rows in arrival order).
    pub fn sort_rows(&mut self) {
        for i in 0..self.rows() {
            self.cols[self.offsets[i]..self.offsets[i + 1]].sort_unstable();
        }
    }

    /// The first local row whose columns differ from `want(global row)`, described.
    pub fn first_difference(
        &self,
        me: usize,
        pes: usize,
        mut want: impl FnMut(usize) -> Vec<u64>,
    ) -> Option<String> {
        if self.rows() != local_len(self.n, pes, me) {
            return Some(format!(
                "{} local rows, {} expected",
                self.rows(),
                local_len(self.n, pes, me)
            ));
        }
        (0..self.rows()).find_map(|i| {
            let r = i * pes + me;
            let w = want(r);
            (self.row(i) != w.as_slice())
                .then(|| format!("row {r} is {:?}, {:?} expected", self.row(i), w))
        })
    }
}

/// `[0, c0, c0 + c1, ...]`: the offsets of rows with `counts` nonzeros.
pub(super) fn prefix_sums(counts: &[u64]) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    let mut total = 0usize;
    offsets.push(0);
    for &c in counts {
        total += c as usize;
        offsets.push(total);
    }
    offsets
}

/// How many of the global indices `0..n` PE `me` of `pes` holds (cyclic distribution).
pub(super) fn local_len(n: usize, pes: usize, me: usize) -> usize {
    n / pes + usize::from(me < n % pes)
}

/// The generator of item `index` of the input stream `stream` (matrix rows, permutations,
/// edges) for `seed`: a function of the three alone.
fn rng_for(seed: u64, stream: u64, index: u64) -> XorShift64 {
    XorShift64::for_stream(
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ stream.wrapping_mul(0xBF58_476D_1CE4_E5B9)
            ^ index,
    )
}

/// The columns of row `r` of an Erdős–Rényi matrix: each column of `lo..n` present with
/// probability `p`, independently (geometric skips, so the cost is the row's length).
pub(super) fn erdos_renyi_row(seed: u64, r: usize, lo: usize, n: usize, p: f64) -> Vec<u64> {
    let mut rng = rng_for(seed, 1, r as u64);
    let mut cols = Vec::new();
    if p <= 0.0 {
        return cols;
    }
    let log_q = (1.0 - p.min(1.0)).ln();
    let mut c = lo as f64 - 1.0;
    loop {
        // Columns skipped before the next present one: geometric with success `p`.
        let skip = if log_q == f64::NEG_INFINITY {
            0.0
        } else {
            ((1.0 - rng.next_f64()).ln() / log_q).floor()
        };
        c += 1.0 + skip;
        if c >= n as f64 {
            return cols;
        }
        cols.push(c as u64);
    }
}

/// Row `r` of the Erdős–Rényi input of permute and transpose, of `n` rows and
/// `opts.nonzeros` nonzeros per row on average.
pub(super) fn input_row(opts: &Options, r: usize, n: usize) -> Vec<u64> {
    erdos_renyi_row(opts.seed, r, 0, n, density(opts.nonzeros, n))
}

/// This PE's rows of the Erdős–Rényi input of permute and transpose (`opts.updates`
/// rows per PE).
pub(super) fn input(opts: &Options, me: usize, pes: usize) -> Matrix {
    let n = opts.updates * pes;
    Matrix::from_rows(n, (me..n).step_by(pes).map(|r| input_row(opts, r, n)))
}

/// The probability of a nonzero for `nonzeros` per row of `n` columns on average.
pub(super) fn density(nonzeros: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        (nonzeros as f64 / n as f64).min(1.0)
    }
}

/// A uniform random permutation of `0..n` (Fisher–Yates), the same on every PE.
pub(super) fn permutation(seed: u64, stream: u64, n: usize) -> Vec<u64> {
    let mut rng = rng_for(seed, 2, stream);
    let mut p: Vec<u64> = (0..n as u64).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

/// The inverse of the permutation `p`.
pub(super) fn inverse(p: &[u64]) -> Vec<u64> {
    let mut inv = vec![0u64; p.len()];
    for (i, &v) in p.iter().enumerate() {
        inv[v as usize] = i as u64;
    }
    inv
}

/// The R-MAT graph of 2^`scale` vertices and `edge_factor` * 2^`scale` generated edges
/// (quadrant probabilities A = 0.57, B = C = 0.19, D = 0.05), as the lower-triangular
/// adjacency: each undirected edge once as (larger, smaller), self-loops and repeats
/// dropped, sorted.
pub(super) fn rmat_lower_edges(seed: u64, scale: u32, edge_factor: usize) -> Vec<(u64, u64)> {
    const A: f64 = 0.57;
    const B: f64 = 0.19;
    const C: f64 = 0.19;
    let edges = edge_factor << scale;
    let mut rng = rng_for(seed, 3, 0);
    let mut out = Vec::with_capacity(edges);
    for _ in 0..edges {
        let (mut u, mut v) = (0u64, 0u64);
        for bit in (0..scale).rev() {
            let x = rng.next_f64();
            let (du, dv) = if x < A {
                (0, 0)
            } else if x < A + B {
                (0, 1)
            } else if x < A + B + C {
                (1, 0)
            } else {
                (1, 1)
            };
            u |= du << bit;
            v |= dv << bit;
        }
        if u != v {
            out.push((u.max(v), u.min(v)));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The rows of a graph's sorted edge list (row, column) as full CSR: every row of `n`.
pub(super) fn csr_of_edges(n: usize, edges: &[(u64, u64)]) -> Matrix {
    let mut counts = vec![0u64; n];
    for &(r, _) in edges {
        counts[r as usize] += 1;
    }
    Matrix::from_counts(n, &counts, edges.iter().map(|&(_, c)| c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erdos_renyi_rows_are_sorted_in_range_and_near_the_density() {
        let (n, p) = (2000, 0.01);
        let total: usize = (0..n)
            .map(|r| {
                let row = erdos_renyi_row(5, r, 0, n, p);
                assert!(row.windows(2).all(|w| w[0] < w[1]));
                assert!(row.iter().all(|&c| (c as usize) < n));
                assert_eq!(row, erdos_renyi_row(5, r, 0, n, p), "deterministic");
                row.len()
            })
            .sum();
        // 40000 expected; a binomial's standard deviation here is about 200.
        assert!((38_000..42_000).contains(&total), "{total}");
        assert_eq!(
            erdos_renyi_row(5, 3, 0, 10, 1.0),
            (0..10).collect::<Vec<u64>>()
        );
        assert!(erdos_renyi_row(5, 3, 0, 10, 0.0).is_empty());
    }

    #[test]
    fn permutations_are_permutations_and_inverses_invert() {
        let p = permutation(9, 1, 1000);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<u64>>());
        let inv = inverse(&p);
        assert!((0..1000).all(|i| inv[p[i] as usize] == i as u64));
        assert_ne!(p, permutation(9, 2, 1000));
    }

    #[test]
    fn rmat_edges_are_lower_triangular_distinct_and_skewed() {
        let e = rmat_lower_edges(3, 10, 16);
        assert!(e.iter().all(|&(r, c)| c < r && r < 1024));
        assert!(e.windows(2).all(|w| w[0] < w[1]));
        let m = csr_of_edges(1024, &e);
        assert_eq!(m.nnz(), e.len());
        // Vertex 0 collects edges from the A quadrant at every level: far above average.
        let degree0 = e.iter().filter(|&&(_, c)| c == 0).count();
        assert!(degree0 > 10 * e.len() / 1024, "{degree0}");
    }
}
