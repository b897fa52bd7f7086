//! Reciprocal rank fusion.

use super::{finish, first_occurrences, weight};
use std::collections::BTreeMap;

/// The rank constant of RRF (Cormack, Clarke & Büttcher 2009).
pub const RRF_K: f64 = 60.0;

/// Reciprocal rank fusion: `score(d) = Σ_lists 1 / (60 + rank_l(d))`, `rank_l(d)` counting
/// from 1 at the head of list `l`; a list that lacks `d` adds 0. Input scores are ignored; only
/// the order of each list matters.
///
/// Best first, ties by id ascending, cut to `k` (see the [module rules](super)).
///
/// # Examples
/// ```
/// use flowvec::vector::fusion::rrf;
/// let dense = [("a", 0.9), ("b", 0.8)];
/// let sparse = [("b", 12.0)];
/// let fused = rrf(&[&dense, &sparse], 10);
/// // b: 1/62 + 1/61, a: 1/61
/// assert_eq!(fused[0], ("b", (1.0 / 62.0 + 1.0 / 61.0) as f32));
/// assert_eq!(fused[1], ("a", (1.0f64 / 61.0) as f32));
/// ```
#[must_use]
pub fn rrf<K: Ord + Clone>(lists: &[&[(K, f32)]], k: usize) -> Vec<(K, f32)> {
    rrf_weighted(lists, &[], k)
}

/// [`rrf`] with per-list weights: `score(d) = Σ_l w_l / (60 + rank_l(d))`; list `i` takes
/// `weights[i]`, or 1.0 past the end of `weights`.
///
/// # Examples
/// ```
/// use flowvec::vector::fusion::{rrf, rrf_weighted};
/// let a = [(1u32, 0.0f32)];
/// let b = [(2u32, 0.0f32)];
/// assert_eq!(rrf_weighted(&[&a, &b], &[1.0, 3.0], 2)[0].0, 2);
/// // Missing weights are 1.0: the same as the unweighted fusion.
/// assert_eq!(rrf_weighted(&[&a, &b], &[], 2), rrf(&[&a, &b], 2));
/// ```
#[must_use]
pub fn rrf_weighted<K: Ord + Clone>(
    lists: &[&[(K, f32)]],
    weights: &[f32],
    k: usize,
) -> Vec<(K, f32)> {
    let mut acc: BTreeMap<K, f64> = BTreeMap::new();
    for (l, list) in lists.iter().enumerate() {
        let w = weight(weights, l);
        for (rank, (id, _)) in first_occurrences(list).into_iter().enumerate() {
            *acc.entry(id.clone()).or_default() += w / (RRF_K + (rank + 1) as f64);
        }
    }
    finish(acc, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_scores_and_order() {
        let a = [(1u32, 0.9f32), (2, 0.8), (3, 0.7)];
        let b = [(3u32, 5.0f32), (1, 4.0)];
        let fused = rrf(&[&a, &b], 10);
        // 1: 1/61 + 1/62 = 0.0325224748810153…; 3: 1/63 + 1/61 = 0.0322664585…; 2: 1/62
        assert_eq!(
            fused,
            vec![
                (1, (1.0 / 61.0 + 1.0 / 62.0) as f32),
                (3, (1.0 / 63.0 + 1.0 / 61.0) as f32),
                (2, (1.0f64 / 62.0) as f32),
            ]
        );
        assert!((fused[0].1 - 0.032_522_475).abs() < 1e-9);
        assert!((fused[1].1 - 0.032_266_458).abs() < 1e-9);
        assert!((fused[2].1 - 0.016_129_032).abs() < 1e-9);
    }

    #[test]
    fn single_result_list() {
        assert_eq!(
            rrf(&[&[(9u32, -4.0f32)]], 10),
            vec![(9, (1.0f64 / 61.0) as f32)]
        );
    }

    #[test]
    fn equal_scores_break_by_id_ascending() {
        // Each id heads one list: all score 1/61.
        let fused = rrf(&[&[(5u32, 1.0f32)], &[(2, 1.0)], &[(7, 1.0)]], 10);
        let ids: Vec<u32> = fused.iter().map(|h| h.0).collect();
        assert_eq!(ids, vec![2, 5, 7]);
        assert!(fused.iter().all(|h| h.1 == fused[0].1));
    }

    #[test]
    fn document_in_one_list_only_gets_that_list() {
        let a = [("x", 1.0f32), ("y", 0.5)];
        let b = [("y", 1.0f32)];
        let fused = rrf(&[&a, &b], 10);
        assert_eq!(fused[0], ("y", (1.0 / 62.0 + 1.0 / 61.0) as f32));
        assert_eq!(fused[1], ("x", (1.0f64 / 61.0) as f32));
    }

    #[test]
    fn empty_lists_and_k_cut() {
        assert!(rrf::<u32>(&[], 10).is_empty());
        assert!(rrf::<u32>(&[&[], &[]], 10).is_empty());
        let a = [(1u32, 0.0f32), (2, 0.0), (3, 0.0)];
        assert_eq!(rrf(&[&a, &[]], 10), rrf(&[&a], 10));
        let cut = rrf(&[&a], 2);
        assert_eq!(cut.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 2]);
        assert!(rrf(&[&a], 0).is_empty());
    }

    #[test]
    fn later_duplicates_in_a_list_are_ignored() {
        let a = [(1u32, 0.0f32), (1, 0.0), (2, 0.0)];
        assert_eq!(
            rrf(&[&a], 10),
            vec![(1, (1.0f64 / 61.0) as f32), (2, (1.0f64 / 62.0) as f32)]
        );
    }

    #[test]
    fn weights_scale_lists_and_default_to_one() {
        let a = [(1u32, 0.0f32)];
        let b = [(2u32, 0.0f32)];
        let fused = rrf_weighted(&[&a, &b], &[0.5], 10);
        assert_eq!(
            fused,
            vec![(2, (1.0f64 / 61.0) as f32), (1, (0.5f64 / 61.0) as f32)]
        );
        // Extra weights are ignored.
        assert_eq!(
            rrf_weighted(&[&a, &b], &[1.0, 1.0, 9.0], 10),
            rrf(&[&a, &b], 10)
        );
    }
}
