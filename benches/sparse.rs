//! Sparse engine: exact top-10 by pruned search vs scoring every document, on generated
//! Zipf-distributed data (fixed seed), and the cost of inserts, replaces and removes.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use flowvec::vector::TopK;
use flowvec::vector::sparse::{SparseIndex, Weighting};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::hint::black_box;

const DOCS: usize = 50_000;
const VOCAB: usize = 30_000;

type Vector = (Vec<i32>, Vec<f32>);

struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize) -> Self {
        let mut total = 0.0;
        Zipf(
            (1..=n)
                .map(|r| {
                    total += 1.0 / r as f64;
                    total
                })
                .collect(),
        )
    }

    fn vector(&self, rng: &mut StdRng, len: usize, binary: bool) -> Vector {
        let total = *self.0.last().expect("non-empty vocabulary");
        let mut terms = BTreeSet::new();
        while terms.len() < len {
            let u = rng.random::<f64>() * total;
            terms.insert(self.0.partition_point(|&c| c < u) as i32);
        }
        let values = terms
            .iter()
            .map(|_| {
                if binary {
                    1.0
                } else {
                    rng.random_range(0.3f32..2.2)
                }
            })
            .collect();
        (terms.into_iter().collect(), values)
    }
}

fn data() -> (Vec<Vector>, Vec<Vector>) {
    let mut rng = StdRng::seed_from_u64(42);
    let zipf = Zipf::new(VOCAB);
    let docs = (0..DOCS)
        .map(|_| {
            let len = rng.random_range(5..40);
            zipf.vector(&mut rng, len, false)
        })
        .collect();
    let queries = (0..100)
        .map(|_| {
            let len = rng.random_range(3..25);
            zipf.vector(&mut rng, len, true)
        })
        .collect();
    (docs, queries)
}

/// Scores every document by merging sorted indices; plain inner product.
fn brute(docs: &[Vector], q: &Vector) -> Vec<(u32, f32)> {
    let mut top = TopK::new(10, None);
    for (id, (ix, vals)) in docs.iter().enumerate() {
        let (mut i, mut j, mut s, mut shared) = (0, 0, 0.0f64, false);
        while i < q.0.len() && j < ix.len() {
            match q.0[i].cmp(&ix[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    s += f64::from(q.1[i]) * f64::from(vals[j]);
                    shared = true;
                    i += 1;
                    j += 1;
                }
            }
        }
        if shared {
            top.push(id as u32, s as f32);
        }
    }
    top.into_sorted_vec()
}

fn bench(c: &mut Criterion) {
    let (docs, queries) = data();
    let mut index = SparseIndex::new();
    for (id, (ix, vals)) in docs.iter().enumerate() {
        index.insert(id as u32, ix, vals);
    }
    index.shrink_to_fit();
    // The benchmark is only meaningful if both sides agree.
    for q in &queries {
        assert_eq!(
            index.search(&q.0, &q.1, 10, Weighting::None, None, None),
            brute(&docs, q)
        );
    }

    let mut g = c.benchmark_group("sparse_search_100_queries_top10");
    g.sample_size(10);
    g.bench_function("pruned", |b| {
        b.iter(|| {
            for q in &queries {
                black_box(index.search(&q.0, &q.1, 10, Weighting::None, None, None));
            }
        })
    });
    g.bench_function("pruned_idf", |b| {
        b.iter(|| {
            for q in &queries {
                black_box(index.search(&q.0, &q.1, 10, Weighting::Idf, None, None));
            }
        })
    });
    g.bench_function("brute_force", |b| {
        b.iter(|| {
            for q in &queries {
                black_box(brute(&docs, q));
            }
        })
    });
    g.finish();

    let mut rng = StdRng::seed_from_u64(7);
    let zipf = Zipf::new(VOCAB);
    let fresh: Vec<Vector> = (0..1000)
        .map(|_| {
            let len = rng.random_range(5..40);
            zipf.vector(&mut rng, len, false)
        })
        .collect();
    let victims: Vec<u32> = (0..1000)
        .map(|_| rng.random_range(0..DOCS as u32))
        .collect();
    let mut g = c.benchmark_group("sparse_write_1000_into_50k");
    g.sample_size(10);
    g.bench_function("insert_new_ids", |b| {
        b.iter_batched(
            || index.clone(),
            |mut ix| {
                for (i, (t, v)) in fresh.iter().enumerate() {
                    ix.insert((DOCS + i) as u32, t, v);
                }
                ix
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("replace", |b| {
        b.iter_batched(
            || index.clone(),
            |mut ix| {
                for (&id, (t, v)) in victims.iter().zip(&fresh) {
                    ix.insert(id, t, v);
                }
                ix
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("remove", |b| {
        b.iter_batched(
            || index.clone(),
            |mut ix| {
                for &id in &victims {
                    ix.remove(id);
                }
                ix
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
