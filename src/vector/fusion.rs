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
