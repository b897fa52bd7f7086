//! The sparse engine: one namespace's sparse vectors and exact top-k inner-product search
//! (DESIGN §2.2). PLACEHOLDER: brute force; the pruned inverted index arrives with its own change.

use crate::vector::{TieBreak, TopK};
use std::collections::HashMap;

/// How query values are weighted before scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weighting {
    /// Plain inner product.
    #[default]
    None,
    /// Each query value multiplied by [`idf`] of its index.
    Idf,
}

/// `ln((N - n_t + 0.5) / (n_t + 0.5) + 1)` for `N` documents of which `n_t` hold the term.
pub fn idf(n_docs: u64, doc_freq: u64) -> f32 {
    debug_assert!(doc_freq <= n_docs);
    let (n, df) = (n_docs as f64, doc_freq as f64);
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln() as f32
}

/// One namespace's sparse vectors, addressed by internal `u32` ids chosen by the caller.
/// Vectors are validated by the caller (sorted unique indices, finite values, non-empty).
#[derive(Default)]
pub struct SparseIndex {
    docs: HashMap<u32, (Vec<i32>, Vec<f32>)>,
    doc_freq: HashMap<i32, u64>,
}

impl SparseIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts or replaces `id`'s vector; `indices` sorted ascending and unique, same length as
    /// `values`.
    pub fn insert(&mut self, id: u32, indices: &[i32], values: &[f32]) {
        self.remove(id);
        for t in indices {
            *self.doc_freq.entry(*t).or_default() += 1;
        }
        self.docs.insert(id, (indices.to_vec(), values.to_vec()));
    }

    /// Removes `id`; returns whether it was present.
    pub fn remove(&mut self, id: u32) -> bool {
        let Some((indices, _)) = self.docs.remove(&id) else {
            return false;
        };
        for t in indices {
            if let Some(n) = self.doc_freq.get_mut(&t) {
                *n -= 1;
                if *n == 0 {
                    self.doc_freq.remove(&t);
                }
            }
        }
        true
    }

    /// `id`'s vector (indices ascending).
    pub fn vector(&self, id: u32) -> Option<(Vec<i32>, Vec<f32>)> {
        self.docs.get(&id).cloned()
    }

    /// Number of vectors held (`N` of the IDF formula).
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// How many vectors hold index `term` (`n_t` of the IDF formula).
    pub fn doc_freq(&self, term: i32) -> u64 {
        self.doc_freq.get(&term).copied().unwrap_or(0)
    }

    /// The `k` best vectors sharing at least one index with the query, by inner product,
    /// best first, ties by `tie` (internal id when `None`).
    pub fn search(
        &self,
        indices: &[i32],
        values: &[f32],
        k: usize,
        weighting: Weighting,
        allow: Option<&dyn Fn(u32) -> bool>,
        tie: Option<TieBreak<'_>>,
    ) -> Vec<(u32, f32)> {
        let n = self.docs.len() as u64;
        let q: HashMap<i32, f32> = indices
            .iter()
            .zip(values)
            .map(|(t, v)| {
                let w = match weighting {
                    Weighting::None => 1.0,
                    Weighting::Idf => idf(n, self.doc_freq(*t)),
                };
                (*t, v * w)
            })
            .collect();
        let mut top = TopK::new(k, tie);
        for (&id, (di, dv)) in &self.docs {
            if !allow.is_none_or(|f| f(id)) {
                continue;
            }
            let mut shared = false;
            let mut s = 0.0f32;
            for (t, v) in di.iter().zip(dv) {
                if let Some(qv) = q.get(t) {
                    shared = true;
                    s += qv * v;
                }
            }
            if shared {
                top.push(id, s);
            }
        }
        top.into_sorted_vec()
    }

    /// Approximate heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.docs
            .values()
            .map(|(i, _)| i.len() * 8 + 64)
            .sum::<usize>()
            + self.doc_freq.len() * 24
    }
}
