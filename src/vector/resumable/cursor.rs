//! [`ResumableQuery`]: one query's complete ranking, read a page at a time.

use crate::vector::namespace::{Include, Namespace, Ranking};
use crate::vector::{QueryResult, VectorError};
use parking_lot::RwLock;
use std::sync::{Arc, Weak};

/// A cursor over a query's complete ranking, read a page at a time.
///
/// Started by [`Index::resumable_query`](crate::vector::Index::resumable_query), which also
/// returns the first page; each [`next_page`](Self::next_page) returns the next `k` results,
/// best first, until the ranking is exhausted (then `[]`). The cursor holds no lock between
/// pages and keeps only a weak handle on its namespace, so it never holds a deleted
/// namespace's records in memory. It holds no clock either: [`ResumableQueries`] expires idle
/// cursors at the times its host passes in.
///
/// # What a page sees
/// The start ranks **every** record of the namespace that the query matches (its filter, and
/// for a sparse part at least one shared index), by exact score: the dense part scores every
/// matching row with the engine's kernels (no graph, so nothing is missed), the sparse part is
/// the exact sparse search with `k` = everything, and a hybrid query fuses the two complete
/// lists with RRF or DBSF. Ties break by id ascending, as in every query. The ranking is kept
/// as `(slot, score)` pairs and read in order, so pages have no duplicates and no gaps, and
/// their concatenation is the ranking. Each page shows the ranked records **as they are at
/// page time**:
/// - a record deleted since the start is skipped (also when an id is deleted and inserted
///   again: that is a new record);
/// - a record inserted since the start is not seen (it was not ranked);
/// - a record updated or upserted again since the start keeps its rank and its start score,
///   and shows its current metadata, data and vectors (the filter was applied at the start: an
///   update that makes a ranked record stop matching does not remove it).
///
/// "The same record" is decided by the record's birth: every record carries the namespace's
/// insert count when it was inserted (8 bytes per record, kept by updates and replacing
/// upserts, never reset), and the ranking remembers the count at its start, so a slot reused
/// by a newer record is told apart from the ranked one.
///
/// Deleting or resetting the namespace skips everything still to come. The scores of one
/// cursor are those of the start: IDF weights, and the statistics DBSF normalises with, are
/// taken over the complete lists then. (So a hybrid cursor's fused scores differ from a
/// `/query`'s, which fuses each part's `topK` candidates; dense and sparse scores are the same.)
///
/// # Cost
/// The start is an exact scan of the namespace plus a sort: on 43,000 hybrid records (384-d and
/// BM25) 13–22 ms dense, 8–10 ms sparse, ~50 ms hybrid, where a `/query` of `topK` 100 takes
/// 0.2–0.8 ms (`examples/resumable_bench.rs`), under the namespace's read lock (its writers
/// wait meanwhile, as for any query). Memory per open cursor: 8 bytes per
/// ranked record (`u32` slot + `f32` score) plus ~100 bytes, e.g. 344 KB for 43,000 records;
/// released when the cursor is exhausted, ended or expired. A page costs one namespace read
/// lock and the records it returns.
///
/// # Not durable
/// Cursors live in memory only: they are not commands, are not logged, and a restart forgets
/// them (their ids then answer [`ResumableError::NotFound`]). The ranking holds slots, not
/// records, so an open cursor never keeps a deleted record's data alive.
///
/// # Examples
/// ```
/// use flowvec::vector::{Index, IndexConfig, Metric, Query, Vector};
/// let index = Index::new(IndexConfig::dense(2, Metric::Euclidean))?;
/// let records = (0..5).map(|i| Vector::dense(format!("r{i}"), vec![i as f32, 0.0])).collect();
/// index.upsert("", records)?;
///
/// let (first, mut cursor) = index.resumable_query("", &Query::dense(vec![0.0, 0.0], 2))?;
/// assert_eq!(first.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["r0", "r1"]);
/// index.delete("", flowvec::vector::Delete::ids(["r2"]))?; // skipped from now on
/// index.upsert("", vec![Vector::dense("new", vec![0.0, 0.0])])?; // not ranked: unseen
/// let next = cursor.next_page(10)?;
/// assert_eq!(next.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["r3", "r4"]);
/// assert!(cursor.is_exhausted());
/// assert!(cursor.next_page(10)?.is_empty());
/// # Ok::<(), flowvec::vector::VectorError>(())
/// ```
///
/// [`ResumableQueries`]: crate::vector::ResumableQueries
/// [`ResumableError::NotFound`]: crate::vector::ResumableError::NotFound
pub struct ResumableQuery {
    namespace: Weak<RwLock<Namespace>>,
    ranking: Ranking,
    /// Entries of `ranking` already shown or skipped.
    next: usize,
    include: Include,
    /// The most results one page may ask for.
    max_k: usize,
}

impl ResumableQuery {
    /// A cursor over `ranking` of `namespace`, positioned at its start.
    pub(crate) fn new(
        namespace: &Arc<RwLock<Namespace>>,
        ranking: Ranking,
        include: Include,
        max_k: usize,
    ) -> Self {
        ResumableQuery {
            namespace: Arc::downgrade(namespace),
            ranking,
            next: 0,
            include,
            max_k,
        }
    }

    /// A cursor with nothing to return (a missing namespace, a text query without terms).
    pub(crate) fn empty(include: Include, max_k: usize) -> Self {
        ResumableQuery {
            namespace: Weak::new(),
            ranking: Ranking::default(),
            next: 0,
            include,
            max_k,
        }
    }

    /// The next page from `ns` (locked by the caller): up to `k` results.
    pub(crate) fn page_from(&mut self, ns: &Namespace, k: usize) -> Vec<QueryResult> {
        let rest = &self.ranking.entries[self.next..];
        let (page, used) = ns.page(rest, self.ranking.born_before, k, self.include);
        self.next += used;
        if self.is_exhausted() {
            self.release();
        }
        page
    }

    /// The next `k` results of the ranking, best first: fewer only when the ranking is
    /// exhausted (`[]` from then on). Records deleted since the start are skipped; see
    /// [what a page sees](Self#what-a-page-sees).
    ///
    /// # Errors
    /// [`VectorError::TopKOutOfRange`] for `k` of 0 or above the index's
    /// [`top_k_max`](crate::vector::Limits::top_k_max).
    pub fn next_page(&mut self, k: usize) -> Result<Vec<QueryResult>, VectorError> {
        if k == 0 || k > self.max_k {
            return Err(VectorError::TopKOutOfRange {
                top_k: k,
                max: self.max_k,
            });
        }
        if self.is_exhausted() {
            return Ok(Vec::new());
        }
        let Some(ns) = self.namespace.upgrade() else {
            // The namespace was removed: every ranked record is gone.
            self.release();
            return Ok(Vec::new());
        };
        let guard = ns.read();
        if guard.deleted {
            drop(guard);
            self.release();
            return Ok(Vec::new());
        }
        Ok(self.page_from(&guard, k))
    }

    /// Ranked entries not yet shown or skipped: an upper bound on the results still to come
    /// (records deleted meanwhile are skipped).
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.ranking.entries.len() - self.next
    }

    /// Whether every ranked entry has been shown or skipped.
    #[must_use]
    pub fn is_exhausted(&self) -> bool {
        self.remaining() == 0
    }

    /// Approximate heap bytes held: 8 per ranked entry (`u32` slot, `f32` score) plus the
    /// cursor itself.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.ranking.entries.capacity() * std::mem::size_of::<(u32, f32)>()
    }

    /// Drops the ranking once nothing more can come.
    fn release(&mut self) {
        self.ranking.entries = Vec::new();
        self.next = 0;
    }
}

impl std::fmt::Debug for ResumableQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumableQuery")
            .field("ranked", &self.ranking.entries.len())
            .field("next", &self.next)
            .field("memory_bytes", &self.memory_bytes())
            .finish_non_exhaustive()
    }
}
