//! The error a malformed filter gets: where (column) and what was expected there.

/// A filter that does not parse: the 1-based column and what was expected there.
///
/// Displays as `<message> at column <column>`, e.g.
/// `expected a value after '=' at column 14`.
///
/// # Examples
/// ```
/// use flowvec::vector::filter::{Filter, FilterErrorKind};
///
/// let err = Filter::parse("genre = 'drama' AND year =").unwrap_err();
/// assert_eq!(err.column, 27);
/// assert_eq!(err.kind, FilterErrorKind::Syntax);
/// assert_eq!(err.to_string(), "expected a value after '=' at column 27");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at column {column}")]
pub struct FilterError {
    /// 1-based column (in characters, not bytes) where the problem was found; one past the
    /// last character when the filter ended too early.
    pub column: usize,
    /// What went wrong, e.g. `expected a value after '='`.
    pub message: String,
    /// The class of problem, for callers that react differently to a limit than to a typo.
    pub kind: FilterErrorKind,
}

/// The class of a [`FilterError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FilterErrorKind {
    /// Malformed syntax: something other than what the grammar expects at this column.
    Syntax,
    /// The filter is longer than [`MAX_FILTER_LEN`](super::MAX_FILTER_LEN) bytes.
    TooLong {
        /// Length of the filter in bytes.
        length: usize,
        /// The cap in bytes.
        limit: usize,
    },
    /// Parentheses nest deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    TooDeep {
        /// The cap on nesting levels.
        limit: usize,
    },
    /// An `IN` list holds more than [`MAX_IN_VALUES`](super::MAX_IN_VALUES) values.
    TooManyValues {
        /// The cap on values per list.
        limit: usize,
    },
    /// A `GLOB` pattern is malformed (unclosed `[`, reversed range).
    InvalidGlob,
    /// A number literal does not fit a finite 64-bit float.
    NumberOutOfRange,
}

impl FilterError {
    /// A syntax error at a 1-based column.
    pub(super) fn syntax(column: usize, message: impl Into<String>) -> Self {
        Self {
            column,
            message: message.into(),
            kind: FilterErrorKind::Syntax,
        }
    }
}

/// The 1-based character column of byte offset `at` in `src`.
pub(super) fn column_of(src: &str, at: usize) -> usize {
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    src[..at].chars().count() + 1
}
