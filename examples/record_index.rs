//! Loads the minilm-text dataset into a hybrid record-level `Index` and prints build time,
//! memory, recall@10 against the exact ground truth and single-thread QPS for every query
//! kind, plus the record layer's overhead over a raw `DenseIndex` search.
//!
//! ```text
//! cargo run --release --example record_index -- [--data DIR] [--base N] [--queries N]
//! ```
//! Recall is computed only when the whole base is loaded (the ground truth covers all 43,000).

use flowvec::vector::dense::{DenseConfig, DenseIndex};
use flowvec::vector::{
    FusionAlgorithm, Index, IndexConfig, Metric, Query, QueryMode, Vector, WeightingStrategy,
};
use serde_json::json;
use std::error::Error;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;

#[path = "support/dataset.rs"]
mod dataset;
use dataset::*;

fn id(i: usize) -> String {
    format!("{i:08}")
}

fn recall(hits: &[Vec<String>], gt: &[Vec<u32>]) -> f64 {
    let mut found = 0;
    for (h, g) in hits.iter().zip(gt) {
        let truth: Vec<String> = g[..10].iter().map(|&i| id(i as usize)).collect();
        found += h.iter().filter(|x| truth.contains(x)).count();
    }
    found as f64 / (10 * hits.len()) as f64
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let dir =
        PathBuf::from(arg("--data").unwrap_or_else(|| "/work/shared/datasets/minilm-text".into()));
    let mut base = read_fvecs(&dir.join("base.fvecs"))?;
    let mut base_sparse = read_sparse(&dir.join("base_sparse.jsonl"))?;
    let sources: Vec<String> = fs::read_to_string(dir.join("base_sources.txt"))?
        .lines()
        .map(String::from)
        .collect();
    let n = arg("--base")
        .map_or(Ok(base.len()), |s| s.parse())?
        .min(base.len());
    base.truncate(n);
    base_sparse.truncate(n);
    let full = n == 43_000;
    let nq: usize = arg("--queries").map_or(Ok(200), |s| s.parse())?;
    let mut queries = read_fvecs(&dir.join("dev_queries.fvecs"))?;
    let mut queries_sparse = read_sparse(&dir.join("dev_queries_sparse.jsonl"))?;
    queries.truncate(nq);
    queries_sparse.truncate(nq);
    let gt = read_ivecs(&dir.join("dev_gt.ivecs"))?;
    let gt_sparse = read_ivecs(&dir.join("dev_gt_sparse.ivecs"))?;
    let gt_idf = read_ivecs(&dir.join("dev_gt_sparse_idf.ivecs"))?;
    println!(
        "record layer over the current dense/sparse engines; base={n} queries={}",
        queries.len()
    );

    let index = Index::new(IndexConfig::hybrid(384, Metric::Cosine))?;
    let started = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let batch = chunk
            .iter()
            .map(|&i| Vector {
                id: id(i),
                vector: Some(base[i].clone()),
                sparse_vector: Some(base_sparse[i].clone()),
                metadata: Some(json!({"source": sources[i]})),
                data: None,
            })
            .collect();
        index.upsert("", batch)?;
    }
    let build = started.elapsed();
    let info = index.info();
    println!(
        "build: {n} hybrid records in {:.2} s ({:.0} records/s), indexSize={:.1} MiB",
        build.as_secs_f64(),
        n as f64 / build.as_secs_f64(),
        info.index_size as f64 / (1024.0 * 1024.0)
    );

    let run = |name: &str,
               make: &dyn Fn(usize) -> Query,
               gt: Option<&[Vec<u32>]>|
     -> Result<(), Box<dyn Error>> {
        let started = Instant::now();
        let mut hits = Vec::with_capacity(queries.len());
        for q in 0..queries.len() {
            hits.push(
                index
                    .query("", &make(q))?
                    .into_iter()
                    .map(|r| r.id)
                    .collect::<Vec<_>>(),
            );
        }
        let qps = queries.len() as f64 / started.elapsed().as_secs_f64();
        match gt.filter(|_| full) {
            Some(gt) => println!(
                "mode={name} recall@10={:.4} qps={qps:.1}",
                recall(&hits, gt)
            ),
            None => println!("mode={name} qps={qps:.1}"),
        }
        Ok(())
    };
    let dense = |q: usize| Query::dense(queries[q].clone(), 10);
    let sparse = |q: usize| Query::sparse(queries_sparse[q].clone(), 10);
    let idf = |q: usize| Query {
        weighting_strategy: Some(WeightingStrategy::Idf),
        ..sparse(q)
    };
    let hybrid = |q: usize| Query {
        sparse_vector: Some(queries_sparse[q].clone()),
        ..dense(q)
    };
    let dbsf = |q: usize| Query {
        fusion_algorithm: FusionAlgorithm::Dbsf,
        ..hybrid(q)
    };
    let dense_mode = |q: usize| Query {
        query_mode: QueryMode::Dense,
        ..hybrid(q)
    };
    run("dense", &dense, Some(&gt))?;
    run(
        "dense-with-metadata",
        &|q| Query {
            include_metadata: true,
            ..dense(q)
        },
        Some(&gt),
    )?;
    run("sparse", &sparse, Some(&gt_sparse))?;
    run("sparse-idf", &idf, Some(&gt_idf))?;
    run("hybrid-rrf", &hybrid, None)?;
    run("hybrid-dbsf", &dbsf, None)?;
    run("hybrid-as-dense", &dense_mode, Some(&gt))?;

    // The record layer's overhead: the same dense search on a bare engine.
    let mut raw = DenseIndex::new(DenseConfig::new(384, Metric::Cosine))?;
    for (i, v) in base.iter().enumerate() {
        raw.insert(i as u32, v)?;
    }
    let started = Instant::now();
    for q in &queries {
        let _ = raw.search(q, 10, Some(64), None, None)?;
    }
    let qps = queries.len() as f64 / started.elapsed().as_secs_f64();
    println!("mode=raw-dense-engine qps={qps:.1}");
    Ok(())
}
