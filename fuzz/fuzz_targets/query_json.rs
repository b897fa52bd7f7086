//! Query JSON as a host receives it: `serde_json::from_slice::<Query>`, then `Index::query` and
//! `Index::query_batch` on a small fixed index of every kind. Nothing may panic; every answer
//! must respect the contract (at most `topK` results, scores sorted, dense scores in [0, 1]).
#![no_main]

use flowvec::vector::{Index, IndexConfig, Metric, Query, QueryMode, SparseVector, Vector};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::sync::OnceLock;

fn indexes() -> &'static [Index; 3] {
    static INDEXES: OnceLock<[Index; 3]> = OnceLock::new();
    INDEXES.get_or_init(|| {
        let configs = [
            IndexConfig::dense(3, Metric::Cosine),
            IndexConfig::sparse(),
            IndexConfig::hybrid(3, Metric::Euclidean),
        ];
        configs.map(|config| {
            let index = Index::new(config).expect("valid configuration");
            let kind = index.config().kind;
            let records = (0..12i32)
                .map(|i| Vector {
                    id: format!("r{i}"),
                    vector: kind
                        .has_dense()
                        .then(|| vec![i as f32 - 5.0, 1.0, (i % 3) as f32]),
                    sparse_vector: kind
                        .has_sparse()
                        .then(|| SparseVector::new(vec![i % 4, 10 + i], vec![1.0, 0.5])),
                    metadata: Some(json!({"g": i % 4, "tag": if i % 2 == 0 { "a" } else { "b" }})),
                    data: Some(format!("d{i}")),
                })
                .collect();
            index.upsert("", records).expect("valid records");
            index
        })
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(query) = serde_json::from_slice::<Query>(data) else {
        return;
    };
    for index in indexes() {
        if let Ok(hits) = index.query("", &query) {
            assert!(hits.len() <= query.top_k);
            assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
            let dense_only = index.config().kind.has_dense()
                && (query.sparse_vector.is_none() || query.query_mode == QueryMode::Dense);
            if dense_only {
                assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
            }
        }
        let _ = index.query_batch("", std::slice::from_ref(&query));
        let _ = index.query("missing", &query);
    }
});
