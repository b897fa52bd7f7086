//! Resumable queries (`flowvec::vector::resumable`): pages concatenate to the exact ranking
//! (dense per metric, sparse, IDF, hybrid RRF/DBSF, filtered), follow the documented
//! semantics under random interleavings of pages and writes (proptest), and the table of open
//! cursors expires, caps and forgets at the times it is given.

use std::collections::{BTreeMap, BTreeSet};

use flowvec::flow::Timestamp;
use flowvec::vector::{
    Delete, FusionAlgorithm, Index, IndexConfig, Metric, Query, QueryMode, QueryResult,
    ResumableError, ResumableLimits, ResumableQueries, ResumableQuery, SparseVector, Update,
    Vector, VectorError, WeightingStrategy,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const DIM: usize = 6;

fn dense_vec(rng: &mut StdRng) -> Vec<f32> {
    // Coarse values make exact score ties common, so the id tie-break is exercised.
    (0..DIM)
        .map(|_| f32::from(rng.random_range(-4i8..=4)) / 2.0)
        .map(|x| if x == 0.0 { 0.5 } else { x })
        .collect()
}

fn sparse_vec(rng: &mut StdRng) -> SparseVector {
    let mut terms: Vec<i32> = (0..rng.random_range(1..5))
        .map(|_| rng.random_range(0..12))
        .collect();
    terms.sort_unstable();
    terms.dedup();
    let values = terms
        .iter()
        .map(|_| f32::from(rng.random_range(1u8..=4)))
        .collect();
    SparseVector::new(terms, values)
}

fn record(config: &IndexConfig, id: String, rng: &mut StdRng) -> Vector {
    let mut v = Vector {
        id,
        ..Vector::default()
    };
    if config.kind.has_dense() {
        v.vector = Some(dense_vec(rng));
    }
    if config.kind.has_sparse() {
        v.sparse_vector = Some(sparse_vec(rng));
    }
    let g = rng.random_range(0..3);
    v.with_metadata(json!({ "g": g, "n": rng.random_range(0..100) }))
}

fn query(config: &IndexConfig, rng: &mut StdRng, top_k: usize) -> Query {
    Query {
        vector: config.kind.has_dense().then(|| dense_vec(rng)),
        sparse_vector: config.kind.has_sparse().then(|| sparse_vec(rng)),
        top_k,
        include_metadata: true,
        ..Query::default()
    }
}

fn pairs(hits: &[QueryResult]) -> Vec<(String, f32)> {
    hits.iter().map(|h| (h.id.clone(), h.score)).collect()
}

/// Every page of `cursor` after `first`, `k` at a time, until it is exhausted.
fn drain(first: Vec<QueryResult>, cursor: &mut ResumableQuery, k: usize) -> Vec<QueryResult> {
    let mut all = first;
    loop {
        let page = cursor.next_page(k).unwrap();
        if page.is_empty() {
            assert!(cursor.is_exhausted());
            return all;
        }
        assert!(page.len() <= k);
        all.extend(page);
    }
}

fn configs() -> Vec<(&'static str, IndexConfig)> {
    vec![
        ("dense cosine", IndexConfig::dense(DIM, Metric::Cosine)),
        (
            "dense euclidean",
            IndexConfig::dense(DIM, Metric::Euclidean),
        ),
        ("dense dot", IndexConfig::dense(DIM, Metric::DotProduct)),
        ("sparse", IndexConfig::sparse()),
        ("hybrid", IndexConfig::hybrid(DIM, Metric::Cosine)),
    ]
}

/// Below the dense engine's exact threshold and within `topK` max, `Index::query` with
/// `topK` = every record is an exact scan (both parts complete before fusion): the oracle.
#[test]
fn pages_concatenate_to_the_exact_ranking() {
    let mut rng = StdRng::seed_from_u64(17);
    for (name, config) in configs() {
        let index = Index::new(config.clone()).unwrap();
        let n = 400;
        let records = (0..n)
            .map(|i| record(&config, format!("r{i:03}"), &mut rng))
            .collect();
        index.upsert("ns", records).unwrap();
        let mut variants: Vec<Query> = Vec::new();
        for _ in 0..3 {
            let q = query(&config, &mut rng, 7);
            variants.push(q.clone());
            variants.push(Query {
                filter: "g = 1 OR n < 20".into(),
                ..q.clone()
            });
            if config.kind.has_sparse() {
                variants.push(Query {
                    weighting_strategy: Some(WeightingStrategy::Idf),
                    ..q.clone()
                });
            }
            if config.kind.has_dense() && config.kind.has_sparse() {
                for fusion in [FusionAlgorithm::Rrf, FusionAlgorithm::Dbsf] {
                    variants.push(Query {
                        fusion_algorithm: fusion,
                        ..q.clone()
                    });
                }
                for mode in [QueryMode::Dense, QueryMode::Sparse] {
                    variants.push(Query {
                        query_mode: mode,
                        ..q.clone()
                    });
                }
            }
        }
        for (v, q) in variants.iter().enumerate() {
            let want = index
                .query(
                    "ns",
                    &Query {
                        top_k: n,
                        ..q.clone()
                    },
                )
                .unwrap();
            for page in [1, 7, 50, 1000] {
                let (first, mut cursor) = index.resumable_query("ns", q).unwrap();
                assert_eq!(first.len(), q.top_k.min(want.len()), "{name} #{v}");
                let got = drain(first, &mut cursor, page);
                assert_eq!(
                    pairs(&got),
                    pairs(&want),
                    "{name} query #{v} pages of {page}"
                );
                // Fields as a query returns them.
                assert_eq!(got, want, "{name} query #{v}");
            }
        }
    }
}

/// Above the exact threshold `/query` walks the graph; a resumable query still ranks every
/// record exactly: its scores, position by position, are a float64 brute force's.
#[test]
fn dense_ranking_is_exact_above_the_graph_threshold() {
    let mut rng = StdRng::seed_from_u64(29);
    let dim = 8;
    let n = 5000;
    let index = Index::new(IndexConfig::dense(dim, Metric::Euclidean)).unwrap();
    let vectors: Vec<Vec<f32>> = (0..n)
        .map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect())
        .collect();
    let records = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| Vector::dense(format!("v{i:04}"), v.clone()))
        .collect();
    index.upsert("", records).unwrap();
    for _ in 0..3 {
        let q: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut brute: Vec<f64> = vectors
            .iter()
            .map(|v| {
                let d: f64 = v
                    .iter()
                    .zip(&q)
                    .map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2))
                    .sum();
                1.0 / (1.0 + d)
            })
            .collect();
        brute.sort_by(|a, b| b.total_cmp(a));
        let (first, mut cursor) = index
            .resumable_query("", &Query::dense(q.clone(), 1000))
            .unwrap();
        let got = drain(first, &mut cursor, 1000);
        assert_eq!(got.len(), n);
        let distinct: BTreeSet<&str> = got.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(distinct.len(), n, "no duplicates");
        for (i, (r, want)) in got.iter().zip(&brute).enumerate() {
            assert!(
                (f64::from(r.score) - want).abs() < 1e-5,
                "rank {i}: {} vs {want}",
                r.score
            );
        }
    }
}

#[test]
fn first_page_size_and_page_bounds() {
    let index = Index::new(IndexConfig::dense(2, Metric::Cosine)).unwrap();
    index
        .upsert(
            "",
            (0..5)
                .map(|i| Vector::dense(format!("{i}"), vec![1.0, i as f32]))
                .collect(),
        )
        .unwrap();
    assert!(matches!(
        index.resumable_query("", &Query::dense(vec![1.0, 0.0], 0)),
        Err(VectorError::TopKOutOfRange { .. })
    ));
    let (first, mut cursor) = index
        .resumable_query("", &Query::dense(vec![1.0, 0.0], 2))
        .unwrap();
    assert_eq!(first.len(), 2);
    assert_eq!(cursor.remaining(), 3);
    for k in [0, 1001] {
        assert!(matches!(
            cursor.next_page(k),
            Err(VectorError::TopKOutOfRange { top_k, max: 1000 }) if top_k == k
        ));
    }
    assert_eq!(cursor.next_page(1000).unwrap().len(), 3);
    // A missing namespace: an empty cursor, not an error.
    let (first, mut cursor) = index
        .resumable_query("nowhere", &Query::dense(vec![1.0, 0.0], 2))
        .unwrap();
    assert!(first.is_empty() && cursor.is_exhausted());
    assert!(cursor.next_page(5).unwrap().is_empty());
}

#[test]
fn memory_is_eight_bytes_per_ranked_record_and_freed_when_exhausted() {
    let index = Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap();
    let n = 10_000;
    index
        .upsert(
            "",
            (0..n)
                .map(|i| Vector::dense(format!("{i}"), vec![i as f32, 0.0]))
                .collect(),
        )
        .unwrap();
    let (_, mut cursor) = index
        .resumable_query("", &Query::dense(vec![0.0, 0.0], 10))
        .unwrap();
    let bytes = cursor.memory_bytes();
    assert!(bytes >= 8 * n && bytes <= 8 * n + 256, "{bytes}");
    while !cursor.is_exhausted() {
        cursor.next_page(1000).unwrap();
    }
    assert!(cursor.memory_bytes() <= 256, "{}", cursor.memory_bytes());
}

#[test]
fn removing_or_resetting_the_namespace_ends_the_pages() {
    let index = Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap();
    let fill = |ns: &str| {
        index
            .upsert(
                ns,
                (0..20)
                    .map(|i| Vector::dense(format!("{i:02}"), vec![i as f32, 0.0]))
                    .collect(),
            )
            .unwrap();
    };
    let q = Query::dense(vec![0.0, 0.0], 5);
    fill("a");
    let (_, mut cursor) = index.resumable_query("a", &q).unwrap();
    index.delete_namespace("a").unwrap();
    fill("a"); // the same name again: a new namespace, new records
    assert!(cursor.next_page(10).unwrap().is_empty());
    assert!(cursor.is_exhausted());

    let (_, mut cursor) = index.resumable_query("a", &q).unwrap();
    index.reset("a");
    fill("a"); // the same ids again: new records, inserted after the start
    assert!(cursor.next_page(10).unwrap().is_empty());

    let (_, mut cursor) = index.resumable_query("a", &q).unwrap();
    index.reset_all();
    assert!(cursor.next_page(10).unwrap().is_empty());
}

#[test]
fn updated_records_keep_their_rank_and_show_their_current_fields() {
    let index = Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap();
    index
        .upsert(
            "",
            (0..6)
                .map(|i| {
                    Vector::dense(format!("{i}"), vec![i as f32, 0.0])
                        .with_metadata(json!({"v": 0}))
                })
                .collect(),
        )
        .unwrap();
    let q = Query {
        include_metadata: true,
        include_vectors: true,
        ..Query::dense(vec![0.0, 0.0], 2)
    };
    let (first, mut cursor) = index.resumable_query("", &q).unwrap();
    assert_eq!(pairs(&first), [("0".into(), 1.0), ("1".into(), 0.5)]);
    // "5" moves next to the query and gets new metadata; "3" is replaced by an upsert.
    index
        .update(
            "",
            Update {
                id: "5".into(),
                vector: Some(vec![0.0, 0.0]),
                metadata: Some(json!({"v": 1})),
                ..Update::default()
            },
        )
        .unwrap();
    index
        .upsert(
            "",
            vec![Vector::dense("3", vec![9.0, 0.0]).with_metadata(json!({"v": 2}))],
        )
        .unwrap();
    let rest = cursor.next_page(10).unwrap();
    let ids: Vec<&str> = rest.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["2", "3", "4", "5"], "start ranks kept");
    assert_eq!(rest[1].score, 0.1, "start score kept");
    assert_eq!(rest[1].metadata, Some(json!({"v": 2})));
    assert_eq!(rest[1].vector, Some(vec![9.0, 0.0]), "current vector");
    assert_eq!(rest[3].metadata, Some(json!({"v": 1})));
}

// ---------------------------------------------------------------------------------------------
// Random interleavings of pages and writes against a model of the documented semantics.

#[derive(Debug, Clone)]
enum Op {
    /// The next page of the cursor.
    Page(usize),
    /// Upsert a record that may or may not exist (`id` index, vector seed).
    Upsert(usize, u64),
    /// Update the metadata of a record.
    Update(usize),
    /// Delete a record.
    Delete(usize),
    /// Delete a record and insert it again at once (a new record under the same id).
    Reinsert(usize, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1usize..12).prop_map(Op::Page),
        2 => (0usize..60, any::<u64>()).prop_map(|(i, s)| Op::Upsert(i, s)),
        1 => (0usize..60).prop_map(Op::Update),
        2 => (0usize..60).prop_map(Op::Delete),
        1 => (0usize..60, any::<u64>()).prop_map(|(i, s)| Op::Reinsert(i, s)),
    ]
}

proptest! {
    #![proptest_config(Config {
        cases: 96,
        rng_seed: RngSeed::Fixed(23),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..Config::default()
    })]

    /// Pages follow the model: the start's ranking read in order; an entry is shown when its
    /// record has lived since the start (updates and upserts keep it, a delete ends it), with
    /// its start score and current metadata; the pages hold no duplicates, scores never rise.
    #[test]
    fn pages_under_writes_follow_the_documented_semantics(
        hybrid in any::<bool>(),
        filtered in any::<bool>(),
        seed in any::<u64>(),
        first_k in 1usize..15,
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let config = if hybrid {
            IndexConfig::hybrid(DIM, Metric::Cosine)
        } else {
            IndexConfig::dense(DIM, Metric::Cosine)
        };
        let mut rng = StdRng::seed_from_u64(seed);
        let index = Index::new(config.clone()).unwrap();
        let id = |i: usize| format!("id{i:02}");
        // 40 of the 60 ids exist at the start.
        index
            .upsert("", (0..40).map(|i| record(&config, id(i), &mut rng)).collect())
            .unwrap();
        let mut q = query(&config, &mut rng, first_k);
        if filtered {
            q.filter = "g != 2".into();
        }
        let ranking = pairs(&index.query("", &Query { top_k: 1000, ..q.clone() }).unwrap());
        // Ids whose start record is still alive.
        let mut alive: BTreeSet<String> = ranking.iter().map(|(i, _)| i.clone()).collect();
        let mut position = 0;
        let mut shown: Vec<(String, f32)> = Vec::new();
        let page = |k: usize, position: &mut usize, alive: &BTreeSet<String>| {
            let mut want = Vec::new();
            while want.len() < k && *position < ranking.len() {
                let (i, s) = &ranking[*position];
                *position += 1;
                if alive.contains(i) {
                    want.push((i.clone(), *s));
                }
            }
            want
        };
        let check = |got: &[QueryResult], want: &[(String, f32)], index: &Index| {
            assert_eq!(pairs(got), want);
            let current = index
                .fetch("", flowvec::vector::Fetch::ids(got.iter().map(|r| r.id.clone())).include_all())
                .unwrap();
            for (r, now) in got.iter().zip(current) {
                let now = now.expect("shown records exist");
                assert_eq!(r.metadata, now.metadata, "current metadata of {}", r.id);
            }
        };

        let (first, mut cursor) = index.resumable_query("", &q).unwrap();
        let want = page(first_k, &mut position, &alive);
        check(&first, &want, &index);
        shown.extend(want);
        for op in &ops {
            match op {
                Op::Page(k) => {
                    let got = cursor.next_page(*k).unwrap();
                    let want = page(*k, &mut position, &alive);
                    check(&got, &want, &index);
                    shown.extend(want);
                }
                Op::Upsert(i, s) => {
                    let mut r = StdRng::seed_from_u64(*s);
                    index.upsert("", vec![record(&config, id(*i), &mut r)]).unwrap();
                }
                Op::Update(i) => {
                    index
                        .update(
                            "",
                            Update {
                                id: id(*i),
                                metadata: Some(json!({"g": 2, "updated": true})),
                                ..Update::default()
                            },
                        )
                        .unwrap();
                }
                Op::Delete(i) => {
                    index.delete("", Delete::ids([id(*i)])).unwrap();
                    alive.remove(&id(*i));
                }
                Op::Reinsert(i, s) => {
                    index.delete("", Delete::ids([id(*i)])).unwrap();
                    alive.remove(&id(*i));
                    let mut r = StdRng::seed_from_u64(*s);
                    index.upsert("", vec![record(&config, id(*i), &mut r)]).unwrap();
                }
            }
        }
        // To the end.
        loop {
            let got = cursor.next_page(5).unwrap();
            let want = page(5, &mut position, &alive);
            check(&got, &want, &index);
            if got.is_empty() {
                break;
            }
            shown.extend(want);
        }
        prop_assert!(cursor.is_exhausted());
        let distinct: BTreeSet<&String> = shown.iter().map(|(i, _)| i).collect();
        prop_assert_eq!(distinct.len(), shown.len(), "no duplicates");
        prop_assert!(shown.windows(2).all(|w| w[0].1 >= w[1].1), "score order");
        // No gaps: every start record still alive at the end was shown.
        let shown_ids: BTreeSet<&String> = shown.iter().map(|(i, _)| i).collect();
        for i in &alive {
            prop_assert!(shown_ids.contains(i), "{} alive since the start but never shown", i);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The table: ids, expiry at the given `now`, the cap.

fn t(ms: u64) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000 + ms)
}

fn small_index() -> Index {
    let index = Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap();
    index
        .upsert(
            "",
            (0..50)
                .map(|i| Vector::dense(format!("{i:02}"), vec![i as f32, 0.0]))
                .collect(),
        )
        .unwrap();
    index
}

fn open(index: &Index, table: &ResumableQueries, max_idle: u64, now: Timestamp) -> String {
    let (_, cursor) = index
        .resumable_query("", &Query::dense(vec![0.0, 0.0], 5))
        .unwrap();
    table.open(cursor, max_idle, now).unwrap()
}

#[test]
fn idle_queries_expire_at_their_deadline_and_use_moves_it() {
    let index = small_index();
    let table = ResumableQueries::default();
    assert_eq!(table.poll_timeout(), None);
    let a = open(&index, &table, 10, t(0));
    let b = open(&index, &table, 30, t(0));
    assert_ne!(a, b);
    assert_eq!(table.poll_timeout(), Some(t(10_000)));
    // Using `a` at 9.999 s moves its deadline to 19.999 s.
    assert_eq!(table.next(&a, 5, t(9_999)).unwrap()[0].id, "05");
    assert_eq!(table.expire(t(19_998)), 0);
    assert_eq!(table.len(), 2);
    assert_eq!(table.expire(t(19_999)), 1, "idle for exactly maxIdle: gone");
    assert!(matches!(
        table.next(&a, 5, t(19_999)),
        Err(ResumableError::NotFound { .. })
    ));
    // `b` expires inside another call, without an explicit expire.
    assert!(matches!(
        table.end(&b, t(30_000)),
        Err(ResumableError::NotFound { .. })
    ));
    assert!(table.is_empty());
    assert_eq!(table.poll_timeout(), None);
}

#[test]
fn end_frees_and_unknown_ids_are_not_found() {
    let index = small_index();
    let table = ResumableQueries::default();
    let a = open(&index, &table, 60, t(0));
    assert!(table.memory_bytes() >= 50 * 8);
    table.end(&a, t(1)).unwrap();
    assert_eq!(table.memory_bytes(), 0);
    for id in [a.as_str(), "nope", ""] {
        assert!(matches!(
            table.next(id, 1, t(2)),
            Err(ResumableError::NotFound { .. })
        ));
        assert!(matches!(
            table.end(id, t(2)),
            Err(ResumableError::NotFound { .. })
        ));
    }
    // A bad page size is the cursor's error, and the query stays open.
    let b = open(&index, &table, 60, t(3));
    assert!(matches!(
        table.next(&b, 0, t(4)),
        Err(ResumableError::Vector(VectorError::TopKOutOfRange { .. }))
    ));
    assert_eq!(table.next(&b, 45, t(5)).unwrap().len(), 45);
    assert!(table.next(&b, 45, t(6)).unwrap().is_empty());
}

#[test]
fn the_cap_refuses_until_a_query_ends_or_expires() {
    let index = small_index();
    let table = ResumableQueries::new(ResumableLimits {
        max_open: 3,
        max_idle_secs: 100,
    });
    let ids: Vec<String> = (0..3).map(|i| open(&index, &table, 10 + i, t(0))).collect();
    let refused = Err(ResumableError::TooManyOpen { max: 3 });
    assert_eq!(table.check_open(10, t(1)), refused);
    let (_, cursor) = index
        .resumable_query("", &Query::dense(vec![0.0, 0.0], 5))
        .unwrap();
    assert_eq!(table.open(cursor, 10, t(1)).map(drop), refused);
    table.end(&ids[1], t(2)).unwrap();
    assert_eq!(table.check_open(10, t(2)), Ok(()));
    open(&index, &table, 10, t(2));
    assert_eq!(table.check_open(10, t(3)), refused);
    // The first (maxIdle 10 s) expires at 10 s: room again.
    assert_eq!(table.check_open(10, t(10_000)), Ok(()));
    assert_eq!(table.len(), 2);
}

#[test]
fn max_idle_must_be_between_one_second_and_the_limit() {
    let table = ResumableQueries::new(ResumableLimits {
        max_open: 3,
        max_idle_secs: 100,
    });
    for bad in [0, 101, u64::MAX] {
        assert_eq!(
            table.check_open(bad, t(0)),
            Err(ResumableError::InvalidMaxIdle {
                max_idle: bad,
                max: 100
            })
        );
    }
    assert_eq!(table.check_open(1, t(0)), Ok(()));
    assert_eq!(table.check_open(100, t(0)), Ok(()));
}

#[test]
fn the_model_of_alive_records_matches_fetch_after_reinserts() {
    // A record deleted and inserted again under its id is new: the cursor skips it even
    // though its id exists, and even though it reuses the slot of another deleted record.
    let index = small_index();
    let (first, mut cursor) = index
        .resumable_query("", &Query::dense(vec![0.0, 0.0], 1))
        .unwrap();
    assert_eq!(first[0].id, "00");
    index.delete("", Delete::ids(["01", "02"])).unwrap();
    index
        .upsert(
            "",
            vec![
                Vector::dense("02", vec![0.0, 0.0]),
                Vector::dense("zz", vec![0.0, 0.0]),
            ],
        )
        .unwrap();
    let next = cursor.next_page(2).unwrap();
    let ids: Vec<&str> = next.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["03", "04"]);
    let by_id: BTreeMap<_, _> = index
        .fetch("", flowvec::vector::Fetch::ids(["02", "zz"]))
        .unwrap()
        .into_iter()
        .flatten()
        .map(|r| (r.id, ()))
        .collect();
    assert_eq!(by_id.len(), 2, "both exist, neither is shown");
}
