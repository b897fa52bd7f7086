//! Text in, checked against an independent BM25: text-upserts the minilm-text base passages
//! into a sparse `Index` with the built-in BM25 embedder (defaults), text-queries the dev
//! passages, and prints recall@10 against the dataset's exact BM25 ground truth
//! (`dev_gt_sparse.ivecs`, and `dev_gt_sparse_idf.ivecs` with IDF weighting), upsert
//! throughput and single-thread query QPS. Also counts term-id collisions in the corpus.
//!
//! ```text
//! cargo run --release --example bm25_recall -- [--data DIR] [--batch N] [--queries N]
//! ```
//! `--batch` is the upsert batch size (default 1,000; BM25's average document length is the
//! running mean, so early batches are weighed with a partial mean); `--batch 43000` upserts
//! all at once, which reproduces the dataset's corpus-wide mean exactly.

use flowvec::vector::text::{Bm25, Bm25Params, tokenize};
use flowvec::vector::{Index, IndexConfig, Query, Vector, WeightingStrategy};
use std::collections::HashMap;
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

#[path = "support/dataset.rs"]
mod dataset;
use dataset::*;

/// Zero-padded, so the index's tie-break by id is the ground truth's by row number.
fn id(i: usize) -> String {
    format!("{i:08}")
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
    let batch: usize = arg("--batch").map_or(Ok(1_000), |s| s.parse())?;
    let base = read_lines(&dir.join("base_passages.txt"))?;
    let mut dev = read_lines(&dir.join("dev_passages.txt"))?;
    let nq: usize = arg("--queries").map_or(Ok(dev.len()), |s| s.parse())?;
    dev.truncate(nq);
    let gt = read_ivecs(&dir.join("dev_gt_sparse.ivecs"))?;
    let gt_idf = read_ivecs(&dir.join("dev_gt_sparse_idf.ivecs"))?;

    // Term-id collisions over every distinct term of the corpus.
    let mut ids: HashMap<i32, String> = HashMap::new();
    let mut collisions = Vec::new();
    for text in base.iter().chain(&dev) {
        for t in tokenize(text) {
            let id = Bm25::term_id(&t);
            match ids.get(&id) {
                Some(other) if *other != t => collisions.push((other.clone(), t)),
                Some(_) => {}
                None => {
                    ids.insert(id, t);
                }
            }
        }
    }
    println!(
        "{} distinct terms, {} term-id collision(s): {collisions:?}",
        ids.len(),
        collisions.len()
    );

    let index = Index::new(IndexConfig::sparse().with_bm25(Bm25Params::default()))?;
    let start = Instant::now();
    for (b, chunk) in base.chunks(batch.max(1)).enumerate() {
        let records = chunk
            .iter()
            .enumerate()
            .map(|(i, text)| Vector {
                id: id(b * batch + i),
                data: Some(text.clone()),
                ..Vector::default()
            })
            .collect();
        index.upsert_data("", records)?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "upsert-data: {} passages in batches of {batch} in {secs:.2} s ({:.0} passages/s)",
        base.len(),
        base.len() as f64 / secs
    );

    for (name, weighting, truth) in [
        ("plain", None, &gt),
        ("IDF", Some(WeightingStrategy::Idf), &gt_idf),
    ] {
        let mut found = 0usize;
        let start = Instant::now();
        for (q, text) in dev.iter().enumerate() {
            let query = Query {
                top_k: 10,
                weighting_strategy: weighting,
                ..Query::default()
            };
            let hits = match index.text_query(query, text, None)? {
                Some(query) => index.query("", &query)?,
                None => Vec::new(),
            };
            let want: Vec<String> = truth[q][..10].iter().map(|&i| id(i as usize)).collect();
            found += hits.iter().filter(|h| want.contains(&h.id)).count();
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "query-data {name}: recall@10 {:.4} over {} queries, {:.0} QPS (one thread, tokenizing included)",
            found as f64 / (10 * dev.len()) as f64,
            dev.len(),
            dev.len() as f64 / secs
        );
    }
    Ok(())
}
