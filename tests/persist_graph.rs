//! Snapshots carry the dense graph's links: a load adopts them, so graph searches after a
//! reload return exactly what the original returned (ids and scores, bit for bit), a later
//! insert draws the same level and links as it would have in the original, and a second save
//! gives the same bytes. Without the links (`save_without_graph`) the load rebuilds the graph
//! from records in id order, which is a different graph when they were inserted in another
//! order: the comparison shows the exactness test can tell the two apart.
//!
//! Namespaces need more than the exact-scan threshold (4,000 vectors) to have a graph, so
//! these use 4,600 small vectors, a small `m` and `efConstruction`, and a narrow `efSearch`
//! (a narrow beam is where two different graphs answer differently).

use flowvec::vector::dense::Traversal;
use flowvec::vector::{GraphParams, Index, IndexConfig, Metric, Query, Vector};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const DIM: usize = 12;
const N: usize = 4_600;

fn config(metric: Metric, traversal: Traversal) -> IndexConfig {
    let mut config = IndexConfig::dense(DIM, metric);
    config.graph = GraphParams {
        m: 6,
        ef_construction: 24,
        ef_search: 10,
        traversal,
    };
    config
}

fn random_vector(rng: &mut StdRng) -> Vec<f32> {
    (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `N` records inserted in a shuffled id order, a few batches at a time.
fn built(metric: Metric, seed: u64, traversal: Traversal) -> Index {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut records: Vec<Vector> = (0..N)
        .map(|i| Vector::dense(format!("r{i:05}"), random_vector(&mut rng)))
        .collect();
    records.shuffle(&mut rng);
    let index = Index::new(config(metric, traversal)).unwrap();
    for chunk in records.chunks(700) {
        index.upsert("ns", chunk.to_vec()).unwrap();
    }
    index
}

fn queries(seed: u64) -> Vec<Query> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..60)
        .map(|_| Query::dense(random_vector(&mut rng), 10))
        .collect()
}

fn answers(index: &Index, queries: &[Query]) -> Vec<Vec<(String, u32)>> {
    queries
        .iter()
        .map(|q| {
            index
                .query("ns", q)
                .unwrap()
                .into_iter()
                .map(|r| (r.id, r.score.to_bits()))
                .collect()
        })
        .collect()
}

fn save(index: &Index, graph: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    if graph {
        index.save(&mut bytes).unwrap();
    } else {
        index.save_without_graph(&mut bytes).unwrap();
    }
    bytes
}

#[test]
fn a_reload_with_links_answers_bit_for_bit_and_a_rebuild_does_not() {
    // The coded walks too: a row's codes depend on the row alone, so they come back the same.
    for (metric, seed, traversal) in [
        (Metric::Cosine, 1, Traversal::Exact),
        (Metric::Euclidean, 2, Traversal::Exact),
        (Metric::DotProduct, 3, Traversal::Exact),
        (Metric::Cosine, 4, Traversal::Int8),
        (Metric::Cosine, 5, Traversal::Bits),
        (Metric::Euclidean, 6, Traversal::Bits),
    ] {
        let index = built(metric, seed, traversal);
        let qs = queries(seed + 100);
        let want = answers(&index, &qs);

        let with_links = save(&index, true);
        let without = save(&index, false);
        assert!(
            with_links.len() > without.len() + N * 4,
            "{metric:?}: the links are in the snapshot ({} vs {} bytes)",
            with_links.len(),
            without.len()
        );
        let loaded = Index::load(with_links.as_slice()).unwrap();
        assert_eq!(
            answers(&loaded, &qs),
            want,
            "{metric:?} {traversal:?}: adopted links"
        );
        assert_eq!(save(&loaded, true), with_links, "{metric:?}: saved again");

        let rebuilt = Index::load(without.as_slice()).unwrap();
        assert_eq!(rebuilt.info().vector_count, N);
        assert_ne!(
            answers(&rebuilt, &qs),
            want,
            "{metric:?}: a graph rebuilt in id order differs at ef 10 (else this test proves nothing)"
        );
    }
}

#[test]
fn inserts_after_a_reload_grow_the_same_graph() {
    let index = built(Metric::Cosine, 7, Traversal::Exact);
    let loaded = Index::load(save(&index, true).as_slice()).unwrap();
    let mut rng = StdRng::seed_from_u64(8);
    for batch in 0..4 {
        let more: Vec<Vector> = (0..50)
            .map(|i| Vector::dense(format!("new{batch}-{i:02}"), random_vector(&mut rng)))
            .collect();
        index.upsert("ns", more.clone()).unwrap();
        loaded.upsert("ns", more).unwrap();
    }
    let qs = queries(9);
    assert_eq!(answers(&loaded, &qs), answers(&index, &qs));
    assert_eq!(save(&loaded, true), save(&index, true));
}

#[test]
fn tombstones_are_left_out_of_the_links_and_small_namespaces_have_none() {
    let index = built(Metric::Euclidean, 11, Traversal::Exact);
    let mut rng = StdRng::seed_from_u64(12);
    // Replaced and removed records leave tombstones until compaction: the graph was repaired
    // when they went, and the snapshot's links leave them out, as compaction would.
    let replaced: Vec<Vector> = (0..300)
        .map(|i| Vector::dense(format!("r{:05}", i * 7), random_vector(&mut rng)))
        .collect();
    index.upsert("ns", replaced).unwrap();
    let doomed: Vec<String> = (0..200).map(|i| format!("r{:05}", i * 11 + 3)).collect();
    index
        .delete(
            "ns",
            flowvec::vector::Delete::ids(doomed.iter().map(String::as_str)),
        )
        .unwrap();
    index
        .upsert("small", vec![Vector::dense("a", random_vector(&mut rng))])
        .unwrap();
    let bytes = save(&index, true);
    assert!(
        bytes.len() > save(&index, false).len() + N * 4,
        "links saved"
    );
    let loaded = Index::load(bytes.as_slice()).unwrap();
    assert_eq!(loaded.info().vector_count, index.info().vector_count);
    assert_eq!(
        save(&loaded, true),
        bytes,
        "the loaded graph is the one saved"
    );
    // Recall of the loaded graph against the original's answers (which use the same exact
    // scores): leaving out the dead waypoints costs little.
    let qs = queries(13);
    let (a, b) = (answers(&index, &qs), answers(&loaded, &qs));
    let same: usize = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x.iter().filter(|hit| y.contains(hit)).count())
        .sum();
    let total: usize = a.iter().map(Vec::len).sum();
    assert!(same as f64 >= 0.9 * total as f64, "{same} of {total}");
    let q = Query::dense(random_vector(&mut rng), 5);
    assert_eq!(loaded.query("small", &q).unwrap().len(), 1);
}
