//! Filtered search through the graph returns `min(k, matching)` results, all matching, never
//! short, whatever the selectivity.

mod dense_support;

use dense_support::{METRICS, backends, build, build_with, clustered, for_metric};
use flowvec::vector::dense::DenseIndex;
use std::collections::HashSet;

type Filter = Box<dyn Fn(u32) -> bool>;

#[test]
fn filtered_graph_search_is_never_short_and_only_returns_allowed_ids() {
    for (backend, metric) in backends().into_iter().flat_map(|b| METRICS.map(|m| (b, m))) {
        let data = for_metric(metric, clustered(2_500, 24, 25, 31));
        let index = build_with(metric, &data, true, backend);
        let exact = build(metric, &data, false);
        check_filtered(&format!("{backend:?} {metric:?}"), &index, &exact, &data);
    }
}

/// The same for the walk on 1-bit codes, whose rejected nodes are walked through on estimates,
/// on the embedding-like data it is meant for.
#[test]
fn filtered_bits_walk_is_never_short_and_only_returns_allowed_ids() {
    use flowvec::vector::dense::{DenseConfig, DenseIndex, Traversal};
    for metric in METRICS {
        let data = for_metric(metric, dense_support::embedding_like(2_500, 96, 24, 31));
        let config = DenseConfig::new(96, metric)
            .with_exact_threshold(0)
            .with_traversal(Traversal::Bits);
        let mut index = DenseIndex::new(config).expect("valid config");
        for (id, v) in data.iter().enumerate() {
            index.insert(id as u32, v).expect("valid vector");
        }
        let exact = build(metric, &data, false);
        check_filtered(&format!("Bits {metric:?}"), &index, &exact, &data);
    }
}

/// Filters from half the ids to none: every search returns `min(k, matching)` allowed,
/// distinct ids, and together they find >= 0.9 of the exact filtered top k.
fn check_filtered(label: &str, index: &DenseIndex, exact: &DenseIndex, data: &[Vec<f32>]) {
    let filters: Vec<(&str, Filter)> = vec![
        ("half", Box::new(|id| id % 2 == 0)),
        ("tenth", Box::new(|id| id % 10 == 3)),
        ("one in 200", Box::new(|id| id % 200 == 7)),
        ("three ids", Box::new(|id| [5, 900, 2_222].contains(&id))),
        ("none", Box::new(|_| false)),
        (
            "one cluster of ids",
            Box::new(|id| (1_000..1_100).contains(&id)),
        ),
    ];
    for (name, allow) in &filters {
        let matching = (0..data.len() as u32).filter(|id| allow(*id)).count();
        let mut hits = 0;
        let mut total = 0;
        for q in data.iter().step_by(131) {
            for k in [1, 10, 50] {
                let got = index
                    .search(q, k, Some(16), Some(allow.as_ref()), None)
                    .expect("valid");
                assert_eq!(got.len(), k.min(matching), "{label} {name} k={k}");
                assert!(
                    got.iter().all(|h| allow(h.0)),
                    "{label} {name}: disallowed id"
                );
                let ids: HashSet<u32> = got.iter().map(|h| h.0).collect();
                assert_eq!(ids.len(), got.len(), "{label} {name}: duplicate ids");
                let truth: HashSet<u32> = exact
                    .search(q, k, None, Some(allow.as_ref()), None)
                    .expect("valid")
                    .into_iter()
                    .map(|h| h.0)
                    .collect();
                hits += ids.intersection(&truth).count();
                total += truth.len();
            }
        }
        if total > 0 {
            let recall = hits as f64 / total as f64;
            eprintln!("{label} {name}: filtered recall {recall:.3}");
            assert!(recall >= 0.9, "{label} {name}: filtered recall {recall:.3}");
        }
    }
}
