//! Text `data` with the built-in BM25 embedder: an oracle test against an independent BM25
//! over random upserts, replacements and deletes (the corpus statistics included), determinism
//! across a snapshot, and the errors of text input.

use flowvec::vector::text::{Bm25, Bm25Params, tokenize};
use flowvec::vector::{
    Delete, Fetch, Index, IndexConfig, Metric, Query, Vector, VectorError, WeightingStrategy,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

const WORDS: [&str; 24] = [
    "apple",
    "Pear",
    "fig",
    "plum",
    "kiwi",
    "lime",
    "date",
    "grape",
    "melon",
    "berry",
    "the",
    "and",
    "of",
    "a",
    "is",
    "Ünïcode",
    "x_y",
    "42",
    "to",
    "with",
    "peach",
    "mango",
    "olive",
    "nut",
];

fn text(rng: &mut StdRng) -> String {
    let n = rng.random_range(1..14);
    let mut t: Vec<&str> = (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect();
    // Always one content word, so every record has terms.
    t.push(WORDS[rng.random_range(0..3)]);
    t.join(if rng.random_bool(0.5) { " " } else { ", " })
}

fn record(id: &str, data: &str) -> Vector {
    Vector {
        id: id.to_owned(),
        data: Some(data.to_owned()),
        ..Vector::default()
    }
}

/// The test's own BM25: weights of `data` for a corpus mean of `avg` terms, by term string.
fn weights(data: &str, avg: f64) -> BTreeMap<String, f64> {
    let terms = tokenize(data);
    let len = terms.len() as f64;
    let mut tf: BTreeMap<String, f64> = BTreeMap::new();
    for t in terms {
        *tf.entry(t).or_default() += 1.0;
    }
    let (k1, b) = (1.2, 0.75);
    tf.into_iter()
        .map(|(t, f)| {
            let w = f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * len / avg));
            (t, f64::from(w as f32))
        })
        .collect()
}

/// Current records: text and the weights they were given when upserted.
type Model = BTreeMap<String, (String, BTreeMap<String, f64>)>;

/// A text upsert: every record of the batch is weighed with the mean term count of the
/// records as they are after it (replaced ones gone; of a repeated id, the last text).
fn upsert(model: &mut Model, batch: &[(String, String)]) {
    let mut after: BTreeMap<&str, &str> = model
        .iter()
        .map(|(id, (t, _))| (id.as_str(), t.as_str()))
        .collect();
    for (id, t) in batch {
        after.insert(id, t);
    }
    let terms: usize = after.values().map(|t| tokenize(t).len()).sum();
    let avg = terms as f64 / after.len() as f64;
    for (id, t) in batch {
        model.insert(id.clone(), (t.clone(), weights(t, avg)));
    }
}

fn oracle(model: &Model, query: &str, idf: bool) -> Vec<(String, f64)> {
    let terms: BTreeSet<String> = tokenize(query).into_iter().collect();
    let n = model.len() as f64;
    let mut out: Vec<(String, f64)> = model
        .iter()
        .filter_map(|(id, (_, w))| {
            let mut score = 0.0;
            let mut hit = false;
            for t in &terms {
                if let Some(x) = w.get(t) {
                    hit = true;
                    let weight = if idf {
                        let df = model.values().filter(|(_, w)| w.contains_key(t)).count() as f64;
                        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
                    } else {
                        1.0
                    };
                    score += weight * x;
                }
            }
            hit.then(|| (id.clone(), score))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

fn bm25_index() -> Index {
    Index::new(IndexConfig::sparse().with_bm25(Bm25Params::default())).expect("valid")
}

fn search(index: &Index, q: &str, idf: bool, k: usize) -> Vec<(String, f32)> {
    let query = Query {
        top_k: k,
        weighting_strategy: idf.then_some(WeightingStrategy::Idf),
        ..Query::default()
    };
    match index.text_query(query, q, None).expect("valid") {
        Some(query) => index
            .query("", &query)
            .expect("valid")
            .into_iter()
            .map(|h| (h.id, h.score))
            .collect(),
        None => Vec::new(),
    }
}

/// Scores match the oracle within f32 rounding, and ids match except within a tie.
fn assert_matches(got: &[(String, f32)], want: &[(String, f64)], k: usize, what: &str) {
    let want = &want[..want.len().min(k)];
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (f64::from(g.1) - w.1).abs() <= 1e-5 * w.1.abs().max(1.0),
            "{what}: {got:?} vs {want:?}"
        );
    }
    let ids = |v: Vec<&String>| v.into_iter().cloned().collect::<BTreeSet<_>>();
    let clear: Vec<&String> = want
        .iter()
        .filter(|w| want.iter().filter(|o| (o.1 - w.1).abs() < 1e-5).count() == 1)
        .map(|w| &w.0)
        .collect();
    let got_ids = ids(got.iter().map(|g| &g.0).collect());
    for id in clear {
        assert!(got_ids.contains(id), "{what}: {id} missing from {got:?}");
    }
}

#[test]
fn text_search_equals_an_independent_bm25_through_upserts_replacements_and_deletes() {
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let index = bm25_index();
        let mut model = Model::new();
        for step in 0..40 {
            if rng.random_bool(0.25) && !model.is_empty() {
                let ids: Vec<String> = model.keys().cloned().collect();
                let doomed: Vec<String> = (0..rng.random_range(1..4))
                    .map(|_| ids[rng.random_range(0..ids.len())].clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                index
                    .delete("", Delete::ids(doomed.clone()))
                    .expect("valid");
                for id in doomed {
                    model.remove(&id);
                }
            } else {
                // Ids from a small pool, so batches replace records and repeat ids.
                let batch: Vec<(String, String)> = (0..rng.random_range(1..8))
                    .map(|_| (format!("r{:03}", rng.random_range(0..60)), text(&mut rng)))
                    .collect();
                index
                    .upsert_data("", batch.iter().map(|(id, t)| record(id, t)).collect())
                    .expect("valid");
                upsert(&mut model, &batch);
            }
            for idf in [false, true] {
                let q = text(&mut rng);
                let what = format!("seed {seed} step {step} idf {idf} query {q:?}");
                assert_matches(
                    &search(&index, &q, idf, 10),
                    &oracle(&model, &q, idf),
                    10,
                    &what,
                );
            }
        }
    }
}

#[test]
fn weights_are_the_same_after_a_snapshot_load_as_without_it() {
    let mut rng = StdRng::seed_from_u64(7);
    let batches: Vec<Vec<Vector>> = (0..6)
        .map(|b| {
            (0..20)
                .map(|i| record(&format!("{}", (b * 7 + i) % 50), &text(&mut rng)))
                .collect()
        })
        .collect();
    let straight = bm25_index();
    let mut restored = bm25_index();
    for (b, batch) in batches.iter().enumerate() {
        straight.upsert_data("", batch.clone()).expect("valid");
        restored.upsert_data("", batch.clone()).expect("valid");
        if b == 2 {
            let mut bytes = Vec::new();
            restored.save(&mut bytes).expect("saves");
            restored = Index::load(bytes.as_slice()).expect("loads");
        }
    }
    let all = |index: &Index| {
        let mut f = Fetch::ids((0..50).map(|i| i.to_string()));
        f.include_vectors = true;
        index.fetch("", f).expect("valid")
    };
    assert_eq!(all(&straight), all(&restored));
    assert!(all(&straight).iter().flatten().count() > 40);
}

#[test]
fn text_input_errors_name_the_record_and_what_was_expected() {
    let index = bm25_index();
    let err = |r: Vec<Vector>| index.upsert_data("", r).unwrap_err();
    assert_eq!(
        err(vec![Vector::default().tap_id("a")]),
        VectorError::MissingData { id: "a".into() }
    );
    assert_eq!(
        err(vec![record("b", "to be or not to be")]),
        VectorError::NoTerms { id: "b".into() }
    );
    let mut with_sparse = record("c", "fig");
    with_sparse.sparse_vector = Some(flowvec::vector::SparseVector::new(vec![1], vec![1.0]));
    assert!(
        err(vec![with_sparse])
            .to_string()
            .contains("expected only `data`")
    );
    // Nothing of a bad batch is written.
    assert!(
        index
            .upsert_data("", vec![record("ok", "fig"), record("bad", "the")])
            .is_err()
    );
    assert_eq!(index.info().vector_count, 0);
    // A stopword-only query finds nothing rather than failing.
    index
        .upsert_data("", vec![record("ok", "fig")])
        .expect("valid");
    assert!(search(&index, "of the", false, 5).is_empty());

    // A sparse index without BM25, and a dense index without a model, say how to get one.
    let plain = Index::new(IndexConfig::sparse()).expect("valid");
    let e = plain.upsert_data("", vec![record("a", "fig")]).unwrap_err();
    assert!(e.to_string().contains("no sparse embedding model"), "{e}");
    let dense = Index::new(IndexConfig::dense(3, Metric::Cosine)).expect("valid");
    let e = dense.upsert_data("", vec![record("a", "fig")]).unwrap_err();
    assert!(e.to_string().contains("with_dense_embedder"), "{e}");
    let e = dense
        .text_query(Query::default(), "fig", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no dense embedding model"), "{e}");
    // BM25 on a dense index is a configuration error.
    let bad = IndexConfig::dense(3, Metric::Cosine).with_bm25(Bm25Params::default());
    assert!(Index::new(bad).is_err());
}

#[test]
fn hybrid_text_uses_the_given_dense_embedding_and_bm25_and_falls_back_to_sparse() {
    let index = Index::new(IndexConfig::hybrid(2, Metric::Cosine).with_bm25(Bm25Params::default()))
        .expect("valid");
    let mut a = record("a", "fig plum");
    a.vector = Some(vec![1.0, 0.0]);
    let mut b = record("b", "kiwi lime");
    b.vector = Some(vec![0.0, 1.0]);
    index.upsert_data("", vec![a, b]).expect("valid");
    let stored = index
        .fetch("", {
            let mut f = Fetch::ids(["a"]);
            f.include_vectors = true;
            f
        })
        .expect("valid");
    let sparse = stored[0]
        .as_ref()
        .and_then(|r| r.sparse_vector.clone())
        .expect("made");
    let mut ids = vec![Bm25::term_id("fig"), Bm25::term_id("plum")];
    ids.sort_unstable();
    assert_eq!(sparse.indices, ids);
    // Without a dense embedding a hybrid text query searches the sparse part.
    let q = index
        .text_query(Query::default(), "kiwi", None)
        .expect("valid")
        .expect("terms");
    assert!(q.vector.is_none());
    assert_eq!(index.query("", &q).expect("valid")[0].id, "b");
    let q = index
        .text_query(Query::default(), "kiwi", Some(vec![1.0, 0.0]))
        .expect("valid")
        .expect("terms");
    assert_eq!(q.vector, Some(vec![1.0, 0.0]));
    assert_eq!(index.query("", &q).expect("valid").len(), 2);
}

trait TapId {
    fn tap_id(self, id: &str) -> Self;
}

impl TapId for Vector {
    fn tap_id(mut self, id: &str) -> Self {
        self.id = id.to_owned();
        self
    }
}
