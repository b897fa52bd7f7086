//! The [`Embedder`] trait: text in, a dense or a sparse vector out.

use crate::vector::SparseVector;
use std::fmt;

/// Whether a text is stored (a document) or searched with (a query). Asymmetric models and
/// BM25 weigh the two sides differently (BM25: term weights for documents, term presence for
/// queries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextRole {
    /// A text to store: the `data` of an upserted record.
    Document,
    /// A text to search with: the `data` of a query.
    Query,
}

/// What an [`Embedder`] produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbeddingKind {
    /// Dense vectors of this many dimensions.
    Dense {
        /// The dimension of every vector produced.
        dimension: usize,
    },
    /// Sparse vectors (indices in the signed 32-bit range).
    Sparse,
}

/// One embedded text.
#[derive(Debug, Clone, PartialEq)]
pub enum Embedding {
    /// A dense vector.
    Dense(Vec<f32>),
    /// A sparse vector.
    Sparse(SparseVector),
}

/// Why an [`Embedder`] could not embed a batch: the message names the embedder and the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedder {embedder:?} failed: {message}")]
pub struct EmbedError {
    /// The embedder's [`Embedder::name`].
    pub embedder: String,
    /// What went wrong.
    pub message: String,
}

impl EmbedError {
    /// An error of `embedder` with `message`.
    #[must_use]
    pub fn new(embedder: impl Into<String>, message: impl Into<String>) -> Self {
        EmbedError {
            embedder: embedder.into(),
            message: message.into(),
        }
    }
}

/// A text embedding model: a batch of texts in, one [`Embedding`] per text out, in order.
///
/// Implementations are pure functions of their inputs (and of the model they loaded): the same
/// texts give the same vectors, so a host may embed before it logs a write and replay the
/// logged vectors. They hold no per-index state and read no clock. `Send + Sync` so one model
/// serves every request thread.
///
/// # Examples
/// ```
/// use flowvec::vector::text::{EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
///
/// /// A toy model: text length and vowel count.
/// #[derive(Debug)]
/// struct Toy;
/// impl Embedder for Toy {
///     fn name(&self) -> &str {
///         "toy"
///     }
///     fn kind(&self) -> EmbeddingKind {
///         EmbeddingKind::Dense { dimension: 2 }
///     }
///     fn embed(&self, texts: &[&str], _role: TextRole) -> Result<Vec<Embedding>, EmbedError> {
///         Ok(texts
///             .iter()
///             .map(|t| {
///                 let vowels = t.chars().filter(|c| "aeiou".contains(*c)).count();
///                 Embedding::Dense(vec![t.len() as f32, vowels as f32])
///             })
///             .collect())
///     }
/// }
/// let out = Toy.embed(&["hello", "sky"], TextRole::Document)?;
/// assert_eq!(out[1], Embedding::Dense(vec![3.0, 0.0]));
/// # Ok::<(), EmbedError>(())
/// ```
pub trait Embedder: Send + Sync + fmt::Debug {
    /// A short name for errors and `info` (e.g. `"bm25"`, `"all-MiniLM-L6-v2"`).
    fn name(&self) -> &str;

    /// Whether this model makes dense vectors (and of which dimension) or sparse ones.
    fn kind(&self) -> EmbeddingKind;

    /// One embedding per text of `texts`, in order, each of [`Embedder::kind`].
    ///
    /// # Errors
    /// An [`EmbedError`] when the batch cannot be embedded (the model failed, a text it cannot
    /// take); no partial result.
    fn embed(&self, texts: &[&str], role: TextRole) -> Result<Vec<Embedding>, EmbedError>;
}
