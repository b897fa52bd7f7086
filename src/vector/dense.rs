//! The dense engine: one namespace's dense vectors and their nearest-neighbour search
//! (DESIGN §2.3). PLACEHOLDER: an exact scan only; the graph arrives with its own change.

use crate::vector::{Metric, TieBreak, TopK, VectorError};
use std::collections::HashMap;

/// Parameters of a [`DenseIndex`].
#[derive(Debug, Clone, PartialEq)]
pub struct DenseConfig {
    /// Number of components of every vector.
    pub dimension: usize,
    /// How vectors are compared.
    pub metric: Metric,
}

/// One namespace's dense vectors, addressed by internal `u32` ids chosen by the caller.
///
/// Stores each vector once; [`DenseIndex::vector`] gives it back as inserted (for cosine the
/// norm is kept beside the unit vector).
pub struct DenseIndex {
    config: DenseConfig,
    vectors: HashMap<u32, Vec<f32>>,
}

impl DenseConfig {
    /// A configuration with default search parameters.
    pub fn new(dimension: usize, metric: Metric) -> Self {
        DenseConfig { dimension, metric }
    }
}

impl DenseIndex {
    /// An empty index.
    ///
    /// # Errors
    /// [`VectorError::InvalidParameter`] for a zero dimension.
    pub fn new(config: DenseConfig) -> Result<Self, VectorError> {
        if config.dimension == 0 {
            return Err(VectorError::InvalidParameter {
                name: "dimension",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        Ok(DenseIndex {
            config,
            vectors: HashMap::new(),
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
        self.vectors.insert(id, vector.to_vec());
        Ok(())
    }

    /// Checks a vector against the index's dimension and metric without inserting it.
    ///
    /// # Errors
    /// As for [`DenseIndex::insert`].
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
        self.vectors.remove(&id).is_some()
    }

    /// Whether `id` is present.
    pub fn contains(&self, id: u32) -> bool {
        self.vectors.contains_key(&id)
    }

    /// `id`'s vector as inserted.
    pub fn vector(&self, id: u32) -> Option<Vec<f32>> {
        self.vectors.get(&id).cloned()
    }

    /// Number of vectors held.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// The `k` nearest vectors to `query` among those `allow` accepts, as `(id, score)` with the
    /// score in `[0, 1]`, best first, ties by `tie` (internal id when `None`). `ef` widens a
    /// graph search (ignored by an exact scan).
    ///
    /// # Errors
    /// The query is validated like an inserted vector.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        _ef: Option<usize>,
        allow: Option<&dyn Fn(u32) -> bool>,
        tie: Option<TieBreak<'_>>,
    ) -> Result<Vec<(u32, f32)>, VectorError> {
        self.validate(query)?;
        let mut top = TopK::new(k, tie);
        for (&id, v) in &self.vectors {
            if allow.is_none_or(|f| f(id)) {
                top.push(id, score(self.config.metric, query, v));
            }
        }
        Ok(top.into_sorted_vec())
    }

    /// Approximate heap bytes held by the index.
    pub fn memory_bytes(&self) -> usize {
        self.vectors.capacity() * (8 + std::mem::size_of::<Vec<f32>>())
            + self.vectors.len() * self.config.dimension * 4
    }
}

fn score(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    match metric {
        Metric::Cosine => {
            let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
            let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
            ((1.0 + dot / (na * nb)) / 2.0).clamp(0.0, 1.0)
        }
        Metric::Euclidean => {
            let d: f32 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
            1.0 / (1.0 + d)
        }
        Metric::DotProduct => ((1.0 + dot) / 2.0).clamp(0.0, 1.0),
    }
}
