//! Mean pooling over a sequence's real tokens, then L2 normalisation (what
//! sentence-transformers does for all-MiniLM-L6-v2 with `normalize_embeddings=True`).

/// The unit-length mean of the first `len` token vectors of `tokens` (row-major, `width`
/// values per token), summed and normalised in f64. A zero mean stays zero.
pub(crate) fn mean_normalized(tokens: &[f32], width: usize, len: usize) -> Vec<f32> {
    let mut sum = vec![0f64; width];
    for token in tokens.chunks_exact(width).take(len) {
        for (s, &v) in sum.iter_mut().zip(token) {
            *s += f64::from(v);
        }
    }
    // The mean's scale cancels in the normalisation; dividing by `len` first keeps the
    // arithmetic identical to mean-then-normalise.
    let count = len.max(1) as f64;
    sum.iter_mut().for_each(|s| *s /= count);
    let norm = sum.iter().map(|s| s * s).sum::<f64>().sqrt();
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    sum.iter().map(|s| (s * scale) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::mean_normalized;

    #[test]
    fn averages_only_the_real_tokens_and_normalises() {
        // Two real tokens, then a padding token that must not count.
        let tokens = [3.0, 0.0, 1.0, 4.0, 100.0, -100.0];
        let v = mean_normalized(&tokens, 2, 2);
        // mean (2, 2) -> unit (1/sqrt 2, 1/sqrt 2)
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - h).abs() < 1e-7 && (v[1] - h).abs() < 1e-7, "{v:?}");
    }

    #[test]
    fn a_zero_mean_stays_zero() {
        assert_eq!(
            mean_normalized(&[1.0, -1.0, -1.0, 1.0], 2, 2),
            vec![0.0, 0.0]
        );
    }
}
