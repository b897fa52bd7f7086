//! Distribution-based score fusion.

use super::{Welford, finish, first_occurrences, weight};
use std::collections::BTreeMap;

/// Distribution-based score fusion (Qdrant's DBSF): each list's scores are normalised by that
/// list's mean `μ` and sample standard deviation `σ` (divided by `n − 1`, computed with
/// [`Welford`]):
///
/// `norm(s) = (s − (μ − 3σ)) / (6σ)`,
///
/// which maps `μ ± 3σ` to `[0, 1]` (scores beyond 3σ land outside, unclamped, as in Qdrant). A
/// list of one result, or with `σ = 0`, normalises every score to 0.5. The fused score is the
/// sum of the normalised scores over the lists holding the id.
///
/// Best first, ties by id ascending, cut to `k` (see the [module rules](super)).
///
/// # Examples
/// ```
/// use flowvec::vector::fusion::dbsf;
/// // μ = 2, σ = 1: (s + 1) / 6
/// let dense = [(1u32, 3.0f32), (2, 2.0), (3, 1.0)];
/// let sparse = [(3u32, 42.0f32)]; // one result: 0.5
/// let fused = dbsf(&[&dense, &sparse], 10);
/// assert_eq!(fused[0], (3, (2.0f64 / 6.0 + 0.5) as f32));
/// assert_eq!(fused[1], (1, (4.0f64 / 6.0) as f32));
/// assert_eq!(fused[2], (2, 0.5));
/// ```
#[must_use]
pub fn dbsf<K: Ord + Clone>(lists: &[&[(K, f32)]], k: usize) -> Vec<(K, f32)> {
    dbsf_weighted(lists, &[], k)
}

/// [`dbsf`] with per-list weights multiplying each list's normalised scores; list `i` takes
/// `weights[i]`, or 1.0 past the end of `weights`.
///
/// # Examples
/// ```
/// use flowvec::vector::fusion::{dbsf, dbsf_weighted};
/// let a = [(1u32, 5.0f32)];
/// let b = [(2u32, 5.0f32)];
/// assert_eq!(dbsf_weighted(&[&a, &b], &[1.0, 2.0], 2), vec![(2, 1.0), (1, 0.5)]);
/// assert_eq!(dbsf_weighted(&[&a, &b], &[], 2), dbsf(&[&a, &b], 2));
/// ```
#[must_use]
pub fn dbsf_weighted<K: Ord + Clone>(
    lists: &[&[(K, f32)]],
    weights: &[f32],
    k: usize,
) -> Vec<(K, f32)> {
    let mut acc: BTreeMap<K, f64> = BTreeMap::new();
    for (l, list) in lists.iter().enumerate() {
        let w = weight(weights, l);
        let list = first_occurrences(list);
        let mut stats = Welford::new();
        for &(_, s) in &list {
            stats.push(f64::from(s));
        }
        let (mean, std) = (stats.mean(), stats.sample_std());
        for (id, s) in list {
            let norm = match (mean, std) {
                (Some(mean), Some(std)) if std > 0.0 => {
                    (f64::from(s) - (mean - 3.0 * std)) / (6.0 * std)
                }
                _ => 0.5,
            };
            *acc.entry(id.clone()).or_default() += w * norm;
        }
    }
    finish(acc, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_scores_with_a_constant_list() {
        // List 1: μ = 2, σ = 1 → (s + 1) / 6 = 1/3, 1/2, 2/3. List 2: σ = 0 → 0.5 each.
        let a = [(3u32, 3.0f32), (2, 2.0), (1, 1.0)];
        let b = [(3u32, 10.0f32), (4, 10.0)];
        let fused = dbsf(&[&a, &b], 10);
        assert_eq!(
            fused,
            vec![
                (3, (4.0f64 / 6.0 + 0.5) as f32), // 1.1666666
                (2, 0.5),                         // ties with 4 at 0.5: id ascending
                (4, 0.5),
                (1, (2.0f64 / 6.0) as f32), // 0.33333334
            ]
        );
        assert!((fused[0].1 - 1.166_666_7).abs() < 1e-6);
    }

    #[test]
    fn single_result_list_is_one_half() {
        assert_eq!(dbsf(&[&[(8u32, -123.0f32)]], 10), vec![(8, 0.5)]);
    }

    #[test]
    fn two_results_map_to_fixed_points() {
        // n = 2: μ = (a + b) / 2 and σ = |a − b| / √2, so whatever a and b are,
        // norm(max) = 0.5 + (|a − b| / 2) / (6σ) = 0.5 + √2 / 12 and norm(min) = 0.5 − √2 / 12.
        let fused = dbsf(&[&[(1u32, 0.9f32), (2, 0.1)]], 10);
        let hi = 0.5 + 2f64.sqrt() / 12.0;
        assert!((f64::from(fused[0].1) - hi).abs() < 1e-7, "{fused:?}");
        assert!(
            (f64::from(fused[1].1) - (1.0 - hi)).abs() < 1e-7,
            "{fused:?}"
        );
    }

    #[test]
    fn document_in_one_list_only_gets_that_list() {
        let a = [("x", 3.0f32), ("y", 1.0)]; // μ = 2, σ = √2
        let b = [("y", 0.7f32)]; // 0.5
        let fused = dbsf(&[&a, &b], 10);
        let sd = 2f64.sqrt();
        let norm = |s: f64| (s - (2.0 - 3.0 * sd)) / (6.0 * sd);
        assert_eq!(fused[0], ("y", (norm(1.0) + 0.5) as f32));
        assert_eq!(fused[1], ("x", norm(3.0) as f32));
    }

    #[test]
    fn empty_lists_and_k_cut() {
        assert!(dbsf::<u32>(&[], 3).is_empty());
        let a = [(1u32, 3.0f32), (2, 2.0), (3, 1.0)];
        assert_eq!(dbsf(&[&[], &a, &[]], 10), dbsf(&[&a], 10));
        let ids: Vec<u32> = dbsf(&[&a], 2).iter().map(|h| h.0).collect();
        assert_eq!(ids, vec![1, 2]);
    }

    #[test]
    fn weights_follow_the_same_rule_as_rrf() {
        let a = [(1u32, 3.0f32), (2, 1.0)];
        let b = [(2u32, 1.0f32)];
        assert_eq!(
            dbsf_weighted(&[&a, &b], &[1.0, 1.0, 7.0], 10),
            dbsf(&[&a, &b], 10)
        );
        let fused = dbsf_weighted(&[&a, &b], &[0.0], 10);
        assert_eq!(fused, vec![(2, 0.5), (1, 0.0)]);
    }
}
