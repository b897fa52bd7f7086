//! The filter AST. It is also the compiled form: paths are pre-split into segments, `GLOB`
//! patterns are compiled and literals are typed when the filter is parsed, so evaluation
//! ([`Expr::matches`]) walks it directly without allocating.

use super::glob::GlobPattern;
use super::literal_list::LiteralList;
use serde_json::{Number, Value};

/// A filter expression.
///
/// [`Filter::parse`](super::Filter::parse) builds it with every `And`/`Or` holding at least two
/// children; parentheses leave no node of their own (`(a = 1)` is the comparison), and
/// explicit grouping is kept (`a = 1 AND (b = 2 AND c = 3)` is an `And` inside an `And`), so
/// printing and re-parsing gives back the same tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// All children hold (`AND`); an empty list holds.
    And(Vec<Expr>),
    /// At least one child holds (`OR`); an empty list does not hold.
    Or(Vec<Expr>),
    /// `path op value`.
    Compare {
        /// The field compared.
        path: Path,
        /// The operator.
        op: CompareOp,
        /// The literal on the right; a number for `<`, `<=`, `>`, `>=`.
        value: Literal,
    },
    /// `path IN (values…)`, or `path NOT IN (values…)` when `negated`.
    In {
        /// The field compared.
        path: Path,
        /// `NOT IN`: every `path != value` holds.
        negated: bool,
        /// The list, in source order, at least one value.
        values: LiteralList,
    },
    /// `path CONTAINS value`, or `path NOT CONTAINS value` when `negated`.
    Contains {
        /// The field, which must hold an array.
        path: Path,
        /// `NOT CONTAINS`: the field is an array without an element equal to `value`.
        negated: bool,
        /// The element looked for.
        value: Literal,
    },
    /// `path GLOB 'pattern'`, or `path NOT GLOB 'pattern'` when `negated`.
    Glob {
        /// The field, which must hold a string.
        path: Path,
        /// `NOT GLOB`: the field is a string that does not match.
        negated: bool,
        /// The compiled pattern.
        pattern: GlobPattern,
    },
    /// `HAS FIELD path`, or `HAS NOT FIELD path` when `negated`.
    HasField {
        /// The field whose presence is tested.
        path: Path,
        /// `HAS NOT FIELD`: the path does not resolve.
        negated: bool,
    },
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CompareOp {
    /// The operator as written in a filter.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }

    /// Whether the operator orders numbers (`<`, `<=`, `>`, `>=`).
    #[must_use]
    pub fn is_ordering(self) -> bool {
        matches!(
            self,
            CompareOp::Lt | CompareOp::Le | CompareOp::Gt | CompareOp::Ge
        )
    }
}

/// A typed literal: a string, a number or a boolean. There is no `null` literal.
///
/// Numbers keep their JSON kind: integers written without `.` or exponent are integers (as
/// `u64` or `i64`; larger ones become floats, as `serde_json` reads them), the rest are
/// finite floats. Comparison is numeric across kinds (`1 = 1.0`).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `'text'` or `"text"`.
    String(String),
    /// `42`, `-3`, `2.5`, `1e6`.
    Number(Number),
    /// `true` / `false`, any case.
    Bool(bool),
}

/// A field path: `a.b[0][#-1]`, pre-split into segments.
///
/// # Examples
/// ```
/// use flowvec::vector::filter::{Path, Segment};
/// use serde_json::json;
///
/// let path = Path::parse("economy.major_industries[#-1]").unwrap();
/// assert_eq!(path.segments()[2], Segment::FromEnd(1));
/// let metadata = json!({"economy": {"major_industries": ["Tourism", "Finance"]}});
/// assert_eq!(path.resolve(&metadata), Some(&json!("Finance")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Path {
    segments: Box<[Segment]>,
}

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// `.name` (or the leading name): an object key, `[A-Za-z_][A-Za-z0-9_]*`.
    Field(Box<str>),
    /// `[i]`: the array element at 0-based index `i`.
    Index(usize),
    /// `[#-k]`: the array element at `len - k` (`k >= 1`; `[#-1]` is the last one).
    FromEnd(usize),
}

impl Path {
    /// Builds a path from segments that a parser produced (first is a `Field`).
    pub(super) fn from_segments(segments: Vec<Segment>) -> Path {
        Path {
            segments: segments.into_boxed_slice(),
        }
    }

    /// Parses a path on its own, with the same rules as inside a filter.
    ///
    /// # Errors
    /// [`FilterError`](super::FilterError) if `source` is not exactly one path.
    pub fn parse(source: &str) -> Result<Path, super::FilterError> {
        super::parser::parse_path(source)
    }

    /// The segments, first to last; the first is always a [`Segment::Field`] when parsed.
    #[must_use]
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The value this path names in `metadata`, if there is one (a `null` value is `Some`).
    #[must_use]
    pub fn resolve<'v>(&self, metadata: &'v Value) -> Option<&'v Value> {
        let mut value = metadata;
        for segment in &*self.segments {
            value = match (segment, value) {
                (Segment::Field(name), Value::Object(map)) => map.get(&**name)?,
                (Segment::Index(i), Value::Array(items)) => items.get(*i)?,
                (Segment::FromEnd(k), Value::Array(items)) => {
                    items.get(items.len().checked_sub(*k)?)?
                }
                _ => return None,
            };
        }
        Some(value)
    }
}
