//! Bad input: each case is a typed error, never a panic, and changes nothing (one test per row
//! of issue 3 and of the sparse rules of DESIGN §2.1).

use flowvec::vector::{
    Delete, Fetch, Index, IndexConfig, IndexKind, Metric, Query, Range, SparseVector, Update,
    Vector, VectorError,
};
use serde_json::json;

fn dense(dim: usize, metric: Metric) -> Index {
    Index::new(IndexConfig::dense(dim, metric)).unwrap()
}

fn sparse() -> Index {
    Index::new(IndexConfig::sparse()).unwrap()
}

fn hybrid() -> Index {
    Index::new(IndexConfig::hybrid(2, Metric::Cosine)).unwrap()
}

fn sv(indices: Vec<i32>, values: Vec<f32>) -> SparseVector {
    SparseVector::new(indices, values)
}

/// Asserts the index still holds nothing (the failed call wrote nothing).
fn assert_empty(index: &Index) {
    assert_eq!(index.info().vector_count, 0);
}

#[test]
fn wrong_dimension_has_the_reference_message() {
    let index = dense(256, Metric::Cosine);
    let err = index
        .upsert("", vec![Vector::dense("a", vec![1.0, 2.0])])
        .unwrap_err();
    assert_eq!(
        err,
        VectorError::DimensionMismatch {
            received: 2,
            expected: 256
        }
    );
    assert_eq!(
        err.to_string(),
        "Invalid vector dimension: 2, expected: 256"
    );
    let err = index
        .query("", &Query::dense(vec![1.0, 2.0], 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid vector dimension: 2, expected: 256"
    );
    assert_empty(&index);
}

#[test]
fn nan_value_is_rejected() {
    let index = dense(3, Metric::Euclidean);
    let err = index
        .upsert("", vec![Vector::dense("a", vec![1.0, f32::NAN, 0.0])])
        .unwrap_err();
    assert!(
        matches!(err, VectorError::NonFiniteValue { position: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("NaN"), "{err}");
    assert_empty(&index);
}

#[test]
fn infinite_value_is_rejected() {
    let index = dense(2, Metric::DotProduct);
    let err = index
        .upsert("", vec![Vector::dense("a", vec![f32::NEG_INFINITY, 0.0])])
        .unwrap_err();
    assert!(
        matches!(err, VectorError::NonFiniteValue { position: 0, .. }),
        "{err:?}"
    );
    let err = index
        .query("", &Query::dense(vec![0.0, f32::INFINITY], 1))
        .unwrap_err();
    assert!(
        matches!(err, VectorError::NonFiniteValue { position: 1, .. }),
        "{err:?}"
    );
    assert_empty(&index);
}

#[test]
fn json_number_beyond_f32_is_rejected_as_infinite() {
    let index = dense(2, Metric::Euclidean);
    let v: Vector = serde_json::from_str(r#"{"id":"a","vector":[1e300, 0]}"#).unwrap();
    let err = index.upsert("", vec![v]).unwrap_err();
    assert!(
        matches!(err, VectorError::NonFiniteValue { position: 0, .. }),
        "{err:?}"
    );
}

#[test]
fn zero_vector_under_cosine_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let err = index
        .upsert("", vec![Vector::dense("a", vec![0.0, 0.0])])
        .unwrap_err();
    assert_eq!(err, VectorError::ZeroVector);
    assert_empty(&index);
    // Under other metrics the zero vector is an ordinary point.
    let euclid = dense(2, Metric::Euclidean);
    euclid
        .upsert("", vec![Vector::dense("a", vec![0.0, 0.0])])
        .unwrap();
}

#[test]
fn empty_id_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let err = index
        .upsert("", vec![Vector::dense("", vec![1.0, 0.0])])
        .unwrap_err();
    assert_eq!(err, VectorError::EmptyId);
    assert_empty(&index);
}

#[test]
fn overlong_id_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let id = "x".repeat(513);
    let err = index
        .upsert("", vec![Vector::dense(id, vec![1.0, 0.0])])
        .unwrap_err();
    assert_eq!(
        err,
        VectorError::IdTooLong {
            length: 513,
            max: 512
        }
    );
}

#[test]
fn sparse_part_in_a_dense_index_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let mut v = Vector::dense("a", vec![1.0, 0.0]);
    v.sparse_vector = Some(sv(vec![1], vec![1.0]));
    let err = index.upsert("", vec![v]).unwrap_err();
    assert!(
        matches!(
            err,
            VectorError::PartNotInIndex {
                kind: IndexKind::Dense,
                part: "sparseVector",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        r#"DENSE index does not accept `sparseVector` for vector id "a""#
    );
    assert_empty(&index);
}

#[test]
fn dense_part_in_a_sparse_index_is_rejected() {
    let index = sparse();
    let mut v = Vector::sparse("a", sv(vec![1], vec![1.0]));
    v.vector = Some(vec![1.0]);
    let err = index.upsert("", vec![v]).unwrap_err();
    assert!(
        matches!(
            err,
            VectorError::PartNotInIndex {
                kind: IndexKind::Sparse,
                part: "vector",
                ..
            }
        ),
        "{err:?}"
    );
    let err = index.query("", &Query::dense(vec![1.0], 1)).unwrap_err();
    assert!(
        matches!(err, VectorError::PartNotInIndex { part: "vector", .. }),
        "{err:?}"
    );
    assert_empty(&index);
}

#[test]
fn missing_dense_part_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let v = Vector {
        id: "a".into(),
        ..Vector::default()
    };
    let err = index.upsert("", vec![v]).unwrap_err();
    assert!(
        matches!(
            err,
            VectorError::MissingPart {
                kind: IndexKind::Dense,
                part: "vector",
                ..
            }
        ),
        "{err:?}"
    );
    let err = index.query("", &Query::default()).unwrap_err();
    assert!(
        matches!(err, VectorError::MissingPart { part: "vector", .. }),
        "{err:?}"
    );
}

#[test]
fn missing_sparse_part_of_a_hybrid_record_is_rejected() {
    let index = hybrid();
    let err = index
        .upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap_err();
    assert!(
        matches!(
            err,
            VectorError::MissingPart {
                kind: IndexKind::Hybrid,
                part: "sparseVector",
                ..
            }
        ),
        "{err:?}"
    );
    assert_empty(&index);
}

#[test]
fn metadata_that_is_not_an_object_is_rejected() {
    let index = dense(2, Metric::Cosine);
    for (bad, found) in [
        (json!([1, 2]), "an array"),
        (json!("x"), "a string"),
        (json!(3), "a number"),
    ] {
        let v = Vector::dense("a", vec![1.0, 0.0]).with_metadata(bad);
        let err = index.upsert("", vec![v]).unwrap_err();
        assert_eq!(err, VectorError::MetadataNotObject { found });
    }
    assert_empty(&index);
    // JSON null means no metadata.
    let v: Vector = serde_json::from_str(r#"{"id":"a","vector":[1,0],"metadata":null}"#).unwrap();
    index.upsert("", vec![v]).unwrap();
}

#[test]
fn oversized_metadata_and_data_are_rejected() {
    let mut config = IndexConfig::dense(2, Metric::Cosine);
    config.limits.metadata_max_bytes = 16;
    config.limits.data_max_bytes = 4;
    let index = Index::new(config).unwrap();
    let v = Vector::dense("a", vec![1.0, 0.0]).with_metadata(json!({"k": "0123456789"}));
    let err = index.upsert("", vec![v]).unwrap_err();
    assert_eq!(err, VectorError::MetadataTooLarge { size: 18, max: 16 });
    let v = Vector::dense("a", vec![1.0, 0.0]).with_data("hello");
    assert_eq!(
        index.upsert("", vec![v]).unwrap_err(),
        VectorError::DataTooLarge { size: 5, max: 4 }
    );
    assert_empty(&index);
}

#[test]
fn top_k_zero_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let err = index
        .query("", &Query::dense(vec![1.0, 0.0], 0))
        .unwrap_err();
    assert_eq!(
        err,
        VectorError::TopKOutOfRange {
            top_k: 0,
            max: 1000
        }
    );
}

#[test]
fn top_k_above_the_cap_is_rejected() {
    let index = dense(2, Metric::Cosine);
    assert!(index.query("", &Query::dense(vec![1.0, 0.0], 1000)).is_ok());
    let err = index
        .query("", &Query::dense(vec![1.0, 0.0], 1001))
        .unwrap_err();
    assert_eq!(
        err,
        VectorError::TopKOutOfRange {
            top_k: 1001,
            max: 1000
        }
    );
    assert_eq!(err.to_string(), "invalid topK: 1001, expected 1 ..= 1000");
}

#[test]
fn unknown_query_field_is_an_error_naming_it() {
    let err =
        serde_json::from_str::<Query>(r#"{"vector":[1,0],"includeVector":true}"#).unwrap_err();
    assert!(
        err.to_string().contains("unknown field `includeVector`"),
        "{err}"
    );
    let err = serde_json::from_str::<Query>(r#"{"vector":[1,0],"top_k":3}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field `top_k`"), "{err}");
}

#[test]
fn unknown_record_field_is_an_error_naming_it() {
    let err = serde_json::from_str::<Vector>(r#"{"id":"a","vector":[1,0],"meta":{}}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field `meta`"), "{err}");
}

#[test]
fn deleting_the_default_namespace_is_rejected() {
    let index = dense(2, Metric::Cosine);
    assert_eq!(
        index.delete_namespace(""),
        Err(VectorError::CannotDeleteDefaultNamespace)
    );
    assert_eq!(index.list_namespaces(), vec![String::new()]);
}

#[test]
fn deleting_a_missing_namespace_is_rejected() {
    let index = dense(2, Metric::Cosine);
    assert_eq!(
        index.delete_namespace("nope"),
        Err(VectorError::NamespaceNotFound {
            namespace: "nope".into()
        })
    );
}

#[test]
fn delete_without_a_selector_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let err = index.delete("", Delete::default()).unwrap_err();
    assert!(
        matches!(
            err,
            VectorError::SelectorCount {
                operation: "delete",
                given: 0,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn delete_with_several_selectors_is_rejected() {
    let index = dense(2, Metric::Cosine);
    index
        .upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    let both = Delete {
        ids: Some(vec!["a".into()]),
        prefix: Some("a".into()),
        filter: None,
    };
    let err = index.delete("", both).unwrap_err();
    assert!(
        matches!(err, VectorError::SelectorCount { given: 2, .. }),
        "{err:?}"
    );
    let all = Delete {
        ids: Some(vec![]),
        prefix: Some(String::new()),
        filter: Some("x = 1".into()),
    };
    assert!(matches!(
        index.delete("", all),
        Err(VectorError::SelectorCount { given: 3, .. })
    ));
    assert_eq!(index.info().vector_count, 1, "nothing was deleted");
}

#[test]
fn delete_with_a_blank_filter_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let err = index.delete("", Delete::filter("  ")).unwrap_err();
    assert!(
        matches!(err, VectorError::InvalidParameter { name: "filter", .. }),
        "{err:?}"
    );
}

#[test]
fn fetch_needs_exactly_one_selector() {
    let index = dense(2, Metric::Cosine);
    assert!(matches!(
        index.fetch("", Fetch::default()),
        Err(VectorError::SelectorCount {
            operation: "fetch",
            given: 0,
            ..
        })
    ));
    let both = Fetch {
        prefix: Some("a".into()),
        ..Fetch::ids(["a"])
    };
    assert!(matches!(
        index.fetch("", both),
        Err(VectorError::SelectorCount { given: 2, .. })
    ));
}

#[test]
fn sparse_lengths_must_match() {
    let err = sparse()
        .upsert("", vec![Vector::sparse("a", sv(vec![1, 2], vec![1.0]))])
        .unwrap_err();
    assert_eq!(
        err,
        VectorError::SparseLengthMismatch {
            indices: 2,
            values: 1
        }
    );
}

#[test]
fn sparse_needs_at_least_one_entry() {
    let index = sparse();
    let err = index
        .upsert("", vec![Vector::sparse("a", sv(vec![], vec![]))])
        .unwrap_err();
    assert_eq!(err, VectorError::SparseEmpty);
    let err = index
        .query("", &Query::sparse(sv(vec![], vec![]), 1))
        .unwrap_err();
    assert_eq!(err, VectorError::SparseEmpty);
}

#[test]
fn sparse_entries_are_capped() {
    let mut config = IndexConfig::sparse();
    config.limits.sparse_max_entries = 3;
    let index = Index::new(config).unwrap();
    index
        .upsert(
            "",
            vec![Vector::sparse("ok", sv(vec![1, 2, 3], vec![1.0; 3]))],
        )
        .unwrap();
    let err = index
        .upsert(
            "",
            vec![Vector::sparse("a", sv(vec![1, 2, 3, 4], vec![1.0; 4]))],
        )
        .unwrap_err();
    assert_eq!(err, VectorError::SparseTooManyEntries { count: 4, max: 3 });
    // The default cap is 1000.
    let index = sparse();
    let ok: Vec<i32> = (0..1000).collect();
    index
        .upsert("", vec![Vector::sparse("a", sv(ok, vec![1.0; 1000]))])
        .unwrap();
    let over: Vec<i32> = (0..1001).collect();
    let err = index
        .upsert("", vec![Vector::sparse("b", sv(over, vec![1.0; 1001]))])
        .unwrap_err();
    assert_eq!(
        err,
        VectorError::SparseTooManyEntries {
            count: 1001,
            max: 1000
        }
    );
}

#[test]
fn sparse_duplicate_index_is_rejected() {
    let err = sparse()
        .upsert(
            "",
            vec![Vector::sparse("a", sv(vec![7, 3, 7], vec![1.0, 2.0, 3.0]))],
        )
        .unwrap_err();
    assert_eq!(err, VectorError::SparseDuplicateIndex { index: 7 });
}

#[test]
fn sparse_values_must_be_finite() {
    let err = sparse()
        .upsert(
            "",
            vec![Vector::sparse("a", sv(vec![1, 2], vec![1.0, f32::NAN]))],
        )
        .unwrap_err();
    assert!(
        matches!(err, VectorError::SparseNonFiniteValue { position: 1, .. }),
        "{err:?}"
    );
}

#[test]
fn sparse_vectors_are_stored_sorted_by_index() {
    let index = sparse();
    let v = Vector::sparse("a", sv(vec![9, -4, 2], vec![0.9, -0.4, 0.2]));
    index.upsert("", vec![v]).unwrap();
    let got = index.fetch("", Fetch::ids(["a"]).include_all()).unwrap();
    let got = got[0].as_ref().unwrap();
    assert_eq!(
        got.sparse_vector,
        Some(sv(vec![-4, 2, 9], vec![-0.4, 0.2, 0.9]))
    );
}

#[test]
fn a_batch_with_one_bad_record_writes_nothing() {
    let index = dense(2, Metric::Cosine);
    let batch = vec![
        Vector::dense("a", vec![1.0, 0.0]),
        Vector::dense("b", vec![0.0, 1.0]),
        Vector::dense("c", vec![1.0]),
    ];
    let err = index.upsert("ns", batch).unwrap_err();
    assert!(matches!(err, VectorError::DimensionMismatch { .. }));
    assert_empty(&index);
    assert_eq!(
        index.list_namespaces(),
        vec![String::new()],
        "no namespace was created"
    );
}

#[test]
fn update_naming_nothing_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let err = index
        .update(
            "",
            Update {
                id: "a".into(),
                ..Update::default()
            },
        )
        .unwrap_err();
    assert_eq!(err, VectorError::EmptyUpdate { id: "a".into() });
}

#[test]
fn hybrid_update_with_one_vector_part_is_rejected() {
    let index = hybrid();
    let u = Update {
        id: "a".into(),
        vector: Some(vec![1.0, 0.0]),
        ..Update::default()
    };
    assert_eq!(
        index.update("", u).unwrap_err(),
        VectorError::HybridPartsTogether {
            id: "a".into(),
            given: "vector"
        }
    );
    let u = Update {
        id: "a".into(),
        sparse_vector: Some(sv(vec![1], vec![1.0])),
        ..Update::default()
    };
    assert!(matches!(
        index.update("", u),
        Err(VectorError::HybridPartsTogether {
            given: "sparseVector",
            ..
        })
    ));
}

#[test]
fn update_with_bad_parts_is_rejected_and_changes_nothing() {
    let index = dense(2, Metric::Cosine);
    index
        .upsert(
            "",
            vec![Vector::dense("a", vec![1.0, 0.0]).with_metadata(json!({"k": 1}))],
        )
        .unwrap();
    let u = Update {
        id: "a".into(),
        vector: Some(vec![1.0]),
        ..Update::default()
    };
    assert!(matches!(
        index.update("", u),
        Err(VectorError::DimensionMismatch { .. })
    ));
    let u = Update {
        id: "a".into(),
        metadata: Some(json!([1])),
        ..Update::default()
    };
    assert!(matches!(
        index.update("", u),
        Err(VectorError::MetadataNotObject { .. })
    ));
    let got = index.fetch("", Fetch::ids(["a"]).include_all()).unwrap();
    let got = got[0].as_ref().unwrap();
    assert_eq!(got.vector, Some(vec![1.0, 0.0]));
    assert_eq!(got.metadata, Some(json!({"k": 1})));
}

#[test]
fn range_limit_must_be_positive_and_capped() {
    let index = dense(2, Metric::Cosine);
    assert_eq!(
        index.range("", Range::first(0)),
        Err(VectorError::LimitOutOfRange {
            limit: 0,
            max: 1000
        })
    );
    assert_eq!(
        index.range("", Range::first(1001)),
        Err(VectorError::LimitOutOfRange {
            limit: 1001,
            max: 1000
        })
    );
}

#[test]
fn range_rejects_a_forged_cursor() {
    let index = dense(2, Metric::Cosine);
    let r = Range {
        cursor: "not a cursor!".into(),
        ..Range::first(5)
    };
    assert!(matches!(
        index.range("", r),
        Err(VectorError::InvalidCursor { .. })
    ));
}

#[test]
fn query_mode_the_index_lacks_is_rejected() {
    let index = dense(2, Metric::Cosine);
    let q: Query = serde_json::from_str(r#"{"vector":[1,0],"queryMode":"SPARSE"}"#).unwrap();
    assert!(matches!(
        index.query("", &q),
        Err(VectorError::PartNotInIndex {
            part: "sparseVector",
            ..
        })
    ));
    let index = hybrid();
    let q: Query = serde_json::from_str(r#"{"vector":[1,0],"queryMode":"SPARSE"}"#).unwrap();
    assert!(matches!(
        index.query("", &q),
        Err(VectorError::MissingPart {
            part: "sparseVector",
            ..
        })
    ));
}

#[test]
fn bad_configuration_is_rejected() {
    assert!(matches!(
        Index::new(IndexConfig::dense(0, Metric::Cosine)),
        Err(VectorError::InvalidParameter {
            name: "dimension",
            ..
        })
    ));
    let mut c = IndexConfig::hybrid(4, Metric::Cosine);
    c.graph.m = 257;
    assert!(matches!(
        Index::new(c),
        Err(VectorError::InvalidParameter { name: "m", .. })
    ));
}
