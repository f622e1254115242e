//! Dense matrix multiplication: jobs of row blocks, halved down to a cutoff; `B` is shared
//! by `Arc` (copied only when a job leaves its PE).

use super::Doubles;
use rhizome::tasks::{Job, TaskCtx};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `c[rows] = a[rows] * b` for `n x n` row-major matrices, rows `a_rows.len() / n`.
pub fn matmul_rows(a_rows: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let rows = a_rows.len() / n;
    let mut c = vec![0.0; rows * n];
    for i in 0..rows {
        let ci = &mut c[i * n..(i + 1) * n];
        for k in 0..n {
            let aik = a_rows[i * n + k];
            let bk = &b[k * n..(k + 1) * n];
            for (cij, bkj) in ci.iter_mut().zip(bk) {
                *cij += aik * bkj;
            }
        }
    }
    c
}

/// The rows of `C = A B` for the rows of A given; halves the rows until `cutoff`.
#[derive(Serialize, Deserialize)]
pub struct MatMul {
    pub a_rows: Doubles,
    pub b: Arc<Doubles>,
    pub n: usize,
    pub cutoff: usize,
}

impl Job for MatMul {
    type Output = Doubles;
    fn run(self, t: &TaskCtx) -> Doubles {
        let MatMul {
            mut a_rows,
            b,
            n,
            cutoff,
        } = self;
        let rows = a_rows.len() / n;
        if rows <= cutoff.max(1) {
            return Doubles(matmul_rows(&a_rows, &b, n));
        }
        let lower = Doubles(a_rows.split_off(rows / 2 * n));
        let top = t.spawn(MatMul {
            a_rows,
            b: Arc::clone(&b),
            n,
            cutoff,
        });
        let bottom = MatMul {
            a_rows: lower,
            b,
            n,
            cutoff,
        }
        .run(t);
        let mut c = top.get();
        c.extend_from_slice(&bottom);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::random_doubles;

    #[test]
    fn matmul_rows_matches_definition() {
        let n = 7;
        let a = random_doubles(n * n, 1);
        let b = random_doubles(n * n, 2);
        let c = matmul_rows(&a, &b, n);
        for i in 0..n {
            for j in 0..n {
                let s: f64 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                assert!((c[i * n + j] - s).abs() < 1e-12);
            }
        }
    }
}
