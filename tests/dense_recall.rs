//! Graph search against the exact scan on generated clustered data: recall@10 at default
//! parameters, for each metric.

mod dense_support;

use dense_support::{METRICS, backends, build, build_with, clustered, for_metric};
use std::collections::HashSet;

#[test]
fn graph_recall_at_10_is_at_least_095_for_every_metric_and_backend() {
    for (backend, metric) in backends().into_iter().flat_map(|b| METRICS.map(|m| (b, m))) {
        let data = for_metric(metric, clustered(3_000, 32, 40, 7));
        let queries = for_metric(metric, clustered(200, 32, 40, 8));
        let graph = build_with(metric, &data, true, backend);
        let exact = build(metric, &data, false);
        assert!(graph.uses_graph() && !exact.uses_graph());
        let mut hits = 0usize;
        for q in &queries {
            let truth: HashSet<u32> = exact
                .search(q, 10, None, None, None)
                .expect("valid")
                .into_iter()
                .map(|h| h.0)
                .collect();
            let got = graph.search(q, 10, None, None, None).expect("valid");
            assert_eq!(got.len(), 10);
            hits += got.iter().filter(|h| truth.contains(&h.0)).count();
        }
        let recall = hits as f64 / (10 * queries.len()) as f64;
        eprintln!("{backend:?} {metric:?}: recall@10 {recall:.4}");
        assert!(
            recall >= 0.95,
            "{backend:?} {metric:?}: recall@10 {recall:.4}"
        );
    }
}

#[test]
fn graph_scores_equal_exact_scores_for_the_same_id() {
    for (backend, metric) in backends().into_iter().flat_map(|b| METRICS.map(|m| (b, m))) {
        let data = for_metric(metric, clustered(1_500, 16, 20, 11));
        let graph = build_with(metric, &data, true, backend);
        let exact = build(metric, &data, false);
        let q = &data[17];
        let all: std::collections::HashMap<u32, f32> = exact
            .search(q, data.len(), None, None, None)
            .expect("valid")
            .into_iter()
            .collect();
        for (id, score) in graph.search(q, 10, None, None, None).expect("valid") {
            assert_eq!(all[&id], score, "{backend:?} {metric:?} id {id}");
        }
    }
}
