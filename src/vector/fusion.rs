//! Fusion of ranked result lists into one: reciprocal rank fusion (RRF) and distribution-based
//! score fusion (DBSF), DESIGN §2.2. Pure functions over `(id, score)` lists, best first.
//!
//! Shared rules, the same for both functions:
//! - Each input list is best first. If an id appears more than once in one list, only its first
//!   (best) entry counts; later ones are dropped before ranking or statistics.
//! - A list that lacks an id adds 0 to that id's score. Empty lists add nothing.
//! - Per-list weights (the `*_weighted` variants) multiply each list's contribution; list `i`
//!   takes `weights[i]`, lists beyond the end of `weights` take 1.0, extra weights are ignored
//!   (Qdrant's rule, applied identically to RRF and DBSF).
//! - Sums are formed in `f64`, list by list in input order, and rounded to `f32` once.
//! - The result holds every id of every list, sorted by fused score, highest first; equal scores
//!   are ordered by id ascending, so the output does not depend on hash order or input order of
//!   equal items; it is cut to `k`.

mod dbsf;
mod rrf;
mod welford;

pub use dbsf::{dbsf, dbsf_weighted};
pub use rrf::{RRF_K, rrf, rrf_weighted};
pub use welford::Welford;

use std::collections::{BTreeMap, BTreeSet};

/// The weight of list `i`: `weights[i]`, or 1.0 past the end of `weights`.
fn weight(weights: &[f32], i: usize) -> f64 {
    weights.get(i).map_or(1.0, |&w| f64::from(w))
}

/// `list` without the later duplicates of any id.
fn first_occurrences<K: Ord + Clone>(list: &[(K, f32)]) -> Vec<(&K, f32)> {
    let mut seen = BTreeSet::new();
    list.iter()
        .filter(|(id, _)| seen.insert(id.clone()))
        .map(|(id, s)| (id, *s))
        .collect()
}

/// Rounds the sums, sorts best first with ties by id ascending, keeps `k`.
fn finish<K: Ord>(acc: BTreeMap<K, f64>, k: usize) -> Vec<(K, f32)> {
    let mut out: Vec<(K, f32)> = acc.into_iter().map(|(id, s)| (id, s as f32)).collect();
    // Stable sort over ids already ascending (BTreeMap order): equal scores keep id order.
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out.truncate(k);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-pass `(s − (μ − 3σ)) / (6σ)` per list, independent of [`Welford`].
    fn naive_dbsf(list: &[(&str, f32)]) -> Vec<(String, f64)> {
        let xs: Vec<f64> = list.iter().map(|h| f64::from(h.1)).collect();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        list.iter()
            .map(|h| {
                (
                    h.0.to_string(),
                    (f64::from(h.1) - (mean - 3.0 * sd)) / (6.0 * sd),
                )
            })
            .collect()
    }

    #[test]
    fn rrf_and_dbsf_rank_differently() {
        // "d" is only in the sparse list but far ahead there; "a" only in the dense list, ahead
        // by an ordinary margin. RRF sees two first places (a tie, broken by id); DBSF sees the
        // score gaps and puts "d" first.
        let dense = [("a", 0.9f32), ("b", 0.5), ("c", 0.1)];
        let sparse = [("d", 10.0f32), ("b", 0.2), ("c", 0.1)];

        let r = rrf(&[&dense, &sparse], 10);
        assert_eq!(
            r,
            vec![
                ("b", (2.0f64 / 62.0) as f32), // 0.032258064
                ("c", (2.0f64 / 63.0) as f32), // 0.031746034
                ("a", (1.0f64 / 61.0) as f32), // 0.016393442
                ("d", (1.0f64 / 61.0) as f32),
            ]
        );

        let d = dbsf(&[&dense, &sparse], 10);
        let ids: Vec<&str> = d.iter().map(|h| h.0).collect();
        assert_eq!(ids, vec!["b", "c", "d", "a"]);
        // Hand-computed: dense μ = 0.5, σ = 0.4 → a 2/3, b 1/2, c 1/3; sparse μ = 3.4333,
        // σ = 5.6871 → d 0.69244, b 0.40525, c 0.40231.
        let want = [
            ("b", 0.905_25),
            ("c", 0.735_64),
            ("d", 0.692_44),
            ("a", 0.666_67),
        ];
        for (got, (id, score)) in d.iter().zip(want) {
            assert_eq!(got.0, id);
            assert!((f64::from(got.1) - score).abs() < 1e-4, "{id}: {}", got.1);
        }
        // And to f32 precision against the two-pass formula.
        let (nd, ns) = (naive_dbsf(&dense), naive_dbsf(&sparse));
        let sum = |id: &str| -> f64 {
            nd.iter()
                .chain(&ns)
                .filter(|h| h.0 == id)
                .map(|h| h.1)
                .sum()
        };
        for (id, s) in &d {
            assert!((f64::from(*s) - sum(id)).abs() < 1e-6, "{id}");
        }
    }
}
