//! Similarity metrics for dense vectors and their scores in [0, 1] (DESIGN §2.2).

use serde::{Deserialize, Serialize};

/// How two dense vectors are compared. Every metric's score lies in `[0, 1]`, higher is closer.
///
/// | metric | score |
/// |---|---|
/// | `Cosine` | `(1 + cos(a, b)) / 2` |
/// | `Euclidean` | `1 / (1 + squared_euclidean(a, b))` |
/// | `DotProduct` | `(1 + dot(a, b)) / 2`, clamped to `[0, 1]` |
///
/// On the wire the names are `COSINE`, `EUCLIDEAN` and `DOT_PRODUCT`.
///
/// # Examples
/// ```
/// use flowvec::vector::Metric;
/// let m: Metric = serde_json::from_str("\"DOT_PRODUCT\"").unwrap();
/// assert_eq!(m, Metric::DotProduct);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Metric {
    /// Cosine similarity (the default).
    #[default]
    Cosine,
    /// Squared Euclidean distance.
    Euclidean,
    /// Inner product.
    DotProduct,
}
