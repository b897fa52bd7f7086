//! Request and response types of the record operations besides upsert and query: update,
//! fetch, delete, range and info, with the JSON names of the reference service and its
//! `upstash-vector` SDKs (checked against the REST docs and vector-py):
//!
//! | operation | request body | response `result` |
//! |---|---|---|
//! | update | `{"id", "vector"?, "sparseVector"?, "data"?, "metadata"?, "metadataUpdateMode"?}` | `{"updated": 0 \| 1}` |
//! | fetch | `{"ids": [...]}` or `{"prefix": "..."}`, plus `includeMetadata`, `includeVectors`, `includeData` | list of [`FetchResult`] or `null` |
//! | delete | `{"ids": [...]}`, `{"prefix": "..."}` or `{"filter": "..."}` (older SDKs send a bare id list) | `{"deleted": n}` |
//! | range | `{"cursor", "limit", "prefix"?, "includeMetadata", "includeVectors", "includeData"}` | [`RangeResult`] `{"nextCursor", "vectors"}` |
//! | info | none | [`IndexInfo`] |
//! | list-namespaces | none | list of names |
//!
//! The HTTP layer wraps each response in `{"result": ...}` (DESIGN §4).

use crate::vector::record::{null_as_default, opt_ids, string_or_integer};
use crate::vector::{FetchResult, IndexKind, Metric, SparseVector};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A partial update of one record (`/update`).
///
/// Every part is optional, but at least one must be given. In a hybrid index `vector` and
/// `sparseVector` go together (both or neither), as in the reference. Metadata replaces the old
/// metadata (`OVERWRITE`, the default) or is applied to it as an RFC 7396 JSON merge patch
/// (`PATCH`: a `null` member deletes that field).
///
/// # Examples
/// ```
/// use flowvec::vector::{MetadataUpdateMode, Update};
/// let u: Update = serde_json::from_str(
///     r#"{"id": "a", "metadata": {"x": null}, "metadataUpdateMode": "PATCH"}"#).unwrap();
/// assert_eq!(u.metadata_update_mode, MetadataUpdateMode::Patch);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Update {
    /// The record to update.
    #[serde(deserialize_with = "string_or_integer")]
    pub id: String,
    /// New dense part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// New sparse part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_vector: Option<SparseVector>,
    /// New data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// New metadata, or a merge patch for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// How `metadata` applies.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata_update_mode: MetadataUpdateMode,
}

/// `metadataUpdateMode`: `"OVERWRITE"` (default) or `"PATCH"` (RFC 7396 merge patch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MetadataUpdateMode {
    /// Replace the whole metadata.
    #[default]
    Overwrite,
    /// Merge into the existing metadata.
    Patch,
}

/// Which records to fetch (`/fetch`): exactly one of `ids` (answered in order, `None` where
/// missing) or `prefix` (every record whose id starts with it, in id order).
///
/// # Examples
/// ```
/// use flowvec::vector::Fetch;
/// let f: Fetch = serde_json::from_str(r#"{"ids": ["a", 2], "includeData": true}"#).unwrap();
/// assert_eq!(f.ids, Some(vec!["a".to_string(), "2".to_string()]));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fetch {
    /// Ids to fetch (a single id is accepted too).
    #[serde(
        default,
        deserialize_with = "opt_ids",
        skip_serializing_if = "Option::is_none"
    )]
    pub ids: Option<Vec<String>>,
    /// Id prefix to fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Include metadata.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_metadata: bool,
    /// Include vector parts.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_vectors: bool,
    /// Include data.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_data: bool,
}

impl Fetch {
    /// Fetch these ids, nothing included.
    #[must_use]
    pub fn ids<I: IntoIterator<Item = S>, S: Into<String>>(ids: I) -> Self {
        Fetch {
            ids: Some(ids.into_iter().map(Into::into).collect()),
            ..Fetch::default()
        }
    }

    /// Fetch every id with this prefix, nothing included.
    #[must_use]
    pub fn prefix(prefix: impl Into<String>) -> Self {
        Fetch {
            prefix: Some(prefix.into()),
            ..Fetch::default()
        }
    }

    /// The same request including metadata, vectors and data.
    #[must_use]
    pub fn include_all(mut self) -> Self {
        self.include_metadata = true;
        self.include_vectors = true;
        self.include_data = true;
        self
    }
}

/// Which records to delete (`/delete`): exactly one of `ids`, `prefix` or `filter` (a
/// non-blank metadata filter). Missing ids are not an error; the count says what went.
///
/// # Examples
/// ```
/// use flowvec::vector::Delete;
/// let d: Delete = serde_json::from_str(r#"{"prefix": "doc-"}"#).unwrap();
/// assert_eq!(d, Delete::prefix("doc-"));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delete {
    /// Ids to delete (a single id is accepted too).
    #[serde(
        default,
        deserialize_with = "opt_ids",
        skip_serializing_if = "Option::is_none"
    )]
    pub ids: Option<Vec<String>>,
    /// Id prefix to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Metadata filter selecting the records to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

impl Delete {
    /// Delete these ids.
    #[must_use]
    pub fn ids<I: IntoIterator<Item = S>, S: Into<String>>(ids: I) -> Self {
        Delete {
            ids: Some(ids.into_iter().map(Into::into).collect()),
            ..Delete::default()
        }
    }

    /// Delete every id with this prefix.
    #[must_use]
    pub fn prefix(prefix: impl Into<String>) -> Self {
        Delete {
            prefix: Some(prefix.into()),
            ..Delete::default()
        }
    }

    /// Delete every record whose metadata matches this filter.
    #[must_use]
    pub fn filter(filter: impl Into<String>) -> Self {
        Delete {
            filter: Some(filter.into()),
            ..Delete::default()
        }
    }
}

/// One page of a scan over a namespace in id order (`/range`).
///
/// Start with `cursor` `""` (or `"0"`, or the integer 0, as the SDKs send) and pass each
/// [`RangeResult::next_cursor`] back until it is `""`. The cursor is opaque (the next id,
/// base64url-encoded) and stays valid across writes: records upserted or deleted meanwhile are
/// seen or not according to their id's place, never twice.
///
/// # Examples
/// ```
/// use flowvec::vector::Range;
/// let r: Range = serde_json::from_str(r#"{"cursor": 0, "limit": 2, "includeMetadata": true}"#).unwrap();
/// assert_eq!(r.cursor, "0");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Range {
    /// Where to start: `""`/`"0"` or a previous `nextCursor`.
    #[serde(default, deserialize_with = "string_or_integer")]
    pub cursor: String,
    /// Page size, 1 ..= [`Limits::range_limit_max`](crate::vector::Limits::range_limit_max).
    pub limit: usize,
    /// Only ids with this prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Include metadata.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_metadata: bool,
    /// Include vector parts.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_vectors: bool,
    /// Include data.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_data: bool,
}

impl Range {
    /// The first page of `limit` records, nothing included.
    #[must_use]
    pub fn first(limit: usize) -> Self {
        Range {
            limit,
            ..Range::default()
        }
    }
}

/// A range page: `{"nextCursor": "...", "vectors": [...]}`; `nextCursor` is `""` after the last
/// page.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeResult {
    /// Cursor of the next page, `""` when there is none.
    pub next_cursor: String,
    /// The records of this page, in id order.
    pub vectors: Vec<FetchResult>,
}

/// Index statistics (`/info`).
///
/// `vectorCount`, `pendingVectorCount`, `indexSize`, `dimension`, `similarityFunction` and
/// `namespaces` are what `upstash-vector` (Python) reads; `indexType`, `denseIndex` and
/// `sparseIndex` follow the newer REST docs. Writes are visible at once, so
/// `pendingVectorCount` is always 0. A sparse index reports dimension 0 and `DOT_PRODUCT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexInfo {
    /// Records over all namespaces.
    pub vector_count: usize,
    /// Always 0.
    pub pending_vector_count: usize,
    /// Approximate bytes held.
    pub index_size: usize,
    /// Dense dimension (0 for sparse indexes).
    pub dimension: usize,
    /// Dense metric.
    pub similarity_function: Metric,
    /// `DENSE`, `SPARSE` or `HYBRID`.
    pub index_type: IndexKind,
    /// The dense part, for dense and hybrid indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense_index: Option<DenseIndexInfo>,
    /// The sparse part, for sparse and hybrid indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_index: Option<SparseIndexInfo>,
    /// Every namespace (the default one is `""`).
    pub namespaces: BTreeMap<String, NamespaceInfo>,
}

/// The dense part of [`IndexInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DenseIndexInfo {
    /// Dimension.
    pub dimension: usize,
    /// Metric.
    pub similarity_function: Metric,
}

/// The sparse part of [`IndexInfo`] (no fields yet: no embedding model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SparseIndexInfo {}

/// Per-namespace statistics of [`IndexInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceInfo {
    /// Records in the namespace.
    pub vector_count: usize,
    /// Always 0.
    pub pending_vector_count: usize,
}
