//! The round trips of an insert by linear probing over chunks, computed exactly under
//! the thesis' own assumptions (its section 3.3: a uniform hash, linear probing, chunks
//! of `C` consecutive buckets from the home bucket, one round trip each).
//!
//! The thesis' Corollary 1 divides the expected probe length `L` (Knuth's
//! `(1 + 1/(1-α)²) / 2` buckets) by `C`, and its Figure 3.17 plots that rounded up to
//! whole chunks. But a probe reads whole chunks: its round trips are `⌈L / C⌉`, and the
//! mean of that is not the ceiling of the mean. Where `g(C, α)` falls just above an
//! integer the two differ by up to half a chunk (C = 16 at α = 0.8: the thesis measured
//! 1.41 against its 1). [`expected_chunks`] is `E[⌈L / C⌉]` itself, from the distribution
//! of `L`.
//!
//! The distribution comes from the usual model of linear probing in a large table (keys
//! hashed uniformly: a Poisson(α) number of keys homed at each bucket). Scanning the
//! buckets in order, let `q` be the keys that went past the bucket before (their homes
//! are full up to it): bucket `i` holds a key unless `q = 0` and no key is homed at it,
//! and `q` after it is `q + a_i - 1` (at least 0). A new key's probe starts with `q` in
//! its steady state and runs until the first empty bucket, so `P(L > k)` is the chance
//! that the first `k` buckets are all full, a walk over `q` computed step by step.

/// Queue lengths tracked (the steady state at α = 0.9 has a mean of about 4; the
/// walks that reach this far carry no measurable weight).
const MAX_QUEUE: usize = 256;
/// Probes longer than this many buckets count as this long.
const MAX_PROBE: usize = 1 << 16;
/// Walks stop once the chance left is below this.
const EPSILON: f64 = 1e-12;

/// Poisson(α) probabilities of 0, 1, ... keys homed at a bucket, up to a negligible tail.
fn poisson(alpha: f64) -> Vec<f64> {
    let mut p = vec![(-alpha).exp()];
    while p.len() < 64 {
        let next = p[p.len() - 1] * alpha / p.len() as f64;
        if next < 1e-18 {
            break;
        }
        p.push(next);
    }
    p
}

/// One bucket further: from the weights of `q` before it to those after it, the empty
/// bucket's weight (`q = 0`, no key homed there) dropped when `keep_empty` is false.
fn step(q: &[f64], arrivals: &[f64], keep_empty: bool) -> Vec<f64> {
    let mut next = vec![0.0; MAX_QUEUE];
    for (n, &w) in q.iter().enumerate() {
        if w == 0.0 {
            continue;
        }
        for (a, &p) in arrivals.iter().enumerate() {
            if n + a == 0 {
                if keep_empty {
                    next[0] += w * p;
                }
                continue;
            }
            next[(n + a - 1).min(MAX_QUEUE - 1)] += w * p;
        }
    }
    next
}

/// The steady state of `q` at load factor `alpha` (0 < α < 1).
fn steady_state(alpha: f64, arrivals: &[f64]) -> Vec<f64> {
    let mut q = vec![0.0; MAX_QUEUE];
    q[0] = 1.0;
    // Converges in a few times 1/(1-α)² steps.
    let steps = (50.0 / ((1.0 - alpha) * (1.0 - alpha))) as usize + 100;
    for _ in 0..steps {
        q = step(&q, arrivals, true);
    }
    q
}

/// `P(L > k)` for `k = 0, 1, ...` until it is negligible: the chance that an insert at
/// load factor `alpha` finds the first `k` buckets from its home full.
pub fn probe_tail(alpha: f64) -> Vec<f64> {
    assert!(
        alpha > 0.0 && alpha < 1.0,
        "load factor {alpha} outside (0, 1)"
    );
    let arrivals = poisson(alpha);
    let mut q = steady_state(alpha, &arrivals);
    let mut tail = vec![1.0];
    while tail.len() < MAX_PROBE {
        q = step(&q, &arrivals, false);
        let left: f64 = q.iter().sum();
        tail.push(left);
        if left < EPSILON {
            break;
        }
    }
    tail
}

/// The expected round trips (chunks of `chunk` buckets read) of an insert at load factor
/// `alpha`: `E[⌈L / C⌉] = Σ_m P(L > mC)`; see the [module docs](self).
///
/// ```
/// use rhizome_kernels::probe_model::expected_chunks;
/// // At α = 0.5 a chunk of 8 nearly always holds the empty bucket.
/// let e = expected_chunks(8, 0.5);
/// assert!(e > 1.0 && e < 1.1);
/// ```
pub fn expected_chunks(chunk: usize, alpha: f64) -> f64 {
    chunks_from_tail(&probe_tail(alpha), chunk)
}

/// [`expected_chunks`] from a [`probe_tail`] already computed (one per load factor
/// serves every chunk size).
pub fn chunks_from_tail(tail: &[f64], chunk: usize) -> f64 {
    tail.iter().step_by(chunk.max(1)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_probe_length_is_knuths() {
        for alpha in [0.1, 0.5, 0.8, 0.9] {
            let mean: f64 = probe_tail(alpha).iter().sum();
            let knuth = (1.0 + 1.0 / ((1.0 - alpha) * (1.0 - alpha))) / 2.0;
            assert!(
                (mean - knuth).abs() < 0.01 * knuth,
                "α = {alpha}: {mean} against {knuth}"
            );
        }
    }

    #[test]
    fn chunks_are_at_least_one_and_at_least_the_mean_over_c() {
        for chunk in [1, 8, 64] {
            for alpha in [0.3, 0.7, 0.9] {
                let e = expected_chunks(chunk, alpha);
                let mean: f64 = probe_tail(alpha).iter().sum();
                assert!(
                    e >= 1.0 && e >= mean / chunk as f64 - 1e-9,
                    "C={chunk} α={alpha}: {e}"
                );
                assert!(e <= mean / chunk as f64 + 1.0, "C={chunk} α={alpha}: {e}");
            }
        }
        // C = 1 reads one bucket a round trip: the mean probe length.
        let mean: f64 = probe_tail(0.6).iter().sum();
        assert!((expected_chunks(1, 0.6) - mean).abs() < 1e-9);
    }
}
