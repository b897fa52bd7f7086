//! Fusion of ranked result lists: RRF and DBSF (DESIGN §2.2).
//! PLACEHOLDER signatures; the tested implementations arrive with their own change.

use std::collections::BTreeMap;

/// Reciprocal rank fusion: `score(d) = Σ_lists 1 / (60 + rank_l(d))`, rank from 1.
///
/// Each list is best first. The result holds every id of every list, best first, ties by id
/// ascending, cut to `k`.
pub fn rrf<K: Ord + Clone>(lists: &[&[(K, f32)]], k: usize) -> Vec<(K, f32)> {
    let mut acc: BTreeMap<K, f32> = BTreeMap::new();
    for list in lists {
        for (rank, (id, _)) in list.iter().enumerate() {
            *acc.entry(id.clone()).or_default() += 1.0 / (60.0 + (rank + 1) as f32);
        }
    }
    finish(acc, k)
}

/// Distribution-based score fusion: per list, `(s − (μ − 3σ)) / (6σ)` with the sample standard
/// deviation; a list of one result, or `σ = 0`, gives 0.5; summed over lists.
pub fn dbsf<K: Ord + Clone>(lists: &[&[(K, f32)]], k: usize) -> Vec<(K, f32)> {
    let mut acc: BTreeMap<K, f32> = BTreeMap::new();
    for list in lists {
        let n = list.len() as f64;
        let mean = list.iter().map(|(_, s)| f64::from(*s)).sum::<f64>() / n.max(1.0);
        let var = if list.len() > 1 {
            list.iter()
                .map(|(_, s)| (f64::from(*s) - mean).powi(2))
                .sum::<f64>()
                / (n - 1.0)
        } else {
            0.0
        };
        let sd = var.sqrt();
        for (id, s) in list.iter() {
            let v = if sd == 0.0 {
                0.5
            } else {
                (f64::from(*s) - (mean - 3.0 * sd)) / (6.0 * sd)
            };
            *acc.entry(id.clone()).or_default() += v as f32;
        }
    }
    finish(acc, k)
}

fn finish<K: Ord>(acc: BTreeMap<K, f32>, k: usize) -> Vec<(K, f32)> {
    let mut out: Vec<(K, f32)> = acc.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.truncate(k);
    out
}
