//! [`LoadError`]: why a model directory could not be loaded.

use std::path::PathBuf;

/// Why [`crate::MiniLm::load`] failed. Every message names the file and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file the model needs is not in the directory.
    #[error(
        "model file {path:?} is missing: a model directory holds config.json, tokenizer.json and \
         model.safetensors (scripts/fetch-minilm fetches all-MiniLM-L6-v2 into one)"
    )]
    Missing {
        /// The file looked for.
        path: PathBuf,
    },
    /// A file exists but could not be read.
    #[error("cannot read model file {path:?}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but is not what the model needs.
    #[error("model file {path:?} is not valid: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}
