//! Planning helpers for the record layer: a cheap cost figure, and the necessary conditions a
//! value index can answer (`=`, `IN`, numeric ranges, `CONTAINS`, `GLOB` prefixes).
//!
//! [`Filter::constraints`] returns conditions that every matching record satisfies (never
//! the other way round): a value index intersects the candidate sets of some or all of them,
//! then runs [`Filter::matches`] on the candidates for the exact answer. Extraction looks
//! through `AND` (any depth) and turns an `OR` whose branches all pin the same field to
//! values (`genre = 'a' OR genre IN ('b', 'c')`) into one [`Constraint::OneOf`]; anything
//! else (`!=`, `NOT …`, `HAS FIELD`, other `OR`s) yields nothing, which is always safe.

use super::Filter;
use super::ast::{CompareOp, Expr, Literal, Path};
use super::eval::compare_numbers;
use serde_json::{Number, Value};
use std::cmp::Ordering;
use std::ops::Bound;

/// A necessary condition on one field, borrowed from a [`Filter`].
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint<'f> {
    /// The field equals one of these literals, with the filter's equality: same type, numbers
    /// compared numerically (`1` and `1.0` are equal), strings byte for byte.
    OneOf {
        /// The field.
        path: &'f Path,
        /// The accepted values, in filter order (duplicates possible).
        values: Vec<&'f Literal>,
    },
    /// The field is a number within these bounds (all range predicates on the field in one
    /// `AND`, intersected).
    Range {
        /// The field.
        path: &'f Path,
        /// Lower bound (from `>` / `>=`).
        lower: Bound<&'f Number>,
        /// Upper bound (from `<` / `<=`).
        upper: Bound<&'f Number>,
    },
    /// The field is an array with an element equal to this literal (from `CONTAINS`).
    Element {
        /// The field.
        path: &'f Path,
        /// The element looked for, with the filter's equality.
        value: &'f Literal,
    },
    /// The field is a string starting with this prefix (from `GLOB 'prefix…'`).
    Prefix {
        /// The field.
        path: &'f Path,
        /// The literal start of the pattern, never empty.
        prefix: &'f str,
    },
}

impl Constraint<'_> {
    /// The field the constraint is on.
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Constraint::OneOf { path, .. }
            | Constraint::Range { path, .. }
            | Constraint::Element { path, .. }
            | Constraint::Prefix { path, .. } => path,
        }
    }

    /// Whether `metadata` satisfies the constraint (for checking an index, and in tests).
    #[must_use]
    pub fn admits(&self, metadata: &Value) -> bool {
        let Some(field) = self.path().resolve(metadata) else {
            return false;
        };
        let equal = |literal: &Literal, value: &Value| match (literal, value) {
            (Literal::String(a), Value::String(b)) => a == b,
            (Literal::Bool(a), Value::Bool(b)) => a == b,
            (Literal::Number(a), Value::Number(b)) => {
                compare_numbers(a, b) == Some(Ordering::Equal)
            }
            _ => false,
        };
        match (self, field) {
            (Constraint::OneOf { values, .. }, _) => values.iter().any(|v| equal(v, field)),
            (Constraint::Element { value, .. }, Value::Array(items)) => {
                items.iter().any(|item| equal(value, item))
            }
            (Constraint::Range { lower, upper, .. }, Value::Number(x)) => {
                let within = |bound: &Bound<&Number>, below: Ordering| match bound {
                    Bound::Unbounded => true,
                    Bound::Included(b) => compare_numbers(x, b).is_some_and(|o| o != below),
                    Bound::Excluded(b) => {
                        compare_numbers(x, b).is_some_and(|o| o == below.reverse())
                    }
                };
                within(lower, Ordering::Less) && within(upper, Ordering::Greater)
            }
            (Constraint::Prefix { prefix, .. }, Value::String(s)) => s.starts_with(prefix),
            _ => false,
        }
    }
}

impl Filter {
    /// Conditions on single fields that every record matching this filter satisfies, for a
    /// value index to narrow the candidates (then [`Filter::matches`] decides exactly). Empty
    /// when the filter pins no field.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::{Constraint, Filter};
    /// use std::ops::Bound;
    ///
    /// let filter = Filter::parse(
    ///     "(genre = 'drama' OR genre = 'noir') AND year >= 2000 AND year < 2010 AND title != 'x'",
    /// )?;
    /// let constraints = filter.constraints();
    /// assert_eq!(constraints.len(), 2);
    /// assert!(matches!(&constraints[0], Constraint::OneOf { values, .. } if values.len() == 2));
    /// assert!(matches!(
    ///     &constraints[1],
    ///     Constraint::Range { lower: Bound::Included(_), upper: Bound::Excluded(_), .. }
    /// ));
    /// # Ok::<(), flowvec::vector::filter::FilterError>(())
    /// ```
    #[must_use]
    pub fn constraints(&self) -> Vec<Constraint<'_>> {
        let mut out = Vec::new();
        collect(self.expr(), &mut out);
        out
    }

    /// A cheap cost figure: the number of predicates plus the number of `IN` values, i.e.
    /// roughly the comparisons one evaluation does in the worst case. For choosing between
    /// plans, not a time.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::Filter;
    ///
    /// assert_eq!(Filter::parse("a = 1 AND b IN (1, 2, 3)")?.complexity(), 5);
    /// # Ok::<(), flowvec::vector::filter::FilterError>(())
    /// ```
    #[must_use]
    pub fn complexity(&self) -> usize {
        complexity(self.expr())
    }
}

fn complexity(expr: &Expr) -> usize {
    match expr {
        Expr::And(children) | Expr::Or(children) => children.iter().map(complexity).sum(),
        Expr::In { values, .. } => 1 + values.len(),
        _ => 1,
    }
}

/// Appends the necessary conditions of `expr` (an `AND` context) to `out`.
fn collect<'f>(expr: &'f Expr, out: &mut Vec<Constraint<'f>>) {
    match expr {
        Expr::And(children) => children.iter().for_each(|c| collect(c, out)),
        Expr::Or(children) => {
            if let Some(union) = one_of_union(children) {
                out.push(union);
            }
        }
        Expr::Compare {
            path,
            op: CompareOp::Eq,
            value,
        } => {
            out.push(Constraint::OneOf {
                path,
                values: vec![value],
            });
        }
        Expr::Compare {
            path,
            op,
            value: Literal::Number(n),
        } if op.is_ordering() => {
            let (lower, upper) = match op {
                CompareOp::Gt => (Bound::Excluded(n), Bound::Unbounded),
                CompareOp::Ge => (Bound::Included(n), Bound::Unbounded),
                CompareOp::Lt => (Bound::Unbounded, Bound::Excluded(n)),
                _ => (Bound::Unbounded, Bound::Included(n)),
            };
            narrow(out, path, lower, upper);
        }
        Expr::In {
            path,
            negated: false,
            values,
        } => {
            out.push(Constraint::OneOf {
                path,
                values: values.iter().collect(),
            });
        }
        Expr::Contains {
            path,
            negated: false,
            value,
        } => {
            out.push(Constraint::Element { path, value });
        }
        Expr::Glob {
            path,
            negated: false,
            pattern,
        } if !pattern.literal_prefix().is_empty() => {
            out.push(Constraint::Prefix {
                path,
                prefix: pattern.literal_prefix(),
            });
        }
        _ => {}
    }
}

/// An `OR` whose every branch pins the same field to values becomes one `OneOf`.
fn one_of_union<'f>(children: &'f [Expr]) -> Option<Constraint<'f>> {
    let mut union: Option<(&'f Path, Vec<&'f Literal>)> = None;
    for child in children {
        let mut inner = Vec::new();
        collect(child, &mut inner);
        // A branch may pin several fields; any OneOf of the branch is necessary for it.
        let (path, values) = inner.into_iter().find_map(|c| match c {
            Constraint::OneOf { path, values } => match &union {
                Some((p, _)) if *p != path => None,
                _ => Some((path, values)),
            },
            _ => None,
        })?;
        union
            .get_or_insert_with(|| (path, Vec::new()))
            .1
            .extend(values);
    }
    union.map(|(path, values)| Constraint::OneOf { path, values })
}

/// Intersects a range into the existing `Range` on `path`, or adds one.
fn narrow<'f>(
    out: &mut Vec<Constraint<'f>>,
    path: &'f Path,
    lower: Bound<&'f Number>,
    upper: Bound<&'f Number>,
) {
    for c in out.iter_mut() {
        if let Constraint::Range {
            path: p,
            lower: l,
            upper: u,
        } = c
            && *p == path
        {
            *l = tighter(*l, lower, Ordering::Greater);
            *u = tighter(*u, upper, Ordering::Less);
            return;
        }
    }
    out.push(Constraint::Range { path, lower, upper });
}

/// The tighter of two bounds; `towards` is `Greater` for lower bounds, `Less` for upper.
fn tighter<'f>(a: Bound<&'f Number>, b: Bound<&'f Number>, towards: Ordering) -> Bound<&'f Number> {
    let value = |x: &Bound<&'f Number>| match x {
        Bound::Included(n) | Bound::Excluded(n) => Some(*n),
        Bound::Unbounded => None,
    };
    match (value(&a), value(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) => match compare_numbers(x, y) {
            Some(o) if o == towards => a,
            Some(Ordering::Equal) => {
                if matches!(a, Bound::Excluded(_)) {
                    a
                } else {
                    b
                }
            }
            _ => b,
        },
    }
}
