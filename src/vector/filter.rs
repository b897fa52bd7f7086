//! The metadata filter language (DESIGN §2.4).
//! PLACEHOLDER API; the parser and evaluator arrive with their own change.

use serde_json::Value;
use std::fmt;

/// A parsed metadata filter, compiled once and evaluated per record.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    source: String,
}

/// A filter that does not parse: the 1-based column and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at column {column}")]
pub struct FilterError {
    /// 1-based column (in characters) where the problem was found.
    pub column: usize,
    /// What went wrong, e.g. `expected a value after '='`.
    pub message: String,
}

impl Filter {
    /// Parses a filter.
    ///
    /// # Errors
    /// [`FilterError`] with the column and what was expected.
    pub fn parse(source: &str) -> Result<Filter, FilterError> {
        Err(FilterError {
            column: 1,
            message: format!("filters are not supported yet: {source:?}"),
        })
    }

    /// Whether a record's metadata (`Value::Null` when it has none) satisfies the filter.
    pub fn matches(&self, _metadata: &Value) -> bool {
        true
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
