//! The value index stays exact under random operation sequences: after any mix of upserts,
//! replacements, OVERWRITE and PATCH updates, deletes and resets, its candidates for a random
//! filter hold every record that matches (it may hold more; `matches` decides). Checked on the
//! bare [`ValueIndex`] against a model, and end to end through [`Index`] (a filtered query with
//! a large topK and delete by filter return exactly the matching records).

use flowvec::vector::filter::Filter;
use flowvec::vector::{
    Delete, Index, IndexConfig, MetadataUpdateMode, Metric, Query, Update, ValueIndex, Vector,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const IDS: u32 = 24;

/// Small value domains so random filters hit often; includes long strings, long arrays,
/// nulls, nested objects and `1` vs `1.0`.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..4).prop_map(|n| json!(n)),
        (0i64..4).prop_map(|n| json!(n as f64 + 0.5)),
        Just(json!(1.0)),
        Just(json!(-0.0)),
        prop::sample::select(vec!["a", "ab", "b", "ba"]).prop_map(|s| json!(s)),
        Just(json!("a".repeat(300))),
        any::<bool>().prop_map(|b| json!(b)),
        Just(Value::Null),
    ]
}

fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(scalar(), 0..4).prop_map(Value::Array),
        1 => Just(Value::Array((0..70).map(|i| json!(i % 4)).collect())),
        1 => scalar().prop_map(|v| json!({"x": v})),
    ]
}

fn metadata() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(json!("not an object"))),
        8 => prop::collection::btree_map(
            prop::sample::select(vec!["f", "g", "h"]),
            field_value(),
            0..4,
        )
        .prop_map(|m| Some(json!(m))),
    ]
}

fn filter() -> impl Strategy<Value = String> {
    let field = prop::sample::select(vec!["f", "g", "h", "f.x"]);
    let lit = prop::sample::select(vec![
        "0", "1", "1.0", "2.5", "0", "-0.0", "'a'", "'ab'", "'b'", "true", "false",
    ]);
    let clause = (field, 0..6usize, lit.clone(), lit).prop_map(|(f, op, a, b)| match op {
        0 => format!("{f} = {a}"),
        1 => format!("{f} IN ({a}, {b})"),
        2 => format!("{f} >= 1 AND {f} < 3"),
        3 => format!("{f} CONTAINS {a}"),
        4 => format!("{f} GLOB 'a*'"),
        _ => format!("{f} > 0.5"),
    });
    prop::collection::vec(clause, 1..3).prop_map(|c| c.join(" AND "))
}

#[derive(Debug, Clone)]
enum Op {
    Put(u32, Option<Value>),
    Overwrite(u32, Value),
    Patch(u32, Value),
    Delete(u32),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..IDS, metadata()).prop_map(|(i, m)| Op::Put(i, m)),
        2 => (0..IDS, metadata()).prop_map(|(i, m)| Op::Overwrite(i, m.unwrap_or(json!({})))),
        2 => (0..IDS, metadata()).prop_map(|(i, m)| Op::Patch(i, m.unwrap_or(json!({})))),
        2 => (0..IDS).prop_map(Op::Delete),
        1 => Just(Op::Reset),
    ]
}

/// RFC 7396 merge patch, for the model.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn config() -> Config {
    Config {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn candidates_hold_every_match(ops in prop::collection::vec(op(), 1..60), filters in prop::collection::vec(filter(), 1..6)) {
        let mut index = ValueIndex::new();
        let mut model: BTreeMap<u32, Value> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(i, m) => {
                    if let Some(old) = model.remove(&i) { index.remove(i, &old); }
                    if let Some(m) = m { index.insert(i, &m); model.insert(i, m); }
                }
                Op::Overwrite(i, m) => {
                    if let Some(old) = model.remove(&i) {
                        index.remove(i, &old);
                        index.insert(i, &m);
                        model.insert(i, m);
                    }
                }
                Op::Patch(i, p) => {
                    if let Some(old) = model.remove(&i) {
                        index.remove(i, &old);
                        let mut merged = old;
                        merge(&mut merged, &p);
                        index.insert(i, &merged);
                        model.insert(i, merged);
                    }
                }
                Op::Delete(i) => {
                    if let Some(old) = model.remove(&i) { index.remove(i, &old); }
                }
                Op::Reset => { index.clear(); model.clear(); }
            }
        }
        for text in &filters {
            let f = Filter::parse(text).unwrap();
            let truth: BTreeSet<u32> = model.iter().filter(|(_, m)| f.matches(m)).map(|(i, _)| *i).collect();
            if let Some(c) = index.candidates(&f) {
                let c: BTreeSet<u32> = c.into_iter().collect();
                prop_assert!(truth.is_subset(&c), "{text}: {truth:?} not in {c:?}");
                prop_assert!(c.iter().all(|i| model.contains_key(i)), "{text}: stale slot in {c:?}");
            }
        }
    }

    #[test]
    fn index_queries_and_deletes_see_exactly_the_matches(ops in prop::collection::vec(op(), 1..60), filters in prop::collection::vec(filter(), 1..6)) {
        let index = Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap();
        let mut model: BTreeMap<u32, Value> = BTreeMap::new();
        let id = |i: u32| format!("id{i}");
        for op in ops {
            match op {
                // The record layer refuses metadata that is not an object.
                Op::Put(_, Some(m)) | Op::Overwrite(_, m) | Op::Patch(_, m) if !m.is_object() => {}
                Op::Put(i, m) => {
                    let mut v = Vector::dense(id(i), vec![i as f32, 1.0]);
                    v.metadata = m.clone();
                    index.upsert("", vec![v]).unwrap();
                    model.insert(i, m.unwrap_or(Value::Null));
                }
                Op::Overwrite(i, m) | Op::Patch(i, m) if !model.contains_key(&i) => {
                    let _ = m;
                }
                Op::Overwrite(i, m) => {
                    let u = Update { id: id(i), metadata: Some(m.clone()), ..Update::default() };
                    prop_assert!(index.update("", u).unwrap());
                    model.insert(i, m);
                }
                Op::Patch(i, p) => {
                    let u = Update {
                        id: id(i),
                        metadata: Some(p.clone()),
                        metadata_update_mode: MetadataUpdateMode::Patch,
                        ..Update::default()
                    };
                    prop_assert!(index.update("", u).unwrap());
                    merge(model.get_mut(&i).unwrap(), &p);
                }
                Op::Delete(i) => {
                    let gone = index.delete("", Delete::ids([id(i)])).unwrap();
                    prop_assert_eq!(gone, usize::from(model.remove(&i).is_some()));
                }
                Op::Reset => { index.reset(""); model.clear(); }
            }
        }
        for text in &filters {
            let f = Filter::parse(text).unwrap();
            let truth: BTreeSet<String> = model.iter().filter(|(_, m)| f.matches(m)).map(|(i, _)| id(*i)).collect();
            let q = Query { filter: text.clone(), ..Query::dense(vec![0.0, 1.0], 100) };
            let got: BTreeSet<String> = index.query("", &q).unwrap().into_iter().map(|h| h.id).collect();
            prop_assert_eq!(&got, &truth, "query {}", text);
        }
        let text = &filters[0];
        let f = Filter::parse(text).unwrap();
        let doomed = model.values().filter(|m| f.matches(m)).count();
        prop_assert_eq!(index.delete("", Delete::filter(text.clone())).unwrap(), doomed);
        let q = Query { filter: text.clone(), ..Query::dense(vec![0.0, 1.0], 100) };
        prop_assert!(index.query("", &q).unwrap().is_empty());
    }
}
