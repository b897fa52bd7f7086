//! Record operations: upsert, update, fetch, delete, range, reset, namespaces and info, plus a
//! proptest that runs random operation sequences against a plain model.

use flowvec::vector::{
    Delete, Fetch, FetchResult, Index, IndexConfig, IndexKind, MetadataUpdateMode, Metric, Query,
    Range, SparseVector, Update, Vector,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn dense_index() -> Index {
    Index::new(IndexConfig::dense(2, Metric::Cosine)).unwrap()
}

fn hybrid_index() -> Index {
    Index::new(IndexConfig::hybrid(2, Metric::Euclidean)).unwrap()
}

fn hv(id: &str, v: [f32; 2], t: i32) -> Vector {
    Vector {
        id: id.into(),
        vector: Some(v.to_vec()),
        sparse_vector: Some(SparseVector::new(vec![t], vec![1.0])),
        ..Vector::default()
    }
}

fn fetch_one(index: &Index, ns: &str, id: &str) -> Option<FetchResult> {
    index
        .fetch(ns, Fetch::ids([id]).include_all())
        .unwrap()
        .remove(0)
}

fn all_ids(index: &Index, ns: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = index
            .range(
                ns,
                Range {
                    cursor,
                    ..Range::first(3)
                },
            )
            .unwrap();
        out.extend(page.vectors.into_iter().map(|v| v.id));
        if page.next_cursor.is_empty() {
            return out;
        }
        cursor = page.next_cursor;
    }
}

#[test]
fn upserted_records_come_back_as_upserted() {
    let index = dense_index();
    let v = Vector::dense("a", vec![3.0, 4.0])
        .with_metadata(json!({"k": [1, 2]}))
        .with_data("text");
    index.upsert("", vec![v]).unwrap();
    let got = fetch_one(&index, "", "a").unwrap();
    // Cosine keeps the norm: the vector is not returned normalised.
    assert_eq!(got.vector, Some(vec![3.0, 4.0]));
    assert_eq!(got.metadata, Some(json!({"k": [1, 2]})));
    assert_eq!(got.data.as_deref(), Some("text"));
    assert_eq!(got.sparse_vector, None);
}

#[test]
fn fetch_without_include_flags_returns_only_ids() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0])
                    .with_metadata(json!({"x": 1}))
                    .with_data("d"),
            ],
        )
        .unwrap();
    let got = index.fetch("", Fetch::ids(["a"])).unwrap();
    assert_eq!(serde_json::to_string(&got).unwrap(), r#"[{"id":"a"}]"#);
    let got = index
        .fetch(
            "",
            Fetch {
                include_metadata: true,
                ..Fetch::ids(["a"])
            },
        )
        .unwrap();
    assert_eq!(
        serde_json::to_string(&got).unwrap(),
        r#"[{"id":"a","metadata":{"x":1}}]"#
    );
}

#[test]
fn fetch_keeps_order_and_gives_none_for_missing_ids() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0]),
                Vector::dense("b", vec![0.0, 1.0]),
            ],
        )
        .unwrap();
    let got = index.fetch("", Fetch::ids(["b", "zz", "a", "b"])).unwrap();
    let ids: Vec<Option<&str>> = got
        .iter()
        .map(|r| r.as_ref().map(|r| r.id.as_str()))
        .collect();
    assert_eq!(ids, vec![Some("b"), None, Some("a"), Some("b")]);
    assert_eq!(serde_json::to_string(&got[1]).unwrap(), "null");
}

#[test]
fn fetch_by_prefix_returns_matches_in_id_order() {
    let index = dense_index();
    let ids = ["doc-2", "doc-10", "other", "doc-1", "doc"];
    index
        .upsert(
            "",
            ids.iter()
                .map(|id| Vector::dense(*id, vec![1.0, 1.0]))
                .collect(),
        )
        .unwrap();
    let got: Vec<String> = index
        .fetch("", Fetch::prefix("doc-"))
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(got, vec!["doc-1", "doc-10", "doc-2"]);
}

#[test]
fn numeric_ids_on_the_wire_become_strings() {
    let index = dense_index();
    let v: Vec<Vector> = serde_json::from_str(r#"[{"id": 12, "vector": [1, 0]}]"#).unwrap();
    index.upsert("", v).unwrap();
    let f: Fetch = serde_json::from_str(r#"{"ids": 12}"#).unwrap();
    assert_eq!(index.fetch("", f).unwrap()[0].as_ref().unwrap().id, "12");
}

#[test]
fn upsert_replaces_the_whole_record() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0])
                    .with_metadata(json!({"x": 1}))
                    .with_data("d"),
            ],
        )
        .unwrap();
    index
        .upsert("", vec![Vector::dense("a", vec![0.0, 2.0])])
        .unwrap();
    let got = fetch_one(&index, "", "a").unwrap();
    assert_eq!(got.vector, Some(vec![0.0, 2.0]));
    assert_eq!(
        got.metadata, None,
        "metadata is not kept from the old record"
    );
    assert_eq!(got.data, None);
    assert_eq!(index.info().vector_count, 1);
}

#[test]
fn later_duplicate_in_one_batch_wins() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0]),
                Vector::dense("a", vec![0.0, 1.0]),
            ],
        )
        .unwrap();
    assert_eq!(
        fetch_one(&index, "", "a").unwrap().vector,
        Some(vec![0.0, 1.0])
    );
    assert_eq!(index.info().vector_count, 1);
}

#[test]
fn update_overwrites_metadata_by_default() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![Vector::dense("a", vec![1.0, 0.0]).with_metadata(json!({"x": 1, "y": 2}))],
        )
        .unwrap();
    let u = Update {
        id: "a".into(),
        metadata: Some(json!({"z": 3})),
        ..Update::default()
    };
    assert!(index.update("", u).unwrap());
    assert_eq!(
        fetch_one(&index, "", "a").unwrap().metadata,
        Some(json!({"z": 3}))
    );
}

#[test]
fn update_patches_metadata_as_a_merge_patch() {
    let index = dense_index();
    let meta = json!({"keep": 1, "drop": 2, "nested": {"a": 1, "b": 2}});
    index
        .upsert(
            "",
            vec![Vector::dense("a", vec![1.0, 0.0]).with_metadata(meta)],
        )
        .unwrap();
    let u: Update = serde_json::from_value(json!({
        "id": "a",
        "metadata": {"drop": null, "new": "v", "nested": {"b": null, "c": 3}},
        "metadataUpdateMode": "PATCH"
    }))
    .unwrap();
    assert_eq!(u.metadata_update_mode, MetadataUpdateMode::Patch);
    assert!(index.update("", u).unwrap());
    assert_eq!(
        fetch_one(&index, "", "a").unwrap().metadata,
        Some(json!({"keep": 1, "new": "v", "nested": {"a": 1, "c": 3}}))
    );
}

#[test]
fn update_patch_on_a_record_without_metadata_creates_it() {
    let index = dense_index();
    index
        .upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    let u = Update {
        id: "a".into(),
        metadata: Some(json!({"x": 1, "gone": null})),
        metadata_update_mode: MetadataUpdateMode::Patch,
        ..Update::default()
    };
    assert!(index.update("", u).unwrap());
    assert_eq!(
        fetch_one(&index, "", "a").unwrap().metadata,
        Some(json!({"x": 1}))
    );
}

#[test]
fn update_changes_vector_and_data_and_keeps_the_rest() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0])
                    .with_metadata(json!({"m": 1}))
                    .with_data("old"),
            ],
        )
        .unwrap();
    let u = Update {
        id: "a".into(),
        vector: Some(vec![0.0, 1.0]),
        data: Some("new".into()),
        ..Update::default()
    };
    assert!(index.update("", u).unwrap());
    let got = fetch_one(&index, "", "a").unwrap();
    assert_eq!(got.vector, Some(vec![0.0, 1.0]));
    assert_eq!(got.data.as_deref(), Some("new"));
    assert_eq!(got.metadata, Some(json!({"m": 1})));
    // The query sees the new vector, not the old one.
    let hits = index.query("", &Query::dense(vec![0.0, 1.0], 1)).unwrap();
    assert_eq!((hits[0].id.as_str(), hits[0].score), ("a", 1.0));
}

#[test]
fn update_of_a_missing_id_or_namespace_is_false() {
    let index = dense_index();
    let u = Update {
        id: "nope".into(),
        data: Some("x".into()),
        ..Update::default()
    };
    assert!(!index.update("", u.clone()).unwrap());
    assert!(!index.update("no-such-ns", u).unwrap());
    assert_eq!(
        index.list_namespaces(),
        vec![String::new()],
        "update creates no namespace"
    );
}

#[test]
fn hybrid_update_replaces_both_parts() {
    let index = hybrid_index();
    index.upsert("", vec![hv("a", [1.0, 0.0], 5)]).unwrap();
    let u = Update {
        id: "a".into(),
        vector: Some(vec![0.0, 1.0]),
        sparse_vector: Some(SparseVector::new(vec![9], vec![2.0])),
        ..Update::default()
    };
    assert!(index.update("", u).unwrap());
    let got = fetch_one(&index, "", "a").unwrap();
    assert_eq!(got.vector, Some(vec![0.0, 1.0]));
    assert_eq!(
        got.sparse_vector,
        Some(SparseVector::new(vec![9], vec![2.0]))
    );
    let old = index
        .query("", &Query::sparse(SparseVector::new(vec![5], vec![1.0]), 5))
        .unwrap();
    assert!(old.is_empty(), "the old sparse part is gone: {old:?}");
}

#[test]
fn delete_by_ids_counts_only_present_records() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0]),
                Vector::dense("b", vec![0.0, 1.0]),
            ],
        )
        .unwrap();
    assert_eq!(index.delete("", Delete::ids(["a", "zz", "a"])).unwrap(), 1);
    assert_eq!(all_ids(&index, ""), vec!["b"]);
    assert_eq!(index.delete("missing-ns", Delete::ids(["b"])).unwrap(), 0);
}

#[test]
fn delete_by_prefix_removes_exactly_the_matches() {
    let index = dense_index();
    let ids = ["a-1", "a-2", "a", "b-1", "a-"];
    index
        .upsert(
            "",
            ids.iter()
                .map(|id| Vector::dense(*id, vec![1.0, 1.0]))
                .collect(),
        )
        .unwrap();
    assert_eq!(index.delete("", Delete::prefix("a-")).unwrap(), 3);
    assert_eq!(all_ids(&index, ""), vec!["a", "b-1"]);
}

#[test]
fn delete_by_a_bad_filter_is_an_error_and_deletes_nothing() {
    let index = dense_index();
    index
        .upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    let err = index.delete("", Delete::filter("city =")).unwrap_err();
    assert!(
        matches!(err, flowvec::vector::VectorError::InvalidFilter { .. }),
        "{err:?}"
    );
    assert_eq!(index.info().vector_count, 1);
}

#[test]
fn delete_by_filter_removes_matching_records_once_filters_parse() {
    // Runs fully once the filter language exists (the placeholder parser rejects everything).
    if flowvec::vector::filter::Filter::parse("tier = 1").is_err() {
        return;
    }
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0]).with_metadata(json!({"tier": 1})),
                Vector::dense("b", vec![1.0, 0.0]).with_metadata(json!({"tier": 2})),
                Vector::dense("c", vec![1.0, 0.0]),
            ],
        )
        .unwrap();
    assert_eq!(index.delete("", Delete::filter("tier = 1")).unwrap(), 1);
    assert_eq!(all_ids(&index, ""), vec!["b", "c"]);
}

#[test]
fn deleted_slots_are_reused_without_mixing_records() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("a", vec![1.0, 0.0]).with_data("A"),
                Vector::dense("b", vec![0.0, 1.0]),
            ],
        )
        .unwrap();
    assert_eq!(index.delete("", Delete::ids(["a"])).unwrap(), 1);
    index
        .upsert("", vec![Vector::dense("c", vec![-1.0, 0.0])])
        .unwrap();
    let c = fetch_one(&index, "", "c").unwrap();
    assert_eq!((c.vector, c.data), (Some(vec![-1.0, 0.0]), None));
    assert_eq!(fetch_one(&index, "", "a"), None);
    let hits = index.query("", &Query::dense(vec![1.0, 0.0], 3)).unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, vec!["b", "c"]);
}

#[test]
fn range_pages_through_everything_in_id_order() {
    let index = dense_index();
    let ids: Vec<String> = (0..10).map(|i| format!("id-{i}")).collect();
    index
        .upsert(
            "",
            ids.iter()
                .map(|id| Vector::dense(id.clone(), vec![1.0, 1.0]))
                .collect(),
        )
        .unwrap();
    let first = index.range("", Range::first(4)).unwrap();
    assert_eq!(first.vectors.len(), 4);
    assert!(!first.next_cursor.is_empty());
    assert_eq!(all_ids(&index, ""), ids);
    // The last page has an empty cursor; a page that ends exactly at the end too.
    let all = index.range("", Range::first(10)).unwrap();
    assert_eq!((all.vectors.len(), all.next_cursor.as_str()), (10, ""));
}

#[test]
fn range_cursor_survives_writes_between_pages() {
    let index = dense_index();
    index
        .upsert(
            "",
            ["a", "b", "c", "d", "e"]
                .iter()
                .map(|id| Vector::dense(*id, vec![1.0, 1.0]))
                .collect(),
        )
        .unwrap();
    let p1 = index.range("", Range::first(2)).unwrap();
    assert_eq!(
        p1.vectors.iter().map(|v| v.id.as_str()).collect::<Vec<_>>(),
        vec!["a", "b"]
    );
    // Delete the record the cursor points at, insert one before and one after it.
    index.delete("", Delete::ids(["c"])).unwrap();
    index
        .upsert(
            "",
            vec![
                Vector::dense("aa", vec![1.0, 1.0]),
                Vector::dense("cc", vec![1.0, 1.0]),
            ],
        )
        .unwrap();
    let p2 = index
        .range(
            "",
            Range {
                cursor: p1.next_cursor,
                ..Range::first(10)
            },
        )
        .unwrap();
    let ids: Vec<&str> = p2.vectors.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ids, vec!["cc", "d", "e"]);
    assert_eq!(p2.next_cursor, "");
}

#[test]
fn range_with_prefix_and_include_flags() {
    let index = dense_index();
    index
        .upsert(
            "",
            vec![
                Vector::dense("p-1", vec![1.0, 0.0]).with_metadata(json!({"n": 1})),
                Vector::dense("p-2", vec![0.0, 1.0]).with_data("two"),
                Vector::dense("q-1", vec![1.0, 1.0]),
            ],
        )
        .unwrap();
    let r: Range = serde_json::from_value(json!({
        "cursor": "0", "limit": 1, "prefix": "p-", "includeMetadata": true, "includeData": true
    }))
    .unwrap();
    let p1 = index.range("", r.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&p1.vectors).unwrap(),
        json!([{"id": "p-1", "metadata": {"n": 1}}])
    );
    let p2 = index
        .range(
            "",
            Range {
                cursor: p1.next_cursor,
                ..r
            },
        )
        .unwrap();
    assert_eq!(
        serde_json::to_value(&p2).unwrap(),
        json!({"nextCursor": "", "vectors": [{"id": "p-2", "data": "two"}]})
    );
}

#[test]
fn missing_namespaces_read_as_empty() {
    let index = dense_index();
    assert_eq!(
        index
            .query("nope", &Query::dense(vec![1.0, 0.0], 3))
            .unwrap(),
        vec![]
    );
    assert_eq!(
        index.fetch("nope", Fetch::ids(["a", "b"])).unwrap(),
        vec![None, None]
    );
    assert_eq!(index.fetch("nope", Fetch::prefix("")).unwrap(), vec![]);
    let page = index.range("nope", Range::first(5)).unwrap();
    assert_eq!((page.vectors.len(), page.next_cursor.as_str()), (0, ""));
    assert_eq!(
        index
            .query_batch("nope", &[Query::dense(vec![1.0, 0.0], 1)])
            .unwrap(),
        vec![vec![]]
    );
    // Reading never creates a namespace.
    assert_eq!(index.list_namespaces(), vec![String::new()]);
}

#[test]
fn namespaces_are_isolated_created_on_upsert_and_deletable() {
    let index = dense_index();
    assert_eq!(index.list_namespaces(), vec![""]);
    index
        .upsert("ns1", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    index
        .upsert("ns2", vec![Vector::dense("a", vec![0.0, 1.0])])
        .unwrap();
    assert_eq!(index.list_namespaces(), vec!["", "ns1", "ns2"]);
    assert_eq!(
        fetch_one(&index, "ns1", "a").unwrap().vector,
        Some(vec![1.0, 0.0])
    );
    assert_eq!(
        fetch_one(&index, "ns2", "a").unwrap().vector,
        Some(vec![0.0, 1.0])
    );
    assert_eq!(fetch_one(&index, "", "a"), None);
    index.delete_namespace("ns1").unwrap();
    assert_eq!(index.list_namespaces(), vec!["", "ns2"]);
    assert_eq!(fetch_one(&index, "ns1", "a"), None);
    // A later upsert creates it afresh, empty.
    index
        .upsert("ns1", vec![Vector::dense("b", vec![1.0, 0.0])])
        .unwrap();
    assert_eq!(all_ids(&index, "ns1"), vec!["b"]);
}

#[test]
fn reset_empties_one_namespace_and_keeps_it() {
    let index = dense_index();
    index
        .upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    index
        .upsert("ns", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    index.reset("ns");
    assert_eq!(all_ids(&index, "ns"), Vec::<String>::new());
    assert_eq!(all_ids(&index, ""), vec!["a"]);
    assert_eq!(index.list_namespaces(), vec!["", "ns"]);
    assert!(
        index
            .query("ns", &Query::dense(vec![1.0, 0.0], 5))
            .unwrap()
            .is_empty()
    );
    // The namespace works again after a reset.
    index
        .upsert("ns", vec![Vector::dense("z", vec![0.0, 1.0])])
        .unwrap();
    assert_eq!(
        index.query("ns", &Query::dense(vec![0.0, 1.0], 5)).unwrap()[0].id,
        "z"
    );
    index.reset("never-existed");
    assert_eq!(index.list_namespaces(), vec!["", "ns"]);
}

#[test]
fn reset_all_leaves_only_an_empty_default_namespace() {
    let index = hybrid_index();
    index.upsert("", vec![hv("a", [1.0, 0.0], 1)]).unwrap();
    index.upsert("x", vec![hv("b", [1.0, 0.0], 1)]).unwrap();
    index.reset_all();
    assert_eq!(index.list_namespaces(), vec![""]);
    assert_eq!(index.info().vector_count, 0);
    index.upsert("", vec![hv("c", [1.0, 0.0], 1)]).unwrap();
    assert_eq!(
        index
            .query("", &Query::sparse(SparseVector::new(vec![1], vec![1.0]), 5))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn info_reports_counts_kind_dimension_and_metric() {
    let index = hybrid_index();
    index
        .upsert("", vec![hv("a", [1.0, 0.0], 1), hv("b", [1.0, 0.0], 2)])
        .unwrap();
    index.upsert("ns", vec![hv("a", [1.0, 0.0], 1)]).unwrap();
    let info = index.info();
    assert_eq!(info.vector_count, 3);
    assert_eq!(info.index_type, IndexKind::Hybrid);
    assert!(info.index_size > 0);
    let wire = serde_json::to_value(&info).unwrap();
    assert_eq!(wire["dimension"], 2);
    assert_eq!(wire["similarityFunction"], "EUCLIDEAN");
    assert_eq!(wire["indexType"], "HYBRID");
    assert_eq!(wire["pendingVectorCount"], 0);
    assert_eq!(
        wire["namespaces"],
        json!({"": {"vectorCount": 2, "pendingVectorCount": 0}, "ns": {"vectorCount": 1, "pendingVectorCount": 0}})
    );
    assert_eq!(
        wire["denseIndex"],
        json!({"dimension": 2, "similarityFunction": "EUCLIDEAN"})
    );
    let sparse = Index::new(IndexConfig::sparse()).unwrap().info();
    let wire = serde_json::to_value(&sparse).unwrap();
    assert_eq!(
        (wire["dimension"].clone(), wire["indexType"].clone()),
        (json!(0), json!("SPARSE"))
    );
    assert!(wire.get("denseIndex").is_none());
}

// ---------------------------------------------------------------------------------------------
// Model-based proptest: random upsert / update / delete / reset sequences on a hybrid index
// against a BTreeMap, checked through fetch, range and exhaustive dense and sparse queries.

#[derive(Debug, Clone, PartialEq)]
struct Rec {
    v: [i8; 3],
    t: i32,
    meta: Option<Value>,
    data: Option<String>,
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(Vec<(u8, [i8; 3], i32, Option<u8>)>),
    UpdateMeta(u8, u8, bool),
    UpdateVec(u8, [i8; 3], i32),
    DeleteIds(Vec<u8>),
    DeletePrefix(u8),
    Reset,
}

fn id(i: u8) -> String {
    format!("{}{}", ["a", "b"][usize::from(i % 2)], i)
}

fn vec3() -> impl Strategy<Value = [i8; 3]> {
    prop::array::uniform3(-2i8..=2)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec((0u8..12, vec3(), 0i32..4, prop::option::of(0u8..3)), 1..4).prop_map(Op::Upsert),
        1 => (0u8..12, 0u8..3, any::<bool>()).prop_map(|(i, m, p)| Op::UpdateMeta(i, m, p)),
        1 => (0u8..12, vec3(), 0i32..4).prop_map(|(i, v, t)| Op::UpdateVec(i, v, t)),
        2 => prop::collection::vec(0u8..12, 1..3).prop_map(Op::DeleteIds),
        1 => (0u8..2).prop_map(Op::DeletePrefix),
        1 => Just(Op::Reset),
    ]
}

fn f(v: [i8; 3]) -> Vec<f32> {
    v.iter().map(|x| f32::from(*x)).collect()
}

fn euclid_score(a: [i8; 3], b: [i8; 3]) -> f32 {
    let d: i32 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (i32::from(*x) - i32::from(y)).pow(2))
        .sum();
    1.0 / (1.0 + d as f32)
}

fn apply(index: &Index, model: &mut BTreeMap<String, Rec>, op: &Op) {
    match op {
        Op::Upsert(batch) => {
            let vs = batch
                .iter()
                .map(|(i, v, t, m)| Vector {
                    id: id(*i),
                    vector: Some(f(*v)),
                    sparse_vector: Some(SparseVector::new(
                        vec![*t, 10 + i32::from(*i)],
                        vec![1.0, 0.5],
                    )),
                    metadata: m.map(|m| json!({"m": m})),
                    data: m.map(|m| format!("d{m}")),
                })
                .collect();
            index.upsert("", vs).unwrap();
            for (i, v, t, m) in batch {
                let rec = Rec {
                    v: *v,
                    t: *t,
                    meta: m.map(|m| json!({"m": m})),
                    data: m.map(|m| format!("d{m}")),
                };
                model.insert(id(*i), rec);
            }
        }
        Op::UpdateMeta(i, m, patch) => {
            let mode = if *patch {
                MetadataUpdateMode::Patch
            } else {
                MetadataUpdateMode::Overwrite
            };
            let u = Update {
                id: id(*i),
                metadata: Some(json!({"u": m})),
                metadata_update_mode: mode,
                ..Update::default()
            };
            let changed = index.update("", u).unwrap();
            assert_eq!(changed, model.contains_key(&id(*i)));
            if let Some(rec) = model.get_mut(&id(*i)) {
                let mut meta = if *patch {
                    rec.meta.clone().unwrap_or(json!({}))
                } else {
                    json!({})
                };
                meta["u"] = json!(m);
                rec.meta = Some(meta);
            }
        }
        Op::UpdateVec(i, v, t) => {
            let u = Update {
                id: id(*i),
                vector: Some(f(*v)),
                sparse_vector: Some(SparseVector::new(
                    vec![*t, 10 + i32::from(*i)],
                    vec![1.0, 0.5],
                )),
                ..Update::default()
            };
            assert_eq!(index.update("", u).unwrap(), model.contains_key(&id(*i)));
            if let Some(rec) = model.get_mut(&id(*i)) {
                rec.v = *v;
                rec.t = *t;
            }
        }
        Op::DeleteIds(ids) => {
            let ids: Vec<String> = ids.iter().map(|i| id(*i)).collect();
            let mut expected = 0;
            for i in &ids {
                expected += usize::from(model.remove(i).is_some());
            }
            assert_eq!(index.delete("", Delete::ids(ids)).unwrap(), expected);
        }
        Op::DeletePrefix(p) => {
            let prefix = ["a", "b"][usize::from(*p)];
            let before = model.len();
            model.retain(|k, _| !k.starts_with(prefix));
            assert_eq!(
                index.delete("", Delete::prefix(prefix)).unwrap(),
                before - model.len()
            );
        }
        Op::Reset => {
            index.reset("");
            model.clear();
        }
    }
}

fn check(index: &Index, model: &BTreeMap<String, Rec>, probe: [i8; 3], term: i32) {
    // Fetch every possible id.
    let ids: Vec<String> = (0..12).map(id).collect();
    let got = index
        .fetch("", Fetch::ids(ids.clone()).include_all())
        .unwrap();
    for (i, r) in ids.iter().zip(got) {
        match (model.get(i), r) {
            (None, None) => {}
            (Some(rec), Some(r)) => {
                assert_eq!(r.vector, Some(f(rec.v)));
                assert_eq!(r.metadata, rec.meta);
                assert_eq!(r.data, rec.data);
                let mut si = vec![rec.t, 10 + i32::from(i[1..].parse::<u8>().unwrap())];
                si.sort();
                assert_eq!(r.sparse_vector.unwrap().indices, si);
            }
            (m, r) => panic!("{i}: model {m:?} index {r:?}"),
        }
    }
    // Range sees exactly the model's ids in order.
    assert_eq!(
        all_ids(index, ""),
        model.keys().cloned().collect::<Vec<_>>()
    );
    // Dense: every record, by score then id.
    let mut expected: Vec<(String, f32)> = model
        .iter()
        .map(|(k, r)| (k.clone(), euclid_score(probe, r.v)))
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let q = Query {
        query_mode: flowvec::vector::QueryMode::Dense,
        ..Query::dense(f(probe), 20)
    };
    let hits: Vec<(String, f32)> = index
        .query("", &q)
        .unwrap()
        .into_iter()
        .map(|h| (h.id, h.score))
        .collect();
    assert_eq!(hits, expected);
    // Sparse: exactly the records holding `term`, all with score 1, by id.
    let hits: Vec<String> = index
        .query(
            "",
            &Query::sparse(SparseVector::new(vec![term], vec![1.0]), 20),
        )
        .unwrap()
        .into_iter()
        .map(|h| {
            assert_eq!(h.score, 1.0);
            h.id
        })
        .collect();
    let expected: Vec<String> = model
        .iter()
        .filter(|(_, r)| r.t == term)
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(hits, expected);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn operations_match_a_plain_model(ops in prop::collection::vec(op(), 1..30), probe in vec3(), term in 0i32..4) {
        let index = hybrid_index_3();
        let mut model = BTreeMap::new();
        for op in &ops {
            apply(&index, &mut model, op);
            check(&index, &model, probe, term);
        }
    }
}

fn hybrid_index_3() -> Index {
    Index::new(IndexConfig::hybrid(3, Metric::Euclidean)).unwrap()
}
