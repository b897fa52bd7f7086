//! [`MiniLm`]: a sentence-transformers BERT model (all-MiniLM-L6-v2) on the CPU.

use std::fmt;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use flowvec::vector::text::{EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
use tokenizers::{Tokenizer, TruncationParams};

use crate::pooling::mean_normalized;
use crate::{LoadError, ModelFiles};

/// Texts run through the model together by default (after sorting by length, so a batch pads
/// little).
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// sentence-transformers' default maximum sequence length for this model (its
/// `sentence_bert_config.json`); longer texts are truncated to it, as the Python library does.
const DEFAULT_MAX_TOKENS: usize = 256;

/// A sentence-transformers BERT model loaded from its official files: the tokenizer from
/// `tokenizer.json`, the encoder from `config.json` and `model.safetensors`, mean pooling over
/// the real tokens and L2 normalisation. With the files of `all-MiniLM-L6-v2` it gives the
/// Python library's 384-d embeddings (cosine >= 0.999, checked on the dataset's 1,000 dev
/// passages by `tests/minilm_dev.rs`).
///
/// It is an [`Embedder`]: documents and queries embed the same way (the model is symmetric).
/// Pure and `Send + Sync`: one loaded model serves every thread. The matrix products use as
/// many threads as `RAYON_NUM_THREADS` says (default: every core).
///
/// # Examples
/// ```no_run
/// use flowvec::vector::text::{Embedder, Embedding, TextRole};
/// use flowvec_minilm::MiniLm;
///
/// // A directory holding the model's files (scripts/fetch-minilm fetches one).
/// let model = MiniLm::load("/path/to/all-MiniLM-L6-v2")?;
/// let out = model.embed(&["A cat sat on the mat."], TextRole::Document)?;
/// let Embedding::Dense(v) = &out[0] else { unreachable!() };
/// assert_eq!(v.len(), 384);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
    max_tokens: usize,
    batch_size: usize,
    name: String,
}

impl fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLm")
            .field("name", &self.name)
            .field("dimension", &self.dimension)
            .field("max_tokens", &self.max_tokens)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

/// The part of `sentence_bert_config.json` read here.
#[derive(serde::Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

/// The part of `1_Pooling/config.json` read here.
#[derive(serde::Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn invalid(path: &Path, message: impl fmt::Display) -> LoadError {
    LoadError::Invalid {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

fn json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    serde_json::from_slice(&read(path)?).map_err(|err| invalid(path, err))
}

impl MiniLm {
    /// Loads the model in `dir` (see [`ModelFiles`] for the files it reads).
    ///
    /// # Errors
    /// A [`LoadError`] naming the file that is missing, unreadable or not what a
    /// sentence-transformers BERT model with mean pooling has.
    pub fn load(dir: impl AsRef<Path>) -> Result<MiniLm, LoadError> {
        let dir = dir.as_ref();
        let files = ModelFiles::in_dir(dir)?;
        let config: BertConfig = json(&files.config)?;
        let max_tokens = match &files.sentence_config {
            Some(path) => json::<SentenceConfig>(path)?
                .max_seq_length
                .unwrap_or(DEFAULT_MAX_TOKENS),
            None => DEFAULT_MAX_TOKENS,
        };
        if max_tokens == 0 || max_tokens > config.max_position_embeddings {
            return Err(invalid(
                files.sentence_config.as_deref().unwrap_or(&files.config),
                format!(
                    "max_seq_length {max_tokens} must be between 1 and the model's \
                     max_position_embeddings {}",
                    config.max_position_embeddings
                ),
            ));
        }
        if let Some(path) = &files.pooling_config {
            let pooling: PoolingConfig = json(path)?;
            if !pooling.pooling_mode_mean_tokens
                || pooling.pooling_mode_cls_token
                || pooling.pooling_mode_max_tokens
            {
                return Err(invalid(
                    path,
                    "only mean pooling (pooling_mode_mean_tokens alone) is supported",
                ));
            }
        }

        let mut tokenizer =
            Tokenizer::from_file(&files.tokenizer).map_err(|err| invalid(&files.tokenizer, err))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|err| invalid(&files.tokenizer, err))?;

        let device = Device::Cpu;
        let weights = read(&files.weights)?;
        let vars = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|err| invalid(&files.weights, err))?;
        let model = BertModel::load(vars, &config).map_err(|err| invalid(&files.weights, err))?;
        let dimension = config.hidden_size;
        let name = if dimension == 384 && config.num_hidden_layers == 6 {
            "all-MiniLM-L6-v2".to_string()
        } else {
            format!(
                "sentence-bert {}x{dimension} ({})",
                config.num_hidden_layers,
                dir_name(dir)
            )
        };
        Ok(MiniLm {
            model,
            tokenizer,
            device,
            dimension,
            max_tokens,
            batch_size: DEFAULT_BATCH_SIZE,
            name,
        })
    }

    /// The same model running `batch_size` texts through the encoder at a time (at least 1).
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> MiniLm {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The dimension of every embedding (384 for all-MiniLM-L6-v2).
    #[must_use]
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Texts longer than this many tokens (special tokens included) are truncated.
    #[must_use]
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// One unit-length embedding per text, in order.
    ///
    /// # Errors
    /// An [`EmbedError`] naming this model when tokenizing or the encoder fails.
    pub fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let fail = |what: &str, err: &dyn fmt::Display| {
            EmbedError::new(self.name.clone(), format!("{what}: {err}"))
        };
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|err| fail("tokenizing", &err))?;
        // Longest first, so each batch pads to lengths close to its own.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let width = batch
                .iter()
                .map(|&i| encodings[i].get_ids().len())
                .max()
                .unwrap_or(0);
            let mut ids = vec![0u32; batch.len() * width];
            let mut mask = vec![0u32; batch.len() * width];
            for (row, &i) in batch.iter().enumerate() {
                let tokens = encodings[i].get_ids();
                ids[row * width..row * width + tokens.len()].copy_from_slice(tokens);
                mask[row * width..row * width + tokens.len()].fill(1);
            }
            let hidden = self
                .encode(ids, mask, batch.len(), width)
                .map_err(|err| fail("running the encoder", &err))?;
            let per_text = width * self.dimension;
            for (row, &i) in batch.iter().enumerate() {
                let tokens = &hidden[row * per_text..(row + 1) * per_text];
                out[i] = mean_normalized(tokens, self.dimension, encodings[i].get_ids().len());
            }
        }
        Ok(out)
    }

    /// The encoder's last hidden states for a padded batch, row-major `(rows, width, dim)`.
    fn encode(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        rows: usize,
        width: usize,
    ) -> candle_core::Result<Vec<f32>> {
        let ids = Tensor::from_vec(ids, (rows, width), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        hidden.flatten_all()?.to_vec1::<f32>()
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| PathBuf::from(dir).display().to_string())
}

impl Embedder for MiniLm {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> EmbeddingKind {
        EmbeddingKind::Dense {
            dimension: self.dimension,
        }
    }

    fn embed(&self, texts: &[&str], _role: TextRole) -> Result<Vec<Embedding>, EmbedError> {
        Ok(self
            .embed_texts(texts)?
            .into_iter()
            .map(Embedding::Dense)
            .collect())
    }
}
