//! Inverse document frequency, the weight `Weighting::Idf` puts on query values.

/// `ln((N - n_t + 0.5) / (n_t + 0.5) + 1)` for `N` documents of which `n_t` hold the term
/// (the BM25 / Lucene IDF, always positive).
///
/// Computed in `f64` and rounded once; [`SparseIndex::search`](super::SparseIndex::search) uses
/// the unrounded `f64` value, so its scores match a float64 reference to the last `f32` bit.
///
/// # Panics
/// In debug builds, if `doc_freq > n_docs` (a statistics bug in the caller).
///
/// # Examples
/// ```
/// use flowvec::vector::sparse::idf;
/// // A term in one document of one: ln(0.5 / 1.5 + 1) = ln(4/3).
/// assert!((idf(1, 1) - (4.0f32 / 3.0).ln()).abs() < 1e-7);
/// // Rarer terms weigh more.
/// assert!(idf(1000, 3) > idf(1000, 300));
/// ```
#[must_use]
pub fn idf(n_docs: u64, doc_freq: u64) -> f32 {
    idf_f64(n_docs, doc_freq) as f32
}

/// [`idf`] before rounding to `f32`.
pub(super) fn idf_f64(n_docs: u64, doc_freq: u64) -> f64 {
    debug_assert!(
        doc_freq <= n_docs,
        "doc_freq {doc_freq} exceeds the document count {n_docs}"
    );
    let (n, df) = (n_docs as f64, doc_freq as f64);
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values() {
        assert_eq!(idf_f64(1, 1), (4.0f64 / 3.0).ln());
        assert_eq!(idf_f64(0, 0), 2.0f64.ln());
        // N = 43000, n_t = 1: ln(42999.5 / 1.5 + 1)
        assert_eq!(idf_f64(43_000, 1), (42_999.5f64 / 1.5 + 1.0).ln());
        assert_eq!(idf(10, 4), idf_f64(10, 4) as f32);
    }

    #[test]
    fn positive_and_decreasing_in_doc_freq() {
        let n = 1000;
        let mut prev = f64::INFINITY;
        for df in 0..=n {
            let w = idf_f64(n, df);
            assert!(w > 0.0 && w < prev, "df {df}: {w} !< {prev}");
            prev = w;
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "exceeds the document count")]
    fn doc_freq_above_count_is_a_bug() {
        let _ = idf(3, 4);
    }
}
