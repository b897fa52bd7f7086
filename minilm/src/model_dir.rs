//! Where the model's files live: [`ModelFiles`], [`default_model_dir`] and [`MODEL_DIR_ENV`].

use std::path::{Path, PathBuf};

use crate::LoadError;

/// The environment variable naming the model directory (the server's `--model-dir` reads it
/// too, and `scripts/fetch-minilm` fetches into it when it is set).
pub const MODEL_DIR_ENV: &str = "FLOWVEC_MODEL_DIR";

/// The directory `scripts/fetch-minilm` fills: `$FLOWVEC_MODEL_DIR` when set, else
/// `$XDG_CACHE_HOME/flowvec/all-MiniLM-L6-v2`, else `$HOME/.cache/flowvec/all-MiniLM-L6-v2`.
/// `None` when none of these variables is set. Nothing is fetched or checked here.
///
/// # Examples
/// ```
/// let dir = flowvec_minilm::default_model_dir();
/// if let Some(dir) = dir {
///     assert!(dir.is_absolute() || std::env::var_os("FLOWVEC_MODEL_DIR").is_some());
/// }
/// ```
#[must_use]
pub fn default_model_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("flowvec").join("all-MiniLM-L6-v2"))
}

/// The files of a sentence-transformers model directory, as published with the model
/// (`config.json`, `tokenizer.json`, `model.safetensors`, and optionally
/// `sentence_bert_config.json` and `1_Pooling/config.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The BERT configuration (`config.json`).
    pub config: PathBuf,
    /// The Hugging Face tokenizer (`tokenizer.json`).
    pub tokenizer: PathBuf,
    /// The weights (`model.safetensors`).
    pub weights: PathBuf,
    /// `sentence_bert_config.json` (the maximum sequence length), when present.
    pub sentence_config: Option<PathBuf>,
    /// `1_Pooling/config.json` (the pooling mode), when present.
    pub pooling_config: Option<PathBuf>,
}

impl ModelFiles {
    /// The files of `dir`.
    ///
    /// # Errors
    /// [`LoadError::Missing`] naming the first required file that is not there.
    pub fn in_dir(dir: &Path) -> Result<ModelFiles, LoadError> {
        let required = |name: &str| {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(LoadError::Missing { path })
            }
        };
        let optional = |path: PathBuf| path.is_file().then_some(path);
        Ok(ModelFiles {
            config: required("config.json")?,
            tokenizer: required("tokenizer.json")?,
            weights: required("model.safetensors")?,
            sentence_config: optional(dir.join("sentence_bert_config.json")),
            pooling_config: optional(dir.join("1_Pooling").join("config.json")),
        })
    }
}
