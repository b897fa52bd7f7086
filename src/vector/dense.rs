//! The dense engine: one namespace's dense vectors and their nearest-neighbour search
//! (DESIGN §2.3).
//!
//! # Architecture
//! - `store` — every vector in one contiguous slot-major buffer (as inserted; for cosine
//!   the inverse norm beside it), slots appended and tombstoned, never reused until compaction.
//! - `kernels` — dot / squared-L2 kernels, portable (auto-vectorised, 16 lanes) and AVX2+FMA
//!   (32 lanes) picked at run time; the only `unsafe` of the engine.
//! - `exact` — the exact scan (block row kernels, or predicate-first when filtered).
//! - `graph` — the seam: `insert(slot)`, `search(query, k, ef, allow)`. Behind it
//!   `native_graph` (the default: flat `u32` neighbour arrays, reads the store's rows in place,
//!   pooled visited set, row prefetch) and `hnsw_rs_graph` (hnsw_rs 0.3.5, cargo feature
//!   `hnsw-rs`, [`GraphBackend::HnswRs`]). Both pass the same oracle tests (`tests/dense_*.rs`).
//! - `graph_image` — the native graph as plain, validated data, which index snapshots save
//!   and a load adopts instead of rebuilding the graph.
//!
//! Up to [`DenseConfig::exact_threshold`] live vectors a namespace has no graph and every
//! search is an exact scan. Above it, searches go to the graph, then are rescored with the
//! exact kernels (so a record's score does not depend on the path). A filter the sample says is
//! selective goes straight to an exact scan over the matching vectors, and a graph search that
//! comes back with fewer than `k` results falls back to that scan, so results are never short.
//! Removed and replaced vectors are tombstoned in the store and filtered out at search. The
//! native graph repairs itself at once: each neighbour that linked to the removed node is
//! relinked with the selection heuristic over its remaining neighbours and the removed node's,
//! so searches stop depending on it (about the distance work of one insert per removal, no
//! stall). When tombstones pass [`DenseConfig::rebuild_fraction`] of the slots the store is
//! compacted and the native graph renumbered to match (no distances computed); the `hnsw-rs`
//! backend, which cannot repair, keeps tombstones as waypoints and is rebuilt then.

mod bit_codes;
mod config;
mod exact;
mod graph;
mod graph_image;
#[cfg(feature = "hnsw-rs")]
mod hnsw_rs_graph;
mod kernels;
mod native_graph;
mod store;

pub use config::{DEFAULT_EXACT_THRESHOLD, DenseConfig, GraphBackend, MAX_EF, Traversal};

use crate::vector::{Metric, TieBreak, TopK, VectorError};
use graph::AnnGraph;
pub(crate) use graph_image::GraphImage;
use kernels::Kernels;
use store::Store;

/// Live vectors sampled to estimate how selective a search filter is.
const FILTER_SAMPLE: usize = 128;
/// Fewest tombstones that trigger a compaction (so tiny namespaces do not churn).
const MIN_TOMBSTONES_FOR_REBUILD: usize = 32;

/// One namespace's dense vectors, addressed by internal `u32` ids chosen by the caller.
///
/// Stores each vector once; [`DenseIndex::vector`] gives it back as inserted (for cosine the
/// norm is kept beside it). `search` takes `&self` and may run from many threads at once.
///
/// # Examples
/// ```
/// use flowvec::vector::Metric;
/// use flowvec::vector::dense::{DenseConfig, DenseIndex};
/// let mut index = DenseIndex::new(DenseConfig::new(2, Metric::Cosine))?;
/// index.insert(1, &[1.0, 0.0])?;
/// index.insert(2, &[0.0, 1.0])?;
/// let hits = index.search(&[0.9, 0.1], 1, None, None, None)?;
/// assert_eq!(hits[0].0, 1);
/// # Ok::<(), flowvec::vector::VectorError>(())
/// ```
pub struct DenseIndex {
    config: DenseConfig,
    store: Store,
    graph: Option<Box<dyn AnnGraph>>,
    /// Slots announced by [`DenseIndex::reserve`], passed on to a graph built later.
    reserved: usize,
    /// A snapshot is being loaded: inserts do not build the graph, which comes from the
    /// snapshot or is built once at the end ([`DenseIndex::finish_bulk_load`]).
    bulk_loading: bool,
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("config", &self.config)
            .field("len", &self.store.len())
            .field("tombstones", &self.store.dead())
            .field("graph", &self.graph.is_some())
            .finish()
    }
}

impl DenseIndex {
    /// An empty index.
    ///
    /// # Errors
    /// [`VectorError::InvalidParameter`] for a parameter out of range (see
    /// [`DenseConfig::validate`]).
    pub fn new(config: DenseConfig) -> Result<Self, VectorError> {
        config.validate()?;
        let mut store = Store::new(config.dimension, config.metric, Kernels::detect());
        if config.backend == GraphBackend::Native {
            match config.traversal {
                Traversal::Int8 => store = store.with_codes(),
                Traversal::Bits => store = store.with_bits(),
                Traversal::Exact => {}
            }
        }
        Ok(DenseIndex {
            config,
            store,
            graph: None,
            reserved: 0,
            bulk_loading: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DenseConfig {
        &self.config
    }

    /// Inserts or replaces `id`'s vector.
    ///
    /// # Errors
    /// Wrong dimension, a non-finite value, or a zero vector under cosine; nothing changes then.
    pub fn insert(&mut self, id: u32, vector: &[f32]) -> Result<(), VectorError> {
        self.validate(vector)?;
        let replaced = self.store.slot_of(id);
        let slot = self.store.push(id, vector);
        match &mut self.graph {
            Some(graph) => {
                graph.insert(&self.store, slot);
                if let Some(old) = replaced {
                    graph.remove(&self.store, old);
                }
            }
            None if self.store.len() > self.config.exact_threshold && !self.bulk_loading => {
                self.build_graph();
            }
            None => {}
        }
        if replaced.is_some() {
            self.maybe_compact();
        }
        Ok(())
    }

    /// Inserts or replaces many vectors at once, building their graph links on
    /// [`DenseConfig::build_threads`] threads. The result is what inserting them one by one
    /// in order gives (a later item with the same id replaces an earlier one), except that
    /// with more than one thread the graph is as good but not bit for bit the same.
    ///
    /// # Errors
    /// The first invalid vector's error, as [`DenseIndex::insert`] gives it; nothing is
    /// inserted then.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::Metric;
    /// use flowvec::vector::dense::{DenseConfig, DenseIndex};
    /// let mut index = DenseIndex::new(DenseConfig::new(2, Metric::Euclidean))?;
    /// let bad = index.insert_batch([(1, [1.0, 0.0].as_slice()), (2, [f32::NAN, 0.0].as_slice())]);
    /// assert!(bad.is_err());
    /// assert!(index.is_empty());
    /// index.insert_batch([(1, [1.0, 0.0].as_slice()), (2, [0.0, 1.0].as_slice())])?;
    /// assert_eq!(index.len(), 2);
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    pub fn insert_batch<'a>(
        &mut self,
        items: impl IntoIterator<Item = (u32, &'a [f32])>,
    ) -> Result<(), VectorError> {
        let items: Vec<(u32, &[f32])> = items.into_iter().collect();
        for (_, vector) in &items {
            self.validate(vector)?;
        }
        let before = self.store.slots();
        let mut replaced = Vec::new();
        for &(id, vector) in &items {
            // A slot of this batch replaced by a later item never reaches the graph.
            if let Some(old) = self.store.slot_of(id).filter(|&s| (s as usize) < before) {
                replaced.push(old);
            }
            self.store.push(id, vector);
        }
        match &mut self.graph {
            Some(graph) => {
                let fresh: Vec<u32> = (before as u32..self.store.slots() as u32)
                    .filter(|&s| self.store.is_live(s))
                    .collect();
                graph.insert_batch(&self.store, &fresh, self.config.build_threads);
                for &old in &replaced {
                    graph.remove(&self.store, old);
                }
            }
            None if self.store.len() > self.config.exact_threshold && !self.bulk_loading => {
                self.build_graph();
            }
            None => {}
        }
        if !replaced.is_empty() {
            self.maybe_compact();
        }
        Ok(())
    }

    /// Makes room for `additional` more vectors, so a bulk load allocates once and exactly.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::Metric;
    /// use flowvec::vector::dense::{DenseConfig, DenseIndex};
    /// let mut index = DenseIndex::new(DenseConfig::new(8, Metric::Euclidean))?;
    /// index.reserve(1_000);
    /// assert!(index.memory_bytes() >= 1_000 * 8 * 4);
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    pub fn reserve(&mut self, additional: usize) {
        self.store.reserve(additional);
        if let Some(graph) = &mut self.graph {
            graph.reserve(self.store.slots() + additional);
        }
        self.reserved = self.store.slots() + additional;
    }

    /// Checks a vector against the index's dimension and metric without inserting it.
    ///
    /// # Errors
    /// [`VectorError::DimensionMismatch`], [`VectorError::NonFiniteValue`], or
    /// [`VectorError::ZeroVector`] under cosine.
    pub fn validate(&self, vector: &[f32]) -> Result<(), VectorError> {
        if vector.len() != self.config.dimension {
            return Err(VectorError::DimensionMismatch {
                received: vector.len(),
                expected: self.config.dimension,
            });
        }
        if let Some((position, v)) = vector.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(VectorError::NonFiniteValue {
                position,
                value: v.to_string(),
            });
        }
        if self.config.metric == Metric::Cosine && vector.iter().all(|v| *v == 0.0) {
            return Err(VectorError::ZeroVector);
        }
        Ok(())
    }

    /// Removes `id`; returns whether it was present.
    pub fn remove(&mut self, id: u32) -> bool {
        let Some(slot) = self.store.slot_of(id) else {
            return false;
        };
        self.store.remove(id);
        if let Some(graph) = &mut self.graph {
            graph.remove(&self.store, slot);
        }
        self.maybe_compact();
        true
    }

    /// Whether `id` is present.
    pub fn contains(&self, id: u32) -> bool {
        self.store.slot_of(id).is_some()
    }

    /// `id`'s vector as inserted (bit for bit).
    pub fn vector(&self, id: u32) -> Option<Vec<f32>> {
        self.store
            .slot_of(id)
            .map(|slot| self.store.original(slot).to_vec())
    }

    /// Number of vectors held.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// Whether searches currently go to the graph (more live vectors than
    /// [`DenseConfig::exact_threshold`]) rather than an exact scan.
    pub fn uses_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The `k` nearest vectors to `query` among those `allow` accepts, as `(id, score)` with the
    /// score in `[0, 1]`, best first, ties by `tie` (internal id when `None`). `ef` widens a
    /// graph search (default [`DenseConfig::ef_search`]; ignored by an exact scan). Returns
    /// `min(k, number of accepted vectors)` results.
    ///
    /// # Errors
    /// The query is validated like an inserted vector; `ef` must be in `1..=`[`MAX_EF`]
    /// ([`VectorError::InvalidParameter`]).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: Option<usize>,
        allow: Option<&dyn Fn(u32) -> bool>,
        tie: Option<TieBreak<'_>>,
    ) -> Result<Vec<(u32, f32)>, VectorError> {
        self.validate(query)?;
        let ef = ef.unwrap_or(self.config.ef_search);
        if !(1..=MAX_EF).contains(&ef) {
            return Err(VectorError::InvalidParameter {
                name: "ef",
                value: ef.to_string(),
                expected: "between 1 and 10000",
            });
        }
        let prepared = self.store.prepare(query);
        if k == 0 {
            return Ok(Vec::new());
        }
        let Some(graph) = &self.graph else {
            return Ok(exact::scan(&self.store, &prepared, k, allow, tie));
        };
        // A graph cannot return more than it holds, and a beam wider than MAX_EF costs more
        // than the scan it would replace.
        if k >= self.store.len() || k > MAX_EF {
            return Ok(exact::scan(&self.store, &prepared, k, allow, tie));
        }
        if let Some(allow) = allow
            && self.filter_is_selective(allow)
        {
            return Ok(exact::scan(&self.store, &prepared, k, Some(allow), tie));
        }
        let store = &self.store;
        let accept = |slot: u32| store.is_live(slot) && allow.is_none_or(|f| f(store.id(slot)));
        let filter: Option<&dyn Fn(u32) -> bool> = if allow.is_some() || store.dead() > 0 {
            Some(&accept)
        } else {
            None
        };
        let ef = ef.max(k);
        // A few candidates beyond k, rescored exactly, so ties at the k-th place are broken
        // the same way as by the exact scan.
        // With the int8 walk, all `ef` candidates are rescored: its order is approximate.
        let want = if store.has_codes() {
            ef
        } else {
            (k + k / 4 + 2).min(ef)
        };
        let slots = graph.search(store, &prepared.values, want, ef, filter);
        let mut top = TopK::new(k, tie);
        for slot in slots {
            if accept(slot) {
                top.push(store.id(slot), store.score(&prepared, slot));
            }
        }
        if top.len() < k {
            // The graph ran out of matching neighbours: never return short.
            return Ok(exact::scan(store, &prepared, k, allow, tie));
        }
        Ok(top.into_sorted_vec())
    }

    /// The `k` nearest vectors to `query` among `ids` (ids not held are skipped), scored
    /// exactly with the engine's kernels, best first, ties by `tie`.
    ///
    /// For a filter whose matches are already known (a value index collected them), this
    /// scores just those rows in place: no graph walk, no copy of the vectors.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::Metric;
    /// use flowvec::vector::dense::{DenseConfig, DenseIndex};
    /// let mut index = DenseIndex::new(DenseConfig::new(2, Metric::Euclidean)).unwrap();
    /// for (id, x) in [(1, 0.0), (2, 1.0), (3, 2.0)] {
    ///     index.insert(id, &[x, 0.0]).unwrap();
    /// }
    /// let hits = index.search_among(&[0.0, 0.0], 1, [2, 3, 9], None).unwrap();
    /// assert_eq!(hits, vec![(2, 0.5)]);
    /// ```
    ///
    /// # Errors
    /// The query is validated like an inserted vector.
    pub fn search_among(
        &self,
        query: &[f32],
        k: usize,
        ids: impl IntoIterator<Item = u32>,
        tie: Option<TieBreak<'_>>,
    ) -> Result<Vec<(u32, f32)>, VectorError> {
        self.validate(query)?;
        Ok(self.exact_among(query, k, ids, tie))
    }

    /// [`DenseIndex::search_among`] for a query the caller has already validated.
    pub(crate) fn exact_among(
        &self,
        query: &[f32],
        k: usize,
        ids: impl IntoIterator<Item = u32>,
        tie: Option<TieBreak<'_>>,
    ) -> Vec<(u32, f32)> {
        let prepared = self.store.prepare(query);
        let mut top = TopK::new(k, tie);
        for id in ids {
            if let Some(slot) = self.store.slot_of(id) {
                top.push(id, self.store.score(&prepared, slot));
            }
        }
        top.into_sorted_vec()
    }

    /// Starts a bulk load into an empty index: inserts store vectors without building the
    /// graph until [`DenseIndex::finish_bulk_load`].
    pub(crate) fn begin_bulk_load(&mut self) {
        self.bulk_loading = self.graph.is_none();
    }

    /// Ends a bulk load: adopts `image` as the graph (its node `i` is the vector of caller id
    /// `ids[i]`), or, without one, builds the graph if the index is large enough for one.
    ///
    /// # Errors
    /// What is wrong with the image: a node count or id that does not match the vectors held,
    /// a graph this index's backend cannot adopt, or a problem [`GraphImage::validate`] finds.
    /// The index then has no graph (searches scan) until the caller drops it.
    pub(crate) fn finish_bulk_load(
        &mut self,
        image: Option<(&GraphImage, &[u32])>,
    ) -> Result<(), String> {
        self.bulk_loading = false;
        let Some((image, ids)) = image else {
            if self.graph.is_none() && self.store.len() > self.config.exact_threshold {
                self.build_graph();
            }
            return Ok(());
        };
        if self.config.backend != GraphBackend::Native {
            return Err("saved graph links, but this index's graph backend is not native".into());
        }
        if ids.len() != self.store.len() {
            return Err(format!(
                "the graph has {} nodes, expected one per vector ({})",
                ids.len(),
                self.store.len()
            ));
        }
        let slots = ids
            .iter()
            .map(|&id| self.store.slot_of(id).ok_or(id))
            .collect::<Result<Vec<u32>, u32>>()
            .map_err(|id| format!("the graph names vector {id}, which is not held"))?;
        let graph = native_graph::NativeGraph::from_image(
            self.config.m,
            self.config.ef_construction,
            image,
            &slots,
        )?;
        self.graph = Some(Box::new(graph));
        Ok(())
    }

    /// The native graph as a [`GraphImage`] whose node `i` is the vector of caller id
    /// `ids[i]`, where `ids` lists every vector held; `None` when there is no native graph or
    /// `ids` does not cover the vectors. Tombstoned slots waiting for compaction are left out
    /// with the links to them, as compaction would: their mutual links were repaired when they
    /// went, and one-way links still waiting for a consolidation (fewer than `points / 512`
    /// removals' worth, see `NativeGraph::remove_node`) are dropped unrepaired, and the nodes
    /// those removals may have left on no list are not relinked.
    pub(crate) fn graph_image(&self, ids: &[u32]) -> Option<GraphImage> {
        let graph = self.graph.as_ref()?.as_native()?;
        if ids.len() != self.store.len() {
            return None;
        }
        let order = ids
            .iter()
            .map(|&id| self.store.slot_of(id))
            .collect::<Option<Vec<u32>>>()?;
        let mut node_of = vec![u32::MAX; self.store.slots()];
        for (node, &slot) in order.iter().enumerate() {
            node_of[slot as usize] = node as u32;
        }
        Some(graph.to_image(&order, |slot| {
            node_of
                .get(slot as usize)
                .copied()
                .filter(|&n| n != u32::MAX)
        }))
    }

    /// Approximate heap bytes held by the index (vectors, ids, norms, graph).
    pub fn memory_bytes(&self) -> usize {
        self.store.memory_bytes()
            + self
                .graph
                .as_ref()
                .map_or(0, |g| g.memory_bytes(&self.store))
    }

    /// Whether fewer live vectors pass `allow` than the exact-scan threshold, judged from an
    /// evenly strided sample of the slots; a sample with no match counts as selective.
    fn filter_is_selective(&self, allow: &dyn Fn(u32) -> bool) -> bool {
        let slots = self.store.slots();
        let step = (slots / FILTER_SAMPLE).max(1);
        let (mut seen, mut hits) = (0usize, 0usize);
        for slot in (0..slots).step_by(step).take(FILTER_SAMPLE) {
            let slot = slot as u32;
            if self.store.is_live(slot) {
                seen += 1;
                hits += usize::from(allow(self.store.id(slot)));
            }
        }
        if hits == 0 {
            return true;
        }
        hits * self.store.len() / seen.max(1) <= self.config.exact_threshold
    }

    fn new_graph(&self) -> Option<Box<dyn AnnGraph>> {
        match self.config.backend {
            GraphBackend::Native => Some(Box::new(native_graph::NativeGraph::new(
                self.config.m,
                self.config.ef_construction,
                self.store.len().max(self.reserved),
            ))),
            #[cfg(feature = "hnsw-rs")]
            GraphBackend::HnswRs => Some(Box::new(hnsw_rs_graph::HnswRsGraph::new(
                &self.store,
                self.config.m,
                self.config.ef_construction,
                self.store.len().max(self.reserved),
            ))),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Builds a graph over every live slot.
    fn build_graph(&mut self) {
        self.graph = self.new_graph();
        if let Some(graph) = &mut self.graph {
            graph.reserve(self.reserved.max(self.store.slots()));
            let live: Vec<u32> = (0..self.store.slots() as u32)
                .filter(|&slot| self.store.is_live(slot))
                .collect();
            graph.insert_batch(&self.store, &live, self.config.build_threads);
        }
    }

    fn maybe_compact(&mut self) {
        let dead = self.store.dead();
        if dead >= MIN_TOMBSTONES_FOR_REBUILD
            && dead as f64 > self.config.rebuild_fraction * self.store.slots() as f64
        {
            // A graph that repairs itself on removal is renumbered (milliseconds); one that
            // keeps tombstones as waypoints is rebuilt from the live vectors.
            // Compaction drops the dead nodes and every link to them: repair those first.
            if let Some(graph) = &mut self.graph {
                graph.consolidate(&self.store);
            }
            let renumbered = self.graph.take().and_then(|g| g.compacted(&self.store));
            self.store = self.store.compacted();
            if self.store.len() > self.config.exact_threshold {
                self.graph = renumbered;
                if self.graph.is_none() {
                    self.build_graph();
                }
            }
        }
    }
}

/// The dot-product kernel, portable (`simd = false`) or the one this CPU was detected to run;
/// for the kernel benchmark only, not a stable API.
#[doc(hidden)]
pub fn bench_dot_kernel(simd: bool, a: &[f32], b: &[f32]) -> f32 {
    let kernels = if simd {
        Kernels::detect()
    } else {
        Kernels::portable()
    };
    (kernels.dot)(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(metric: Metric, threshold: usize) -> DenseIndex {
        DenseIndex::new(DenseConfig::new(3, metric).with_exact_threshold(threshold))
            .expect("valid config")
    }

    #[test]
    fn index_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<DenseIndex>();
    }

    #[test]
    fn vectors_come_back_bit_exact_for_cosine() {
        let mut ix = index(Metric::Cosine, 10);
        let v = [0.1f32, 0.7, -0.3];
        ix.insert(4, &v).expect("valid");
        assert_eq!(ix.vector(4), Some(v.to_vec()));
    }

    #[test]
    fn replace_keeps_one_entry_and_new_vector() {
        for threshold in [0, 100] {
            let mut ix = index(Metric::Euclidean, threshold);
            ix.insert(1, &[0.0, 0.0, 0.0]).expect("valid");
            ix.insert(2, &[5.0, 5.0, 5.0]).expect("valid");
            ix.insert(1, &[9.0, 9.0, 9.0]).expect("valid");
            assert_eq!(ix.len(), 2);
            let hits = ix
                .search(&[0.0, 0.0, 0.0], 2, None, None, None)
                .expect("valid");
            assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 1]);
        }
    }

    #[test]
    fn graph_is_built_above_threshold_and_dropped_after_compaction_below() {
        let mut ix = index(Metric::Euclidean, 40);
        for id in 0..60u32 {
            ix.insert(id, &[id as f32, 1.0, 2.0]).expect("valid");
        }
        assert!(ix.uses_graph());
        for id in 0..40u32 {
            assert!(ix.remove(id));
        }
        assert!(
            !ix.uses_graph(),
            "compaction left {} live, below 40",
            ix.len()
        );
        assert_eq!(ix.len(), 20);
    }

    #[test]
    fn bad_ef_is_a_typed_error() {
        let ix = index(Metric::Cosine, 0);
        let err = ix
            .search(&[1.0, 0.0, 0.0], 3, Some(0), None, None)
            .unwrap_err();
        assert!(matches!(
            err,
            VectorError::InvalidParameter { name: "ef", .. }
        ));
    }
}
