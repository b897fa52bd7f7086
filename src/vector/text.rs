//! Text in: the [`Embedder`] seam that turns text into dense or sparse vectors, so an index can
//! take `data` (raw text) in upserts and queries. Hosts plug in any model behind the trait; the
//! library ships a sparse one (BM25).

mod embedder;

pub use embedder::{EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
