//! Records on the wire: [`Vector`] (what is upserted), [`SparseVector`], [`FetchResult`] (what
//! fetch and range give back), and the serde helpers the other wire types share.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A record to upsert: `{"id", "vector", "sparseVector", "metadata", "data"}`.
///
/// `id` may be a JSON string or integer (the SDKs allow both; an integer is stored as its decimal
/// text). `metadata: null` is the same as no metadata. Unknown fields are an error naming them.
///
/// # Examples
/// ```
/// use flowvec::vector::Vector;
/// let v: Vector = serde_json::from_str(r#"{"id": 7, "vector": [0.5, 1.0], "data": "hi"}"#).unwrap();
/// assert_eq!(v.id, "7");
/// assert!(serde_json::from_str::<Vector>(r#"{"id": "a", "vectors": [1.0]}"#)
///     .unwrap_err().to_string().contains("unknown field `vectors`"));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vector {
    /// Non-empty record id, unique within its namespace.
    #[serde(deserialize_with = "string_or_integer")]
    pub id: String,
    /// Dense part (dense and hybrid indexes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// Sparse part (sparse and hybrid indexes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse_vector: Option<SparseVector>,
    /// A JSON object, filterable by [`Query::filter`](crate::vector::Query::filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Free text stored with the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

impl Vector {
    /// A record with only an id and a dense part.
    #[must_use]
    pub fn dense(id: impl Into<String>, vector: Vec<f32>) -> Self {
        Vector {
            id: id.into(),
            vector: Some(vector),
            ..Vector::default()
        }
    }

    /// A record with only an id and a sparse part.
    #[must_use]
    pub fn sparse(id: impl Into<String>, sparse: SparseVector) -> Self {
        Vector {
            id: id.into(),
            sparse_vector: Some(sparse),
            ..Vector::default()
        }
    }

    /// The same record with `metadata`.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The same record with `data`.
    #[must_use]
    pub fn with_data(mut self, data: impl Into<String>) -> Self {
        self.data = Some(data.into());
        self
    }
}

/// A sparse vector `{"indices": [i32...], "values": [f32...]}`.
///
/// Rules (checked on upsert, update and query, DESIGN §2.1): equal lengths, at least one entry,
/// at most [`Limits::sparse_max_entries`](crate::vector::Limits::sparse_max_entries), no
/// duplicate index, finite values. Any order is accepted; the index stores and returns the
/// entries sorted by index.
///
/// # Examples
/// ```
/// use flowvec::vector::SparseVector;
/// let s = SparseVector::new(vec![3, -1], vec![0.5, 2.0]);
/// assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"indices":[3,-1],"values":[0.5,2.0]}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparseVector {
    /// Dimension indices (the signed 32-bit range).
    pub indices: Vec<i32>,
    /// The value at each index.
    pub values: Vec<f32>,
}

impl SparseVector {
    /// A sparse vector from its two arrays (not validated here).
    #[must_use]
    pub fn new(indices: Vec<i32>, values: Vec<f32>) -> Self {
        SparseVector { indices, values }
    }
}

/// One record as fetch and range return it: `{"id", "vector"?, "sparseVector"?, "metadata"?,
/// "data"?}`. A field is present only when asked for (`includeVectors`, `includeMetadata`,
/// `includeData`) and the record has it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FetchResult {
    /// The record id.
    pub id: String,
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

/// Deserializes a JSON string or integer as a `String` (record ids).
pub(crate) fn string_or_integer<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Signed(i64),
        Unsigned(u64),
    }
    Ok(match Id::deserialize(d)? {
        Id::Text(s) => s,
        Id::Signed(n) => n.to_string(),
        Id::Unsigned(n) => n.to_string(),
    })
}

/// Deserializes an optional list of string-or-integer ids.
pub(crate) fn opt_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    struct Wrapped(#[serde(deserialize_with = "string_or_integer")] String);
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Ids {
        Many(Vec<Wrapped>),
        One(Wrapped),
    }
    Ok(Option::<Ids>::deserialize(d)?.map(|ids| match ids {
        Ids::Many(v) => v.into_iter().map(|w| w.0).collect(),
        Ids::One(w) => vec![w.0],
    }))
}

/// Deserializes `null` as the type's default (for fields with a wire default).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
