//! Input checks shared by upsert, update and query (DESIGN §2.1). Everything a caller sends is
//! checked here, before any lock is taken, so a batch with one bad record writes nothing.

use crate::vector::dense::DenseIndex;
use crate::vector::{IndexConfig, SparseVector, Vector, VectorError};
use serde_json::Value;

/// A record that passed every check: parts present as the index kind needs them, sparse
/// entries sorted by index, metadata an object within the size cap.
pub(crate) struct Checked {
    pub(crate) id: String,
    pub(crate) dense: Option<Vec<f32>>,
    pub(crate) sparse: Option<SparseVector>,
    pub(crate) metadata: Option<Value>,
    pub(crate) metadata_bytes: usize,
    pub(crate) data: Option<String>,
}

/// Checks input against an index's configuration; `dense` is an empty engine used only for
/// its own `validate`, so dense rules live in one place (the engine).
pub(crate) struct Validator<'a> {
    pub(crate) config: &'a IndexConfig,
    pub(crate) dense: Option<&'a DenseIndex>,
}

pub(crate) fn context(id: &str) -> String {
    format!(" for vector id {id:?}")
}

impl Validator<'_> {
    pub(crate) fn id(&self, id: &str) -> Result<(), VectorError> {
        if id.is_empty() {
            return Err(VectorError::EmptyId);
        }
        let max = self.config.limits.id_max_bytes;
        if id.len() > max {
            return Err(VectorError::IdTooLong {
                length: id.len(),
                max,
            });
        }
        Ok(())
    }

    /// A dense part; `context` names where it came from for the kind errors.
    pub(crate) fn dense(&self, vector: &[f32], context: &str) -> Result<(), VectorError> {
        match self.dense {
            Some(engine) => engine.validate(vector),
            None => Err(VectorError::PartNotInIndex {
                kind: self.config.kind,
                part: "vector",
                context: context.to_owned(),
            }),
        }
    }

    /// A sparse part, returned sorted by index.
    pub(crate) fn sparse(
        &self,
        sparse: SparseVector,
        context: &str,
    ) -> Result<SparseVector, VectorError> {
        if !self.config.kind.has_sparse() {
            return Err(VectorError::PartNotInIndex {
                kind: self.config.kind,
                part: "sparseVector",
                context: context.to_owned(),
            });
        }
        check_sparse(sparse, self.config.limits.sparse_max_entries)
    }

    pub(crate) fn metadata(
        &self,
        metadata: Option<Value>,
    ) -> Result<(Option<Value>, usize), VectorError> {
        match metadata {
            None => Ok((None, 0)),
            Some(m) => {
                let size = self.metadata_size(&m)?;
                Ok((Some(m), size))
            }
        }
    }

    /// Checks that `m` is an object within the caps; returns its compact JSON size.
    pub(crate) fn metadata_size(&self, m: &Value) -> Result<usize, VectorError> {
        if !m.is_object() {
            return Err(VectorError::MetadataNotObject {
                found: json_type(m),
            });
        }
        check_depth(m)?;
        let size = serde_json::to_vec(m).map_or(usize::MAX, |bytes| bytes.len());
        let max = self.config.limits.metadata_max_bytes;
        if size > max {
            return Err(VectorError::MetadataTooLarge { size, max });
        }
        Ok(size)
    }

    pub(crate) fn data(&self, data: Option<&String>) -> Result<(), VectorError> {
        let max = self.config.limits.data_max_bytes;
        match data {
            Some(d) if d.len() > max => Err(VectorError::DataTooLarge { size: d.len(), max }),
            _ => Ok(()),
        }
    }

    /// A whole record for upsert.
    pub(crate) fn record(&self, v: Vector) -> Result<Checked, VectorError> {
        self.id(&v.id)?;
        let ctx = context(&v.id);
        let kind = self.config.kind;
        let missing = |part| VectorError::MissingPart {
            kind,
            part,
            context: ctx.clone(),
        };
        let dense = match v.vector {
            Some(d) => {
                self.dense(&d, &ctx)?;
                Some(d)
            }
            None if kind.has_dense() => return Err(missing("vector")),
            None => None,
        };
        let sparse = match v.sparse_vector {
            Some(s) => Some(self.sparse(s, &ctx)?),
            None if kind.has_sparse() => return Err(missing("sparseVector")),
            None => None,
        };
        let (metadata, metadata_bytes) = self.metadata(v.metadata)?;
        self.data(v.data.as_ref())?;
        Ok(Checked {
            id: v.id,
            dense,
            sparse,
            metadata,
            metadata_bytes,
            data: v.data,
        })
    }
}

/// The sparse rules of DESIGN §2.1; returns the entries sorted by index.
pub(crate) fn check_sparse(sparse: SparseVector, max: usize) -> Result<SparseVector, VectorError> {
    let SparseVector { indices, values } = sparse;
    if indices.len() != values.len() {
        return Err(VectorError::SparseLengthMismatch {
            indices: indices.len(),
            values: values.len(),
        });
    }
    if indices.is_empty() {
        return Err(VectorError::SparseEmpty);
    }
    if indices.len() > max {
        return Err(VectorError::SparseTooManyEntries {
            count: indices.len(),
            max,
        });
    }
    if let Some((position, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(VectorError::SparseNonFiniteValue {
            position,
            value: v.to_string(),
        });
    }
    let mut pairs: Vec<(i32, f32)> = indices.into_iter().zip(values).collect();
    pairs.sort_unstable_by_key(|p| p.0);
    if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(VectorError::SparseDuplicateIndex { index: w[0].0 });
    }
    Ok(SparseVector {
        indices: pairs.iter().map(|p| p.0).collect(),
        values: pairs.iter().map(|p| p.1).collect(),
    })
}

/// How deeply metadata may nest objects and arrays: `{"a": {"b": [1]}}` is 3 levels.
///
/// Every stored metadata must be accepted again when it comes back over the wire (serde_json
/// parses at most 128 levels) or from a snapshot, and must be walked (filters, merge patches,
/// serialisation) without deep recursion; 64 levels is far beyond any real metadata.
pub const METADATA_MAX_DEPTH: usize = 64;

/// [`VectorError::MetadataTooDeep`] when `m` nests deeper than [`METADATA_MAX_DEPTH`]; walks
/// the value with an explicit stack, so a deep value cannot overflow the call stack here.
pub(crate) fn check_depth(m: &Value) -> Result<(), VectorError> {
    let mut stack: Vec<(&Value, usize)> = vec![(m, 1)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        if depth > METADATA_MAX_DEPTH {
            return Err(VectorError::MetadataTooDeep {
                depth,
                max: METADATA_MAX_DEPTH,
            });
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    Ok(())
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_is_sorted_with_values_following_their_indices() {
        let s = check_sparse(SparseVector::new(vec![5, -3, 0], vec![1.0, 2.0, 3.0]), 10).unwrap();
        assert_eq!(s, SparseVector::new(vec![-3, 0, 5], vec![2.0, 3.0, 1.0]));
    }

    #[test]
    fn metadata_depth_is_counted_in_containers() {
        let mut v = serde_json::json!(1);
        for _ in 0..METADATA_MAX_DEPTH {
            v = serde_json::json!({ "k": [v] });
        }
        // Each round adds an object and an array: 2 * max levels, too deep.
        assert!(matches!(
            check_depth(&v),
            Err(VectorError::MetadataTooDeep {
                max: METADATA_MAX_DEPTH,
                ..
            })
        ));
        let mut ok = serde_json::json!("leaf");
        for _ in 0..METADATA_MAX_DEPTH {
            ok = serde_json::json!({ "k": ok });
        }
        assert_eq!(check_depth(&ok), Ok(()));
        let too_deep = serde_json::json!({ "k": ok });
        assert_eq!(
            check_depth(&too_deep),
            Err(VectorError::MetadataTooDeep {
                depth: METADATA_MAX_DEPTH + 1,
                max: METADATA_MAX_DEPTH
            })
        );
        assert_eq!(check_depth(&serde_json::json!({})), Ok(()));
    }

    #[test]
    fn sparse_extreme_indices_are_accepted() {
        let s = check_sparse(
            SparseVector::new(vec![i32::MAX, i32::MIN], vec![1.0, 2.0]),
            2,
        )
        .unwrap();
        assert_eq!(s.indices, vec![i32::MIN, i32::MAX]);
    }
}
