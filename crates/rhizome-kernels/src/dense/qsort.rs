//! Parallel quicksort of doubles: each job partitions, gives one part away and sorts the
//! other.

use super::Doubles;
use rhizome::tasks::{Job, TaskCtx};
use serde::{Deserialize, Serialize};

/// Sorts `data`: partitions it in place, gives the smaller part to a job and sorts the
/// larger part itself; sorts sequentially below `cutoff` elements.
///
/// Each level copies only the upper part out (`split_off`) and back (`extend`): the lower
/// part keeps the job's vector, whose capacity takes the upper part back without a new
/// allocation.
#[derive(Serialize, Deserialize)]
pub struct Sort {
    pub data: Doubles,
    pub cutoff: usize,
}

impl Job for Sort {
    type Output = Doubles;
    fn run(self, t: &TaskCtx) -> Doubles {
        let Sort { mut data, cutoff } = self;
        if data.len() <= cutoff.max(16) {
            data.sort_unstable_by(f64::total_cmp);
            return data;
        }
        let split = partition(&mut data);
        if split == data.len() {
            // Every element equals the pivot: already sorted.
            return data;
        }
        let upper = Doubles(data.split_off(split));
        // The spawned part is the one another PE may take, paying for two transfers: give
        // away the smaller part and sort the larger one here.
        if split <= upper.len() {
            let lower = t.spawn(Sort { data, cutoff });
            let upper = Sort {
                data: upper,
                cutoff,
            }
            .run(t);
            let mut out = lower.get();
            out.extend_from_slice(&upper);
            out
        } else {
            let upper = t.spawn(Sort {
                data: upper,
                cutoff,
            });
            let mut out = Sort { data, cutoff }.run(t);
            out.extend_from_slice(&upper.get());
            out
        }
    }
}

/// Reorders `v` (at least 3 elements) so that `v[..k]` holds the elements below a pivot
/// and `v[k..]` the rest; returns `k`, which is at least 1. When the pivot is the minimum,
/// the pivot copies form the lower part instead (so both parts shrink), and `k` is
/// `v.len()` only if every element equals the pivot.
///
/// The pivot is the median of up to 127 evenly spaced elements: the parts come out within
/// a few percent of halves, so on two PEs neither waits for the other's larger part (with
/// a median of three the first split was often 70/30).
fn partition(v: &mut [f64]) -> usize {
    let n = v.len();
    let samples = (n / 64).clamp(3, 127) | 1;
    let mut sample: Vec<f64> = (0..samples)
        .map(|i| v[i * (n - 1) / (samples - 1)])
        .collect();
    sample.sort_unstable_by(f64::total_cmp);
    let pivot = sample[samples / 2];
    // Branch-free Lomuto: the swap happens either way, only the boundary moves.
    let mut k = 0;
    for j in 0..n {
        let below = v[j].total_cmp(&pivot).is_lt();
        v.swap(k, j);
        k += below as usize;
    }
    if k == 0 {
        for j in 0..n {
            let equal = v[j].total_cmp(&pivot).is_eq();
            v.swap(k, j);
            k += equal as usize;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::random_doubles;

    #[test]
    fn partition_splits_around_the_pivot_and_always_makes_progress() {
        let cases: Vec<Vec<f64>> = vec![
            random_doubles(1000, 3),
            vec![2.0; 50],
            (0..100).map(|i| (i % 3) as f64).collect(),
            (0..100).map(|i| -(i as f64)).collect(),
            vec![1.0, 0.0, 0.0, 0.0, 0.0],
        ];
        for mut v in cases {
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let k = partition(&mut v);
            assert!(k >= 1 && k <= v.len());
            let max_lo = v[..k].iter().copied().fold(f64::MIN, f64::max);
            assert!(v[k..].iter().all(|&x| x >= max_lo), "{v:?} at {k}");
            if k == v.len() {
                assert!(v.iter().all(|&x| x == v[0]), "k = len only when all equal");
            }
            v.sort_unstable_by(f64::total_cmp);
            assert_eq!(v, sorted, "partition lost or changed elements");
        }
    }
}
