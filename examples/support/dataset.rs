//! Readers for the benchmark dataset's files (`../shared/datasets/minilm-text`), shared by the
//! example programs: TEXMEX `.fvecs` / `.ivecs`, sparse JSON lines, and plain text lines.
#![allow(dead_code)] // each example uses the readers it needs

use flowvec::vector::SparseVector;
use std::error::Error;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Rows of a TEXMEX file: per row a little-endian `u32` count, then that many 4-byte words.
fn read_words(path: &Path) -> Result<Vec<Vec<[u8; 4]>>, Box<dyn Error>> {
    let bytes = fs::read(path)?;
    let mut rows = Vec::new();
    let mut rest = bytes.as_slice();
    while !rest.is_empty() {
        let (head, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| format!("{}: truncated row header", path.display()))?;
        let len = 4 * u32::from_le_bytes(*head) as usize;
        if tail.len() < len {
            return Err(format!("{}: truncated row", path.display()).into());
        }
        let (row, tail) = tail.split_at(len);
        rows.push(
            row.chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect(),
        );
        rest = tail;
    }
    Ok(rows)
}

/// A `.fvecs` file: one `f32` vector per row.
pub(crate) fn read_fvecs(path: &Path) -> Result<Vec<Vec<f32>>, Box<dyn Error>> {
    Ok(read_words(path)?
        .into_iter()
        .map(|r| r.into_iter().map(f32::from_le_bytes).collect())
        .collect())
}

/// An `.ivecs` file (ground truth): one list of base ids per row.
pub(crate) fn read_ivecs(path: &Path) -> Result<Vec<Vec<u32>>, Box<dyn Error>> {
    Ok(read_words(path)?
        .into_iter()
        .map(|r| r.into_iter().map(u32::from_le_bytes).collect())
        .collect())
}

/// A sparse `.jsonl` file: one `{"indices": [...], "values": [...]}` per line.
pub(crate) fn read_sparse(path: &Path) -> Result<Vec<SparseVector>, Box<dyn Error>> {
    BufReader::new(fs::File::open(path)?)
        .lines()
        .map(|l| Ok(serde_json::from_str(&l?)?))
        .collect()
}

/// A text file's lines.
pub(crate) fn read_lines(path: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    Ok(fs::read_to_string(path)?
        .lines()
        .map(String::from)
        .collect())
}
