//! An index's kind, metric, graph parameters and limits (DESIGN §2.1).

use crate::vector::dense::{DenseConfig, Traversal};
use crate::vector::text::Bm25Params;
use crate::vector::{Metric, VectorError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which vector parts an index's records have.
///
/// On the wire (the reference's info `indexType`) the names are `DENSE`, `SPARSE` and `HYBRID`.
///
/// # Examples
/// ```
/// use flowvec::vector::IndexKind;
/// assert_eq!(serde_json::to_string(&IndexKind::Hybrid).unwrap(), "\"HYBRID\"");
/// assert!(IndexKind::Hybrid.has_dense() && IndexKind::Hybrid.has_sparse());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IndexKind {
    /// Dense vectors of a fixed dimension under a [`Metric`].
    #[default]
    Dense,
    /// Sparse vectors scored by inner product.
    Sparse,
    /// A dense and a sparse part per record; queries fuse both.
    Hybrid,
}

impl IndexKind {
    /// Whether records have a dense `vector`.
    #[must_use]
    pub fn has_dense(self) -> bool {
        matches!(self, IndexKind::Dense | IndexKind::Hybrid)
    }

    /// Whether records have a `sparseVector`.
    #[must_use]
    pub fn has_sparse(self) -> bool {
        matches!(self, IndexKind::Sparse | IndexKind::Hybrid)
    }

    /// The wire name: `DENSE`, `SPARSE` or `HYBRID`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            IndexKind::Dense => "DENSE",
            IndexKind::Sparse => "SPARSE",
            IndexKind::Hybrid => "HYBRID",
        }
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parameters of the dense graph (HNSW).
///
/// `ef_search` is passed to every dense search as its `ef` (raised to `topK` when smaller);
/// `m` and `ef_construction` shape the graph each namespace builds
/// (see [`IndexConfig::dense_config`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GraphParams {
    /// Links per node (hnsw `M`), 2 ..= 256. Default 16.
    pub m: usize,
    /// Candidate list size while building, at least `m`. Default 200.
    pub ef_construction: usize,
    /// Candidate list size while searching, at least 1. Default 64.
    pub ef_search: usize,
    /// How searches walk the graph: exact (default), on int8 copies of the vectors (faster,
    /// `dimension + 4` bytes per vector), or on 1-bit codes (faster still on text
    /// embeddings, `dimension / 8 + 16` bytes per vector; see [`Traversal`]). Absent from
    /// the JSON when exact, so snapshots of default configurations read as before.
    #[serde(default, skip_serializing_if = "Traversal::is_exact")]
    pub traversal: Traversal,
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: 16,
            ef_construction: 200,
            ef_search: 64,
            traversal: Traversal::Exact,
        }
    }
}

/// Caps against abuse; every one is checked on input with a typed error.
///
/// | limit | default | error |
/// |---|---|---|
/// | `top_k_max` | 1000 | [`VectorError::TopKOutOfRange`] |
/// | `range_limit_max` | 1000 | [`VectorError::LimitOutOfRange`] |
/// | `sparse_max_entries` | 1000 | [`VectorError::SparseTooManyEntries`] |
/// | `id_max_bytes` | 512 | [`VectorError::IdTooLong`] |
/// | `metadata_max_bytes` (compact JSON) | 48 KiB | [`VectorError::MetadataTooLarge`] |
/// | `data_max_bytes` | 1 MiB | [`VectorError::DataTooLarge`] |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Largest `topK` of a query.
    pub top_k_max: usize,
    /// Largest `limit` of a range page.
    pub range_limit_max: usize,
    /// Most entries of a sparse vector.
    pub sparse_max_entries: usize,
    /// Longest record id, in bytes.
    pub id_max_bytes: usize,
    /// Largest metadata, in bytes of compact JSON.
    pub metadata_max_bytes: usize,
    /// Largest `data` string, in bytes.
    pub data_max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            top_k_max: 1000,
            range_limit_max: 1000,
            sparse_max_entries: 1000,
            id_max_bytes: 512,
            metadata_max_bytes: 48 * 1024,
            data_max_bytes: 1024 * 1024,
        }
    }
}

/// Everything fixed when an [`Index`](crate::vector::Index) is created.
///
/// # Examples
/// ```
/// use flowvec::vector::{IndexConfig, IndexKind, Metric};
/// let config = IndexConfig::hybrid(384, Metric::DotProduct);
/// assert_eq!(config.kind, IndexKind::Hybrid);
/// assert_eq!(config.limits.top_k_max, 1000);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IndexConfig {
    /// Which vector parts records have.
    pub kind: IndexKind,
    /// Dense dimension (at least 1 for dense and hybrid indexes, 0 for sparse ones).
    pub dimension: usize,
    /// Dense metric (reported as `DOT_PRODUCT` for sparse indexes, whose score is an inner
    /// product).
    pub metric: Metric,
    /// Dense graph parameters.
    #[serde(default)]
    pub graph: GraphParams,
    /// Input caps.
    #[serde(default)]
    pub limits: Limits,
    /// The text embedding models that turn `data` into vectors (none by default). Absent from
    /// the JSON when none, so configurations without it read as before.
    #[serde(default, skip_serializing_if = "Embedders::is_none")]
    pub embedders: Embedders,
}

/// The text embedding models an index names (see [`crate::vector::text`]).
///
/// The sparse one is built in ([`Bm25`](crate::vector::text::Bm25), run by the index itself, so
/// its corpus statistics stay with the records). A dense model is the host's: the index only
/// records its name, and the host embeds `data` before it calls
/// [`Index::upsert_data`](crate::vector::Index::upsert_data).
///
/// # Examples
/// ```
/// use flowvec::vector::IndexConfig;
/// use flowvec::vector::text::Bm25Params;
/// let config = IndexConfig::sparse().with_bm25(Bm25Params::default());
/// assert_eq!(
///     serde_json::to_value(&config.embedders).unwrap(),
///     serde_json::json!({"bm25": {"k1": 1.2, "b": 0.75}})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Embedders {
    /// The name of the host's dense model (e.g. `"all-MiniLM-L6-v2"`), shown by `info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense: Option<String>,
    /// BM25 for the sparse part (sparse and hybrid indexes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bm25: Option<Bm25Params>,
}

impl Embedders {
    /// Whether no model is named.
    #[must_use]
    pub fn is_none(&self) -> bool {
        self.dense.is_none() && self.bm25.is_none()
    }
}

impl IndexConfig {
    /// The dense engine configuration every namespace of this index uses, or `None` for a
    /// sparse index.
    #[must_use]
    pub fn dense_config(&self) -> Option<DenseConfig> {
        self.kind.has_dense().then(|| {
            DenseConfig::new(self.dimension, self.metric)
                .with_m(self.graph.m)
                .with_ef_construction(self.graph.ef_construction)
                .with_ef_search(self.graph.ef_search)
                .with_traversal(self.graph.traversal)
        })
    }

    /// A dense index of `dimension` under `metric`, default graph parameters and limits.
    #[must_use]
    pub fn dense(dimension: usize, metric: Metric) -> Self {
        Self::with_kind(IndexKind::Dense, dimension, metric)
    }

    /// A sparse index with default limits.
    #[must_use]
    pub fn sparse() -> Self {
        Self::with_kind(IndexKind::Sparse, 0, Metric::DotProduct)
    }

    /// A hybrid index whose dense part has `dimension` and `metric`.
    #[must_use]
    pub fn hybrid(dimension: usize, metric: Metric) -> Self {
        Self::with_kind(IndexKind::Hybrid, dimension, metric)
    }

    fn with_kind(kind: IndexKind, dimension: usize, metric: Metric) -> Self {
        IndexConfig {
            kind,
            dimension,
            metric,
            graph: GraphParams::default(),
            limits: Limits::default(),
            embedders: Embedders::default(),
        }
    }

    /// The same configuration with BM25 as the sparse text embedder.
    #[must_use]
    pub fn with_bm25(mut self, params: Bm25Params) -> Self {
        self.embedders.bm25 = Some(params);
        self
    }

    /// The same configuration naming `model` as the host's dense text embedder.
    #[must_use]
    pub fn with_dense_embedder(mut self, model: impl Into<String>) -> Self {
        self.embedders.dense = Some(model.into());
        self
    }

    /// Checks every parameter.
    ///
    /// # Errors
    /// [`VectorError::InvalidParameter`] naming the first parameter out of range.
    pub fn validate(&self) -> Result<(), VectorError> {
        let bad = |name: &'static str, value: usize, expected: &'static str| {
            Err(VectorError::InvalidParameter {
                name,
                value: value.to_string(),
                expected,
            })
        };
        if self.kind.has_dense() && self.dimension == 0 {
            return bad("dimension", 0, "at least 1 for a dense or hybrid index");
        }
        if !self.kind.has_dense() && self.dimension != 0 {
            return bad("dimension", self.dimension, "0 for a sparse index");
        }
        let g = &self.graph;
        if !(2..=256).contains(&g.m) {
            return bad("m", g.m, "2 ..= 256");
        }
        if g.ef_construction < g.m {
            return bad("efConstruction", g.ef_construction, "at least m");
        }
        if g.ef_search == 0 {
            return bad("efSearch", 0, "at least 1");
        }
        let l = &self.limits;
        for (name, value) in [
            ("topKMax", l.top_k_max),
            ("rangeLimitMax", l.range_limit_max),
            ("sparseMaxEntries", l.sparse_max_entries),
            ("idMaxBytes", l.id_max_bytes),
            ("metadataMaxBytes", l.metadata_max_bytes),
            ("dataMaxBytes", l.data_max_bytes),
        ] {
            if value == 0 {
                return bad(name, 0, "at least 1");
            }
        }
        if let Some(bm25) = &self.embedders.bm25 {
            if !self.kind.has_sparse() {
                return Err(VectorError::InvalidParameter {
                    name: "embedders.bm25",
                    value: format!("{bm25:?}"),
                    expected: "absent for a dense index (BM25 makes sparse vectors)",
                });
            }
            bm25.validate()?;
        }
        if let Some(dense) = &self.embedders.dense
            && !self.kind.has_dense()
        {
            return Err(VectorError::InvalidParameter {
                name: "embedders.dense",
                value: format!("{dense:?}"),
                expected: "absent for a sparse index",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_is_optional_in_json_and_reaches_the_dense_config() {
        let old = r#"{"m":16,"efConstruction":200,"efSearch":64}"#;
        let g: GraphParams = serde_json::from_str(old).expect("configs without it still parse");
        assert_eq!(g.traversal, Traversal::Exact);
        assert_eq!(serde_json::to_string(&g).expect("serialises"), old);
        for (traversal, name) in [(Traversal::Int8, "int8"), (Traversal::Bits, "bits")] {
            let coded = GraphParams { traversal, ..g };
            let json = serde_json::to_string(&coded).expect("serialises");
            assert!(
                json.ends_with(&format!(r#","traversal":"{name}"}}"#)),
                "{json}"
            );
            assert_eq!(serde_json::from_str::<GraphParams>(&json).ok(), Some(coded));
        }
        let bad = r#"{"m":16,"efConstruction":200,"efSearch":64,"traversal":"int4"}"#;
        let err = serde_json::from_str::<GraphParams>(bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("int4"), "{err}");
        let mut c = IndexConfig::dense(8, Metric::Cosine);
        c.graph.traversal = Traversal::Int8;
        assert_eq!(c.dense_config().map(|d| d.traversal), Some(Traversal::Int8));
    }

    #[test]
    fn constructors_validate() {
        assert_eq!(IndexConfig::dense(4, Metric::Cosine).validate(), Ok(()));
        assert_eq!(IndexConfig::sparse().validate(), Ok(()));
        assert_eq!(IndexConfig::hybrid(4, Metric::Euclidean).validate(), Ok(()));
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut c = IndexConfig::dense(0, Metric::Cosine);
        assert!(matches!(
            c.validate(),
            Err(VectorError::InvalidParameter {
                name: "dimension",
                ..
            })
        ));
        c.dimension = 3;
        c.graph.m = 300;
        assert!(matches!(
            c.validate(),
            Err(VectorError::InvalidParameter { name: "m", .. })
        ));
        c.graph.m = 16;
        c.limits.top_k_max = 0;
        assert!(matches!(
            c.validate(),
            Err(VectorError::InvalidParameter {
                name: "topKMax",
                ..
            })
        ));
        let mut s = IndexConfig::sparse();
        s.dimension = 3;
        assert!(matches!(
            s.validate(),
            Err(VectorError::InvalidParameter {
                name: "dimension",
                ..
            })
        ));
    }
}
