//! The graph seam of DESIGN §2.3: what the dense engine needs from an approximate
//! nearest-neighbour graph, so the implementation can change without touching namespaces,
//! filters or scoring.
//!
//! A graph knows vectors by slot (see [`Store`]). The engine tombstones removed slots and
//! filters them out at search time through `allow`; a backend that can repairs its links
//! around a removed slot at once (`remove`) and follows the store's compaction by renumbering
//! (`compacted`); one that cannot keeps tombstones as waypoints and is rebuilt from the live
//! slots when the store compacts.

use super::kernels::Kernels;
use super::store::Store;
use crate::vector::Metric;

/// An approximate nearest-neighbour graph over the slots of a [`Store`].
pub(crate) trait AnnGraph: Send + Sync {
    /// Makes room for slots up to `slots` (a hint; the default does nothing).
    fn reserve(&mut self, slots: usize) {
        let _ = slots;
    }

    /// Adds `slot` (already in `store`).
    fn insert(&mut self, store: &Store, slot: u32);

    /// Adds `slots` (already in `store`), on up to `threads` threads if the backend can
    /// build in parallel (the default inserts them one by one, in order).
    fn insert_batch(&mut self, store: &Store, slots: &[u32], threads: usize) {
        let _ = threads;
        for &slot in slots {
            self.insert(store, slot);
        }
    }

    /// `slot` was just tombstoned in `store`: repair the graph around it if the backend can
    /// (the default does nothing: the slot stays a waypoint that searches filter out).
    fn remove(&mut self, store: &Store, slot: u32) {
        let _ = (store, slot);
    }

    /// Finishes the repairs `remove` left for later (the default has none).
    fn consolidate(&mut self, store: &Store) {
        let _ = store;
    }

    /// The graph renumbered for `old.compacted()`, if the backend can do that without
    /// rebuilding (the default cannot).
    fn compacted(&self, old: &Store) -> Option<Box<dyn AnnGraph>> {
        let _ = old;
        None
    }

    /// Up to `k` slots near `query` (prepared by [`Store::prepare`]), nearest first, among
    /// those `allow` accepts; `ef` is the width of the base-layer beam (`ef >= k`).
    fn search(
        &self,
        store: &Store,
        query: &[f32],
        k: usize,
        ef: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<u32>;

    /// Approximate heap bytes held by the graph itself (not the store).
    fn memory_bytes(&self, store: &Store) -> usize;

    /// The crate's own HNSW behind this seam, if that is what this graph is (snapshots save
    /// its links; other backends are rebuilt on load).
    fn as_native(&self) -> Option<&super::native_graph::NativeGraph> {
        None
    }
}

/// A non-negative distance, smaller is nearer, monotone in the metric's score. `a` is a
/// prepared query; `b` is a graph vector (for cosine either a unit vector with `inv_norm_b`
/// 1, or a stored row with its inverse norm).
#[inline]
pub(crate) fn distance(
    metric: Metric,
    kernels: &Kernels,
    a: &[f32],
    b: &[f32],
    inv_norm_b: f32,
) -> f32 {
    let raw = match metric {
        Metric::Cosine | Metric::DotProduct => (kernels.dot)(a, b),
        Metric::Euclidean => (kernels.l2sq)(a, b),
    };
    from_raw(metric, raw, inv_norm_b)
}

/// The distance for a kernel's raw result: the inner product (cosine, dot) or the squared
/// Euclidean distance.
#[inline(always)]
fn from_raw(metric: Metric, raw: f32, inv_norm_b: f32) -> f32 {
    let d = match metric {
        Metric::Cosine => (1.0 - raw * inv_norm_b).max(0.0),
        Metric::Euclidean => raw,
        Metric::DotProduct => dot_distance(raw),
    };
    // NaN only from overflowing products of huge finite inputs; graphs must never see it.
    if d.is_nan() { f32::INFINITY } else { d }
}

/// [`distance`] from one prepared query to four graph vectors, read side by side (see
/// `Kernels::dot4`). May differ from [`distance`] in the last bit of the sum.
#[inline]
pub(crate) fn distance4(
    metric: Metric,
    kernels: &Kernels,
    a: &[f32],
    b: [&[f32]; 4],
    inv_norm_b: [f32; 4],
) -> [f32; 4] {
    let raw = match metric {
        Metric::Cosine | Metric::DotProduct => (kernels.dot4)(a, b),
        Metric::Euclidean => (kernels.l2sq4)(a, b),
    };
    std::array::from_fn(|r| from_raw(metric, raw[r], inv_norm_b[r]))
}

/// One step of splitmix64 (Steele et al.): advances `state` and returns the next value. The
/// seeded generator behind graph levels and the 1-bit codes' rotation.
#[inline]
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Maps an inner product to a positive distance, strictly decreasing in it and continuous:
/// `1 - dot` for `dot <= 0`, `1 / (1 + dot)` above. Unlike `1 - dot` it stays non-negative
/// for unnormalised vectors (hnsw_rs asserts distances are `>= 0`), and unlike the clamped
/// score it keeps ranking vectors whose inner products exceed 1.
#[inline]
pub(crate) fn dot_distance(dot: f32) -> f32 {
    if dot <= 0.0 {
        1.0 - dot
    } else {
        1.0 / (1.0 + dot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_distance_is_positive_and_strictly_decreasing() {
        let dots = [-1e30, -5.0, -1.0, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.0, 1e6];
        for w in dots.windows(2) {
            assert!(dot_distance(w[0]) > dot_distance(w[1]), "{w:?}");
        }
        assert!(dots.iter().all(|d| dot_distance(*d) > 0.0));
    }
}
