//! The one place where a query's or delete's `filter` text becomes the engines' `allow`
//! predicate. Today: parse with [`Filter::parse`] and test each candidate's metadata
//! (`Value::Null` when it has none). The never-short strategy of DESIGN §2.4 (exact scan over
//! the matching records when the filter is selective, fallback when the graph comes back short)
//! belongs here and in [`Namespace::search`](super::namespace::Namespace).

use crate::vector::VectorError;
use crate::vector::filter::Filter;
use serde_json::Value;

/// `Value::Null`, the metadata a filter sees for a record without metadata.
pub(crate) static NO_METADATA: Value = Value::Null;

/// Parses a filter; blank text means no filter.
///
/// # Errors
/// [`VectorError::InvalidFilter`] carrying the parser's error.
pub(crate) fn compile(source: &str) -> Result<Option<Filter>, VectorError> {
    if source.trim().is_empty() {
        return Ok(None);
    }
    Filter::parse(source)
        .map(Some)
        .map_err(|error| VectorError::InvalidFilter {
            filter: source.to_owned(),
            error,
        })
}
