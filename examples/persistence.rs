//! Saves an index to a file, reloads it, and checks that the reloaded index answers every
//! query exactly like the original; prints snapshot size, save and load times (with the
//! graph's links, and in the lean form whose load rebuilds the graph), and heap bytes
//! (measured by a counting allocator) per record, per dense vector and per sparse posting.
//! Then the same for the flow-control engine: 200,000 waiting messages on 2,000 keys, some
//! active, snapshotted with serde (JSON) to a file, restored, checked (the active calls come
//! back first, at-least-once), and the heap cost of one waiting message.
//!
//! ```text
//! cargo run --release --example persistence -- [--data DIR] [--base N] [--queries N]
//! ```
//! With the minilm-text dataset (default `/work/shared/datasets/minilm-text`) it builds a
//! hybrid index of the passages (384-d dense + BM25 sparse, source as metadata, passage text as
//! data); without it, a generated one of the same shape (`--base`, default 5,000).

use flowvec::flow::{FlowConfig, FlowControl, FlowSnapshot, Limits, MessageId, Timestamp};
use flowvec::vector::dense::{DenseConfig, DenseIndex};
use flowvec::vector::sparse::SparseIndex;
use flowvec::vector::{
    FusionAlgorithm, Index, IndexConfig, Metric, Query, SparseVector, Vector, WeightingStrategy,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeSet;
use std::error::Error;
use std::fs;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

#[path = "support/dataset.rs"]
mod dataset;
use dataset::*;

/// Counts live heap bytes, so memory figures are measured rather than estimated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds as it does for `System`; the counter is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` (through `alloc`) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// CPU time of the calling thread in seconds (Linux `/proc/thread-self/schedstat`; 0 where
/// unavailable). Save and load are single-threaded, so on a busy machine this is the honest
/// figure beside the wall time.
fn cpu() -> f64 {
    fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// Runs `f`, returning its result, wall seconds and CPU seconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (wall, cpu0) = (Instant::now(), cpu());
    let out = f();
    (out, wall.elapsed().as_secs_f64(), cpu() - cpu0)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Base records and queries, from the dataset or generated.
struct Data {
    name: String,
    base: Vec<Vector>,
    queries: Vec<(Vec<f32>, SparseVector)>,
}

fn dataset(dir: &Path, n: Option<usize>, nq: usize) -> Result<Data, Box<dyn Error>> {
    let dense = read_fvecs(&dir.join("base.fvecs"))?;
    let sparse = read_sparse(&dir.join("base_sparse.jsonl"))?;
    let sources = read_lines(&dir.join("base_sources.txt"))?;
    let passages = read_lines(&dir.join("base_passages.txt"))?;
    let n = n.unwrap_or(dense.len()).min(dense.len());
    let base = dense
        .into_iter()
        .zip(sparse)
        .zip(sources.into_iter().zip(passages))
        .take(n)
        .enumerate()
        .map(|(i, ((v, s), (source, text)))| Vector {
            id: format!("{i:08}"),
            vector: Some(v),
            sparse_vector: Some(s),
            metadata: Some(json!({ "source": source })),
            data: Some(text),
        })
        .collect();
    let qd = read_fvecs(&dir.join("dev_queries.fvecs"))?;
    let qs = read_sparse(&dir.join("dev_queries_sparse.jsonl"))?;
    Ok(Data {
        name: format!("minilm-text ({n} x 384, hybrid)"),
        base,
        queries: qd.into_iter().zip(qs).take(nq).collect(),
    })
}

fn generated(n: usize, nq: usize) -> Data {
    let mut rng = StdRng::seed_from_u64(7);
    let vector = |rng: &mut StdRng| -> (Vec<f32>, SparseVector) {
        let d = (0..384).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut idx: Vec<i32> = (0..30).map(|_| rng.random_range(0..30_000)).collect();
        idx.sort_unstable();
        idx.dedup();
        let vals = idx.iter().map(|_| rng.random_range(0.1..3.0)).collect();
        (d, SparseVector::new(idx, vals))
    };
    let base = (0..n)
        .map(|i| {
            let (d, s) = vector(&mut rng);
            Vector {
                id: format!("{i:08}"),
                vector: Some(d),
                sparse_vector: Some(s),
                metadata: Some(json!({ "source": format!("gen:{}", i % 7) })),
                data: Some(format!("generated passage number {i} with some words")),
            }
        })
        .collect();
    let queries = (0..nq).map(|_| vector(&mut rng)).collect();
    Data {
        name: format!("generated ({n} x 384, hybrid)"),
        base,
        queries,
    }
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
    let n: Option<usize> = arg("--base").map(|s| s.parse()).transpose()?;
    let nq: usize = arg("--queries").map_or(Ok(200), |s| s.parse())?;
    let data = if dir.join("base.fvecs").exists() {
        dataset(&dir, n, nq)?
    } else {
        println!("dataset not found in {}: generating", dir.display());
        generated(n.unwrap_or(5000), nq)
    };
    let n = data.base.len();
    println!("data: {}, {} queries", data.name, data.queries.len());

    // Build.
    let before = live();
    let index = Index::new(IndexConfig::hybrid(384, Metric::Cosine))?;
    let (built, build, build_cpu) = timed(|| {
        data.base
            .chunks(1000)
            .try_for_each(|chunk| index.upsert("", chunk.to_vec()))
    });
    built?;
    let heap = live() - before;
    println!(
        "build:  {build:.2} s ({build_cpu:.2} s CPU) through upsert, heap {:.1} MiB = {:.0} bytes/record",
        mib(heap),
        heap as f64 / n as f64
    );

    // Save to a file and to memory.
    let path =
        std::env::temp_dir().join(format!("flowvec-persistence-{}.snap", std::process::id()));
    let (saved, save_file, save_file_cpu) = timed(|| -> Result<(), Box<dyn Error>> {
        Ok(index.save(BufWriter::new(fs::File::create(&path)?))?)
    });
    saved?;
    let size = fs::metadata(&path)?.len() as usize;
    let mut bytes = Vec::with_capacity(size);
    let (saved, save_mem, save_mem_cpu) = timed(|| index.save(&mut bytes));
    saved?;
    println!(
        "save:   {:.1} MiB ({:.0} bytes/record): {save_file:.3} s ({save_file_cpu:.3} s CPU) to a file, \
         {save_mem:.3} s ({save_mem_cpu:.3} s CPU, {:.0} MB/s of CPU) to memory",
        mib(size),
        size as f64 / n as f64,
        size as f64 / save_mem_cpu.max(1e-9) / 1e6
    );

    // Reload from the file.
    let before = live();
    let (loaded, load, load_cpu) = timed(|| -> Result<Index, Box<dyn Error>> {
        Ok(Index::load(BufReader::new(fs::File::open(&path)?))?)
    });
    let loaded = loaded?;
    let loaded_heap = live() - before;
    fs::remove_file(&path)?;
    println!(
        "load:   {load:.2} s ({load_cpu:.2} s CPU) from the file, {:.0} records/s, heap {:.1} MiB",
        n as f64 / load,
        mib(loaded_heap)
    );
    let (from_mem, load_mem, load_mem_cpu) = timed(|| Index::load(bytes.as_slice()));
    drop(from_mem?);
    println!("load:   {load_mem:.2} s ({load_mem_cpu:.2} s CPU) from memory");

    // The lean form: no graph links, so the load rebuilds the graph from the records.
    let mut lean = Vec::with_capacity(size);
    let (saved, _, save_lean_cpu) = timed(|| index.save_without_graph(&mut lean));
    saved?;
    let (rebuilt, load_lean, load_lean_cpu) = timed(|| Index::load(lean.as_slice()));
    drop(rebuilt?);
    println!(
        "lean:   save_without_graph {:.1} MiB ({save_lean_cpu:.3} s CPU); its load rebuilds the \
         graph: {load_lean:.2} s ({load_lean_cpu:.2} s CPU) from memory",
        mib(lean.len())
    );

    // Same answers?
    let mut kinds = Vec::new();
    for (v, s) in &data.queries {
        let dense = Query {
            include_metadata: true,
            include_data: true,
            include_vectors: true,
            ..Query::dense(v.clone(), 10)
        };
        let sparse = Query {
            weighting_strategy: Some(WeightingStrategy::Idf),
            ..Query::sparse(s.clone(), 10)
        };
        let hybrid = Query {
            sparse_vector: Some(s.clone()),
            fusion_algorithm: FusionAlgorithm::Dbsf,
            ..Query::dense(v.clone(), 10)
        };
        kinds.push(("dense", dense));
        kinds.push(("sparse-idf", sparse));
        kinds.push(("hybrid-dbsf", hybrid));
    }
    let mut differ = 0;
    for (kind, q) in &kinds {
        let (a, b) = (index.query("", q)?, loaded.query("", q)?);
        if a != b {
            differ += 1;
            if differ <= 3 {
                println!("  differs ({kind}): {:?} vs {:?}", ids(&a), ids(&b));
            }
        }
    }
    println!(
        "check:  {} of {} queries answered identically{}",
        kinds.len() - differ,
        kinds.len(),
        if differ == 0 {
            ""
        } else {
            " (the graph's links should make every answer identical)"
        }
    );
    let info = |i: &Index| (i.info().vector_count, i.list_namespaces());
    assert_eq!(info(&index), info(&loaded), "counts and namespaces");
    drop(loaded);
    drop(index);

    // Memory of the engines alone: one dense vector, one sparse posting.
    let before = live();
    let mut dense = DenseIndex::new(DenseConfig::new(384, Metric::Cosine))?;
    for (i, r) in data.base.iter().enumerate() {
        if let Some(v) = &r.vector {
            dense.insert(i as u32, v)?;
        }
    }
    let dense_heap = live() - before;
    let before = live();
    let mut sparse = SparseIndex::new();
    let mut postings = 0;
    for (i, r) in data.base.iter().enumerate() {
        if let Some(s) = &r.sparse_vector {
            sparse.insert(i as u32, &s.indices, &s.values);
            postings += s.indices.len();
        }
    }
    let sparse_heap = live() - before;
    let payload: usize = data
        .base
        .iter()
        .map(|r| r.id.len() + r.data.as_ref().map_or(0, String::len) + 20)
        .sum();
    println!(
        "memory: dense engine {:.0} bytes/vector (384 x 4 = 1536 raw); sparse engine {:.1} bytes/posting ({postings} postings, 8 raw); record layer {:.0} bytes/record (of which ~{:.0} id, data and metadata text)",
        dense_heap as f64 / n as f64,
        sparse_heap as f64 / postings as f64,
        heap.saturating_sub(dense_heap + sparse_heap) as f64 / n as f64,
        payload as f64 / n as f64
    );
    flow()
}

/// The flow-control engine's snapshot: serde (JSON here), restored with the active calls put
/// back at the head of their keys' waitlists.
fn flow() -> Result<(), Box<dyn Error>> {
    let (n, keys) = (200_000usize, 2_000usize);
    let t0 = Timestamp::from_secs(1_700_000_000);
    let limits: Limits = "rate=100,period=1m,parallelism=5".parse()?;
    let urls: Vec<String> = (0..n)
        .map(|i| format!("https://example.com/hook/{i}"))
        .collect();
    let before = live();
    let mut fc: FlowControl<String> = FlowControl::new(FlowConfig::default());
    for (i, url) in urls.iter().enumerate() {
        fc.publish(
            Some(&format!("key-{}", i % keys)),
            Some(limits),
            url.clone(),
            t0,
        )?;
    }
    let heap = live() - before;
    let payload: usize = urls.iter().map(String::len).sum();
    let active: BTreeSet<MessageId> = std::iter::from_fn(|| fc.poll_dispatch(t0))
        .map(|d| d.id)
        .collect();
    println!(
        "flow:   {n} messages on {keys} keys, {} active; heap {:.0} bytes/waiting message \
         (of which {:.0} the URL payload)",
        active.len(),
        heap as f64 / n as f64,
        payload as f64 / n as f64
    );
    // The engine alone, with an 8-byte payload and one key.
    let before = live();
    let mut bare: FlowControl<u64> = FlowControl::new(FlowConfig::default());
    for i in 0..1_000_000u64 {
        bare.publish(Some("k"), Some(limits), i, t0)?;
    }
    println!(
        "flow:   engine alone {:.1} bytes/waiting message (1,000,000 u64 messages, one key)",
        (live() - before) as f64 / 1e6
    );
    drop(bare);

    let path = std::env::temp_dir().join(format!("flowvec-flow-{}.json", std::process::id()));
    let (saved, save, save_cpu) = timed(|| -> Result<(), Box<dyn Error>> {
        serde_json::to_writer(BufWriter::new(fs::File::create(&path)?), &fc.snapshot())?;
        Ok(())
    });
    saved?;
    let size = fs::metadata(&path)?.len() as usize;
    let (restored, load, load_cpu) = timed(|| -> Result<FlowControl<String>, Box<dyn Error>> {
        let snapshot: FlowSnapshot<String> =
            serde_json::from_reader(BufReader::new(fs::File::open(&path)?))?;
        Ok(FlowControl::restore(snapshot, t0)?)
    });
    let mut restored = restored?;
    fs::remove_file(&path)?;
    println!(
        "flow:   snapshot {:.1} MiB JSON ({:.0} bytes/message): save {save:.2} s ({save_cpu:.2} s CPU), \
         restore {load:.2} s ({load_cpu:.2} s CPU)",
        mib(size),
        size as f64 / n as f64
    );
    // Nothing lost, and the calls that were active are delivered again first.
    assert_eq!(restored.active_count(), 0);
    assert_eq!(restored.waiting_count(), fc.waiting_count() + active.len());
    let again: BTreeSet<MessageId> = std::iter::from_fn(|| restored.poll_dispatch(t0))
        .map(|d| d.id)
        .collect();
    assert_eq!(again, active, "the active calls are redelivered first");
    println!(
        "check:  all {n} messages kept; the {} active calls are redelivered first",
        active.len()
    );
    Ok(())
}

fn ids(hits: &[flowvec::vector::QueryResult]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}
