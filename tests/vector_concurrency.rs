//! Concurrency: four threads mix upserts, replaces, deletes, queries, fetches and namespace
//! deletion on one shared index. Each thread owns an id range (and thread 3 a namespace of its
//! own) and checks after every step that its own writes are visible, and its deletes absent, in
//! fetches and in dense, sparse and hybrid queries. Fixed seeds; small data.

use flowvec::vector::{Delete, Fetch, Index, IndexConfig, Metric, Query, SparseVector, Vector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

const THREADS: u64 = 4;
const IDS: u32 = 20;
const STEPS: usize = 300;

fn dense_of(t: u64, i: u32, version: u32) -> Vec<f32> {
    vec![(t * 100) as f32 + i as f32, version as f32, 0.0, 1.0]
}

fn term_of(t: u64, i: u32) -> i32 {
    1000 + (t as i32) * 100 + i as i32
}

fn record(t: u64, i: u32, version: u32) -> Vector {
    Vector {
        id: format!("t{t}-{i:02}"),
        vector: Some(dense_of(t, i, version)),
        // A private index (checked below) and a shared one that every thread's records hold.
        sparse_vector: Some(SparseVector::new(
            vec![term_of(t, i), 7],
            vec![1.0 + version as f32, 0.5],
        )),
        metadata: Some(json!({"v": version})),
        data: None,
    }
}

fn run(index: &Index, t: u64) {
    let mut rng = StdRng::seed_from_u64(0xC0FFEE + t);
    let ns = match t {
        0 | 1 => "",
        2 => "shared",
        _ => "own",
    };
    let mut model: HashMap<u32, u32> = HashMap::new();
    // The last version ever written per id, to query deleted records at their old place.
    let mut last: HashMap<u32, u32> = HashMap::new();
    let mut version = 0u32;
    for step in 0..STEPS {
        let i = rng.random_range(0..IDS);
        match rng.random_range(0..10) {
            0..=5 => {
                // Upsert a batch of one to three records (new or replacing).
                let mut batch = vec![i];
                for _ in 0..rng.random_range(0..3) {
                    batch.push(rng.random_range(0..IDS));
                }
                version += 1;
                index
                    .upsert(ns, batch.iter().map(|&j| record(t, j, version)).collect())
                    .unwrap();
                for j in batch {
                    model.insert(j, version);
                    last.insert(j, version);
                }
            }
            6..=8 => {
                let n = index
                    .delete(ns, Delete::ids([format!("t{t}-{i:02}")]))
                    .unwrap();
                assert_eq!(
                    n,
                    usize::from(model.remove(&i).is_some()),
                    "thread {t} step {step}"
                );
            }
            _ if t == 3 => {
                index.delete_namespace(ns).unwrap_or(());
                model.clear();
            }
            _ => {
                // Readers of the whole index run alongside.
                let _ = index.info();
                assert!(index.list_namespaces().contains(&String::new()));
            }
        }
        check(index, ns, t, &model, &last, rng.random_range(0..IDS), step);
    }
}

fn check(
    index: &Index,
    ns: &str,
    t: u64,
    model: &HashMap<u32, u32>,
    last: &HashMap<u32, u32>,
    i: u32,
    step: usize,
) {
    let id = format!("t{t}-{i:02}");
    let ctx = format!("thread {t} step {step} id {id}");
    let fetched = index
        .fetch(ns, Fetch::ids([id.clone()]).include_all())
        .unwrap()
        .remove(0);
    match model.get(&i) {
        Some(&v) => {
            let r = fetched.unwrap_or_else(|| panic!("{ctx}: missing in fetch"));
            assert_eq!(r.vector, Some(dense_of(t, i, v)), "{ctx}");
            assert_eq!(r.metadata, Some(json!({"v": v})), "{ctx}");
            // Dense: the exact vector is the unique best match (others are >= 1 apart).
            let hits = index
                .query(ns, &Query::dense(dense_of(t, i, v), 1))
                .unwrap();
            assert_eq!(hits.len(), 1, "{ctx}");
            assert_eq!(
                (hits[0].id.as_str(), hits[0].score),
                (id.as_str(), 1.0),
                "{ctx}"
            );
            // Sparse: exactly this record holds the private index, with this version's value.
            let q = Query::sparse(SparseVector::new(vec![term_of(t, i)], vec![1.0]), 5);
            let hits = index.query(ns, &q).unwrap();
            assert_eq!(hits.len(), 1, "{ctx}: {hits:?}");
            assert_eq!(
                (hits[0].id.as_str(), hits[0].score),
                (id.as_str(), 1.0 + v as f32),
                "{ctx}"
            );
            // Hybrid: present in the fused list too.
            let mut both = Query::dense(dense_of(t, i, v), 3);
            both.sparse_vector = Some(SparseVector::new(vec![term_of(t, i)], vec![1.0]));
            let hits = index.query(ns, &both).unwrap();
            assert_eq!(hits[0].id, id, "{ctx}: {hits:?}");
        }
        None => {
            assert_eq!(fetched, None, "{ctx}: deleted record fetched");
            let q = Query::sparse(SparseVector::new(vec![term_of(t, i)], vec![1.0]), 5);
            assert!(
                index.query(ns, &q).unwrap().is_empty(),
                "{ctx}: deleted record in sparse query"
            );
            if let Some(&v) = last.get(&i) {
                let hits = index
                    .query(ns, &Query::dense(dense_of(t, i, v), 5))
                    .unwrap();
                assert!(
                    hits.iter().all(|h| h.id != id),
                    "{ctx}: deleted record in dense query"
                );
                assert!(
                    hits.iter().all(|h| h.score < 1.0),
                    "{ctx}: stale vector in dense query"
                );
            }
        }
    }
}

#[test]
fn four_threads_see_their_own_writes_and_no_stale_records() {
    let index = Arc::new(Index::new(IndexConfig::hybrid(4, Metric::Euclidean)).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let index = Arc::clone(&index);
            std::thread::spawn(move || run(&index, t))
        })
        .collect();
    for h in handles {
        h.join().expect("a worker thread failed its checks");
    }
    // Afterwards every namespace is internally consistent: fetch by prefix agrees with range.
    for ns in index.list_namespaces() {
        let by_prefix = index.fetch(&ns, Fetch::prefix("")).unwrap().len();
        let info = index.info().namespaces[&ns].vector_count;
        assert_eq!(by_prefix, info, "namespace {ns:?}");
    }
}
