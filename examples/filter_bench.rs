//! Filtered search on the minilm-text dataset through the record-level `Index`: for each
//! filter, its selectivity, recall@10 against the exact filtered top-10 (brute force here) and
//! single-thread QPS; plus the unfiltered QPS in the same run and the value index's memory.
//!
//! ```text
//! cargo run --release --example filter_bench -- [--data DIR] [--queries N] [--passes N]
//!     [--filter "<expr>"]... [--predicate]
//! ```
//! Metadata per passage: `source` (from base_sources.txt), `row` (its number), `len` (passage
//! length in characters / 50, so 0..), `first` (its first letter, lowercase) and `words` (an
//! array of its first three lowercase words). Without `--filter`, a preset list covering about
//! 50%, 10%, 1% and 0.1% runs. `--predicate` also runs each filter as `(<expr>) OR row < 0`
//! (the same records, but no constraint the value index can answer), to show what the index
//! buys.

use flowvec::vector::filter::Filter;
use flowvec::vector::{Index, IndexConfig, Metric, Query, ValueIndex, Vector};
use serde_json::{Value, json};
use std::error::Error;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;

#[path = "support/dataset.rs"]
mod dataset;
use dataset::*;

const PRESETS: &[&str] = &[
    "source IN ('gnu:info_manuals', 'man:pages')",
    "row >= 21500",
    "source IN ('vim:user_manual', 'python:pydoc_topics')",
    "len >= 6 AND source = 'gensim:enwiki-shortened'",
    "row >= 10000 AND row < 10430",
    "source = 'gensim:enwiki-table-markup'",
    "first = 'w' AND source = 'vim:user_manual'",
    "words CONTAINS 'the' AND source = 'gensim:lee_background'",
    "source GLOB 'gensim:pang*'",
    "row >= 30000 AND row < 30043",
];

fn metadata(row: usize, source: &str, passage: &str) -> Value {
    let words: Vec<String> = passage
        .split_whitespace()
        .take(3)
        .map(str::to_lowercase)
        .collect();
    let first: String = passage
        .chars()
        .find(|c| c.is_alphabetic())
        .map(|c| c.to_lowercase().collect())
        .unwrap_or_default();
    json!({
        "source": source,
        "row": row,
        "len": passage.len() / 50,
        "first": first,
        "words": words,
    })
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

struct Args {
    data: PathBuf,
    queries: usize,
    passes: usize,
    filters: Vec<String>,
    predicate: bool,
}

fn args() -> Result<Args, Box<dyn Error>> {
    let mut a = Args {
        data: PathBuf::from("/work/shared/datasets/minilm-text"),
        queries: 300,
        passes: 3,
        filters: Vec::new(),
        predicate: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(value()?),
            "--queries" => a.queries = value()?.parse()?,
            "--passes" => a.passes = value()?.parse()?,
            "--filter" => a.filters.push(value()?),
            "--predicate" => a.predicate = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if a.filters.is_empty() {
        a.filters = PRESETS.iter().map(|s| (*s).to_owned()).collect();
    }
    Ok(a)
}

/// Best-of-`passes` single-thread QPS and the last pass's top-10 ids.
fn run(index: &Index, queries: &[Vec<f32>], filter: &str, passes: usize) -> (f64, Vec<Vec<usize>>) {
    let mut best = 0.0f64;
    let mut hits = Vec::new();
    for _ in 0..passes {
        let start = Instant::now();
        hits = queries
            .iter()
            .map(|q| {
                let query = Query {
                    filter: filter.to_owned(),
                    ..Query::dense(q.clone(), 10)
                };
                index
                    .query("", &query)
                    .expect("query")
                    .into_iter()
                    .map(|h| h.id.parse().expect("numeric id"))
                    .collect()
            })
            .collect();
        best = best.max(queries.len() as f64 / start.elapsed().as_secs_f64());
    }
    (best, hits)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = args()?;
    let base = read_fvecs(&args.data.join("base.fvecs"))?;
    let mut queries = read_fvecs(&args.data.join("dev_queries.fvecs"))?;
    queries.truncate(args.queries);
    let sources = fs::read_to_string(args.data.join("base_sources.txt"))?;
    let passages = fs::read_to_string(args.data.join("base_passages.txt"))?;
    let meta: Vec<Value> = sources
        .lines()
        .zip(passages.lines())
        .enumerate()
        .map(|(i, (s, p))| metadata(i, s, p))
        .collect();
    assert_eq!(meta.len(), base.len(), "one source and passage per vector");
    let n = base.len();

    let index = Index::new(IndexConfig::dense(base[0].len(), Metric::Cosine))?;
    let start = Instant::now();
    let records: Vec<Vector> = base
        .iter()
        .zip(&meta)
        .enumerate()
        .map(|(i, (v, m))| Vector::dense(i.to_string(), v.clone()).with_metadata(m.clone()))
        .collect();
    for chunk in records.chunks(1000) {
        index.upsert("", chunk.to_vec())?;
    }
    let build = start.elapsed();
    let mut values = ValueIndex::new();
    let start = Instant::now();
    for (i, m) in meta.iter().enumerate() {
        values.insert(i as u32, m);
    }
    println!(
        "{n} records, {} queries; build {:.1} s; value index: {} fields, {:.1} MiB, built alone in {:.0} ms ({:.0} ns/record)",
        queries.len(),
        build.as_secs_f64(),
        values.fields(),
        values.memory_bytes() as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64() * 1e3,
        start.elapsed().as_secs_f64() * 1e9 / n as f64,
    );

    let (qps, _) = run(&index, &queries, "", args.passes);
    println!("unfiltered                                                   QPS {qps:8.0}");
    for text in &args.filters {
        let filter = Filter::parse(text)?;
        let matching: Vec<usize> = (0..n).filter(|&i| filter.matches(&meta[i])).collect();
        let truth: Vec<Vec<usize>> = queries
            .iter()
            .map(|q| {
                let mut scored: Vec<(usize, f32)> =
                    matching.iter().map(|&i| (i, dot(q, &base[i]))).collect();
                scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                scored.into_iter().take(10).map(|(i, _)| i).collect()
            })
            .collect();
        let mut variants = vec![(text.clone(), "")];
        if args.predicate {
            variants.push((format!("({text}) OR row < 0"), " [predicate]"));
        }
        for (expr, tag) in variants {
            let (qps, hits) = run(&index, &queries, &expr, args.passes);
            let (mut found, mut wanted, mut short) = (0usize, 0usize, 0usize);
            for (h, t) in hits.iter().zip(&truth) {
                found += t.iter().filter(|i| h.contains(i)).count();
                wanted += t.len();
                short += usize::from(h.len() < t.len());
            }
            let recall = if wanted == 0 {
                1.0
            } else {
                found as f64 / wanted as f64
            };
            println!(
                "{:<58} sel {:6.2}% ({:5}) recall@10 {recall:.4} QPS {qps:8.0}{}{tag}",
                text,
                100.0 * matching.len() as f64 / n as f64,
                matching.len(),
                if short > 0 {
                    format!(" SHORT x{short}")
                } else {
                    String::new()
                },
            );
        }
    }
    Ok(())
}
