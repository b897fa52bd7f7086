//! The query contract (DESIGN §2.2): scores per metric, order and ties, topK, include flags,
//! sparse and IDF scores, hybrid fusion, query modes, filters, batches and freshness after
//! delete and replace.

use flowvec::vector::filter::Filter;
use flowvec::vector::{
    Delete, FusionAlgorithm, Index, IndexConfig, Metric, Query, QueryMode, QueryResult,
    SparseVector, Vector, VectorError, WeightingStrategy,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

fn index(config: IndexConfig) -> Index {
    Index::new(config).unwrap()
}

fn sv(indices: &[i32], values: &[f32]) -> SparseVector {
    SparseVector::new(indices.to_vec(), values.to_vec())
}

fn hybrid(id: &str, v: &[f32], s: SparseVector) -> Vector {
    Vector {
        id: id.into(),
        vector: Some(v.to_vec()),
        sparse_vector: Some(s),
        ..Vector::default()
    }
}

fn pairs(hits: &[QueryResult]) -> Vec<(&str, f32)> {
    hits.iter().map(|h| (h.id.as_str(), h.score)).collect()
}

fn ids(hits: &[QueryResult]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

fn assert_close(got: &[(&str, f32)], want: &[(&str, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for ((gi, gs), (wi, ws)) in got.iter().zip(want) {
        assert_eq!(gi, wi, "{got:?} vs {want:?}");
        assert!((f64::from(*gs) - ws).abs() < 1e-6, "{gi}: {gs} vs {ws}");
    }
}

#[test]
fn cosine_scores_are_half_one_plus_cosine() {
    let idx = index(IndexConfig::dense(2, Metric::Cosine));
    idx.upsert(
        "",
        vec![
            Vector::dense("same", vec![2.0, 0.0]),
            Vector::dense("orth", vec![0.0, 5.0]),
            Vector::dense("opp", vec![-1.0, 0.0]),
        ],
    )
    .unwrap();
    let hits = idx.query("", &Query::dense(vec![1.0, 0.0], 3)).unwrap();
    assert_eq!(
        pairs(&hits),
        vec![("same", 1.0), ("orth", 0.5), ("opp", 0.0)]
    );
}

#[test]
fn euclidean_scores_are_one_over_one_plus_squared_distance() {
    let idx = index(IndexConfig::dense(2, Metric::Euclidean));
    idx.upsert(
        "",
        vec![
            Vector::dense("d0", vec![1.0, 1.0]),
            Vector::dense("d1", vec![2.0, 1.0]),
            Vector::dense("d4", vec![1.0, 3.0]),
        ],
    )
    .unwrap();
    let hits = idx.query("", &Query::dense(vec![1.0, 1.0], 3)).unwrap();
    assert_eq!(pairs(&hits), vec![("d0", 1.0), ("d1", 0.5), ("d4", 0.2)]);
}

#[test]
fn dot_product_scores_are_half_one_plus_dot_clamped() {
    let idx = index(IndexConfig::dense(2, Metric::DotProduct));
    idx.upsert(
        "",
        vec![
            Vector::dense("big", vec![3.0, 0.0]),
            Vector::dense("half", vec![0.5, 0.0]),
            Vector::dense("neg", vec![-0.5, 0.0]),
            Vector::dense("very-neg", vec![-4.0, 0.0]),
        ],
    )
    .unwrap();
    let hits = idx.query("", &Query::dense(vec![1.0, 0.0], 4)).unwrap();
    assert_eq!(
        pairs(&hits),
        vec![
            ("big", 1.0),
            ("half", 0.75),
            ("neg", 0.25),
            ("very-neg", 0.0)
        ]
    );
}

#[test]
fn dense_scores_stay_in_the_unit_interval_on_random_data() {
    let mut rng = StdRng::seed_from_u64(7);
    for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
        let idx = index(IndexConfig::dense(8, metric));
        let records = (0..60)
            .map(|i| {
                Vector::dense(
                    format!("r{i}"),
                    (0..8).map(|_| rng.random_range(-3.0..3.0)).collect(),
                )
            })
            .collect();
        idx.upsert("", records).unwrap();
        let q: Vec<f32> = (0..8).map(|_| rng.random_range(-3.0..3.0)).collect();
        let hits = idx.query("", &Query::dense(q, 60)).unwrap();
        assert_eq!(hits.len(), 60);
        assert!(
            hits.iter().all(|h| (0.0..=1.0).contains(&h.score)),
            "{metric:?}"
        );
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{metric:?} sorted"
        );
    }
}

#[test]
fn ties_break_by_id_ascending_whatever_the_insertion_order() {
    for order in [["b", "c", "a", "aa"], ["aa", "c", "b", "a"]] {
        let idx = index(IndexConfig::hybrid(2, Metric::Cosine));
        for id in order {
            idx.upsert("", vec![hybrid(id, &[1.0, 1.0], sv(&[4], &[2.0]))])
                .unwrap();
        }
        let dense = idx.query("", &Query::dense(vec![1.0, 1.0], 4)).unwrap();
        assert_eq!(ids(&dense), vec!["a", "aa", "b", "c"]);
        let sparse = idx.query("", &Query::sparse(sv(&[4], &[1.0]), 4)).unwrap();
        assert_eq!(ids(&sparse), vec!["a", "aa", "b", "c"]);
        let mut q = Query::dense(vec![1.0, 1.0], 4);
        q.sparse_vector = Some(sv(&[4], &[1.0]));
        let fused = idx.query("", &q).unwrap();
        assert_eq!(ids(&fused), vec!["a", "aa", "b", "c"]);
        // The cut at topK keeps the smallest ids.
        let top2 = idx.query("", &Query::dense(vec![1.0, 1.0], 2)).unwrap();
        assert_eq!(ids(&top2), vec!["a", "aa"]);
    }
}

#[test]
fn top_k_bounds_the_number_of_results() {
    let idx = index(IndexConfig::dense(2, Metric::Euclidean));
    idx.upsert(
        "",
        (0..20)
            .map(|i| Vector::dense(format!("{i:02}"), vec![i as f32, 0.0]))
            .collect(),
    )
    .unwrap();
    let hits = idx.query("", &Query::dense(vec![0.0, 0.0], 5)).unwrap();
    assert_eq!(ids(&hits), vec!["00", "01", "02", "03", "04"]);
    assert_eq!(
        idx.query("", &Query::dense(vec![0.0, 0.0], 1000))
            .unwrap()
            .len(),
        20
    );
}

#[test]
fn include_flags_select_the_result_fields() {
    let idx = index(IndexConfig::hybrid(2, Metric::Cosine));
    let v = hybrid("a", &[3.0, 4.0], sv(&[7, 2], &[0.75, 0.25]))
        .with_metadata(json!({"k": "v"}))
        .with_data("txt");
    idx.upsert("", vec![v]).unwrap();
    let bare = idx.query("", &Query::dense(vec![3.0, 4.0], 1)).unwrap();
    assert_eq!(
        serde_json::to_value(&bare).unwrap(),
        json!([{"id": "a", "score": 1.0}])
    );
    let q: Query = serde_json::from_value(json!({
        "vector": [3.0, 4.0], "topK": 1, "includeVectors": true, "includeMetadata": true, "includeData": true
    }))
    .unwrap();
    let full = idx.query("", &q).unwrap();
    assert_eq!(
        serde_json::to_value(&full).unwrap(),
        json!([{
            "id": "a", "score": 1.0, "vector": [3.0, 4.0],
            "sparseVector": {"indices": [2, 7], "values": [0.25, 0.75]},
            "metadata": {"k": "v"}, "data": "txt"
        }])
    );
    let only_data = Query {
        include_data: true,
        ..Query::dense(vec![3.0, 4.0], 1)
    };
    assert_eq!(
        serde_json::to_value(idx.query("", &only_data).unwrap()).unwrap(),
        json!([{"id": "a", "score": 1.0, "data": "txt"}])
    );
}

#[test]
fn sparse_scores_are_inner_products_over_shared_indices() {
    let idx = index(IndexConfig::sparse());
    idx.upsert(
        "",
        vec![
            Vector::sparse("x", sv(&[1, 2, 3], &[1.0, 2.0, 3.0])),
            Vector::sparse("y", sv(&[3, 9], &[-1.0, 5.0])),
            Vector::sparse("z", sv(&[100], &[9.0])),
        ],
    )
    .unwrap();
    let hits = idx
        .query("", &Query::sparse(sv(&[3, 1], &[2.0, 0.5]), 10))
        .unwrap();
    // x: 0.5*1 + 2*3 = 6.5; y: 2*(-1) = -2; z shares nothing and is not a candidate.
    assert_eq!(pairs(&hits), vec![("x", 6.5), ("y", -2.0)]);
}

fn idf(n: f64, df: f64) -> f64 {
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

#[test]
fn idf_weighting_multiplies_query_values_and_tracks_deletes() {
    let idx = index(IndexConfig::sparse());
    idx.upsert(
        "",
        vec![
            Vector::sparse("a", sv(&[1, 2], &[1.0, 1.0])),
            Vector::sparse("b", sv(&[2], &[2.0])),
            Vector::sparse("c", sv(&[2], &[3.0])),
            Vector::sparse("d", sv(&[5], &[1.0])),
        ],
    )
    .unwrap();
    let q: Query = serde_json::from_value(json!({
        "sparseVector": {"indices": [1, 2], "values": [1.0, 1.0]}, "topK": 10, "weightingStrategy": "IDF"
    }))
    .unwrap();
    assert_eq!(q.weighting_strategy, Some(WeightingStrategy::Idf));
    let (w1, w2) = (idf(4.0, 1.0), idf(4.0, 3.0));
    let hits = idx.query("", &q).unwrap();
    assert_close(
        &pairs(&hits),
        &[("a", w1 + w2), ("c", 3.0 * w2), ("b", 2.0 * w2)],
    );
    // Statistics follow deletes: N = 3, n_2 = 2.
    idx.delete("", Delete::ids(["c"])).unwrap();
    let (w1, w2) = (idf(3.0, 1.0), idf(3.0, 2.0));
    let hits = idx.query("", &q).unwrap();
    assert_close(&pairs(&hits), &[("a", w1 + w2), ("b", 2.0 * w2)]);
}

/// Dense ranks a, b, c; sparse ranks c, b (a shares no index).
fn fusion_fixture() -> (Index, Query) {
    let idx = index(IndexConfig::hybrid(2, Metric::Euclidean));
    idx.upsert(
        "",
        vec![
            hybrid("a", &[0.0, 0.0], sv(&[9], &[1.0])),
            hybrid("b", &[1.0, 0.0], sv(&[1], &[1.0])),
            hybrid("c", &[2.0, 0.0], sv(&[1], &[3.0])),
        ],
    )
    .unwrap();
    let mut q = Query::dense(vec![0.0, 0.0], 3);
    q.sparse_vector = Some(sv(&[1], &[1.0]));
    (idx, q)
}

#[test]
fn hybrid_rrf_sums_reciprocal_ranks() {
    let (idx, q) = fusion_fixture();
    let hits = idx.query("", &q).unwrap();
    let r = |rank: f64| 1.0 / (60.0 + rank);
    assert_close(
        &pairs(&hits),
        &[
            ("c", r(3.0) + r(1.0)),
            ("b", r(2.0) + r(2.0)),
            ("a", r(1.0)),
        ],
    );
}

#[test]
fn hybrid_dbsf_normalises_each_list_by_three_sigma() {
    let (idx, mut q) = fusion_fixture();
    q.fusion_algorithm = FusionAlgorithm::Dbsf;
    let norm = |scores: &[f64]| -> Vec<f64> {
        let n = scores.len() as f64;
        let mean = scores.iter().sum::<f64>() / n;
        let sd = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        scores
            .iter()
            .map(|s| (s - (mean - 3.0 * sd)) / (6.0 * sd))
            .collect()
    };
    // Dense (euclidean from the origin): a 1, b 1/2, c 1/5. Sparse: c 3, b 1.
    let d = norm(&[1.0, 0.5, 0.2]);
    let s = norm(&[3.0, 1.0]);
    let mut want = vec![("a", d[0]), ("b", d[1] + s[1]), ("c", d[2] + s[0])];
    want.sort_by(|x, y| y.1.total_cmp(&x.1));
    let hits = idx.query("", &q).unwrap();
    assert_close(&pairs(&hits), &want);
}

/// A hand-checked case where the two fusions disagree on the winner.
///
/// Dense (euclidean from the origin, `1 / (1 + x²)`): a 1, d 1/2, c 1/10, b 1/17.
/// Sparse (inner product with `{1: 1}`): b 8, d 2, c 1; a shares no index.
/// RRF rewards d for ranking second twice; DBSF rewards b's outlying sparse score.
#[test]
fn hybrid_rrf_and_dbsf_rank_differently_with_exact_scores() {
    let idx = index(IndexConfig::hybrid(2, Metric::Euclidean));
    idx.upsert(
        "",
        vec![
            hybrid("a", &[0.0, 0.0], sv(&[9], &[1.0])),
            hybrid("b", &[4.0, 0.0], sv(&[1], &[8.0])),
            hybrid("c", &[3.0, 0.0], sv(&[1], &[1.0])),
            hybrid("d", &[1.0, 0.0], sv(&[1], &[2.0])),
        ],
    )
    .unwrap();
    let mut q = Query::dense(vec![0.0, 0.0], 4);
    q.sparse_vector = Some(sv(&[1], &[1.0]));

    // RRF: d = 1/62 + 1/62, b = 1/64 + 1/61, c = 1/63 + 1/63, a = 1/61.
    let rrf = idx.query("", &q).unwrap();
    assert_close(
        &pairs(&rrf),
        &[
            ("d", 0.032_258_064_516_129),
            ("b", 0.032_018_442_622_950_82),
            ("c", 0.031_746_031_746_031_74),
            ("a", 0.016_393_442_622_950_82),
        ],
    );

    // DBSF: each list mapped by (s - (mean - 3 sd)) / (6 sd), sample sd, then summed.
    // Dense list [1, 1/2, 1/10, 1/17]: mean 0.41471, sd 0.43800.
    // Sparse list [8, 2, 1]: mean 11/3, sd 3.78594.
    q.fusion_algorithm = FusionAlgorithm::Dbsf;
    let dbsf = idx.query("", &q).unwrap();
    assert_close(
        &pairs(&dbsf),
        &[
            ("b", 1.055_345_408_113_721),
            ("d", 0.959_084_873_724_501_8),
            ("c", 0.762_855_899_733_876_6),
            ("a", 0.722_713_818_427_900_5),
        ],
    );
}

#[test]
fn hybrid_with_one_part_returns_that_parts_scores() {
    let (idx, _) = fusion_fixture();
    let dense = idx.query("", &Query::dense(vec![0.0, 0.0], 3)).unwrap();
    assert_eq!(pairs(&dense), vec![("a", 1.0), ("b", 0.5), ("c", 0.2)]);
    let sparse = idx.query("", &Query::sparse(sv(&[1], &[1.0]), 3)).unwrap();
    assert_eq!(pairs(&sparse), vec![("c", 3.0), ("b", 1.0)]);
}

#[test]
fn query_mode_selects_one_part_of_a_two_part_query() {
    let (idx, q) = fusion_fixture();
    let dense = idx
        .query(
            "",
            &Query {
                query_mode: QueryMode::Dense,
                ..q.clone()
            },
        )
        .unwrap();
    assert_eq!(pairs(&dense), vec![("a", 1.0), ("b", 0.5), ("c", 0.2)]);
    let sparse = idx
        .query(
            "",
            &Query {
                query_mode: QueryMode::Sparse,
                ..q
            },
        )
        .unwrap();
    assert_eq!(pairs(&sparse), vec![("c", 3.0), ("b", 1.0)]);
}

#[test]
fn deleted_and_replaced_records_never_show_up_stale() {
    let idx = index(IndexConfig::hybrid(2, Metric::Euclidean));
    idx.upsert(
        "",
        vec![
            hybrid("gone", &[0.0, 0.0], sv(&[1], &[1.0])),
            hybrid("moved", &[0.0, 0.1], sv(&[1], &[1.0])),
            hybrid("far", &[9.0, 9.0], sv(&[2], &[1.0])),
        ],
    )
    .unwrap();
    idx.delete("", Delete::ids(["gone"])).unwrap();
    idx.upsert("", vec![hybrid("moved", &[5.0, 5.0], sv(&[2], &[4.0]))])
        .unwrap();
    let mut both = Query::dense(vec![0.0, 0.0], 10);
    both.sparse_vector = Some(sv(&[1], &[1.0]));
    for mode in [QueryMode::Hybrid, QueryMode::Dense, QueryMode::Sparse] {
        let hits = idx
            .query(
                "",
                &Query {
                    query_mode: mode,
                    ..both.clone()
                },
            )
            .unwrap();
        assert!(!ids(&hits).contains(&"gone"), "{mode:?}: {hits:?}");
        if mode == QueryMode::Dense {
            // "moved" is scored at its new place: squared distance 50.
            assert_eq!(
                pairs(&hits),
                vec![("moved", 1.0 / 51.0), ("far", 1.0 / 163.0)]
            );
        }
        if mode == QueryMode::Sparse {
            assert!(hits.is_empty(), "nothing holds index 1 any more: {hits:?}");
        }
    }
    let sparse = idx.query("", &Query::sparse(sv(&[2], &[1.0]), 10)).unwrap();
    assert_eq!(pairs(&sparse), vec![("moved", 4.0), ("far", 1.0)]);
}

#[test]
fn a_batch_is_answered_in_order_and_fails_as_a_whole() {
    let (idx, q) = fusion_fixture();
    let dense = Query::dense(vec![2.0, 0.0], 1);
    let sparse = Query::sparse(sv(&[9], &[1.0]), 1);
    let answers = idx
        .query_batch("", &[dense.clone(), sparse.clone(), q.clone()])
        .unwrap();
    assert_eq!(answers.len(), 3);
    assert_eq!(ids(&answers[0]), vec!["c"]);
    assert_eq!(ids(&answers[1]), vec!["a"]);
    assert_eq!(answers[2], idx.query("", &q).unwrap());
    let bad = Query::dense(vec![1.0], 1);
    assert!(matches!(
        idx.query_batch("", &[dense, bad]),
        Err(VectorError::DimensionMismatch { .. })
    ));
    assert_eq!(
        idx.query_batch("", &[]).unwrap(),
        Vec::<Vec<QueryResult>>::new()
    );
}

#[test]
fn a_filter_that_does_not_parse_is_an_error_carrying_the_parser_error() {
    let idx = index(IndexConfig::dense(2, Metric::Cosine));
    let q = Query {
        filter: "city =".into(),
        ..Query::dense(vec![1.0, 0.0], 1)
    };
    match idx.query("", &q) {
        Err(VectorError::InvalidFilter { filter, error }) => {
            assert_eq!(filter, "city =");
            assert_eq!(Some(&error), Filter::parse("city =").err().as_ref());
        }
        other => panic!("expected InvalidFilter, got {other:?}"),
    }
}

#[test]
fn a_blank_filter_means_no_filter() {
    let idx = index(IndexConfig::dense(2, Metric::Cosine));
    idx.upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    let q = Query {
        filter: " \t ".into(),
        ..Query::dense(vec![1.0, 0.0], 1)
    };
    assert_eq!(ids(&idx.query("", &q).unwrap()), vec!["a"]);
}

#[test]
fn a_filter_restricts_candidates_once_filters_parse() {
    // Runs fully once the filter language exists (the placeholder parser rejects everything).
    if Filter::parse("tier = 1").is_err() {
        return;
    }
    let idx = index(IndexConfig::hybrid(2, Metric::Euclidean));
    idx.upsert(
        "",
        vec![
            hybrid("a", &[0.0, 0.0], sv(&[1], &[1.0])).with_metadata(json!({"tier": 2})),
            hybrid("b", &[1.0, 0.0], sv(&[1], &[1.0])).with_metadata(json!({"tier": 1})),
            hybrid("c", &[2.0, 0.0], sv(&[1], &[1.0])),
        ],
    )
    .unwrap();
    let mut q = Query {
        filter: "tier = 1".into(),
        ..Query::dense(vec![0.0, 0.0], 3)
    };
    assert_eq!(ids(&idx.query("", &q).unwrap()), vec!["b"]);
    q.sparse_vector = Some(sv(&[1], &[1.0]));
    assert_eq!(ids(&idx.query("", &q).unwrap()), vec!["b"]);
}

#[test]
fn sdk_style_query_bodies_parse() {
    // What upstash-vector (Python) sends for a dense query and a hybrid one.
    let bodies = [
        r#"{"vector":[0.1,0.2],"topK":3,"includeVectors":false,"includeMetadata":true,"includeData":false,"filter":""}"#,
        r#"{"vector":[0.1,0.2],"sparseVector":{"indices":[1,2],"values":[0.5,0.5]},"topK":3,
            "includeVectors":false,"includeMetadata":false,"includeData":false,"filter":"",
            "weightingStrategy":"IDF","fusionAlgorithm":"DBSF","queryMode":"HYBRID"}"#,
    ];
    for body in bodies {
        let q: Query = serde_json::from_str(body).unwrap();
        assert_eq!(q.top_k, 3);
    }
    // A batch is a JSON list of queries.
    let batch: Vec<Query> =
        serde_json::from_str(r#"[{"vector":[1,0]},{"vector":[0,1],"topK":2}]"#).unwrap();
    assert_eq!((batch[0].top_k, batch[1].top_k), (10, 2));
}
