//! The vector engine's error type.

/// Everything that can go wrong in [`crate::vector`]: bad input and misuse.
///
/// Each variant carries the offending values; the message says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// A dense vector does not have the index's dimension.
    #[error("Invalid vector dimension: {received}, expected: {expected}")]
    DimensionMismatch {
        /// The length that was given.
        received: usize,
        /// The index's dimension.
        expected: usize,
    },
    /// A configuration or search parameter is out of range.
    #[error("invalid {name}: {value}, expected {expected}")]
    InvalidParameter {
        /// Which parameter.
        name: &'static str,
        /// The value that was given, as text.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// A vector holds NaN or an infinity.
    #[error("vector value at position {position} is {value}, expected a finite number")]
    NonFiniteValue {
        /// Index of the bad value within the vector.
        position: usize,
        /// The value, as text (`NaN`, `inf`, `-inf`).
        value: String,
    },
    /// A zero vector under the cosine metric, where its direction is undefined.
    #[error("zero vector under the cosine metric: cosine similarity is undefined for it")]
    ZeroVector,
}
