//! The metadata filter language (DESIGN §2.4): parse → AST → evaluate, and print back.
//!
//! A filter is an SQL-like boolean expression over a record's JSON metadata, compatible with
//! the reference service:
//!
//! ```text
//! genre = 'drama' AND year >= 2000 AND tags CONTAINS 'classic'
//! (city GLOB 'I*' OR country IN ("Turkey", 'Greece')) AND HAS NOT FIELD archived
//! economy.major_industries[#-1] != 'Finance' AND geography.coordinates.latitude > 39.5
//! ```
//!
//! **Parsing** ([`Filter::parse`]) is a hand-written lexer and recursive-descent parser
//! (grammar in the parser module) that reports the 1-based column and what was expected for
//! every malformed filter, and enforces [`MAX_FILTER_LEN`], [`MAX_DEPTH`] and
//! [`MAX_IN_VALUES`] with their own [`FilterErrorKind`]s. It never panics and checks depth
//! before recursing. **The AST is the compiled form**: paths are pre-split into
//! [`Segment`]s, `GLOB` patterns compiled into [`GlobPattern`]s, literals typed, so
//! [`Filter::matches`] walks it once per record without allocating (`IN` lists of 12 or more
//! values carry a sorted index, see [`LiteralList`]). **Printing** (`Display`) gives a
//! canonical string that parses back to the same AST. **Planning** helpers for the record
//! layer: [`Filter::complexity`] (a cost figure) and [`Filter::constraints`] (necessary
//! `=`/`IN`/range/prefix conditions a value index can answer).
//!
//! Files: `lexer.rs` (tokens), `parser.rs` (grammar, errors, limits checks), `ast.rs` (the
//! tree and paths), `literal_list.rs`, `glob.rs` (pattern compiler and matcher), `eval.rs`
//! (semantics), `print.rs` (canonical form), `plan.rs` (constraints), `limits.rs`,
//! `error.rs`.
//!
//! # Language
//! - Operators: `=`, `!=`, `<`, `<=`, `>`, `>=`, `GLOB`, `NOT GLOB`, `IN`, `NOT IN`,
//!   `CONTAINS`, `NOT CONTAINS`, `HAS FIELD`, `HAS NOT FIELD`, `AND`, `OR`, parentheses.
//!   `AND` binds tighter than `OR`. There is no prefix `NOT`.
//! - Keywords and `true`/`false` are case-insensitive; field names are case-sensitive.
//! - Paths: `name(.name | [i] | [#-k])*` written without spaces, names
//!   `[A-Za-z_][A-Za-z0-9_]*` (as in the reference). `[#-1]` is the last element.
//!   Keywords are recognised by position, so a field may be called `in` or `and`.
//! - Literals: strings in `'…'` or `"…"` (backslash escapes `\`, `'` and `"`; any other
//!   escape is an error), numbers (`42`, `-7`, `2.5`, `1e6`), `true`, `false`. A bare word
//!   is not a literal (`city = x` is an error). There is no `null` literal.
//!   The reference's note that booleans "are represented as 1 or 0" is not followed: `1` is
//!   a number and does not equal `true` (DESIGN §2.4: wrong type is false).
//! - Limits: [`MAX_FILTER_LEN`] bytes, [`MAX_DEPTH`] nested parentheses, [`MAX_IN_VALUES`]
//!   values per `IN` list.
//! - An empty filter is an error here (`expected a condition at column 1`); the record layer
//!   treats an absent or empty `filter` field as "no filter" before calling the parser.
//!
//! # Semantics
//! - A predicate on a missing field, or on a value of the wrong type, is false — also for
//!   `!=`, `NOT IN`, `NOT GLOB` and `NOT CONTAINS`. Only `HAS NOT FIELD` holds for a missing
//!   field.
//! - `null` exists (`HAS FIELD` holds) but equals no literal, and every comparison on it is
//!   false (`!=` included).
//! - `=`/`!=`/`IN` on strings, numbers and booleans; numbers compare exactly across integer
//!   and float kinds (`1 = 1.0`); `<`, `<=`, `>`, `>=` order numbers only (a non-number
//!   literal after them is a parse error).
//! - `IN` is the `OR` of `=`; `NOT IN` the `AND` of `!=` (so a mixed-type `NOT IN` list is
//!   false for every value).
//! - `CONTAINS v` needs an array field with an element `= v`; `NOT CONTAINS v` an array field
//!   without one. Strings are not searched for substrings.
//! - `GLOB` needs a string field; case-sensitive `*`, `?`, `[abc]`, `[a-z]`, `[^…]` (see
//!   [`GlobPattern`]).
//! - Metadata `Value::Null` (a record without metadata) has no fields.

mod ast;
mod error;
mod eval;
mod glob;
mod lexer;
mod limits;
mod literal_list;
mod parser;
mod plan;
mod print;

pub use ast::{CompareOp, Expr, Literal, Path, Segment};
pub use error::{FilterError, FilterErrorKind};
pub use glob::{GlobError, GlobPattern};
pub use limits::{MAX_DEPTH, MAX_FILTER_LEN, MAX_IN_VALUES};
pub use literal_list::LiteralList;
pub use plan::Constraint;

use serde_json::Value;
use std::fmt;

/// A parsed metadata filter, compiled once and evaluated per record.
///
/// # Examples
/// ```
/// use flowvec::vector::filter::Filter;
/// use serde_json::json;
///
/// let filter = Filter::parse("genre = 'drama' and (year >= 2000 OR tags contains \"classic\")")?;
/// assert!(filter.matches(&json!({"genre": "drama", "year": 1950, "tags": ["classic"]})));
/// assert!(!filter.matches(&json!({"genre": "comedy", "year": 2010})));
/// assert!(!filter.matches(&serde_json::Value::Null)); // no metadata, no fields
/// assert_eq!(
///     filter.to_string(),
///     "genre = 'drama' AND (year >= 2000 OR tags CONTAINS 'classic')"
/// );
/// # Ok::<(), flowvec::vector::filter::FilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    expr: Expr,
}

impl Filter {
    /// Parses and compiles a filter.
    ///
    /// # Errors
    /// [`FilterError`] with the 1-based column and what was expected there, for every
    /// malformed filter, and for filters over the limits ([`MAX_FILTER_LEN`], [`MAX_DEPTH`],
    /// [`MAX_IN_VALUES`]).
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::Filter;
    ///
    /// let err = Filter::parse("city = Istanbul").unwrap_err();
    /// assert_eq!(err.column, 8);
    /// assert_eq!(
    ///     err.to_string(),
    ///     "expected a value after '=', found bare word 'Istanbul' (quote strings: '…') at column 8"
    /// );
    /// ```
    pub fn parse(source: &str) -> Result<Filter, FilterError> {
        parser::parse(source).map(|expr| Filter { expr })
    }

    /// Whether a record's metadata (`Value::Null` when it has none) satisfies the filter.
    /// Does not allocate.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::Filter;
    /// use serde_json::json;
    ///
    /// let filter = Filter::parse("HAS NOT FIELD archived").unwrap();
    /// assert!(filter.matches(&serde_json::Value::Null));
    /// assert!(!filter.matches(&json!({"archived": null})));
    /// ```
    #[must_use]
    pub fn matches(&self, metadata: &Value) -> bool {
        self.expr.matches(metadata)
    }

    /// The compiled expression, for callers that plan with it (a value index, selectivity).
    #[must_use]
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Wraps an expression built by hand. It is not validated against the limits; for the
    /// printed form to parse back to it, every `And`/`Or` needs at least two children, `IN`
    /// lists at least one value, ordering operators a number, and field names must be
    /// identifiers (build paths with [`Path::parse`]).
    #[must_use]
    pub fn from_expr(expr: Expr) -> Filter {
        Filter { expr }
    }
}

impl fmt::Display for Filter {
    /// The canonical filter string; [`Filter::parse`] of it gives an equal filter.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)
    }
}
