//! Shared helpers of the dense engine's integration tests: seeded clustered data and a naive
//! scoring oracle.
#![allow(dead_code, unreachable_pub)]

use flowvec::vector::Metric;
use flowvec::vector::dense::{DenseConfig, DenseIndex, GraphBackend};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `n` vectors of `dim` components around `clusters` random centres (Gaussian-ish spread 0.3),
/// from a fixed seed.
pub fn clustered(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect())
        .collect();
    (0..n)
        .map(|_| {
            let c = &centres[rng.random_range(0..clusters)];
            c.iter().map(|x| x + 0.3 * gaussian(&mut rng)).collect()
        })
        .collect()
}

/// `n` vectors shaped like text embeddings: a `latent`-dimensional Gaussian whose axes have
/// decaying scales (`1/√(i+1)`), mapped into `dim` components by a fixed random matrix, plus a
/// little isotropic noise (0.05). Both the matrix and the samples come from `seed` (the
/// matrix from a seed of its own, so two calls with different seeds share it).
pub fn embedding_like(n: usize, dim: usize, latent: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut basis_rng = StdRng::seed_from_u64(0xE3BE_DD16 ^ (dim * 1_000 + latent) as u64);
    let basis: Vec<Vec<f32>> = (0..latent)
        .map(|i| {
            let scale = 1.0 / ((i + 1) as f32).sqrt();
            (0..dim).map(|_| gaussian(&mut basis_rng) * scale).collect()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..dim).map(|_| 0.05 * gaussian(&mut rng)).collect();
            for axis in &basis {
                let z = gaussian(&mut rng);
                for (x, a) in v.iter_mut().zip(axis) {
                    *x += z * a;
                }
            }
            v
        })
        .collect()
}

/// A standard normal sample (Box–Muller).
pub fn gaussian(rng: &mut StdRng) -> f32 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random_range(0.0..1.0);
    ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
}

/// The DESIGN §2.2 score, computed naively in f64.
pub fn naive_score(metric: Metric, a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    match metric {
        Metric::Cosine => {
            let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            ((1.0 + dot / (na * nb)) / 2.0).clamp(0.0, 1.0)
        }
        Metric::Euclidean => {
            let d: f64 = a
                .iter()
                .zip(b)
                .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
                .sum();
            1.0 / (1.0 + d)
        }
        Metric::DotProduct => ((1.0 + dot) / 2.0).clamp(0.0, 1.0),
    }
}

/// The naive top-k: every `(id, vector)` scored, best first, ties by id ascending.
pub fn naive_top(
    metric: Metric,
    items: impl IntoIterator<Item = (u32, Vec<f32>)>,
    query: &[f32],
    k: usize,
) -> Vec<(u32, f64)> {
    let mut all: Vec<(u32, f64)> = items
        .into_iter()
        .map(|(id, v)| (id, naive_score(metric, query, &v)))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

/// Every graph backend compiled in; the oracle tests run against each.
pub fn backends() -> Vec<GraphBackend> {
    let mut all = vec![GraphBackend::Native];
    if cfg!(feature = "hnsw-rs") {
        all.push(GraphBackend::HnswRs);
    }
    all
}

/// An index holding `data` under ids `0..n`; `graph` forces the graph (threshold 0), otherwise
/// it never builds one.
pub fn build(metric: Metric, data: &[Vec<f32>], graph: bool) -> DenseIndex {
    build_with(metric, data, graph, GraphBackend::default())
}

/// [`build`] with a chosen graph backend.
pub fn build_with(
    metric: Metric,
    data: &[Vec<f32>],
    graph: bool,
    backend: GraphBackend,
) -> DenseIndex {
    let threshold = if graph { 0 } else { usize::MAX };
    let config = DenseConfig::new(data[0].len(), metric)
        .with_exact_threshold(threshold)
        .with_backend(backend);
    let mut index = DenseIndex::new(config).expect("valid config");
    for (id, v) in data.iter().enumerate() {
        index.insert(id as u32, v).expect("valid vector");
    }
    index
}

/// The ids of `index`'s unfiltered top 10 for `query` (the exact index's answer is the truth
/// recall is measured against).
pub fn top10_ids(index: &DenseIndex, query: &[f32]) -> std::collections::HashSet<u32> {
    index
        .search(query, 10, None, None, None)
        .expect("valid query")
        .into_iter()
        .map(|h| h.0)
        .collect()
}

pub const METRICS: [Metric; 3] = [Metric::Cosine, Metric::Euclidean, Metric::DotProduct];

/// Scales vectors so inner products stay in a sensible range for the dot metric.
pub fn for_metric(metric: Metric, data: Vec<Vec<f32>>) -> Vec<Vec<f32>> {
    match metric {
        Metric::DotProduct => data
            .into_iter()
            .map(|v| {
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.into_iter().map(|x| x / n).collect()
            })
            .collect(),
        _ => data,
    }
}
