//! One namespace: the map from string ids to internal `u32` slots, the records' metadata and
//! data, and the engines holding their vectors.
//!
//! Slots freed by delete are reused by later inserts. Upsert of an existing id keeps its slot
//! and replaces the vectors in the engines (which tombstone or overwrite the old ones), so no
//! query can see a stale vector or a deleted record: the record layer and the engines change
//! together under the namespace's write lock.

use crate::vector::dense::{DenseConfig, DenseIndex, GraphImage};
use crate::vector::filter::Filter;
use crate::vector::filtering::{self, NO_METADATA, Selection};
use crate::vector::fusion::{dbsf, rrf};
use crate::vector::merge_patch::merge_patch;
use crate::vector::sparse::{SparseIndex, Weighting};
use crate::vector::text::term_count;
use crate::vector::validate::{Checked, Validator};
use crate::vector::{
    FetchResult, FusionAlgorithm, IndexConfig, MetadataUpdateMode, QueryResult, SparseVector,
    ValueIndex, VectorError,
};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

mod ranking;

pub(crate) use ranking::Ranking;

/// Which optional fields a read returns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Include {
    pub(crate) metadata: bool,
    pub(crate) vectors: bool,
    pub(crate) data: bool,
}

/// A validated query, ready to run under the read lock.
pub(crate) struct Plan {
    pub(crate) dense: Option<Vec<f32>>,
    pub(crate) sparse: Option<SparseVector>,
    pub(crate) top_k: usize,
    pub(crate) ef: usize,
    pub(crate) weighting: Weighting,
    pub(crate) fusion: FusionAlgorithm,
    pub(crate) filter: Option<Filter>,
    pub(crate) include: Include,
}

/// A validated partial update.
pub(crate) struct Change {
    pub(crate) id: String,
    pub(crate) dense: Option<Vec<f32>>,
    pub(crate) sparse: Option<SparseVector>,
    pub(crate) metadata: Option<Value>,
    pub(crate) mode: MetadataUpdateMode,
    pub(crate) data: Option<String>,
}

struct Slot {
    id: Arc<str>,
    metadata: Option<Value>,
    metadata_bytes: usize,
    data: Option<String>,
    /// The namespace's insert count when this record was inserted (kept when it is replaced
    /// or updated): a resumable query shows only records born before it started.
    born: u64,
}

pub(crate) struct Namespace {
    ids: BTreeMap<Arc<str>, u32>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    dense_config: Option<DenseConfig>,
    dense: Option<DenseIndex>,
    sparse: Option<SparseIndex>,
    /// Every record's top-level metadata values, for filtered search and delete by filter.
    values: ValueIndex,
    /// Term counts of the records' `data`, kept when the index embeds text with BM25.
    text: Option<TextStats>,
    /// Records inserted so far (never reset, not even by `clear`): the next record's `born`.
    births: u64,
    /// Set when the namespace was removed from the index; writers that raced with the removal
    /// look it up again.
    pub(crate) deleted: bool,
}

/// BM25's corpus statistics: how many current records have `data`, and their terms in all
/// ([`term_count`]). Derived from the records alone, so a snapshot load (which re-puts every
/// record) and a log replay rebuild them exactly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TextStats {
    pub(crate) documents: u64,
    pub(crate) terms: u64,
}

impl TextStats {
    fn add(&mut self, data: Option<&str>) {
        if let Some(d) = data {
            self.documents += 1;
            self.terms += term_count(d) as u64;
        }
    }

    fn sub(&mut self, data: Option<&str>) {
        if let Some(d) = data {
            self.documents -= 1;
            self.terms -= term_count(d) as u64;
        }
    }
}

impl Namespace {
    pub(crate) fn new(config: &IndexConfig) -> Result<Self, VectorError> {
        let dense_config = config.dense_config();
        let dense = dense_config.clone().map(DenseIndex::new).transpose()?;
        Ok(Namespace {
            ids: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            dense_config,
            dense,
            sparse: config.kind.has_sparse().then(SparseIndex::new),
            values: ValueIndex::new(),
            text: config.embedders.bm25.is_some().then(TextStats::default),
            births: 0,
            deleted: false,
        })
    }

    /// BM25's corpus statistics (`None` when the index does not embed text with BM25).
    pub(crate) fn text_stats(&self) -> Option<TextStats> {
        self.text
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Inserts or wholly replaces a record.
    pub(crate) fn put(&mut self, record: Checked) -> Result<(), VectorError> {
        let existing = self.ids.get(record.id.as_str()).copied();
        let slot = match existing {
            Some(slot) => slot,
            None => match self.free.last() {
                Some(&slot) => slot,
                None => {
                    u32::try_from(self.slots.len()).map_err(|_| VectorError::InvalidParameter {
                        name: "record count",
                        value: self.slots.len().to_string(),
                        expected: "fewer than 2^32 records per namespace",
                    })?
                }
            },
        };
        if let (Some(engine), Some(v)) = (self.dense.as_mut(), record.dense.as_ref()) {
            engine.insert(slot, v)?;
        }
        if let (Some(engine), Some(s)) = (self.sparse.as_mut(), record.sparse.as_ref()) {
            engine.insert(slot, &s.indices, &s.values);
        }
        if let Some(Some(Slot {
            metadata: Some(m), ..
        })) = existing.and_then(|s| self.slots.get(s as usize))
        {
            self.values.remove(slot, m);
        }
        if let Some(m) = &record.metadata {
            self.values.insert(slot, m);
        }
        let id: Arc<str> = match existing {
            Some(_) => self
                .slot(slot)
                .map_or_else(|| Arc::from(record.id.as_str()), |s| s.id.clone()),
            None => {
                if self.free.last() == Some(&slot) {
                    self.free.pop();
                } else {
                    self.slots.push(None);
                }
                let id: Arc<str> = Arc::from(record.id.as_str());
                self.ids.insert(id.clone(), slot);
                id
            }
        };
        if let Some(stats) = self.text.as_mut() {
            if existing.is_some() {
                stats.sub(
                    self.slots[slot as usize]
                        .as_ref()
                        .and_then(|s| s.data.as_deref()),
                );
            }
            stats.add(record.data.as_deref());
        }
        let born = match existing.and_then(|s| self.slot(s)) {
            Some(old) => old.born,
            None => {
                self.births += 1;
                self.births - 1
            }
        };
        self.slots[slot as usize] = Some(Slot {
            id,
            metadata: record.metadata,
            metadata_bytes: record.metadata_bytes,
            data: record.data,
            born,
        });
        Ok(())
    }

    /// Applies a partial update; `false` when the id is absent.
    pub(crate) fn update(
        &mut self,
        change: Change,
        validator: &Validator<'_>,
    ) -> Result<bool, VectorError> {
        let Some(&slot) = self.ids.get(change.id.as_str()) else {
            return Ok(false);
        };
        let Some(old) = self.slot(slot) else {
            return Ok(false);
        };
        let metadata = match (change.metadata, change.mode) {
            (None, _) => None,
            (Some(m), MetadataUpdateMode::Overwrite) => {
                let size = validator.metadata_size(&m)?;
                Some((m, size))
            }
            (Some(patch), MetadataUpdateMode::Patch) => {
                let mut merged = old.metadata.clone().unwrap_or(Value::Null);
                merge_patch(&mut merged, &patch);
                let size = validator.metadata_size(&merged)?;
                Some((merged, size))
            }
        };
        if let (Some(engine), Some(v)) = (self.dense.as_mut(), change.dense.as_ref()) {
            engine.insert(slot, v)?;
        }
        if let (Some(engine), Some(s)) = (self.sparse.as_mut(), change.sparse.as_ref()) {
            engine.insert(slot, &s.indices, &s.values);
        }
        if let Some(Some(record)) = self.slots.get_mut(slot as usize) {
            if let Some((m, size)) = metadata {
                if let Some(old) = &record.metadata {
                    self.values.remove(slot, old);
                }
                self.values.insert(slot, &m);
                record.metadata = Some(m);
                record.metadata_bytes = size;
            }
            if let Some(d) = change.data {
                if let Some(stats) = self.text.as_mut() {
                    stats.sub(record.data.as_deref());
                    stats.add(Some(&d));
                }
                record.data = Some(d);
            }
        }
        Ok(true)
    }

    /// Removes a record; whether it was there.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        let Some(slot) = self.ids.remove(id) else {
            return false;
        };
        if let Some(engine) = self.dense.as_mut() {
            engine.remove(slot);
        }
        if let Some(engine) = self.sparse.as_mut() {
            engine.remove(slot);
        }
        if let Some(Some(Slot {
            metadata: Some(m), ..
        })) = self.slots.get(slot as usize)
        {
            self.values.remove(slot, m);
        }
        if let (Some(stats), Some(Some(old))) = (self.text.as_mut(), self.slots.get(slot as usize))
        {
            stats.sub(old.data.as_deref());
        }
        self.slots[slot as usize] = None;
        self.free.push(slot);
        true
    }

    /// Removes every record whose id starts with `prefix`; how many.
    pub(crate) fn remove_prefix(&mut self, prefix: &str) -> usize {
        let doomed: Vec<Arc<str>> = self
            .prefixed(prefix, None)
            .map(|(id, _)| id.clone())
            .collect();
        doomed.iter().filter(|id| self.remove(id)).count()
    }

    /// Removes every record whose metadata matches `filter`; how many.
    /// Candidates come from the value index when it can name them (each verified with
    /// [`Filter::matches`]), else every record is tested.
    pub(crate) fn remove_matching(&mut self, filter: &Filter) -> usize {
        let matching = |s: &&Slot| filter.matches(s.metadata.as_ref().unwrap_or(&NO_METADATA));
        let doomed: Vec<Arc<str>> = match self.values.candidates(filter) {
            Some(candidates) => candidates
                .into_iter()
                .filter_map(|slot| self.slot(slot))
                .filter(matching)
                .map(|s| s.id.clone())
                .collect(),
            None => self
                .slots
                .iter()
                .flatten()
                .filter(matching)
                .map(|s| s.id.clone())
                .collect(),
        };
        doomed.iter().filter(|id| self.remove(id)).count()
    }

    /// Drops every record; the namespace stays.
    pub(crate) fn clear(&mut self) {
        let fresh = self.dense_config.clone().map(DenseIndex::new);
        match fresh {
            Some(Ok(engine)) => self.dense = Some(engine),
            // The configuration built an engine before, so this is not expected; fall back to
            // removing each vector.
            Some(Err(_)) => {
                if let Some(engine) = self.dense.as_mut() {
                    for slot in self.ids.values() {
                        engine.remove(*slot);
                    }
                }
            }
            None => {}
        }
        if self.sparse.is_some() {
            self.sparse = Some(SparseIndex::new());
        }
        self.ids.clear();
        self.slots.clear();
        self.free.clear();
        self.values.clear();
        if let Some(stats) = self.text.as_mut() {
            *stats = TextStats::default();
        }
    }

    fn slot(&self, slot: u32) -> Option<&Slot> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    fn id_of(&self, slot: u32) -> &str {
        self.slot(slot).map_or("", |s| &s.id)
    }

    fn metadata_of(&self, slot: u32) -> &Value {
        self.slot(slot)
            .and_then(|s| s.metadata.as_ref())
            .unwrap_or(&NO_METADATA)
    }

    /// `(id, slot)` pairs in id order from `start` (inclusive) whose id starts with `prefix`.
    pub(crate) fn prefixed<'a>(
        &'a self,
        prefix: &'a str,
        start: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Arc<str>, u32)> + 'a {
        let from = match start {
            Some(s) if s > prefix => s,
            _ => prefix,
        };
        self.ids
            .range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .take_while(move |(id, _)| id.starts_with(prefix))
            .map(|(id, slot)| (id, *slot))
    }

    /// The record at `id`, if present.
    pub(crate) fn fetch_id(&self, id: &str, include: Include) -> Option<FetchResult> {
        self.ids.get(id).map(|&slot| self.fetch_slot(slot, include))
    }

    /// The `data` of the record at `id`, if the record exists and has some.
    pub(crate) fn data_of(&self, id: &str) -> Option<&str> {
        let slot = *self.ids.get(id)?;
        self.slot(slot)?.data.as_deref()
    }

    pub(crate) fn fetch_slot(&self, slot: u32, include: Include) -> FetchResult {
        let record = self.slot(slot);
        let (vector, sparse_vector) = self.vectors(slot, include.vectors);
        FetchResult {
            id: self.id_of(slot).to_owned(),
            vector,
            sparse_vector,
            metadata: record
                .filter(|_| include.metadata)
                .and_then(|r| r.metadata.clone()),
            data: record.filter(|_| include.data).and_then(|r| r.data.clone()),
        }
    }

    fn vectors(&self, slot: u32, wanted: bool) -> (Option<Vec<f32>>, Option<SparseVector>) {
        if !wanted {
            return (None, None);
        }
        let dense = self.dense.as_ref().and_then(|e| e.vector(slot));
        let sparse = self
            .sparse
            .as_ref()
            .and_then(|e| e.vector(slot))
            .map(|(indices, values)| SparseVector { indices, values });
        (dense, sparse)
    }

    /// Runs a validated query: each engine the plan names, for `top_k` candidates among the
    /// records the filter allows, ties by string id; both lists fused when there are two.
    pub(crate) fn search(&self, plan: &Plan) -> Result<Vec<QueryResult>, VectorError> {
        let tie = |a: u32, b: u32| -> Ordering { self.id_of(a).cmp(self.id_of(b)) };
        let selection = filtering::select(
            plan.filter.as_ref(),
            &self.values,
            self.len(),
            self.slots.len(),
            |slot| {
                self.slot(slot)
                    .map(|s| s.metadata.as_ref().unwrap_or(&NO_METADATA))
            },
        );
        let by_filter = |slot: u32| {
            plan.filter
                .as_ref()
                .is_none_or(|f| f.matches(self.metadata_of(slot)))
        };
        let by_bits = |slot: u32| match &selection {
            Selection::Matches { bits, .. } => filtering::bit(bits, slot),
            _ => true,
        };
        let allow: Option<&dyn Fn(u32) -> bool> = match &selection {
            Selection::All => None,
            Selection::Matches { .. } => Some(&by_bits),
            Selection::Predicate(_) => Some(&by_filter),
        };
        let dense_hits = match (&plan.dense, &self.dense) {
            (Some(q), Some(engine)) => {
                let share = match &selection {
                    // Known matches (at most COLLECT_SHARE of the records) are scanned
                    // exactly below: post-filtering a correlated filter comes back short.
                    Selection::All | Selection::Matches { .. } => None,
                    Selection::Predicate(f) => Some(self.sampled_share(f)),
                };
                let wide = share.and_then(|s| filtering::post_filter_k(plan.top_k, s));
                let mut hits = Vec::new();
                if let (Some(wide), Some(allow), true) = (wide, allow, engine.uses_graph()) {
                    // A broad filter: an unfiltered graph search for `wide` results keeps
                    // the graph's recall; the first `top_k` that match are the answer. A
                    // filter correlated with the query's neighbourhood may leave too few:
                    // one more try 8 times wider.
                    for wide in [wide, (wide * 8).min(filtering::POST_FILTER_RETRY_K)] {
                        hits = engine.search(q, wide, Some(plan.ef.max(wide)), None, Some(&tie))?;
                        hits.retain(|&(slot, _)| allow(slot));
                        if hits.len() >= plan.top_k {
                            hits.truncate(plan.top_k);
                            break;
                        }
                    }
                }
                if hits.len() < plan.top_k {
                    hits = match &selection {
                        // More matches than the engine scans exactly, fewer than it takes
                        // to post-filter: its filtered graph search is slow and loses recall
                        // there (minilm-text 9.7%: 87 QPS, recall 0.983), the exact scan over
                        // the known matches is not.
                        Selection::Matches { bits, count }
                            if engine.uses_graph() && *count > engine.config().exact_threshold =>
                        {
                            let matching = filtering::set_bits(bits);
                            filtering::exact_dense(engine, q, plan.top_k, matching, &tie)
                        }
                        _ => engine.search(q, plan.top_k, Some(plan.ef), allow, Some(&tie))?,
                    };
                }
                Some(self.never_short(engine, q, plan.top_k, hits, &selection, &tie))
            }
            _ => None,
        };
        let sparse_hits = match (&plan.sparse, &self.sparse) {
            (Some(q), Some(engine)) => Some(engine.search(
                &q.indices,
                &q.values,
                plan.top_k,
                plan.weighting,
                allow,
                Some(&tie),
            )),
            _ => None,
        };
        let hits: Vec<(u32, f32)> = match (dense_hits, sparse_hits) {
            (Some(d), Some(s)) => {
                let key = |&(slot, score): &(u32, f32)| ((self.id_of(slot), slot), score);
                let d: Vec<_> = d.iter().map(key).collect();
                let s: Vec<_> = s.iter().map(key).collect();
                let lists = [d.as_slice(), s.as_slice()];
                let fused = match plan.fusion {
                    FusionAlgorithm::Rrf => rrf(&lists, plan.top_k),
                    FusionAlgorithm::Dbsf => dbsf(&lists, plan.top_k),
                };
                fused
                    .into_iter()
                    .map(|((_, slot), score)| (slot, score))
                    .collect()
            }
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => Vec::new(),
        };
        Ok(hits
            .into_iter()
            .map(|(slot, score)| {
                let r = self.fetch_slot(slot, plan.include);
                QueryResult {
                    id: r.id,
                    score,
                    vector: r.vector,
                    sparse_vector: r.sparse_vector,
                    metadata: r.metadata,
                    data: r.data,
                }
            })
            .collect())
    }

    /// The share of live records `filter` matches in an evenly spaced sample of
    /// [`filtering::SAMPLE`] slots (1.0 for an empty namespace).
    fn sampled_share(&self, filter: &Filter) -> f64 {
        let step = (self.slots.len() / filtering::SAMPLE).max(1);
        let (mut seen, mut hits) = (0usize, 0usize);
        for slot in self.slots.iter().step_by(step).flatten() {
            seen += 1;
            hits += usize::from(filter.matches(slot.metadata.as_ref().unwrap_or(&NO_METADATA)));
        }
        if seen == 0 {
            1.0
        } else {
            hits as f64 / seen as f64
        }
    }

    /// `hits` when it holds `min(top_k, matching records)` results (the engines' promise),
    /// else the exact filtered top-k over the matching slots: a filtered query is never short.
    fn never_short(
        &self,
        engine: &DenseIndex,
        query: &[f32],
        top_k: usize,
        hits: Vec<(u32, f32)>,
        selection: &Selection<'_>,
        tie: &dyn Fn(u32, u32) -> Ordering,
    ) -> Vec<(u32, f32)> {
        if hits.len() >= top_k {
            return hits;
        }
        let live = self.ids.values().copied();
        match selection {
            Selection::All if hits.len() < engine.len().min(top_k) => {
                filtering::exact_dense(engine, query, top_k, live, tie)
            }
            Selection::Matches { bits, count } if hits.len() < (*count).min(top_k) => {
                let matching = live.filter(|&s| filtering::bit(bits, s));
                filtering::exact_dense(engine, query, top_k, matching, tie)
            }
            Selection::Predicate(filter) => {
                let matching: Vec<u32> = live
                    .filter(|&s| filter.matches(self.metadata_of(s)))
                    .collect();
                if hits.len() < matching.len().min(top_k) {
                    filtering::exact_dense(engine, query, top_k, matching.into_iter(), tie)
                } else {
                    hits
                }
            }
            _ => hits,
        }
    }

    /// Approximate heap bytes: engines plus records.
    /// The dense graph as a [`GraphImage`] whose nodes are the records in id order (the order
    /// a snapshot writes them), or `None` when there is no graph to save (see
    /// [`DenseIndex::graph_image`]).
    pub(crate) fn graph_image(&self) -> Option<GraphImage> {
        let engine = self.dense.as_ref()?;
        let slots: Vec<u32> = self.ids.values().copied().collect();
        engine.graph_image(&slots)
    }

    /// Starts a snapshot load into this (empty) namespace: the dense graph is not built while
    /// records arrive.
    pub(crate) fn begin_bulk_load(&mut self) {
        if let Some(engine) = self.dense.as_mut() {
            engine.begin_bulk_load();
        }
    }

    /// Ends a snapshot load: adopts `image` (nodes = records in id order) as the dense graph,
    /// or builds the graph when there is no image.
    ///
    /// # Errors
    /// What is wrong with the image; the namespace is then left without a graph.
    pub(crate) fn finish_bulk_load(&mut self, image: Option<&GraphImage>) -> Result<(), String> {
        let Some(engine) = self.dense.as_mut() else {
            return match image {
                Some(_) => Err("saved graph links, but the index has no dense part".into()),
                None => Ok(()),
            };
        };
        let slots: Vec<u32> = self.ids.values().copied().collect();
        engine.finish_bulk_load(image.map(|image| (image, slots.as_slice())))
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        let engines = self.dense.as_ref().map_or(0, DenseIndex::memory_bytes)
            + self.sparse.as_ref().map_or(0, SparseIndex::memory_bytes)
            + self.values.memory_bytes();
        let records: usize = self
            .slots
            .iter()
            .flatten()
            .map(|s| {
                2 * s.id.len() + s.metadata_bytes + s.data.as_ref().map_or(0, String::len) + 96
            })
            .sum();
        engines + records + self.slots.capacity() * std::mem::size_of::<Option<Slot>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::{Metric, Vector};

    fn checked(config: &IndexConfig, id: &str, x: f32) -> Checked {
        let rules = DenseIndex::new(DenseConfig::new(config.dimension, config.metric)).unwrap();
        let v = Validator {
            config,
            dense: Some(&rules),
        };
        v.record(Vector::dense(id, vec![x, 1.0])).unwrap()
    }

    #[test]
    fn freed_slots_are_reused_and_replace_keeps_the_slot() {
        let config = IndexConfig::dense(2, Metric::Euclidean);
        let mut ns = Namespace::new(&config).unwrap();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            ns.put(checked(&config, id, i as f32)).unwrap();
        }
        assert_eq!(ns.slots.len(), 3);
        ns.put(checked(&config, "b", 9.0)).unwrap();
        assert_eq!(
            (ns.slots.len(), ns.ids["b"]),
            (3, 1),
            "replace keeps b's slot"
        );
        assert!(ns.remove("a") && ns.remove("c"));
        assert!(!ns.remove("a"));
        ns.put(checked(&config, "d", 4.0)).unwrap();
        ns.put(checked(&config, "e", 5.0)).unwrap();
        ns.put(checked(&config, "f", 6.0)).unwrap();
        assert_eq!(ns.slots.len(), 4, "two freed slots reused, one new");
        let mut slots: Vec<u32> = ns.ids.values().copied().collect();
        slots.sort_unstable();
        assert_eq!(slots, vec![0, 1, 2, 3]);
        for (id, &slot) in &ns.ids {
            assert_eq!(ns.id_of(slot), &**id);
            assert!(ns.dense.as_ref().unwrap().contains(slot));
        }
        assert_eq!(ns.dense.as_ref().unwrap().len(), 4);
    }

    #[test]
    fn clear_empties_records_and_engines() {
        let config = IndexConfig::hybrid(2, Metric::Cosine);
        let mut ns = Namespace::new(&config).unwrap();
        let rules = DenseIndex::new(DenseConfig::new(2, Metric::Cosine)).unwrap();
        let v = Validator {
            config: &config,
            dense: Some(&rules),
        };
        let mut rec = Vector::dense("a", vec![1.0, 0.0]);
        rec.sparse_vector = Some(SparseVector::new(vec![1], vec![1.0]));
        ns.put(v.record(rec).unwrap()).unwrap();
        ns.clear();
        assert_eq!(ns.len(), 0);
        assert!(ns.dense.as_ref().unwrap().is_empty());
        assert!(ns.sparse.as_ref().unwrap().is_empty());
        assert!(ns.slots.is_empty() && ns.free.is_empty());
    }
}
