//! Removed and replaced vectors never come back from a search, through the graph, its
//! repairs, tombstones, compactions and rebuilds; recall stays high under churn.

mod dense_support;

use dense_support::{METRICS, backends, clustered, for_metric, naive_score, naive_top};
use flowvec::vector::Metric;
use flowvec::vector::dense::{DenseConfig, DenseIndex};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use std::collections::BTreeMap;

#[test]
fn delete_and_replace_never_return_stale_ids_across_rebuilds() {
    for (backend, metric) in backends().into_iter().flat_map(|b| METRICS.map(|m| (b, m))) {
        let dim = 16;
        let data = for_metric(metric, clustered(1_200, dim, 12, 21));
        let fresh = for_metric(metric, clustered(1_200, dim, 12, 22));
        let config = DenseConfig::new(dim, metric)
            .with_exact_threshold(0)
            .with_rebuild_fraction(0.2)
            .with_backend(backend);
        let mut index = DenseIndex::new(config).expect("valid config");
        let mut model: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
        for (id, v) in data.iter().enumerate() {
            index.insert(id as u32, v).expect("valid");
            model.insert(id as u32, v.clone());
        }
        // Rounds of removals and replacements; at 20% the store is compacted and the graph
        // rebuilt several times along the way.
        for round in 0..6u32 {
            for id in (round..1_200).step_by(11) {
                if index.remove(id) {
                    model.remove(&id);
                }
            }
            for id in (round * 3..1_200).step_by(13) {
                let v = &fresh[((id + round * 7) % 1_200) as usize];
                index.insert(id, v).expect("valid");
                model.insert(id, v.clone());
            }
            assert!(index.uses_graph());
            assert_eq!(index.len(), model.len());
            for q in data.iter().step_by(97) {
                let hits = index.search(q, 10, None, None, None).expect("valid");
                assert_eq!(hits.len(), 10.min(model.len()));
                for (id, score) in hits {
                    let current = model.get(&id).unwrap_or_else(|| {
                        panic!("{backend:?} {metric:?}: removed id {id} returned")
                    });
                    // A replaced id scored with its old vector would differ here.
                    let want = naive_score(metric, q, current);
                    assert!(
                        (f64::from(score) - want).abs() < 1e-5,
                        "{backend:?} {metric:?}: stale score for {id}"
                    );
                }
            }
        }
        // Removing everything leaves nothing to find.
        for id in 0..1_200 {
            index.remove(id);
        }
        assert!(index.is_empty());
        assert!(
            index
                .search(&data[0], 5, None, None, None)
                .expect("valid")
                .is_empty()
        );
    }
}

/// One step of a churn sequence over ids `0..400`.
#[derive(Debug, Clone)]
enum Op {
    /// Insert or replace `id` with vector number `v` of the pool.
    Put {
        id: u32,
        v: usize,
    },
    Remove {
        id: u32,
    },
    /// `insert_batch` of several puts (an id may repeat: the later one wins), built on two
    /// threads (with tombstones in the store too).
    Batch(Vec<(u32, usize)>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..400, 0usize..2_000).prop_map(|(id, v)| Op::Put { id, v }),
        2 => (0u32..400).prop_map(|id| Op::Remove { id }),
        1 => prop::collection::vec((0u32..400, 0usize..2_000), 1..60).prop_map(Op::Batch),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        // 64, not 24: before removals repaired one-way links, this property failed on 2 of
        // 8 other seeds of 48 cases while the fixed seed's 24 passed.
        cases: 64,
        rng_seed: RngSeed::Fixed(0xDE1E_7E00),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    /// After any interleaving of inserts, replacements, removals and parallel batch inserts
    /// (compactions included),
    /// graph searches never return a removed or replaced-away vector, and recall@10 against
    /// the exact answer stays high: removals repair the graph instead of leaving holes.
    #[test]
    fn churn_keeps_recall_and_never_returns_the_removed(
        metric in prop_oneof![Just(Metric::Cosine), Just(Metric::Euclidean)],
        ops in prop::collection::vec(op(), 300..900),
    ) {
        let pool = for_metric(metric, clustered(2_000, 12, 10, 5));
        let config = DenseConfig::new(12, metric)
            .with_exact_threshold(0)
            .with_rebuild_fraction(0.3)
            .with_build_threads(2);
        let mut index = DenseIndex::new(config).expect("valid config");
        let mut model: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
        for id in 0..400u32 {
            let v = &pool[id as usize];
            index.insert(id, v).expect("valid");
            model.insert(id, v.clone());
        }
        for op in &ops {
            match *op {
                Op::Put { id, v } => {
                    index.insert(id, &pool[v]).expect("valid");
                    model.insert(id, pool[v].clone());
                }
                Op::Remove { id } => {
                    prop_assert_eq!(index.remove(id), model.remove(&id).is_some());
                }
                Op::Batch(ref items) => {
                    index
                        .insert_batch(items.iter().map(|&(id, v)| (id, pool[v].as_slice())))
                        .expect("valid");
                    for &(id, v) in items {
                        model.insert(id, pool[v].clone());
                    }
                }
            }
        }
        prop_assert_eq!(index.len(), model.len());
        let (mut hit, mut want) = (0usize, 0usize);
        for q in pool.iter().skip(1_000).step_by(40) {
            let got = index.search(q, 10, Some(64), None, None).expect("valid");
            let exact = naive_top(metric, model.iter().map(|(&i, v)| (i, v.clone())), q, 10);
            prop_assert_eq!(got.len(), exact.len());
            for (id, score) in &got {
                let current = model.get(id);
                prop_assert!(current.is_some(), "removed id {} returned", id);
                let s = naive_score(metric, q, current.expect("checked"));
                prop_assert!((f64::from(*score) - s).abs() < 1e-5, "stale vector for {}", id);
            }
            want += exact.len();
            hit += exact.iter().filter(|(id, _)| got.iter().any(|(g, _)| g == id)).count();
        }
        // At ef 64 over a few hundred clustered vectors an intact graph is at ~1.0; 0.95
        // leaves room for approximation, not for holes left by removals.
        prop_assert!(hit as f64 >= 0.95 * want as f64, "recall {hit}/{want}");
    }
}
