//! Evaluating an [`Expr`] against one record's metadata, without allocating.
//!
//! Semantics (DESIGN §2.4, decisions the reference leaves open marked *ours*):
//! - A predicate on a missing field is false, whatever the operator, except `HAS NOT FIELD`.
//! - A predicate on a value of the wrong type is false, also for the negated operators:
//!   `!=`, `NOT IN`, `NOT GLOB` and `NOT CONTAINS` hold only on a value of the right type.
//! - `null` is a value (`HAS FIELD` holds) that equals no literal; as it has no literal's type,
//!   every comparison on it is false, `!=` included (*ours*, from "equals no literal").
//! - `=`/`!=` compare a string, number or boolean field with a literal of the same type;
//!   arrays and objects never compare. Numbers compare exactly and across kinds: `1 = 1.0`,
//!   while `9007199254740993 != 9007199254740992.0` (no rounding through `f64`, *ours*).
//!   Strings compare by bytes (no case folding or Unicode normalisation).
//! - `<`, `<=`, `>`, `>=` order numbers only.
//! - `IN` is the `OR` of `=` over the list; `NOT IN` is the `AND` of `!=`, so with a mixed-type
//!   list such as `x NOT IN ('a', 1)` it is false for every `x` (each `!=` on the other type is
//!   false) — the literal reading of DESIGN §2.4.
//! - `CONTAINS v`: the field is an array with an element that `= v`. `NOT CONTAINS v`: the
//!   field is an array with no such element (*ours*: element types do not matter, only that
//!   the field is an array). A string field is not an array: no substring search.
//! - `GLOB`/`NOT GLOB`: the field is a string that does / does not match.
//! - Metadata that is not an object (`Value::Null` for a record without metadata) has no
//!   fields.

use super::ast::{CompareOp, Expr, Literal};
use serde_json::{Number, Value};
use std::cmp::Ordering;

impl Expr {
    /// Whether `metadata` satisfies this expression (`Value::Null` for a record without
    /// metadata). See the module docs of [`filter`](super) for the exact semantics.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::Filter;
    /// use serde_json::json;
    ///
    /// let filter = Filter::parse("year >= 2000 AND tags CONTAINS 'classic'").unwrap();
    /// assert!(filter.expr().matches(&json!({"year": 2001, "tags": ["classic"]})));
    /// ```
    #[must_use]
    pub fn matches(&self, metadata: &Value) -> bool {
        match self {
            Expr::And(children) => children.iter().all(|c| c.matches(metadata)),
            Expr::Or(children) => children.iter().any(|c| c.matches(metadata)),
            Expr::Compare { path, op, value } => path
                .resolve(metadata)
                .is_some_and(|field| compare(field, *op, value)),
            Expr::In {
                path,
                negated,
                values,
            } => path.resolve(metadata).is_some_and(|field| {
                if *negated {
                    values.excludes(field)
                } else {
                    values.contains(field)
                }
            }),
            Expr::Contains {
                path,
                negated,
                value,
            } => match path.resolve(metadata) {
                Some(Value::Array(items)) => {
                    items.iter().any(|item| equals(item, value) == Some(true)) != *negated
                }
                _ => false,
            },
            Expr::Glob {
                path,
                negated,
                pattern,
            } => match path.resolve(metadata) {
                Some(Value::String(text)) => pattern.matches(text) != *negated,
                _ => false,
            },
            Expr::HasField { path, negated } => path.resolve(metadata).is_some() != *negated,
        }
    }
}

/// `field op literal`, false on a type mismatch.
fn compare(field: &Value, op: CompareOp, literal: &Literal) -> bool {
    match op {
        CompareOp::Eq => equals(field, literal) == Some(true),
        CompareOp::Ne => equals(field, literal) == Some(false),
        CompareOp::Lt | CompareOp::Le | CompareOp::Gt | CompareOp::Ge => {
            let (Value::Number(a), Literal::Number(b)) = (field, literal) else {
                return false;
            };
            let Some(order) = compare_numbers(a, b) else {
                return false;
            };
            match op {
                CompareOp::Lt => order == Ordering::Less,
                CompareOp::Le => order != Ordering::Greater,
                CompareOp::Gt => order == Ordering::Greater,
                _ => order != Ordering::Less,
            }
        }
    }
}

/// `Some(equal)` when `field` and `literal` have the same type, `None` otherwise.
fn equals(field: &Value, literal: &Literal) -> Option<bool> {
    match (field, literal) {
        (Value::String(a), Literal::String(b)) => Some(a == b),
        (Value::Number(a), Literal::Number(b)) => {
            compare_numbers(a, b).map(|o| o == Ordering::Equal)
        }
        (Value::Bool(a), Literal::Bool(b)) => Some(a == b),
        _ => None,
    }
}

/// A JSON number as an exact integer or a float.
#[derive(Clone, Copy)]
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

pub(super) fn num(n: &Number) -> Option<Num> {
    if let Some(u) = n.as_u64() {
        Some(Num::Int(i128::from(u)))
    } else if let Some(i) = n.as_i64() {
        Some(Num::Int(i128::from(i)))
    } else {
        n.as_f64().map(Num::Float)
    }
}

/// Exact numeric order across integer and float kinds; `None` only for NaN (which JSON and
/// the filter parser never produce).
pub(super) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    compare_num(num(a)?, num(b)?)
}

pub(super) fn compare_num(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
        (Num::Int(x), Num::Float(y)) => int_vs_float(x, y),
        (Num::Float(x), Num::Int(y)) => int_vs_float(y, x).map(Ordering::reverse),
    }
}

/// Compares an integer (within `i64`/`u64` range) with a float without rounding the integer.
fn int_vs_float(x: i128, y: f64) -> Option<Ordering> {
    if y.is_nan() {
        return None;
    }
    // Every integer here is below 2^64 in magnitude; beyond that the float decides alone.
    const LIMIT: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if y >= LIMIT {
        return Some(Ordering::Less);
    }
    if y <= -LIMIT {
        return Some(Ordering::Greater);
    }
    let whole = y.trunc();
    // |whole| < 2^64 and integral, so the conversion is exact.
    let whole_int = whole as i128;
    match x.cmp(&whole_int) {
        Ordering::Equal => 0.0f64.partial_cmp(&(y - whole)),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: serde_json::Value) -> Number {
        match v {
            Value::Number(n) => n,
            _ => unreachable!("test passes numbers"),
        }
    }

    #[test]
    fn numbers_compare_exactly_across_kinds() {
        use serde_json::json;
        assert_eq!(
            compare_numbers(&n(json!(1)), &n(json!(1.0))),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare_numbers(&n(json!(-1)), &n(json!(-0.5))),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare_numbers(&n(json!(2)), &n(json!(1.5))),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_numbers(
                &n(json!(9_007_199_254_740_993_u64)),
                &n(json!(9_007_199_254_740_992.0))
            ),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_numbers(&n(json!(u64::MAX)), &n(json!(1e20))),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare_numbers(&n(json!(i64::MIN)), &n(json!(-1e20))),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_numbers(&n(json!(-3)), &n(json!(-3.5))),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_numbers(&n(json!(u64::MAX)), &n(json!(-1))),
            Some(Ordering::Greater)
        );
    }
}
