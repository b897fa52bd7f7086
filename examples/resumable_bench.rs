//! What a resumable query costs on the minilm-text dataset: the start (an exact ranking of the
//! whole namespace) for dense, sparse and hybrid queries, a page, and the memory per cursor.
//!
//! ```text
//! cargo run --release --example resumable_bench -- [--data DIR] [--base N] [--queries N]
//! ```

use flowvec::vector::{Index, IndexConfig, Metric, Query, QueryMode, Vector};
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

#[path = "support/dataset.rs"]
mod dataset;
use dataset::*;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
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
    let n = arg("--base")
        .map_or(Ok(base.len()), |s| s.parse())?
        .min(base.len());
    base.truncate(n);
    base_sparse.truncate(n);
    let nq: usize = arg("--queries").map_or(Ok(20), |s| s.parse())?;
    let mut queries = read_fvecs(&dir.join("dev_queries.fvecs"))?;
    let mut queries_sparse = read_sparse(&dir.join("dev_queries_sparse.jsonl"))?;
    queries.truncate(nq);
    queries_sparse.truncate(nq);

    let index = Index::new(IndexConfig::hybrid(384, Metric::Cosine))?;
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let batch = chunk
            .iter()
            .map(|&i| Vector {
                id: format!("{i:08}"),
                vector: Some(base[i].clone()),
                sparse_vector: Some(base_sparse[i].clone()),
                ..Vector::default()
            })
            .collect();
        index.upsert("", batch)?;
    }
    println!(
        "resumable queries over {n} hybrid records (384-d + BM25), {} queries, one thread",
        queries.len()
    );
    for (name, mode) in [
        ("dense", QueryMode::Dense),
        ("sparse", QueryMode::Sparse),
        ("hybrid RRF", QueryMode::Hybrid),
    ] {
        let (mut start_ms, mut page_ms, mut query_ms) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ranked, mut bytes) = (0, 0);
        for (q, s) in queries.iter().zip(&queries_sparse) {
            let query = Query {
                vector: Some(q.clone()),
                sparse_vector: Some(s.clone()),
                query_mode: mode,
                top_k: 100,
                ..Query::default()
            };
            let t = Instant::now();
            let _ = index.query("", &query)?;
            query_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let (_, mut cursor) = index.resumable_query("", &query)?;
            start_ms.push(t.elapsed().as_secs_f64() * 1e3);
            ranked += cursor.remaining() + 100;
            bytes += cursor.memory_bytes();
            let t = Instant::now();
            let page = cursor.next_page(100)?;
            page_ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(page.len() <= 100);
        }
        let k = queries.len();
        println!(
            "{name:>10}: start {:.2} ms median (ranks {} records, cursor {} KB), next 100 {:.3} ms; /query topK 100 {:.2} ms",
            median(start_ms),
            ranked / k,
            bytes / k / 1024,
            median(page_ms),
            median(query_ms),
        );
    }
    Ok(())
}
