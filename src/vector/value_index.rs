//! An inverted index over metadata values, so a filtered query can find its candidate records
//! without evaluating the filter on every record.
//!
//! It indexes the top-level fields of object metadata: each string, number and boolean value
//! (`field -> value -> sorted slot list`), and the scalar elements of arrays (for `CONTAINS`).
//! It answers the necessary conditions of [`Filter::constraints`] (`=`/`IN`, numeric ranges,
//! `CONTAINS`, `GLOB` prefixes) with a *superset* of the matching slots; the caller always
//! re-checks each candidate with [`Filter::matches`], so correctness never depends on the index,
//! only speed does.
//!
//! Memory is bounded: at most [`MAX_FIELDS`] distinct field names, strings up to
//! [`MAX_STRING_BYTES`] and arrays up to [`MAX_ARRAY_ELEMENTS`]. A value past a bound is not
//! indexed; its slot goes to the field's overflow list, which joins every candidate set of that
//! field, so the superset property holds whatever the data. A field first seen after the field
//! cap is reached is not indexed and marks the index saturated: constraints on fields it does
//! not know then give no answer (the caller scans) instead of an empty one.
//!
//! Numbers are keyed by their `f64` value (`-0.0` as `0.0`); rounding is monotone, so equal
//! numbers share a key and range bounds (widened to inclusive) keep every match.
//!
//! Measured (`examples/filter_bench.rs`): 43,000 minilm-text records with 5 fields (`source`,
//! `row`, `len`, `first`, a 3-word `words` array) take 4.9 MiB (~115 bytes per record).

use crate::vector::filter::{Constraint, Filter, Literal, Segment};
use ordered_float::OrderedFloat;
use serde_json::{Number, Value};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

/// Most distinct top-level field names indexed per namespace.
pub const MAX_FIELDS: usize = 256;
/// Longest string value (in bytes) indexed; longer ones go to the field's overflow list.
pub const MAX_STRING_BYTES: usize = 256;
/// Most elements of an array indexed; a longer array goes to the field's overflow list.
pub const MAX_ARRAY_ELEMENTS: usize = 64;

type NumKey = OrderedFloat<f64>;

/// Posting lists whose union is a candidate set, and their total length.
type Lists<'a> = (Vec<&'a [u32]>, usize);

/// A sorted, duplicate-free list of slots.
#[derive(Debug, Default, Clone)]
struct Postings(Vec<u32>);

impl Postings {
    fn add(&mut self, slot: u32) {
        if let Err(at) = self.0.binary_search(&slot) {
            self.0.insert(at, slot);
        }
    }

    fn remove(&mut self, slot: u32) {
        if let Ok(at) = self.0.binary_search(&slot) {
            self.0.remove(at);
        }
    }

    fn bytes(&self) -> usize {
        self.0.capacity() * 4 + std::mem::size_of::<Self>()
    }
}

/// One kind of value (scalars of a field, or elements of its arrays) by value.
#[derive(Debug, Default)]
struct Values {
    strings: BTreeMap<Box<str>, Postings>,
    numbers: BTreeMap<NumKey, Postings>,
    bools: [Postings; 2],
}

impl Values {
    /// Adds or removes `slot` under `value`; `false` when the value is not indexable here.
    fn apply(&mut self, value: &Value, slot: u32, add: bool) -> bool {
        match value {
            Value::String(s) if s.len() <= MAX_STRING_BYTES => {
                if add {
                    match self.strings.get_mut(s.as_str()) {
                        Some(p) => p.add(slot),
                        None => {
                            self.strings.insert(s.as_str().into(), Postings(vec![slot]));
                        }
                    }
                } else if let Some(p) = self.strings.get_mut(s.as_str()) {
                    p.remove(slot);
                    if p.0.is_empty() {
                        self.strings.remove(s.as_str());
                    }
                }
            }
            Value::String(_) => return false,
            Value::Number(n) => {
                let key = number_key(n);
                if add {
                    self.numbers.entry(key).or_default().add(slot);
                } else if let Some(p) = self.numbers.get_mut(&key) {
                    p.remove(slot);
                    if p.0.is_empty() {
                        self.numbers.remove(&key);
                    }
                }
            }
            Value::Bool(b) => {
                let p = &mut self.bools[usize::from(*b)];
                if add {
                    p.add(slot);
                } else {
                    p.remove(slot);
                }
            }
            // null, arrays and objects are never equal to a literal: nothing to index.
            _ => {}
        }
        true
    }

    /// The posting lists of slots holding `literal`.
    fn equal<'a>(&'a self, literal: &Literal, out: &mut Vec<&'a [u32]>) {
        let hit = match literal {
            Literal::String(s) => self.strings.get(s.as_str()),
            Literal::Number(n) => self.numbers.get(&number_key(n)),
            Literal::Bool(b) => Some(&self.bools[usize::from(*b)]),
        };
        if let Some(p) = hit {
            out.push(&p.0);
        }
    }

    fn bytes(&self) -> usize {
        // BTreeMap nodes: about one key + value + a pointer of overhead per entry.
        let strings: usize = self
            .strings
            .iter()
            .map(|(k, p)| k.len() + 16 + 8 + p.bytes())
            .sum();
        let numbers: usize = self.numbers.values().map(|p| 8 + 8 + p.bytes()).sum();
        strings + numbers + self.bools.iter().map(Postings::bytes).sum::<usize>()
    }
}

#[derive(Debug, Default)]
struct FieldIndex {
    scalars: Values,
    elements: Values,
    /// Slots whose value for this field was not (fully) indexed: in every candidate set.
    overflow: Postings,
}

/// Inverted index of top-level metadata values: `field -> value -> slots`, kept exact under
/// insert and remove. See the module documentation for what is indexed and the bounds.
///
/// # Examples
/// ```
/// use flowvec::vector::ValueIndex;
/// use flowvec::vector::filter::Filter;
/// use serde_json::json;
///
/// let mut index = ValueIndex::new();
/// index.insert(0, &json!({"genre": "drama", "year": 1999}));
/// index.insert(1, &json!({"genre": "noir", "year": 2005}));
/// index.insert(2, &json!({"genre": "drama", "year": 2011}));
/// // The narrowest constraint wins: `genre = 'drama'` names 2 slots, `year > 2008` one.
/// let filter = Filter::parse("genre = 'drama' AND year > 2008")?;
/// assert_eq!(index.candidates(&filter), Some(vec![2]));
/// // A superset of the matches (slot 0 is a drama from 1999); `matches` decides.
/// let dramas = Filter::parse("genre = 'drama' AND year > 2000")?;
/// assert_eq!(index.candidates(&dramas), Some(vec![0, 2]));
/// index.remove(2, &json!({"genre": "drama", "year": 2011}));
/// assert_eq!(index.candidates(&filter), Some(vec![]));
/// # Ok::<(), flowvec::vector::filter::FilterError>(())
/// ```
#[derive(Debug, Default)]
pub struct ValueIndex {
    fields: HashMap<Box<str>, FieldIndex>,
    /// A field was refused because [`MAX_FIELDS`] were already indexed.
    saturated: bool,
}

impl ValueIndex {
    /// An empty index.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes `slot`'s metadata. Call [`ValueIndex::remove`] with the same metadata before
    /// the slot's metadata changes or the slot is freed.
    pub fn insert(&mut self, slot: u32, metadata: &Value) {
        self.apply(slot, metadata, true);
    }

    /// Removes `slot`'s entries, given the metadata it was inserted with.
    pub fn remove(&mut self, slot: u32, metadata: &Value) {
        self.apply(slot, metadata, false);
    }

    /// Drops everything (the field cap starts afresh).
    pub fn clear(&mut self) {
        self.fields.clear();
        self.saturated = false;
    }

    fn apply(&mut self, slot: u32, metadata: &Value, add: bool) {
        let Value::Object(map) = metadata else {
            return;
        };
        for (name, value) in map {
            if matches!(value, Value::Null | Value::Object(_)) {
                continue;
            }
            let known = self.fields.contains_key(name.as_str());
            if !known && (!add || self.fields.len() >= MAX_FIELDS) {
                // Removing: never indexed. Adding past the cap: refused.
                self.saturated |= add;
                continue;
            }
            if !known {
                self.fields
                    .insert(name.as_str().into(), FieldIndex::default());
            }
            let Some(field) = self.fields.get_mut(name.as_str()) else {
                continue;
            };
            let indexed = match value {
                Value::Array(items) if items.len() <= MAX_ARRAY_ELEMENTS => {
                    {
                        // Every element, not short-circuiting: all must be added or removed.
                        let mut all = true;
                        for item in items {
                            all &= field.elements.apply(item, slot, add);
                        }
                        all
                    }
                }
                Value::Array(_) => false,
                scalar => field.scalars.apply(scalar, slot, add),
            };
            if !indexed {
                if add {
                    field.overflow.add(slot);
                } else {
                    field.overflow.remove(slot);
                }
            }
        }
    }

    /// The posting lists whose union holds every slot satisfying `constraint`, with their
    /// total length: `None` when the index cannot answer it (nested path, unknown field of a
    /// saturated index), `Some(None)` when the total passes `bound` (counting stops there, so
    /// a wide range costs little).
    fn lists<'a>(&'a self, constraint: &Constraint<'_>, bound: usize) -> Option<Option<Lists<'a>>> {
        let [Segment::Field(name)] = constraint.path().segments() else {
            return None;
        };
        let Some(field) = self.fields.get(&**name) else {
            return (!self.saturated).then_some(Some((Vec::new(), 0)));
        };
        let mut out = vec![field.overflow.0.as_slice()];
        let mut total = field.overflow.0.len();
        let mut push = |list: &'a [u32]| {
            total += list.len();
            out.push(list);
            total <= bound
        };
        let within = match constraint {
            Constraint::OneOf { values, .. } => {
                let mut lists = Vec::new();
                for v in values {
                    field.scalars.equal(v, &mut lists);
                }
                lists.into_iter().all(&mut push)
            }
            Constraint::Element { value, .. } => {
                let mut lists = Vec::new();
                field.elements.equal(value, &mut lists);
                lists.into_iter().all(&mut push)
            }
            Constraint::Range { lower, upper, .. } => {
                let widen = |b: &Bound<&Number>| match b {
                    Bound::Unbounded => Bound::Unbounded,
                    Bound::Included(n) | Bound::Excluded(n) => Bound::Included(number_key(n)),
                };
                let (lo, hi) = (widen(lower), widen(upper));
                let empty = matches!((&lo, &hi), (Bound::Included(l), Bound::Included(h)) if l > h);
                empty
                    || field
                        .scalars
                        .numbers
                        .range((lo, hi))
                        .all(|(_, p)| push(&p.0))
            }
            Constraint::Prefix { prefix, .. } => field
                .scalars
                .strings
                .range::<str, _>((Bound::Included(*prefix), Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with(prefix))
                .all(|(_, p)| push(&p.0)),
        };
        Some((within && total <= bound).then_some((out, total)))
    }

    /// The most selective constraint's posting lists, if their total length is at most
    /// `limit`: `(lists, total)`. `None` when no constraint is answerable within `limit`.
    fn narrowest<'a>(&'a self, filter: &Filter, limit: usize) -> Option<Lists<'a>> {
        let mut best: Option<Lists<'a>> = None;
        for constraint in filter.constraints() {
            // Ties keep the earlier constraint.
            let bound = best.as_ref().map_or(limit, |(_, n)| n.saturating_sub(1));
            if let Some(Some(found)) = self.lists(&constraint, bound) {
                best = Some(found);
            }
        }
        best
    }

    /// An upper bound on the number of slots matching `filter`, if the index can give one
    /// that is at most `limit` (otherwise `None`: unknown, or more than `limit`).
    #[must_use]
    pub fn estimate(&self, filter: &Filter, limit: usize) -> Option<usize> {
        self.narrowest(filter, limit).map(|(_, n)| n)
    }

    /// Slots that may match `filter` (a superset of the matches among indexed slots), sorted
    /// and without duplicates, if at most `limit` posting entries make them up; `None` when the
    /// index cannot narrow the filter that far.
    #[must_use]
    pub fn candidates_within(&self, filter: &Filter, limit: usize) -> Option<Vec<u32>> {
        let (lists, total) = self.narrowest(filter, limit)?;
        let mut out = Vec::with_capacity(total);
        for l in lists {
            out.extend_from_slice(l);
        }
        if out.len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
        Some(out)
    }

    /// Slots that may match `filter`, from its most selective indexed constraint; `None` when
    /// no constraint of the filter is answerable (then every record is a candidate).
    #[must_use]
    pub fn candidates(&self, filter: &Filter) -> Option<Vec<u32>> {
        self.candidates_within(filter, usize::MAX)
    }

    /// Number of fields indexed.
    #[must_use]
    pub fn fields(&self) -> usize {
        self.fields.len()
    }

    /// Approximate heap bytes held.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.fields
            .iter()
            .map(|(name, f)| {
                name.len() + 64 + f.scalars.bytes() + f.elements.bytes() + f.overflow.bytes()
            })
            .sum::<usize>()
            + self.fields.capacity() * 16
    }
}

fn number_key(n: &Number) -> NumKey {
    let x = n.as_f64().unwrap_or(0.0);
    OrderedFloat(if x == 0.0 { 0.0 } else { x })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cands(index: &ValueIndex, filter: &str) -> Option<Vec<u32>> {
        index.candidates(&Filter::parse(filter).unwrap())
    }

    #[test]
    fn each_constraint_kind_finds_its_slots() {
        let mut ix = ValueIndex::new();
        ix.insert(0, &json!({"s": "apple", "n": 1, "b": true, "t": ["x", 2]}));
        ix.insert(
            1,
            &json!({"s": "apricot", "n": 2.5, "b": false, "t": ["y"]}),
        );
        ix.insert(2, &json!({"s": "banana", "n": -0.0, "t": [true]}));
        assert_eq!(cands(&ix, "s = 'apple'"), Some(vec![0]));
        assert_eq!(cands(&ix, "s IN ('banana', 'apple')"), Some(vec![0, 2]));
        assert_eq!(cands(&ix, "n = 1.0"), Some(vec![0]));
        assert_eq!(cands(&ix, "n = 0"), Some(vec![2]));
        assert_eq!(cands(&ix, "n > 1 AND n <= 2.5"), Some(vec![0, 1]));
        assert_eq!(cands(&ix, "n < -1"), Some(vec![]));
        assert_eq!(cands(&ix, "b = false"), Some(vec![1]));
        assert_eq!(cands(&ix, "t CONTAINS 2"), Some(vec![0]));
        assert_eq!(cands(&ix, "t CONTAINS true"), Some(vec![2]));
        assert_eq!(cands(&ix, "s GLOB 'ap*'"), Some(vec![0, 1]));
        assert_eq!(cands(&ix, "missing = 1"), Some(vec![]));
        assert_eq!(cands(&ix, "s != 'apple'"), None);
        assert_eq!(cands(&ix, "a.b = 1"), None);
    }

    #[test]
    fn remove_undoes_insert_and_overflow_is_always_a_candidate() {
        let mut ix = ValueIndex::new();
        let long = "z".repeat(MAX_STRING_BYTES + 1);
        let big: Vec<u32> = (0..=MAX_ARRAY_ELEMENTS as u32).collect();
        let a = json!({"s": long, "t": big});
        ix.insert(3, &a);
        assert_eq!(cands(&ix, "s = 'q'"), Some(vec![3]));
        assert_eq!(cands(&ix, "t CONTAINS 1"), Some(vec![3]));
        ix.remove(3, &a);
        assert_eq!(cands(&ix, "s = 'q'"), Some(vec![]));
        assert!(ix.fields.values().all(|f| f.overflow.0.is_empty()
            && f.scalars.strings.is_empty()
            && f.elements.numbers.is_empty()));
    }

    #[test]
    fn a_saturated_index_does_not_answer_for_unknown_fields() {
        let mut ix = ValueIndex::new();
        for i in 0..MAX_FIELDS {
            ix.insert(0, &json!({ format!("f{i}"): 1 }));
        }
        assert_eq!(cands(&ix, "late = 1"), Some(vec![]));
        ix.insert(1, &json!({"late": 1}));
        assert_eq!(cands(&ix, "late = 1"), None, "refused field: no answer");
        assert_eq!(cands(&ix, "f0 = 1"), Some(vec![0]));
        ix.clear();
        assert_eq!(cands(&ix, "late = 1"), Some(vec![]));
    }

    #[test]
    fn estimate_stops_at_the_limit() {
        let mut ix = ValueIndex::new();
        for slot in 0..100 {
            ix.insert(slot, &json!({"n": slot, "k": slot % 10}));
        }
        let f = Filter::parse("n >= 0 AND k = 3").unwrap();
        assert_eq!(ix.estimate(&f, 1000), Some(10), "k = 3 is narrower");
        assert_eq!(ix.estimate(&f, 5), None);
        assert_eq!(ix.candidates_within(&f, 10).unwrap().len(), 10);
    }
}
