//! The exact scan against a naive f64 scoring oracle, and a proptest over random sequences of
//! inserts, replaces, removes and searches against a plain map model.

mod dense_support;

use dense_support::{METRICS, build, clustered, naive_score, naive_top};
use flowvec::vector::Metric;
use flowvec::vector::dense::{DenseConfig, DenseIndex};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::collections::BTreeMap;

/// With small-integer coordinates every product and sum is exact in f32, so the exact scan
/// must reproduce the oracle's order exactly, ties (which are frequent) broken by id.
#[test]
fn exact_scan_matches_oracle_exactly_on_integer_grid_data() {
    for metric in [Metric::Euclidean, Metric::DotProduct] {
        let data: Vec<Vec<f32>> = clustered(600, 24, 5, 3)
            .into_iter()
            .map(|v| v.into_iter().map(|x| (x * 2.0).round()).collect())
            .collect();
        let index = build(metric, &data, false);
        for q in data.iter().step_by(37) {
            let got = index.search(q, 25, None, None, None).expect("valid");
            let want = naive_top(
                metric,
                data.iter().enumerate().map(|(i, v)| (i as u32, v.clone())),
                q,
                25,
            );
            let got_ids: Vec<u32> = got.iter().map(|h| h.0).collect();
            let want_ids: Vec<u32> = want.iter().map(|h| h.0).collect();
            assert_eq!(got_ids, want_ids, "{metric:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (f64::from(g.1) - w.1).abs() < 1e-6,
                    "{metric:?} {g:?} {w:?}"
                );
            }
        }
    }
}

/// On real-valued data the order may differ from the f64 oracle only between scores closer
/// than float rounding.
#[test]
fn exact_scan_matches_oracle_on_float_data_for_every_metric() {
    for metric in METRICS {
        let data = clustered(800, 48, 8, 4);
        let index = build(metric, &data, false);
        for q in clustered(20, 48, 8, 5) {
            let got = index.search(&q, 30, None, None, None).expect("valid");
            let want = naive_top(
                metric,
                data.iter().enumerate().map(|(i, v)| (i as u32, v.clone())),
                &q,
                30,
            );
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                let g_oracle = naive_score(metric, &q, &data[g.0 as usize]);
                assert!(
                    g.0 == w.0 || (g_oracle - w.1).abs() < 1e-6,
                    "{metric:?}: got {g:?}, oracle {w:?}"
                );
                assert!(
                    (f64::from(g.1) - g_oracle).abs() < 1e-5,
                    "{metric:?} score {g:?}"
                );
                assert!((0.0..=1.0).contains(&g.1));
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u32, Vec<i8>),
    Remove(u32),
    Search(Vec<i8>, usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let v = proptest::collection::vec(-3i8..=3, 4);
    prop_oneof![
        4 => (0u32..40, v.clone()).prop_map(|(id, v)| Op::Insert(id, v)),
        2 => (0u32..40).prop_map(Op::Remove),
        2 => (v, 0usize..12, 1u8..5).prop_map(|(v, k, m)| Op::Search(v, k, m)),
    ]
}

fn floats(v: &[i8]) -> Vec<f32> {
    v.iter().map(|x| f32::from(*x)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    /// Exact mode (and a tiny rebuild threshold, so compactions happen) against a map model:
    /// same ids in the same order, with and without a filter.
    #[test]
    fn exact_index_follows_a_map_model(ops in proptest::collection::vec(op(), 1..120)) {
        for metric in [Metric::Euclidean, Metric::DotProduct] {
            let config = DenseConfig::new(4, metric)
                .with_exact_threshold(usize::MAX)
                .with_rebuild_fraction(0.05);
            let mut index = DenseIndex::new(config).expect("valid config");
            let mut model: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
            for op in &ops {
                match op {
                    Op::Insert(id, v) => {
                        index.insert(*id, &floats(v)).expect("valid");
                        model.insert(*id, floats(v));
                    }
                    Op::Remove(id) => {
                        prop_assert_eq!(index.remove(*id), model.remove(id).is_some());
                    }
                    Op::Search(q, k, m) => {
                        let q = floats(q);
                        let allow = |id: u32| id.is_multiple_of(u32::from(*m));
                        let got: Vec<u32> = index
                            .search(&q, *k, None, Some(&allow), None)
                            .expect("valid")
                            .into_iter()
                            .map(|h| h.0)
                            .collect();
                        let want: Vec<u32> = naive_top(
                            metric,
                            model.iter().filter(|(id, _)| allow(**id)).map(|(id, v)| (*id, v.clone())),
                            &q,
                            *k,
                        )
                        .into_iter()
                        .map(|h| h.0)
                        .collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(index.len(), model.len());
            }
            for (id, v) in &model {
                prop_assert_eq!(index.vector(*id), Some(v.clone()));
            }
        }
    }
}
