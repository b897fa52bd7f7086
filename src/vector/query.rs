//! The query contract on the wire (DESIGN §2.2): [`Query`] and [`QueryResult`].

use crate::vector::SparseVector;
use crate::vector::record::null_as_default;
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn default_top_k() -> usize {
    10
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

/// A nearest-neighbour query, as the reference service's `/query` body.
///
/// | field | default | |
/// |---|---|---|
/// | `vector` | absent | dense part (dense and hybrid indexes) |
/// | `sparseVector` | absent | sparse part (sparse and hybrid indexes) |
/// | `topK` | 10 | 1 ..= [`Limits::top_k_max`](crate::vector::Limits::top_k_max) |
/// | `includeMetadata`, `includeVectors`, `includeData` | false | |
/// | `filter` | `""` | metadata filter (DESIGN §2.4); blank means none |
/// | `weightingStrategy` | absent | `"IDF"` weights the sparse query by inverse document frequency |
/// | `fusionAlgorithm` | `"RRF"` | or `"DBSF"`; hybrid queries with both parts |
/// | `queryMode` | `"HYBRID"` | or `"DENSE"` / `"SPARSE"`: use only that part (hybrid indexes) |
///
/// Unknown fields are an error that names them, so a typo is never silently ignored. `null` is
/// accepted for every field and means its default.
///
/// # Examples
/// ```
/// use flowvec::vector::{FusionAlgorithm, Query};
/// let q: Query = serde_json::from_str(r#"{"vector": [0.1, 0.2], "fusionAlgorithm": "DBSF"}"#).unwrap();
/// assert_eq!(q.top_k, 10);
/// assert_eq!(q.fusion_algorithm, FusionAlgorithm::Dbsf);
/// let err = serde_json::from_str::<Query>(r#"{"vector": [0.1], "includeVector": true}"#).unwrap_err();
/// assert!(err.to_string().contains("unknown field `includeVector`"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Query {
    /// Dense part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// Sparse part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_vector: Option<SparseVector>,
    /// How many results at most.
    #[serde(rename = "topK", default = "default_top_k", deserialize_with = "top_k")]
    pub top_k: usize,
    /// Return each result's metadata.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub include_metadata: bool,
    /// Return each result's vector parts.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub include_vectors: bool,
    /// Return each result's data.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub include_data: bool,
    /// Metadata filter; blank means none.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub filter: String,
    /// Sparse query weighting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighting_strategy: Option<WeightingStrategy>,
    /// How a hybrid query's two result lists are fused.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_default"
    )]
    pub fusion_algorithm: FusionAlgorithm,
    /// Which parts a hybrid query uses.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_default"
    )]
    pub query_mode: QueryMode,
}

fn top_k<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    Ok(Option::<usize>::deserialize(d)?.unwrap_or_else(default_top_k))
}

impl Default for Query {
    fn default() -> Self {
        Query {
            vector: None,
            sparse_vector: None,
            top_k: default_top_k(),
            include_metadata: false,
            include_vectors: false,
            include_data: false,
            filter: String::new(),
            weighting_strategy: None,
            fusion_algorithm: FusionAlgorithm::default(),
            query_mode: QueryMode::default(),
        }
    }
}

impl Query {
    /// A dense query for the `top_k` nearest records, nothing included.
    #[must_use]
    pub fn dense(vector: Vec<f32>, top_k: usize) -> Self {
        Query {
            vector: Some(vector),
            top_k,
            ..Query::default()
        }
    }

    /// A sparse query for the `top_k` best records, nothing included.
    #[must_use]
    pub fn sparse(sparse: SparseVector, top_k: usize) -> Self {
        Query {
            sparse_vector: Some(sparse),
            top_k,
            ..Query::default()
        }
    }
}

/// `weightingStrategy`: only `"IDF"` exists; absent means plain inner product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WeightingStrategy {
    /// Inverse document frequency: `ln((N - n_t + 0.5) / (n_t + 0.5) + 1)`.
    #[serde(rename = "IDF")]
    Idf,
}

/// `fusionAlgorithm`: `"RRF"` (default) or `"DBSF"`; see [`fusion`](crate::vector::fusion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FusionAlgorithm {
    /// Reciprocal rank fusion.
    #[default]
    #[serde(rename = "RRF")]
    Rrf,
    /// Distribution-based score fusion.
    #[serde(rename = "DBSF")]
    Dbsf,
}

/// `queryMode`: `"HYBRID"` (default: every part the query gives), `"DENSE"` or `"SPARSE"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum QueryMode {
    /// Every part the query gives; both parts are fused.
    #[default]
    Hybrid,
    /// Only the dense part, with dense scores.
    Dense,
    /// Only the sparse part, with sparse scores.
    Sparse,
}

/// One query result: `{"id", "score", "vector"?, "sparseVector"?, "metadata"?, "data"?}`.
///
/// Fields not asked for (or that the record lacks) are absent. Dense scores lie in `[0, 1]`;
/// sparse scores are inner products; fused scores are RRF or DBSF sums.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryResult {
    /// The record id.
    pub id: String,
    /// Higher is closer.
    pub score: f32,
    /// Dense part as upserted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// Sparse part, sorted by index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_vector: Option<SparseVector>,
    /// Metadata object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Data string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_to_absent_and_null_fields() {
        let q: Query = serde_json::from_str(r#"{"vector":[1.0]}"#).unwrap();
        assert_eq!(q, Query::dense(vec![1.0], 10));
        let q: Query = serde_json::from_str(
            r#"{"vector":[1.0],"topK":null,"filter":null,"fusionAlgorithm":null,"queryMode":null,
                "includeData":null,"weightingStrategy":null}"#,
        )
        .unwrap();
        assert_eq!(q, Query::dense(vec![1.0], 10));
    }

    #[test]
    fn every_wire_field_parses() {
        let q: Query = serde_json::from_str(
            r#"{"vector":[1.0],"sparseVector":{"indices":[1],"values":[2.0]},"topK":3,
                "includeMetadata":true,"includeVectors":true,"includeData":true,"filter":"a = 1",
                "weightingStrategy":"IDF","fusionAlgorithm":"DBSF","queryMode":"SPARSE"}"#,
        )
        .unwrap();
        assert_eq!(q.top_k, 3);
        assert!(q.include_metadata && q.include_vectors && q.include_data);
        assert_eq!(q.filter, "a = 1");
        assert_eq!(q.weighting_strategy, Some(WeightingStrategy::Idf));
        assert_eq!(q.fusion_algorithm, FusionAlgorithm::Dbsf);
        assert_eq!(q.query_mode, QueryMode::Sparse);
        // Round trip through the serializer.
        let back: Query = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back, q);
    }

    #[test]
    fn bad_enum_values_and_negative_top_k_are_errors() {
        for body in [
            r#"{"vector":[1.0],"weightingStrategy":"BM25"}"#,
            r#"{"vector":[1.0],"fusionAlgorithm":"rrf"}"#,
            r#"{"vector":[1.0],"queryMode":"BOTH"}"#,
            r#"{"vector":[1.0],"topK":-1}"#,
            r#"{"vector":[1.0],"topK":2.5}"#,
        ] {
            assert!(serde_json::from_str::<Query>(body).is_err(), "{body}");
        }
    }

    #[test]
    fn absent_result_fields_are_not_serialized() {
        let r = QueryResult {
            id: "a".into(),
            score: 0.5,
            ..QueryResult::default()
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"id":"a","score":0.5}"#
        );
    }
}
