//! The hnsw_rs 0.3.5 graph behind the seam.
//!
//! Pitfalls designed around (verified on 0.3.5): it cannot delete or update (the engine
//! tombstones and rebuilds); its `DistDot` asserts `dot <= 1` and panics on rounding (we pass
//! our own [`FlowDistance`], which clamps); `max_nb_connection > 256` calls `process::exit`
//! (the config is validated before we get here); `file_dump` needs `max_layer = 16` (we use 16).
//! It keeps its own copy of every vector (unit vectors for cosine) and one `Arc` per edge:
//! 3.5 KB per 384-d point at M=16 on top of the store (measured; see `memory_bytes`), against
//! 0.17 KB for the native graph.

use super::graph::{AnnGraph, distance};
use super::kernels::Kernels;
use super::store::Store;
use crate::vector::Metric;
use hnsw_rs::prelude::{Distance, FilterT, Hnsw};

/// Layers hnsw_rs may use; 16 is its maximum and what `file_dump` requires.
const MAX_LAYER: usize = 16;

/// The metric's graph distance on the vectors hnsw_rs holds (unit vectors for cosine).
pub(crate) struct FlowDistance {
    metric: Metric,
    kernels: Kernels,
}

impl Distance<f32> for FlowDistance {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        distance(self.metric, &self.kernels, va, vb, 1.0)
    }
}

pub(crate) struct HnswRsGraph {
    hnsw: Hnsw<'static, f32, FlowDistance>,
    m: usize,
    points: usize,
}

impl HnswRsGraph {
    /// A graph for about `capacity` points. `m` must be in `2..=256` (validated by the config).
    pub(crate) fn new(store: &Store, m: usize, ef_construction: usize, capacity: usize) -> Self {
        debug_assert!((2..=256).contains(&m));
        let dist = FlowDistance {
            metric: store.metric(),
            kernels: store.kernels(),
        };
        HnswRsGraph {
            hnsw: Hnsw::new(m, capacity.max(1024), MAX_LAYER, ef_construction, dist),
            m,
            points: 0,
        }
    }
}

impl AnnGraph for HnswRsGraph {
    fn insert(&mut self, store: &Store, slot: u32) {
        let v = store.graph_vector(slot);
        self.hnsw.insert_slice((&v, slot as usize));
        self.points += 1;
    }

    fn search(
        &self,
        _store: &Store,
        query: &[f32],
        k: usize,
        ef: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<u32> {
        let found = match allow {
            Some(allow) => {
                let filter = |slot: &usize| allow(*slot as u32);
                self.hnsw
                    .search_filter(query, k, ef, Some(&filter as &dyn FilterT))
            }
            None => self.hnsw.search(query, k, ef),
        };
        found.iter().map(|n| n.d_id as u32).collect()
    }

    fn memory_bytes(&self, store: &Store) -> usize {
        // Per point: the Arc<Point> (counts + struct), its vector copy, the Arc<RwLock> of its
        // 16 per-layer Vec headers, and the layer list's pointer; per edge: a pointer in a Vec
        // plus an Arc<PointWithOrder> allocation (counts + pointer + f32, rounded to 32 B by the
        // allocator), with Vec slack. Calibrated against ann_bench's counting allocator on
        // minilm-text (43k x 384, M=16): 150 MB held by the graph beyond the store, 3.5 KB per
        // point, which 2.2 M edges per point reproduces.
        let per_point = 16 + 96 + store.dim() * 4 + 16 + 8 + 24 + 24 * MAX_LAYER + 8;
        let edges = self.points * self.m * 22 / 10;
        self.points * per_point + edges * (8 + 32)
    }
}
