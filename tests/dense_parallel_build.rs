//! `DenseIndex::insert_batch` and the parallel graph build (`DenseConfig::build_threads`):
//! graphs built on several threads against the exact scan and against the one-thread build,
//! a one-thread batch against one-by-one inserts, and a batch's replacements and errors.

mod dense_support;

use dense_support::{METRICS, build, clustered, for_metric, top10_ids};
use flowvec::vector::dense::{DenseConfig, DenseIndex};
use flowvec::vector::{Metric, VectorError};

fn config(metric: Metric, dim: usize, threads: usize) -> DenseConfig {
    DenseConfig::new(dim, metric)
        .with_exact_threshold(0)
        .with_build_threads(threads)
}

fn batch_built(metric: Metric, data: &[Vec<f32>], threads: usize) -> DenseIndex {
    let mut index = DenseIndex::new(config(metric, data[0].len(), threads)).expect("valid");
    let items = data
        .iter()
        .enumerate()
        .map(|(id, v)| (id as u32, v.as_slice()));
    index.insert_batch(items).expect("valid vectors");
    index
}

fn recall(index: &DenseIndex, exact: &DenseIndex, queries: &[Vec<f32>]) -> f64 {
    let mut hits = 0usize;
    for q in queries {
        let truth = top10_ids(exact, q);
        let got = index.search(q, 10, Some(64), None, None).expect("valid");
        assert_eq!(got.len(), 10);
        hits += got.iter().filter(|h| truth.contains(&h.0)).count();
    }
    hits as f64 / (10 * queries.len()) as f64
}

#[test]
fn graphs_built_on_several_threads_keep_the_one_thread_recall() {
    for metric in METRICS {
        let data = for_metric(metric, clustered(4_000, 32, 40, 7));
        let queries = for_metric(metric, clustered(200, 32, 40, 8));
        let exact = build(metric, &data, false);
        let one = recall(&batch_built(metric, &data, 1), &exact, &queries);
        // Four threads on a two-core machine: more interleavings than cores.
        for threads in [2, 4] {
            let many = recall(&batch_built(metric, &data, threads), &exact, &queries);
            eprintln!(
                "{metric:?}: recall@10 at ef 64, 1 thread {one:.4}, {threads} threads {many:.4}"
            );
            assert!(many >= 0.95, "{metric:?} {threads} threads: {many:.4}");
            assert!(
                many >= one - 0.02,
                "{metric:?} {threads} threads: {many:.4} against {one:.4} on one"
            );
        }
    }
}

#[test]
fn a_one_thread_batch_builds_the_graph_one_by_one_inserts_build() {
    for metric in METRICS {
        let data = for_metric(metric, clustered(2_000, 16, 20, 3));
        let batch = batch_built(metric, &data, 1);
        let mut single = DenseIndex::new(config(metric, 16, 1)).expect("valid");
        for (id, v) in data.iter().enumerate() {
            single.insert(id as u32, v).expect("valid");
        }
        // Narrow beams make any difference in the links show in the answers.
        for q in data.iter().step_by(97) {
            for ef in [1, 4, 16] {
                assert_eq!(
                    batch.search(q, 10, Some(ef), None, None).expect("valid"),
                    single.search(q, 10, Some(ef), None, None).expect("valid"),
                    "{metric:?} ef {ef}"
                );
            }
        }
    }
}

#[test]
fn a_batch_replaces_like_inserts_in_order_and_crossing_the_threshold_builds_in_parallel() {
    let metric = Metric::Euclidean;
    let pool = clustered(3_000, 8, 12, 21);
    let config = DenseConfig::new(8, metric)
        .with_exact_threshold(500)
        .with_build_threads(2);
    let mut index = DenseIndex::new(config.clone()).expect("valid");
    let mut model = DenseIndex::new(config.with_build_threads(1)).expect("valid");
    // Below the threshold, across it (the graph is built from every vector at once), then
    // on the graph: fresh ids, ids of earlier batches, and ids repeated within a batch.
    let batches: Vec<Vec<(u32, usize)>> = vec![
        (0..300).map(|i| (i, i as usize)).collect(),
        (200..900).map(|i| (i, i as usize + 1_000)).collect(),
        (0..400)
            .map(|i| ((i * 7) % 1_100, (i as usize * 13) % 3_000))
            .collect(),
    ];
    for batch in &batches {
        index
            .insert_batch(batch.iter().map(|&(id, v)| (id, pool[v].as_slice())))
            .expect("valid");
        for &(id, v) in batch {
            model.insert(id, &pool[v]).expect("valid");
        }
        assert_eq!(index.len(), model.len());
        assert!(index.uses_graph() == (index.len() > 500));
    }
    for id in 0..1_100 {
        assert_eq!(index.vector(id), model.vector(id), "id {id}");
    }
    // The graph holds the current vectors only: a vector's own query finds its id first.
    for id in (0..1_100).step_by(11) {
        let Some(v) = model.vector(id) else { continue };
        let hits = index.search(&v, 1, Some(64), None, None).expect("valid");
        assert_eq!(hits[0].1, 1.0, "id {id}: {hits:?}");
        assert_eq!(model.vector(hits[0].0), Some(v), "id {id}");
    }
}

#[test]
fn a_batch_with_an_invalid_vector_changes_nothing() {
    let mut index = DenseIndex::new(config(Metric::Cosine, 3, 2)).expect("valid");
    index.insert(7, &[1.0, 2.0, 3.0]).expect("valid");
    let good = [0.5, 0.5, 0.5];
    let short = [1.0, 2.0];
    let zero = [0.0, 0.0, 0.0];
    for bad in [short.as_slice(), zero.as_slice()] {
        let err = index
            .insert_batch([(1, good.as_slice()), (2, bad), (3, good.as_slice())])
            .expect_err("an invalid vector");
        assert!(
            matches!(
                err,
                VectorError::DimensionMismatch { .. } | VectorError::ZeroVector
            ),
            "{err:?}"
        );
        assert_eq!(index.len(), 1);
        assert!(!index.contains(1) && !index.contains(3));
    }
}

#[test]
fn build_threads_out_of_range_is_a_typed_error() {
    for threads in [0, 257] {
        let err = DenseIndex::new(config(Metric::Cosine, 3, threads)).expect_err("out of range");
        let text = err.to_string();
        assert!(
            text.contains("build_threads") && text.contains(&threads.to_string()),
            "{text}"
        );
    }
}
