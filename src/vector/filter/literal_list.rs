//! The value list of `IN` / `NOT IN`, with a lookup built once at parse time.
//!
//! Short lists are scanned (a handful of comparisons beats a binary search); from
//! [`LiteralList::SORTED_FROM`] values on, strings and numbers are found by binary search over
//! an index sorted once, so `id IN (…1000 ids…)` costs ~10 comparisons per record, not 1000.

use super::ast::Literal;
use super::eval::{Num, compare_num, num};
use serde_json::Value;
use std::cmp::Ordering;
use std::ops::Deref;

/// The literals of an `IN` list in source order, plus a lookup for evaluation.
///
/// Dereferences to `[Literal]`; two lists are equal when their literals are.
///
/// # Examples
/// ```
/// use flowvec::vector::filter::{Literal, LiteralList};
///
/// let list = LiteralList::from(vec![Literal::String("a".into()), Literal::Bool(true)]);
/// assert_eq!(list.len(), 2);
/// assert_eq!(list[1], Literal::Bool(true));
/// ```
#[derive(Debug, Clone)]
pub struct LiteralList {
    items: Vec<Literal>,
    /// Indices of the string literals, sorted by value (only for long lists).
    strings: Box<[u32]>,
    /// Indices of the number literals, sorted numerically (only for long lists).
    numbers: Box<[u32]>,
    /// How many literals have each type (`NOT IN` needs all of one type).
    string_count: usize,
    number_count: usize,
    bool_count: usize,
}

impl LiteralList {
    /// Lists at least this long get a sorted index.
    pub const SORTED_FROM: usize = 12;

    /// The literals, in source order.
    #[must_use]
    pub fn as_slice(&self) -> &[Literal] {
        &self.items
    }

    /// Whether `field` equals one of the literals (`IN`).
    pub(super) fn contains(&self, field: &Value) -> bool {
        match field {
            Value::String(s) if self.string_count > 0 => self.find_string(s),
            Value::Number(n) if self.number_count > 0 => {
                num(n).is_some_and(|x| self.find_number(x))
            }
            Value::Bool(b) => self
                .items
                .iter()
                .any(|v| matches!(v, Literal::Bool(l) if l == b)),
            _ => false,
        }
    }

    /// Whether `field` differs from every literal, each of its own type (`NOT IN`: the `AND`
    /// of `!=`, so a literal of another type makes it false).
    pub(super) fn excludes(&self, field: &Value) -> bool {
        let len = self.items.len();
        match field {
            Value::String(s) => self.string_count == len && !self.find_string(s),
            Value::Number(n) => {
                self.number_count == len && num(n).is_some_and(|x| !self.find_number(x))
            }
            Value::Bool(b) => {
                self.bool_count == len && self.items.iter().all(|v| v != &Literal::Bool(*b))
            }
            _ => false,
        }
    }

    fn find_string(&self, s: &str) -> bool {
        if self.strings.is_empty() {
            return self
                .items
                .iter()
                .any(|v| matches!(v, Literal::String(l) if l == s));
        }
        self.strings
            .binary_search_by(|&i| match &self.items[i as usize] {
                Literal::String(l) => l.as_str().cmp(s),
                _ => unreachable!("the string index holds string literals only"),
            })
            .is_ok()
    }

    fn find_number(&self, x: Num) -> bool {
        let eq = |v: &Literal| match v {
            Literal::Number(l) => num(l).and_then(|y| compare_num(x, y)) == Some(Ordering::Equal),
            _ => false,
        };
        if self.numbers.is_empty() {
            return self.items.iter().any(eq);
        }
        self.numbers
            .binary_search_by(|&i| match &self.items[i as usize] {
                // Finite numbers are totally ordered; NaN cannot be a literal.
                Literal::Number(l) => num(l)
                    .and_then(|y| compare_num(y, x))
                    .unwrap_or(Ordering::Less),
                _ => unreachable!("the number index holds number literals only"),
            })
            .is_ok()
    }
}

impl From<Vec<Literal>> for LiteralList {
    fn from(items: Vec<Literal>) -> Self {
        let count = |f: fn(&Literal) -> bool| items.iter().filter(|v| f(v)).count();
        let string_count = count(|v| matches!(v, Literal::String(_)));
        let number_count = count(|v| matches!(v, Literal::Number(_)));
        let bool_count = count(|v| matches!(v, Literal::Bool(_)));
        let (mut strings, mut numbers) = (Vec::new(), Vec::new());
        // Indices fit u32: lists are capped far below (MAX_IN_VALUES) when parsed; a longer
        // hand-built list simply is not indexed.
        if items.len() >= Self::SORTED_FROM && u32::try_from(items.len()).is_ok() {
            for (i, v) in (0u32..).zip(&items) {
                match v {
                    Literal::String(_) => strings.push(i),
                    Literal::Number(_) => numbers.push(i),
                    Literal::Bool(_) => {}
                }
            }
            let text = |i: &u32| match &items[*i as usize] {
                Literal::String(s) => s.as_str(),
                _ => "",
            };
            strings.sort_by(|a, b| text(a).cmp(text(b)));
            let number = |i: &u32| match &items[*i as usize] {
                Literal::Number(n) => num(n),
                _ => None,
            };
            numbers.sort_by(|a, b| {
                number(a)
                    .zip(number(b))
                    .and_then(|(x, y)| compare_num(x, y))
                    .unwrap_or(Ordering::Equal)
            });
        }
        LiteralList {
            items,
            strings: strings.into_boxed_slice(),
            numbers: numbers.into_boxed_slice(),
            string_count,
            number_count,
            bool_count,
        }
    }
}

impl Deref for LiteralList {
    type Target = [Literal];

    fn deref(&self) -> &[Literal] {
        &self.items
    }
}

impl PartialEq for LiteralList {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}
