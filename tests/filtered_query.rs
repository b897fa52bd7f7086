//! Filtered query oracle (DESIGN §2.3–2.4): on a 20,000-record namespace of generated data
//! (16-d, fixed seeds), filters matching 50%, 10%, 1%, 0.1% and exactly 3 records — some the
//! value index can answer, some only the predicate can — must return exactly
//! `min(topK, matches)` results, every one matching, with recall@10 >= 0.99 against an exact
//! filtered brute force. For dense, sparse and hybrid indexes; and delete by filter removes
//! exactly the matching records.

use flowvec::vector::filter::Filter;
use flowvec::vector::{
    Delete, Fetch, Index, IndexConfig, Metric, Query, QueryMode, SparseVector, Vector,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::HashSet;

const N: usize = 20_000;
const DIM: usize = 16;
const VOCAB: i32 = 300;
const QUERIES: usize = 20;

/// `(filter, expected matches)`: index-answerable and predicate-only filters at each
/// selectivity.
const FILTERS: &[(&str, usize)] = &[
    ("half = true", N / 2),
    ("dec = 3", N / 10),
    ("dec IN (1, 2) AND half = false", N / 10),
    ("cent = 42", N / 100),
    ("nested.cent = 42", N / 100),
    ("name GLOB 'r42*' AND cent = 42", N / 100),
    ("row >= 1000 AND row < 1020", N / 1000),
    ("tags CONTAINS 'rare'", 3),
    ("row IN (7, 7777, 19999)", 3),
    ("row < 0", 0),
];

struct Data {
    dense: Vec<Vec<f32>>,
    sparse: Vec<SparseVector>,
    metadata: Vec<Value>,
}

fn metadata(i: usize) -> Value {
    // dec, cent and half are scrambled against the row so they do not follow the vectors'
    // generation order.
    let h = (i * 7919) % N;
    let mut m = json!({
        "row": i,
        "half": h.is_multiple_of(2),
        "dec": h % 10,
        "cent": h % 100,
        "name": format!("r{}-{i}", h % 100),
        "nested": {"cent": h % 100},
        "tags": ["common"],
    });
    if [11, 12_345, 19_000].contains(&i) {
        m["tags"] = json!(["common", "rare"]);
    }
    m
}

fn random_sparse(rng: &mut StdRng, terms: usize) -> SparseVector {
    let mut indices: Vec<i32> = (0..terms).map(|_| rng.random_range(0..VOCAB)).collect();
    indices.sort_unstable();
    indices.dedup();
    let values = indices.iter().map(|_| rng.random_range(0.1..1.0)).collect();
    SparseVector::new(indices, values)
}

fn data() -> Data {
    let mut rng = StdRng::seed_from_u64(4);
    let dense = (0..N)
        .map(|_| (0..DIM).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let sparse = (0..N).map(|_| random_sparse(&mut rng, 8)).collect();
    Data {
        dense,
        sparse,
        metadata: (0..N).map(metadata).collect(),
    }
}

fn build(config: IndexConfig, data: &Data) -> Index {
    let index = Index::new(config.clone()).unwrap();
    let records: Vec<Vector> = (0..N)
        .map(|i| Vector {
            id: format!("{i:05}"),
            vector: config.kind.has_dense().then(|| data.dense[i].clone()),
            sparse_vector: config.kind.has_sparse().then(|| data.sparse[i].clone()),
            metadata: Some(data.metadata[i].clone()),
            ..Vector::default()
        })
        .collect();
    for chunk in records.chunks(1000) {
        index.upsert("", chunk.to_vec()).unwrap();
    }
    index
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    (1.0 + dot / (na * nb)) / 2.0
}

fn sparse_dot(a: &SparseVector, b: &SparseVector) -> Option<f32> {
    let mut shared = false;
    let mut s = 0.0;
    for (t, v) in a.indices.iter().zip(&a.values) {
        if let Ok(j) = b.indices.binary_search(t) {
            shared = true;
            s += v * b.values[j];
        }
    }
    shared.then_some(s)
}

/// Exact filtered top-k ids by brute force (score descending, id ascending).
fn exact(scored: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<String> {
    let mut all: Vec<(usize, f32)> = scored.collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all.into_iter().map(|(i, _)| format!("{i:05}")).collect()
}

/// Runs every filter with `make_query`; checks count, matching and recall against `score`
/// (`None`: the record is not a candidate for this query, as a sparse record sharing no term).
fn check(
    index: &Index,
    data: &Data,
    label: &str,
    make_query: impl Fn(usize) -> Query,
    score: impl Fn(usize, usize) -> Option<f32>,
    check_recall: bool,
) {
    for &(text, expected) in FILTERS {
        let filter = Filter::parse(text).unwrap();
        let matching: Vec<usize> = (0..N)
            .filter(|&i| filter.matches(&data.metadata[i]))
            .collect();
        assert_eq!(matching.len(), expected, "{text}: generated data");
        let (mut found, mut wanted) = (0usize, 0usize);
        for q in 0..QUERIES {
            for top_k in [10, 100] {
                let mut query = make_query(q);
                query.top_k = top_k;
                query.filter = text.to_owned();
                let hits = index.query("", &query).unwrap();
                let candidates = matching.iter().filter(|&&i| score(q, i).is_some()).count();
                assert_eq!(
                    hits.len(),
                    top_k.min(candidates),
                    "{label} {text} q{q} top{top_k}: never short, never long"
                );
                for h in &hits {
                    let i: usize = h.id.parse().unwrap();
                    assert!(
                        filter.matches(&data.metadata[i]),
                        "{label} {text}: {} does not match",
                        h.id
                    );
                }
                if top_k == 10 && check_recall {
                    let truth = exact(
                        matching.iter().filter_map(|&i| score(q, i).map(|s| (i, s))),
                        10,
                    );
                    let got: HashSet<&str> = hits.iter().map(|h| h.id.as_str()).collect();
                    found += truth.iter().filter(|id| got.contains(id.as_str())).count();
                    wanted += truth.len();
                }
            }
        }
        if check_recall && wanted > 0 {
            let recall = found as f64 / wanted as f64;
            assert!(recall >= 0.99, "{label} {text}: recall@10 {recall}");
        }
    }
}

fn queries() -> (Vec<Vec<f32>>, Vec<SparseVector>) {
    let mut rng = StdRng::seed_from_u64(99);
    let dense = (0..QUERIES)
        .map(|_| (0..DIM).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let sparse = (0..QUERIES).map(|_| random_sparse(&mut rng, 12)).collect();
    (dense, sparse)
}

#[test]
fn dense_filtered_queries_are_exact_length_matching_and_recall_099() {
    let data = data();
    let index = build(IndexConfig::dense(DIM, Metric::Cosine), &data);
    let (qd, _) = queries();
    check(
        &index,
        &data,
        "dense",
        |q| Query::dense(qd[q].clone(), 10),
        |q, i| Some(cosine(&qd[q], &data.dense[i])),
        true,
    );
}

#[test]
fn sparse_filtered_queries_are_exact_length_matching_and_exact() {
    let data = data();
    let index = build(IndexConfig::sparse(), &data);
    let (_, qs) = queries();
    check(
        &index,
        &data,
        "sparse",
        |q| Query::sparse(qs[q].clone(), 10),
        |q, i| sparse_dot(&qs[q], &data.sparse[i]),
        true,
    );
}

#[test]
fn hybrid_filtered_queries_are_exact_length_and_matching() {
    let data = data();
    let index = build(IndexConfig::hybrid(DIM, Metric::Cosine), &data);
    let (qd, qs) = queries();
    let both = |q: usize| Query {
        vector: Some(qd[q].clone()),
        sparse_vector: Some(qs[q].clone()),
        ..Query::default()
    };
    // Fused: every matching record is a dense candidate, so min(topK, matches) results.
    check(&index, &data, "hybrid", both, |_, _| Some(0.0), false);
    // Each part alone on the hybrid index, against its own oracle.
    check(
        &index,
        &data,
        "hybrid/dense",
        |q| Query {
            query_mode: QueryMode::Dense,
            ..both(q)
        },
        |q, i| Some(cosine(&qd[q], &data.dense[i])),
        true,
    );
    check(
        &index,
        &data,
        "hybrid/sparse",
        |q| Query {
            query_mode: QueryMode::Sparse,
            ..both(q)
        },
        |q, i| sparse_dot(&qs[q], &data.sparse[i]),
        true,
    );
}

#[test]
fn filtered_queries_follow_updates_and_deletes() {
    let data = data();
    let index = build(IndexConfig::dense(DIM, Metric::Cosine), &data);
    let (qd, _) = queries();
    let q = Query {
        filter: "cent = 42".into(),
        top_k: 1000,
        ..Query::dense(qd[0].clone(), 1000)
    };
    assert_eq!(index.query("", &q).unwrap().len(), N / 100);
    // Move ten records out of cent 42 (OVERWRITE), ten in (PATCH), delete ten.
    let in_42: Vec<usize> = (0..N).filter(|&i| data.metadata[i]["cent"] == 42).collect();
    for &i in &in_42[..10] {
        let update = flowvec::vector::Update {
            id: format!("{i:05}"),
            metadata: Some(json!({"cent": 43})),
            ..Default::default()
        };
        assert!(index.update("", update).unwrap());
    }
    let out: Vec<usize> = (0..N)
        .filter(|&i| data.metadata[i]["cent"] == 41)
        .take(10)
        .collect();
    for &i in &out {
        let update = flowvec::vector::Update {
            id: format!("{i:05}"),
            metadata: Some(json!({"cent": 42})),
            metadata_update_mode: flowvec::vector::MetadataUpdateMode::Patch,
            ..Default::default()
        };
        assert!(index.update("", update).unwrap());
    }
    let doomed: Vec<String> = in_42[10..20].iter().map(|i| format!("{i:05}")).collect();
    assert_eq!(index.delete("", Delete::ids(doomed)).unwrap(), 10);
    let hits = index.query("", &q).unwrap();
    let got: HashSet<usize> = hits.iter().map(|h| h.id.parse().unwrap()).collect();
    let want: HashSet<usize> = in_42[20..].iter().chain(&out).copied().collect();
    assert_eq!(got, want);
    // A re-upsert without metadata leaves the value index too.
    let i = in_42[20];
    index
        .upsert(
            "",
            vec![Vector::dense(format!("{i:05}"), data.dense[i].clone())],
        )
        .unwrap();
    assert_eq!(index.query("", &q).unwrap().len(), want.len() - 1);
    index.reset("");
    assert!(index.query("", &q).unwrap().is_empty());
}

#[test]
fn delete_by_filter_removes_exactly_the_matching_records() {
    let data = data();
    let index = build(IndexConfig::dense(DIM, Metric::Cosine), &data);
    let mut left = N;
    for text in [
        "cent = 42",
        "nested.cent = 43",
        "row >= 1000 AND row < 1020",
        "tags CONTAINS 'rare'",
        "half = true AND dec = 4",
    ] {
        let filter = Filter::parse(text).unwrap();
        let all: Vec<String> = (0..N).map(|i| format!("{i:05}")).collect();
        let before: Vec<String> = index
            .fetch("", Fetch::ids(all))
            .unwrap()
            .into_iter()
            .flatten()
            .map(|r| r.id)
            .collect();
        assert_eq!(before.len(), left);
        let doomed = before
            .iter()
            .filter(|id| filter.matches(&data.metadata[id.parse::<usize>().unwrap()]))
            .count();
        assert_eq!(
            index.delete("", Delete::filter(text)).unwrap(),
            doomed,
            "{text}"
        );
        left -= doomed;
        let survivors = index.query(
            "",
            &Query {
                filter: text.into(),
                ..Query::dense(vec![1.0; DIM], 1000)
            },
        );
        assert!(survivors.unwrap().is_empty(), "{text}: none left");
    }
    assert_eq!(index.info().vector_count, left);
}
