//! Dense engine benchmarks on generated clustered 384-d data (fixed seed): the distance
//! kernels, exact scan vs graph query, and insert.
//!
//! `cargo bench --bench dense -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group, criterion_main};
use flowvec::vector::Metric;
use flowvec::vector::dense::{DenseConfig, DenseIndex, GraphBackend, bench_dot_kernel};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const DIM: usize = 384;

fn clustered(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let centres: Vec<Vec<f32>> = (0..50)
        .map(|_| (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect())
        .collect();
    (0..n)
        .map(|_| {
            let c = &centres[rng.random_range(0..centres.len())];
            c.iter()
                .map(|x| x + rng.random_range(-0.5f32..0.5))
                .collect()
        })
        .collect()
}

fn build(data: &[Vec<f32>], graph: bool) -> DenseIndex {
    let threshold = if graph { 0 } else { usize::MAX };
    let config = DenseConfig::new(DIM, Metric::Cosine).with_exact_threshold(threshold);
    let mut index = DenseIndex::new(config).expect("valid config");
    for (id, v) in data.iter().enumerate() {
        index.insert(id as u32, v).expect("valid vector");
    }
    index
}

fn kernels(c: &mut Criterion) {
    let data = clustered(2, 1);
    let mut g = c.benchmark_group("kernel_dot_384");
    for simd in [false, true] {
        g.bench_function(if simd { "detected" } else { "portable" }, |b| {
            b.iter(|| bench_dot_kernel(simd, black_box(&data[0]), black_box(&data[1])))
        });
    }
    g.finish();
}

fn query(c: &mut Criterion) {
    let data = clustered(10_000, 2);
    let queries = clustered(64, 3);
    let mut g = c.benchmark_group("query_k10_384d");
    for n in [1_000, 2_000, 4_000, 10_000] {
        let index = build(&data[..n], false);
        let mut i = 0;
        g.bench_function(BenchmarkId::new("exact", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                index
                    .search(&queries[i], 10, None, None, None)
                    .expect("valid")
            })
        });
    }
    let index = build(&data, true);
    for ef in [16, 64] {
        let mut i = 0;
        g.bench_function(BenchmarkId::new(format!("graph_ef{ef}"), data.len()), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                index
                    .search(&queries[i], 10, Some(ef), None, None)
                    .expect("valid")
            })
        });
    }
    g.finish();
}

/// Insert throughput: building an index of 1,000 vectors from empty, per vector. (A bench that
/// keeps inserting into one index would grow it without bound over criterion's iterations.)
fn insert(c: &mut Criterion) {
    let data = clustered(1_000, 4);
    let mut g = c.benchmark_group("insert_384d");
    g.throughput(Throughput::Elements(data.len() as u64));
    g.sample_size(10);
    for (name, graph, backend) in [
        ("exact", false, GraphBackend::Native),
        ("graph_native", true, GraphBackend::Native),
        ("graph_hnsw_rs", true, GraphBackend::HnswRs),
    ] {
        if backend == GraphBackend::HnswRs && !cfg!(feature = "hnsw-rs") {
            continue;
        }
        g.bench_function(name, |b| {
            b.iter(|| {
                let threshold = if graph { 0 } else { usize::MAX };
                let config = DenseConfig::new(DIM, Metric::Cosine)
                    .with_exact_threshold(threshold)
                    .with_backend(backend);
                let mut index = DenseIndex::new(config).expect("valid config");
                for (id, v) in data.iter().enumerate() {
                    index.insert(id as u32, v).expect("valid vector");
                }
                index
            })
        });
    }
    g.finish();
}

criterion_group!(benches, kernels, query, insert);
criterion_main!(benches);
