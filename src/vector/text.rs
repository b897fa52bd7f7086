//! Text in: the [`Embedder`] seam that turns text into dense or sparse vectors, so an index can
//! take `data` (raw text) in upserts and queries. Hosts plug in any model behind the trait; the
//! library ships a sparse one, [`Bm25`], over a documented [`tokenize`]r.

mod bm25;
mod embedder;
mod tokenizer;

pub use bm25::{Bm25, Bm25Params};
pub use embedder::{EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
pub use tokenizer::{STOPWORDS, is_stopword, term_count, tokenize};
