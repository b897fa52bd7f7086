//! The sparse engine: one namespace's sparse vectors and exact top-k inner-product search
//! (DESIGN §2.2).
//!
//! # Layout
//! - An inverted index `term -> PostingList` (ids ascending, values beside them, the list's
//!   value bounds), in `postings.rs`.
//! - A forward index `id -> sorted term indices`, used to delete and replace (a record's
//!   postings are found through its terms) and to rebuild [`SparseIndex::vector`] (values are
//!   read back from the postings, so each value is stored once).
//! - Document frequencies are posting-list lengths and `N` is the forward index's size: the IDF
//!   statistics are current after every insert, replace and remove by construction.
//!
//! # Updates stay exact
//! Removal is eager: the id is cut out of each of its posting lists (binary search and a shift),
//! and a list's value bounds are recomputed when the removed value set them. There are no
//! tombstones, so no query can see a stale posting and bounds are never loose.
//!
//! # Search
//! Window-at-a-time MaxScore with a cost gate (`maxscore.rs`). Measured on minilm-text (43k
//! BM25 passages, 1000 queries of ~18 terms, top-10, 2 shared cores, p50 per query):
//! - document-at-a-time MaxScore (a cursor per term, min-scan per candidate): 668 µs plain,
//!   338 µs IDF;
//! - window-at-a-time MaxScore (term-at-a-time into a 4096-id accumulator, then bounding):
//!   ~130 µs / ~100 µs;
//! - the same windows with no list ever skipped: ~54 µs / ~54 µs; most query terms have
//!   similar bounds and short lists, so bounding and probing cost more than the walking saved;
//! - gated (lists are skipped only once they hold half the query's postings): 51 µs / 69 µs,
//!   and on generated Zipf data with long lists (50k docs, `benches/sparse.rs`) about twice as
//!   fast as never skipping;
//! - now: 16,384-id windows (128 KiB of `f64`, in L2), the gate at three quarters, buffers
//!   reused across searches (a pool, as the dense graph's), and for queries whose
//!   contributions are all `>= 0` a scatter that notes only the ids crossing the top-k's entry
//!   cut instead of marking every touched id in a bitmap: 27,575 / 25,976 QPS against 20,882 /
//!   16,187 before (1.32x / 1.60x, one run, `examples/sparse_bench.rs`; the CSR product of
//!   scipy measured 1,913 / 1,923 in the same run).
//!
//! WAND and block-max WAND were not built: they are document-at-a-time like the variant that
//! measured 5× slower here, and block maxima would need maintaining under mid-list inserts and
//! deletes.
//!
//! # Scores
//! `score(d) = Σ_t w_t · v_{d,t}` over the query terms `t` that `d` holds, where `w_t` is the
//! query value (times [`idf`] under [`Weighting::Idf`]). Products and the sum are computed in
//! `f64`, **in query-term order** (the order of `indices` as passed), and rounded to `f32` once.
//! A brute-force scan that sums the same way gets bit-identical scores, whatever pruning did.

mod idf;
mod maxscore;
mod postings;

pub use idf::idf;
pub use maxscore::SearchStats;

use crate::vector::TieBreak;
use idf::idf_f64;
use maxscore::{QueryTerm, Scratch};
use parking_lot::Mutex;
use postings::PostingList;
use std::collections::HashMap;
use std::mem::size_of;

/// How query values are weighted before scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weighting {
    /// Plain inner product.
    #[default]
    None,
    /// Each query value multiplied by [`idf`] of its index, with the index's current `N`
    /// ([`SparseIndex::len`]) and `n_t` ([`SparseIndex::doc_freq`]).
    Idf,
}

/// One namespace's sparse vectors, addressed by internal `u32` ids chosen by the caller, with
/// exact top-k inner-product search (see the [module docs](self)).
///
/// Vectors are validated by the caller (DESIGN §2.1): indices sorted ascending and unique,
/// `values` of the same length, finite, non-empty.
///
/// # Examples
/// ```
/// use flowvec::vector::sparse::{SparseIndex, Weighting};
/// let mut index = SparseIndex::new();
/// index.insert(1, &[3, 7], &[0.5, 1.0]);
/// index.insert(2, &[7, 9], &[2.0, 1.0]);
/// index.insert(3, &[4], &[9.0]); // shares nothing with the query: not a candidate
/// let hits = index.search(&[3, 7], &[1.0, 1.0], 10, Weighting::None, None, None);
/// assert_eq!(hits, vec![(2, 2.0), (1, 1.5)]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct SparseIndex {
    forward: HashMap<u32, Box<[i32]>>,
    terms: HashMap<i32, PostingList>,
    postings: usize,
    scratch: ScratchPool,
}

/// Search buffers, one per search running at once (after the dense graph's pool): a warm
/// search allocates only its result. A clone starts with an empty pool.
#[derive(Default)]
struct ScratchPool(Mutex<Vec<Scratch>>);

impl ScratchPool {
    fn take(&self) -> Scratch {
        self.0.lock().pop().unwrap_or_default()
    }

    /// Returns buffers after a search that finished (one that panicked in a caller's closure
    /// drops its buffers instead, as they may not be clean).
    fn put(&self, scratch: Scratch) {
        self.0.lock().push(scratch);
    }
}

impl Clone for ScratchPool {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for ScratchPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScratchPool")
    }
}

impl SparseIndex {
    /// An empty index.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `id`'s vector, replacing the one it had.
    ///
    /// `indices` sorted ascending and unique, `values` of the same length (the caller
    /// validates; in debug builds a violation panics).
    pub fn insert(&mut self, id: u32, indices: &[i32], values: &[f32]) {
        debug_assert_eq!(indices.len(), values.len(), "indices and values lengths");
        debug_assert!(
            indices.windows(2).all(|w| w[0] < w[1]),
            "indices sorted and unique"
        );
        self.remove(id);
        for (&t, &v) in indices.iter().zip(values) {
            self.terms
                .entry(t)
                .or_insert_with(PostingList::new)
                .insert(id, v);
        }
        self.postings += indices.len().min(values.len());
        self.forward.insert(id, indices.into());
    }

    /// Removes `id`; returns whether it was present.
    pub fn remove(&mut self, id: u32) -> bool {
        let Some(indices) = self.forward.remove(&id) else {
            return false;
        };
        for t in &indices {
            let list = self
                .terms
                .get_mut(t)
                .expect("every term of a forward entry has a posting list");
            list.remove(id);
            if list.is_empty() {
                self.terms.remove(t);
            }
        }
        self.postings -= indices.len();
        true
    }

    /// `id`'s vector, indices ascending.
    #[must_use]
    pub fn vector(&self, id: u32) -> Option<(Vec<i32>, Vec<f32>)> {
        let indices = self.forward.get(&id)?;
        let values = indices
            .iter()
            .map(|t| {
                self.terms
                    .get(t)
                    .and_then(|list| list.get(id))
                    .expect("every term of a forward entry lists its id")
            })
            .collect();
        Some((indices.to_vec(), values))
    }

    /// Number of vectors held (`N` of the IDF formula).
    #[must_use]
    pub fn len(&self) -> usize {
        self.forward.len()
    }

    /// Whether no vector is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.forward.is_empty()
    }

    /// How many vectors hold index `term` (`n_t` of the IDF formula).
    #[must_use]
    pub fn doc_freq(&self, term: i32) -> u64 {
        self.terms.get(&term).map_or(0, |l| l.len() as u64)
    }

    /// Total number of postings (non-zero entries over all vectors).
    #[must_use]
    pub fn postings(&self) -> usize {
        self.postings
    }

    /// The `k` best vectors sharing at least one index with the query, by inner product, best
    /// first, ties by `tie` (internal id ascending when `None`); only ids `allow` accepts.
    ///
    /// Exact: the same result as scoring every vector (see the [module docs](self) for how
    /// scores are summed). Query entries whose index no vector holds contribute nothing.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::sparse::{SparseIndex, Weighting};
    /// let mut index = SparseIndex::new();
    /// for id in 0..4 {
    ///     index.insert(id, &[1, 2], &[1.0, 1.0]);
    /// }
    /// // All tie at 2.0: ids ascending, cut to k, odd ids filtered out.
    /// let even = |id: u32| id % 2 == 0;
    /// let hits = index.search(&[1, 2], &[1.0, 1.0], 1, Weighting::None, Some(&even), None);
    /// assert_eq!(hits, vec![(0, 2.0)]);
    /// ```
    #[must_use]
    pub fn search(
        &self,
        indices: &[i32],
        values: &[f32],
        k: usize,
        weighting: Weighting,
        allow: Option<&dyn Fn(u32) -> bool>,
        tie: Option<TieBreak<'_>>,
    ) -> Vec<(u32, f32)> {
        self.search_impl::<false>(indices, values, k, weighting, allow, tie)
            .0
    }

    /// [`SparseIndex::search`], also reporting how much work the pruning saved.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::sparse::{SparseIndex, Weighting};
    /// let mut index = SparseIndex::new();
    /// for id in 0..1000 {
    ///     index.insert(id, &[1], &[1.0 + id as f32]);
    /// }
    /// index.insert(5000, &[2], &[1.0]);
    /// let (hits, stats) = index.search_with_stats(&[1], &[1.0], 1, Weighting::None, None, None);
    /// assert_eq!(hits, vec![(999, 1000.0)]);
    /// assert_eq!((stats.terms, stats.postings), (1, 1000));
    /// ```
    #[must_use]
    pub fn search_with_stats(
        &self,
        indices: &[i32],
        values: &[f32],
        k: usize,
        weighting: Weighting,
        allow: Option<&dyn Fn(u32) -> bool>,
        tie: Option<TieBreak<'_>>,
    ) -> (Vec<(u32, f32)>, SearchStats) {
        self.search_impl::<true>(indices, values, k, weighting, allow, tie)
    }

    fn search_impl<const STATS: bool>(
        &self,
        indices: &[i32],
        values: &[f32],
        k: usize,
        weighting: Weighting,
        allow: Option<&dyn Fn(u32) -> bool>,
        tie: Option<TieBreak<'_>>,
    ) -> (Vec<(u32, f32)>, SearchStats) {
        let n_docs = self.forward.len() as u64;
        let terms: Vec<QueryTerm<'_>> = indices
            .iter()
            .zip(values)
            .filter_map(|(t, &v)| {
                let postings = self.terms.get(t)?;
                let weight = match weighting {
                    Weighting::None => f64::from(v),
                    Weighting::Idf => f64::from(v) * idf_f64(n_docs, postings.len() as u64),
                };
                Some(QueryTerm { weight, postings })
            })
            .collect();
        let mut scratch = self.scratch.take();
        let out = maxscore::search::<STATS>(&terms, k, allow, tie, &mut scratch);
        self.scratch.put(scratch);
        out
    }

    /// Releases spare capacity of the posting lists (after a bulk load or heavy deletes).
    pub fn shrink_to_fit(&mut self) {
        for list in self.terms.values_mut() {
            list.shrink_to_fit();
        }
        self.terms.shrink_to_fit();
        self.forward.shrink_to_fit();
    }

    /// Heap bytes held: posting arrays (by capacity), forward indices, and both hash tables
    /// (buckets of key and value plus one control byte each).
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::sparse::SparseIndex;
    /// let mut index = SparseIndex::new();
    /// index.insert(0, &[1, 2, 3], &[1.0, 1.0, 1.0]);
    /// assert!(index.memory_bytes() >= 3 * 12); // id + value per posting, term per forward entry
    /// ```
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let postings: usize = self.terms.values().map(PostingList::heap_bytes).sum();
        let forward: usize = self
            .forward
            .values()
            .map(|ix| ix.len() * size_of::<i32>())
            .sum();
        let term_table = self.terms.capacity() * (size_of::<(i32, PostingList)>() + 1);
        let forward_table = self.forward.capacity() * (size_of::<(u32, Box<[i32]>)>() + 1);
        postings + forward + term_table + forward_table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_and_remove_keep_doc_freq_and_vectors() {
        let mut index = SparseIndex::new();
        index.insert(7, &[1, 2], &[0.5, -1.0]);
        index.insert(8, &[2, 3], &[1.0, 2.0]);
        assert_eq!(
            (index.doc_freq(1), index.doc_freq(2), index.doc_freq(3)),
            (1, 2, 1)
        );
        index.insert(7, &[3], &[4.0]);
        assert_eq!(
            (index.doc_freq(1), index.doc_freq(2), index.doc_freq(3)),
            (0, 1, 2)
        );
        assert_eq!(index.vector(7), Some((vec![3], vec![4.0])));
        assert_eq!(index.postings(), 3);
        assert!(index.remove(8));
        assert!(!index.remove(8));
        assert_eq!(index.vector(8), None);
        assert_eq!(
            (index.len(), index.doc_freq(2), index.doc_freq(3)),
            (1, 0, 1)
        );
        assert!(index.remove(7));
        assert!(index.is_empty());
        assert_eq!((index.terms.len(), index.postings()), (0, 0));
    }

    #[test]
    fn negative_values_are_scored_not_pruned_away() {
        let mut index = SparseIndex::new();
        index.insert(1, &[1], &[-2.0]);
        index.insert(2, &[1, 2], &[-1.0, 0.5]);
        index.insert(3, &[2], &[-3.0]);
        let hits = index.search(&[1, 2], &[1.0, -1.0], 3, Weighting::None, None, None);
        // 1: -2.0; 2: -1.0 - 0.5 = -1.5; 3: 3.0
        assert_eq!(hits, vec![(3, 3.0), (2, -1.5), (1, -2.0)]);
    }

    #[test]
    fn idf_weighting_uses_current_statistics() {
        let mut index = SparseIndex::new();
        index.insert(1, &[1], &[1.0]);
        index.insert(2, &[1, 2], &[1.0, 1.0]);
        index.insert(3, &[3], &[1.0]);
        let w1 = idf_f64(3, 2);
        let w2 = idf_f64(3, 1);
        let hits = index.search(&[1, 2], &[1.0, 1.0], 5, Weighting::Idf, None, None);
        assert_eq!(hits, vec![(2, (w1 + w2) as f32), (1, w1 as f32)]);
        index.remove(3);
        let hits = index.search(&[1], &[2.0], 5, Weighting::Idf, None, None);
        let w = 2.0 * idf_f64(2, 2);
        assert_eq!(hits, vec![(1, w as f32), (2, w as f32)]);
    }

    #[test]
    fn custom_tie_break_orders_equal_scores() {
        let mut index = SparseIndex::new();
        for id in 0..5 {
            index.insert(id, &[0], &[1.0]);
        }
        let reverse = |a: u32, b: u32| b.cmp(&a);
        let hits = index.search(&[0], &[1.0], 2, Weighting::None, None, Some(&reverse));
        assert_eq!(hits, vec![(4, 1.0), (3, 1.0)]);
    }

    #[test]
    fn k_zero_and_unknown_terms_give_nothing() {
        let mut index = SparseIndex::new();
        index.insert(0, &[0], &[1.0]);
        assert!(
            index
                .search(&[0], &[1.0], 0, Weighting::None, None, None)
                .is_empty()
        );
        assert!(
            index
                .search(&[9], &[1.0], 3, Weighting::Idf, None, None)
                .is_empty()
        );
    }
}
