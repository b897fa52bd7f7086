//! [`Index`]: namespaces of records with the reference service's operations (DESIGN §2.1–2.3).
//!
//! Locking: a `parking_lot::RwLock` over the namespace map (held only to look a namespace up,
//! create or remove one) and one `RwLock` per namespace. Writers take their namespace's write
//! lock; queries, fetches and ranges take read locks, so they run in parallel with each other
//! and with writers on other namespaces. All input is validated before any lock is taken.

use crate::vector::dense::DenseIndex;
use crate::vector::filtering;
use crate::vector::namespace::{Change, Include, Namespace, Plan};
use crate::vector::ops::{DenseIndexInfo, NamespaceInfo, SparseIndexInfo};
use crate::vector::sparse::Weighting;
use crate::vector::validate::{Validator, check_depth, context};
use crate::vector::{
    Delete, Fetch, FetchResult, IndexConfig, IndexInfo, Metric, Query, QueryMode, QueryResult,
    Range, RangeResult, Update, Vector, VectorError, WeightingStrategy,
};
mod resumable;
mod text;

pub(crate) use text::DENSE_EMBEDDER_HINT;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The default namespace, which always exists.
pub const DEFAULT_NAMESPACE: &str = "";

/// A vector index: one [`IndexKind`](crate::vector::IndexKind), many namespaces of records.
///
/// Every method takes `&self`; share it across threads with an `Arc`. A missing namespace
/// reads as empty (query `[]`, fetch `None`s, range an empty last page, delete 0, update
/// `false`), as the reference service answers; it is created by its first upsert and removed
/// only by [`Index::delete_namespace`] or [`Index::reset_all`].
///
/// [`Index::save`] and [`Index::load`] write and read a checksummed binary snapshot of the
/// whole index (configuration, namespaces, records); load rebuilds the search structures.
///
/// # Memory
/// Heap per record, measured with a counting allocator by `examples/persistence.rs` on 43,000
/// hybrid records (384-d, ~18 sparse entries, ~180-byte data): about 3.4 KB in all, of which
/// the dense engine ~1.95 KB (1,536 bytes of floats, plus norms and the HNSW links), the
/// sparse engine ~23.5 bytes per posting (8 bytes of index and value, plus the inverted
/// index's bookkeeping), and the record layer
/// ~1 KB (id map and slot, metadata as a `serde_json::Value`, data; ~210 bytes of that is the
/// text itself). Deleted records free their record-layer memory at once; the dense engine
/// reclaims tombstoned vectors when it compacts.
///
/// # Examples
/// ```
/// use flowvec::vector::{Index, IndexConfig, Metric, Query, Vector};
/// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
/// index.upsert("", vec![Vector::dense("a", vec![1.0, 0.0]), Vector::dense("b", vec![0.0, 1.0])])?;
/// let hits = index.query("", &Query::dense(vec![0.9, 0.1], 1))?;
/// assert_eq!(hits[0].id, "a");
/// # Ok::<(), flowvec::vector::VectorError>(())
/// ```
pub struct Index {
    config: IndexConfig,
    /// An empty dense engine whose `validate` checks every dense input.
    dense_rules: Option<DenseIndex>,
    namespaces: RwLock<BTreeMap<String, Arc<RwLock<Namespace>>>>,
}

impl Index {
    /// An index with the default namespace `""` and nothing in it.
    ///
    /// # Errors
    /// [`VectorError::InvalidParameter`] for a configuration out of range
    /// ([`IndexConfig::validate`]).
    pub fn new(config: IndexConfig) -> Result<Index, VectorError> {
        config.validate()?;
        let dense_rules = config.dense_config().map(DenseIndex::new).transpose()?;
        let default = Namespace::new(&config)?;
        let mut map = BTreeMap::new();
        map.insert(DEFAULT_NAMESPACE.to_owned(), Arc::new(RwLock::new(default)));
        Ok(Index {
            config,
            dense_rules,
            namespaces: RwLock::new(map),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &IndexConfig {
        &self.config
    }

    fn validator(&self) -> Validator<'_> {
        Validator {
            config: &self.config,
            dense: self.dense_rules.as_ref(),
        }
    }

    fn get(&self, namespace: &str) -> Option<Arc<RwLock<Namespace>>> {
        self.namespaces.read().get(namespace).cloned()
    }

    /// Every namespace with its lock, in name order, as of now (snapshots lock them one at a
    /// time; a namespace removed meanwhile has `deleted` set).
    pub(crate) fn namespace_handles(&self) -> Vec<(String, Arc<RwLock<Namespace>>)> {
        self.namespaces
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Runs `f` under `namespace`'s write lock, creating the namespace when missing (snapshot
    /// load).
    pub(crate) fn with_namespace<T>(
        &self,
        namespace: &str,
        f: impl FnOnce(&mut Namespace) -> Result<T, VectorError>,
    ) -> Result<Option<T>, VectorError> {
        self.write(namespace, true, f)
    }

    /// Runs `f` under `namespace`'s write lock, creating the namespace when `create`; `None`
    /// when it does not exist and `create` is false.
    fn write<T>(
        &self,
        namespace: &str,
        create: bool,
        f: impl FnOnce(&mut Namespace) -> Result<T, VectorError>,
    ) -> Result<Option<T>, VectorError> {
        loop {
            let ns = match self.get(namespace) {
                Some(ns) => ns,
                None if create => {
                    let mut map = self.namespaces.write();
                    match map.get(namespace) {
                        Some(ns) => ns.clone(),
                        None => {
                            let ns = Arc::new(RwLock::new(Namespace::new(&self.config)?));
                            map.insert(namespace.to_owned(), ns.clone());
                            ns
                        }
                    }
                }
                None => return Ok(None),
            };
            let mut guard = ns.write();
            if guard.deleted {
                // Removed between the lookup and the lock: look again.
                continue;
            }
            return f(&mut guard).map(Some);
        }
    }

    /// Inserts or wholly replaces records (`/upsert`). The namespace is created if needed.
    ///
    /// Every record is checked first; if any is bad nothing is written.
    ///
    /// # Errors
    /// The first bad record's error: [`VectorError::EmptyId`], [`VectorError::IdTooLong`],
    /// [`VectorError::DimensionMismatch`], [`VectorError::NonFiniteValue`],
    /// [`VectorError::ZeroVector`], [`VectorError::MissingPart`],
    /// [`VectorError::PartNotInIndex`], the `Sparse*` errors, [`VectorError::MetadataNotObject`],
    /// [`VectorError::MetadataTooLarge`], [`VectorError::DataTooLarge`].
    pub fn upsert(&self, namespace: &str, vectors: Vec<Vector>) -> Result<(), VectorError> {
        let validator = self.validator();
        let checked = vectors
            .into_iter()
            .map(|v| validator.record(v))
            .collect::<Result<Vec<_>, _>>()?;
        if checked.is_empty() {
            return Ok(());
        }
        self.write(namespace, true, |ns| {
            checked.into_iter().try_for_each(|record| ns.put(record))
        })?;
        Ok(())
    }

    /// The checks of [`upsert`](Self::upsert) without writing anything: a host that logs
    /// writes refuses bad input before it reaches its log.
    ///
    /// # Errors
    /// The first bad record's error, as [`upsert`](Self::upsert) would return it.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::{Index, IndexConfig, Metric, Vector, VectorError};
    /// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
    /// assert!(index.check_upsert(&[Vector::dense("a", vec![1.0, 0.0])]).is_ok());
    /// assert!(matches!(
    ///     index.check_upsert(&[Vector::dense("a", vec![1.0])]),
    ///     Err(VectorError::DimensionMismatch { .. })
    /// ));
    /// assert_eq!(index.info().vector_count, 0);
    /// # Ok::<(), VectorError>(())
    /// ```
    pub fn check_upsert(&self, vectors: &[Vector]) -> Result<(), VectorError> {
        let validator = self.validator();
        vectors
            .iter()
            .try_for_each(|v| validator.record(v.clone()).map(drop))
    }

    /// The checks of [`delete_namespace`](Self::delete_namespace) without deleting.
    ///
    /// # Errors
    /// As [`delete_namespace`](Self::delete_namespace).
    pub fn check_delete_namespace(&self, namespace: &str) -> Result<(), VectorError> {
        if namespace == DEFAULT_NAMESPACE {
            return Err(VectorError::CannotDeleteDefaultNamespace);
        }
        if !self.namespaces.read().contains_key(namespace) {
            return Err(VectorError::NamespaceNotFound {
                namespace: namespace.to_owned(),
            });
        }
        Ok(())
    }

    /// Changes parts of one record (`/update`); `true` when the record exists and was updated,
    /// `false` when there is no such id (the reference answers `{"updated": 0}`).
    ///
    /// # Errors
    /// [`VectorError::EmptyUpdate`] when nothing is named, [`VectorError::HybridPartsTogether`]
    /// for one vector part of a hybrid record, and the input errors of [`Index::upsert`] for the
    /// parts given (for `PATCH`, the size cap applies to the patched metadata).
    pub fn update(&self, namespace: &str, update: Update) -> Result<bool, VectorError> {
        let validator = self.validator();
        validator.id(&update.id)?;
        let Update {
            id,
            vector,
            sparse_vector,
            data,
            metadata,
            metadata_update_mode,
        } = update;
        if vector.is_none() && sparse_vector.is_none() && data.is_none() && metadata.is_none() {
            return Err(VectorError::EmptyUpdate { id });
        }
        let ctx = context(&id);
        if self.config.kind.has_dense() && self.config.kind.has_sparse() {
            match (&vector, &sparse_vector) {
                (Some(_), None) => {
                    return Err(VectorError::HybridPartsTogether {
                        id,
                        given: "vector",
                    });
                }
                (None, Some(_)) => {
                    return Err(VectorError::HybridPartsTogether {
                        id,
                        given: "sparseVector",
                    });
                }
                _ => {}
            }
        }
        if let Some(v) = &vector {
            validator.dense(v, &ctx)?;
        }
        let sparse = sparse_vector
            .map(|s| validator.sparse(s, &ctx))
            .transpose()?;
        // The object rule is checked now; the size cap once the patch has been applied. The
        // depth cap first, so a deep patch never reaches the recursive merge.
        if let Some(m) = &metadata {
            check_depth(m)?;
        }
        if let Some(m) = metadata.as_ref().filter(|m| !m.is_object()) {
            validator.metadata_size(m)?;
        }
        validator.data(data.as_ref())?;
        let change = Change {
            id,
            dense: vector,
            sparse,
            metadata,
            mode: metadata_update_mode,
            data,
        };
        Ok(self
            .write(namespace, false, |ns| ns.update(change, &validator))?
            .unwrap_or(false))
    }

    /// Reads records (`/fetch`): by ids, in order with `None` where missing, or every record
    /// whose id starts with a prefix, in id order.
    ///
    /// # Errors
    /// [`VectorError::SelectorCount`] unless exactly one of `ids` and `prefix` is given.
    pub fn fetch(
        &self,
        namespace: &str,
        fetch: Fetch,
    ) -> Result<Vec<Option<FetchResult>>, VectorError> {
        let given = usize::from(fetch.ids.is_some()) + usize::from(fetch.prefix.is_some());
        if given != 1 {
            return Err(VectorError::SelectorCount {
                operation: "fetch",
                allowed: "ids, prefix",
                given,
            });
        }
        let include = Include {
            metadata: fetch.include_metadata,
            vectors: fetch.include_vectors,
            data: fetch.include_data,
        };
        let ns = self.get(namespace);
        let guard = ns.as_ref().map(|ns| ns.read());
        Ok(match (fetch.ids, fetch.prefix, guard) {
            (Some(ids), _, Some(ns)) => ids.iter().map(|id| ns.fetch_id(id, include)).collect(),
            (Some(ids), _, None) => vec![None; ids.len()],
            (None, Some(prefix), Some(ns)) => ns
                .prefixed(&prefix, None)
                .map(|(_, slot)| Some(ns.fetch_slot(slot, include)))
                .collect(),
            _ => Vec::new(),
        })
    }

    /// Deletes records (`/delete`) by ids, id prefix or metadata filter; returns how many went.
    ///
    /// # Errors
    /// [`VectorError::SelectorCount`] unless exactly one of `ids`, `prefix`, `filter` is given;
    /// [`VectorError::InvalidParameter`] for a blank filter (use [`Index::reset`] to delete
    /// everything); [`VectorError::InvalidFilter`] for a filter that does not parse.
    pub fn delete(&self, namespace: &str, delete: Delete) -> Result<usize, VectorError> {
        let given = usize::from(delete.ids.is_some())
            + usize::from(delete.prefix.is_some())
            + usize::from(delete.filter.is_some());
        if given != 1 {
            return Err(VectorError::SelectorCount {
                operation: "delete",
                allowed: "ids, prefix, filter",
                given,
            });
        }
        let filter =
            match &delete.filter {
                Some(text) => Some(filtering::compile(text)?.ok_or_else(|| {
                    VectorError::InvalidParameter {
                        name: "filter",
                        value: text.clone(),
                        expected: "a non-blank filter (reset deletes everything)",
                    }
                })?),
                None => None,
            };
        let deleted = self.write(namespace, false, |ns| {
            Ok(match (&delete.ids, &delete.prefix, &filter) {
                (Some(ids), _, _) => ids.iter().filter(|id| ns.remove(id)).count(),
                (_, Some(prefix), _) => ns.remove_prefix(prefix),
                (_, _, Some(filter)) => ns.remove_matching(filter),
                _ => 0,
            })
        })?;
        Ok(deleted.unwrap_or(0))
    }

    /// One page of records in id order (`/range`).
    ///
    /// # Errors
    /// [`VectorError::LimitOutOfRange`] for a limit of 0 or above the cap;
    /// [`VectorError::InvalidCursor`] for a cursor this index did not hand out.
    pub fn range(&self, namespace: &str, range: Range) -> Result<RangeResult, VectorError> {
        let max = self.config.limits.range_limit_max;
        if range.limit == 0 || range.limit > max {
            return Err(VectorError::LimitOutOfRange {
                limit: range.limit,
                max,
            });
        }
        let start = decode_cursor(&range.cursor)?;
        let include = Include {
            metadata: range.include_metadata,
            vectors: range.include_vectors,
            data: range.include_data,
        };
        let Some(ns) = self.get(namespace) else {
            return Ok(RangeResult::default());
        };
        let ns = ns.read();
        let prefix = range.prefix.as_deref().unwrap_or("");
        let mut page = ns.prefixed(prefix, start.as_deref());
        let vectors: Vec<FetchResult> = page
            .by_ref()
            .take(range.limit)
            .map(|(_, slot)| ns.fetch_slot(slot, include))
            .collect();
        let next_cursor = page
            .next()
            .map_or_else(String::new, |(id, _)| URL_SAFE_NO_PAD.encode(id.as_bytes()));
        Ok(RangeResult {
            next_cursor,
            vectors,
        })
    }

    /// Deletes every record of `namespace` (`/reset/{namespace}`); the namespace stays. A
    /// missing namespace is left missing.
    pub fn reset(&self, namespace: &str) {
        // The closure cannot fail.
        let _ = self.write(namespace, false, |ns| {
            ns.clear();
            Ok(())
        });
    }

    /// Deletes every record of every namespace and every namespace but the default one
    /// (`/reset?all`): the index is as new.
    pub fn reset_all(&self) {
        let mut map = self.namespaces.write();
        let removed: Vec<_> = std::mem::take(&mut *map).into_iter().collect();
        for (name, ns) in removed {
            let mut guard = ns.write();
            guard.clear();
            if name == DEFAULT_NAMESPACE {
                drop(guard);
                map.insert(name, ns);
            } else {
                guard.deleted = true;
            }
        }
    }

    /// Statistics (`/info`): counts per namespace, size, dimension, metric, kind.
    #[must_use]
    pub fn info(&self) -> IndexInfo {
        let all: Vec<(String, Arc<RwLock<Namespace>>)> = self
            .namespaces
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut namespaces = BTreeMap::new();
        let (mut vector_count, mut index_size) = (0, 0);
        for (name, ns) in all {
            let ns = ns.read();
            vector_count += ns.len();
            index_size += ns.memory_bytes();
            namespaces.insert(
                name,
                NamespaceInfo {
                    vector_count: ns.len(),
                    pending_vector_count: 0,
                },
            );
        }
        let kind = self.config.kind;
        let metric = if kind.has_dense() {
            self.config.metric
        } else {
            Metric::DotProduct
        };
        IndexInfo {
            vector_count,
            pending_vector_count: 0,
            index_size,
            dimension: self.config.dimension,
            similarity_function: metric,
            index_type: kind,
            dense_index: kind.has_dense().then_some(DenseIndexInfo {
                dimension: self.config.dimension,
                similarity_function: metric,
            }),
            sparse_index: kind.has_sparse().then_some(SparseIndexInfo {}),
            namespaces,
        }
    }

    /// Names of every namespace, sorted; always includes the default `""`.
    #[must_use]
    pub fn list_namespaces(&self) -> Vec<String> {
        self.namespaces.read().keys().cloned().collect()
    }

    /// Removes a namespace and its records (`/delete-namespace/{namespace}`).
    ///
    /// # Errors
    /// [`VectorError::CannotDeleteDefaultNamespace`] for `""`;
    /// [`VectorError::NamespaceNotFound`] for a namespace that does not exist.
    pub fn delete_namespace(&self, namespace: &str) -> Result<(), VectorError> {
        if namespace == DEFAULT_NAMESPACE {
            return Err(VectorError::CannotDeleteDefaultNamespace);
        }
        let removed = self.namespaces.write().remove(namespace);
        match removed {
            Some(ns) => {
                ns.write().deleted = true;
                Ok(())
            }
            None => Err(VectorError::NamespaceNotFound {
                namespace: namespace.to_owned(),
            }),
        }
    }

    /// The `topK` best records for `query` (`/query`), best first, ties by id ascending.
    ///
    /// Dense part only: dense scores in `[0, 1]`. Sparse part only: inner products (IDF
    /// weighted with `weightingStrategy: IDF`). Both parts (hybrid index, `queryMode` HYBRID):
    /// each engine returns `topK` candidates, fused by RRF or DBSF. `queryMode` DENSE or SPARSE
    /// uses only that part. A non-blank `filter` restricts the candidates to records whose
    /// metadata matches it.
    ///
    /// # Errors
    /// [`VectorError::TopKOutOfRange`], [`VectorError::MissingPart`] (no usable part),
    /// [`VectorError::PartNotInIndex`] (a part or mode the index kind lacks),
    /// [`VectorError::InvalidFilter`], and the vector errors of [`Index::upsert`].
    pub fn query(&self, namespace: &str, query: &Query) -> Result<Vec<QueryResult>, VectorError> {
        let plan = self.plan(query)?;
        match self.get(namespace) {
            Some(ns) => ns.read().search(&plan),
            None => Ok(Vec::new()),
        }
    }

    /// Several queries against one namespace, answered in order from one consistent view.
    ///
    /// # Errors
    /// The first bad query's error (see [`Index::query`]); nothing is answered then.
    pub fn query_batch(
        &self,
        namespace: &str,
        queries: &[Query],
    ) -> Result<Vec<Vec<QueryResult>>, VectorError> {
        let plans = queries
            .iter()
            .map(|q| self.plan(q))
            .collect::<Result<Vec<_>, _>>()?;
        match self.get(namespace) {
            Some(ns) => {
                let ns = ns.read();
                plans.iter().map(|p| ns.search(p)).collect()
            }
            None => Ok(vec![Vec::new(); plans.len()]),
        }
    }

    /// Validates a query and decides which parts run.
    fn plan(&self, query: &Query) -> Result<Plan, VectorError> {
        let max = self.config.limits.top_k_max;
        if query.top_k == 0 || query.top_k > max {
            return Err(VectorError::TopKOutOfRange {
                top_k: query.top_k,
                max,
            });
        }
        let kind = self.config.kind;
        let validator = self.validator();
        let not_in_index = |part| VectorError::PartNotInIndex {
            kind,
            part,
            context: String::new(),
        };
        let missing = |part| VectorError::MissingPart {
            kind,
            part,
            context: String::new(),
        };
        // A part the index kind lacks is an error whatever the mode.
        if query.vector.is_some() && !kind.has_dense() {
            return Err(not_in_index("vector"));
        }
        if query.sparse_vector.is_some() && !kind.has_sparse() {
            return Err(not_in_index("sparseVector"));
        }
        let (use_dense, use_sparse) = match query.query_mode {
            QueryMode::Hybrid => {
                if query.vector.is_none() && query.sparse_vector.is_none() {
                    return Err(missing(if kind.has_dense() {
                        "vector"
                    } else {
                        "sparseVector"
                    }));
                }
                (query.vector.is_some(), query.sparse_vector.is_some())
            }
            QueryMode::Dense => {
                if !kind.has_dense() {
                    return Err(not_in_index("vector"));
                }
                if query.vector.is_none() {
                    return Err(missing("vector"));
                }
                (true, false)
            }
            QueryMode::Sparse => {
                if !kind.has_sparse() {
                    return Err(not_in_index("sparseVector"));
                }
                if query.sparse_vector.is_none() {
                    return Err(missing("sparseVector"));
                }
                (false, true)
            }
        };
        let dense = match (&query.vector, use_dense) {
            (Some(v), true) => {
                validator.dense(v, "")?;
                Some(v.clone())
            }
            _ => None,
        };
        let sparse = match (&query.sparse_vector, use_sparse) {
            (Some(s), true) => Some(validator.sparse(s.clone(), "")?),
            _ => None,
        };
        Ok(Plan {
            dense,
            sparse,
            top_k: query.top_k,
            ef: self.config.graph.ef_search.max(query.top_k),
            weighting: match query.weighting_strategy {
                Some(WeightingStrategy::Idf) => Weighting::Idf,
                None => Weighting::None,
            },
            fusion: query.fusion_algorithm,
            filter: filtering::compile(&query.filter)?,
            include: Include {
                metadata: query.include_metadata,
                vectors: query.include_vectors,
                data: query.include_data,
            },
        })
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("config", &self.config)
            .field("namespaces", &self.list_namespaces())
            .finish_non_exhaustive()
    }
}

/// `""` and `"0"` start at the beginning; anything else must be a `nextCursor` we handed out
/// (the next id, base64url without padding, which is never `""` or `"0"`).
fn decode_cursor(cursor: &str) -> Result<Option<String>, VectorError> {
    if cursor.is_empty() || cursor == "0" {
        return Ok(None);
    }
    let invalid = || VectorError::InvalidCursor {
        cursor: cursor.to_owned(),
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    String::from_utf8(bytes).map(Some).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn index_is_send_and_sync() {
        assert_send_sync::<Index>();
    }

    #[test]
    fn cursors_round_trip_and_never_collide_with_the_start() {
        for id in ["0", "a", "é/ü", "00", "-_"] {
            let c = URL_SAFE_NO_PAD.encode(id.as_bytes());
            assert!(!c.is_empty() && c != "0");
            assert_eq!(decode_cursor(&c), Ok(Some(id.to_owned())));
        }
        assert_eq!(decode_cursor(""), Ok(None));
        assert_eq!(decode_cursor("0"), Ok(None));
        assert!(matches!(
            decode_cursor("!!"),
            Err(VectorError::InvalidCursor { .. })
        ));
    }
}
