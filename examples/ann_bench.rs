//! ANN benchmark driver on TEXMEX files (`.fvecs` base/queries, `.ivecs` ground truth).
//!
//! ```text
//! cargo run --release --example ann_bench -- --base B.fvecs --queries Q.fvecs --gt G.ivecs \
//!     [--metric cosine|euclidean|dot] [--ef 16,32,64,128] [--m 16] [--ef-construction 200] \
//!     [--backend native|hnsw_rs] [--traversal exact|int8|bits] [--limit N] [--repeat N] [--filter N=GT.ivecs]... [--churn F]
//!     [--query-threads N] [--build-threads N]
//!
//! `--build-threads N` builds with one `DenseIndex::insert_batch` call on N threads (also for
//! N = 1) instead of one `insert` per vector, and prints its wall time and the CPU time of the
//! whole process (`build_threads=… build_wall_s=… process_cpu_s=…`); compare runs with 1 and
//! 2 by their wall time.
//!
//! `--query-threads N` adds, after the sweep, a scaling pass per ef: the queries answered by one
//! thread, then the same queries split over N threads (query i to thread i mod N), alternated
//! `--repeat` times, best of each; it prints both wall-clock QPS and their ratio, and checks that
//! the threads' answers equal the single thread's.
//! ```
//! `--filter N=GT.ivecs` (repeatable) adds, after the unfiltered sweep, a sweep whose searches
//! pass `DenseIndex::search` an `allow` filter letting only ids with `id % N == 0` through
//! (selectivity 1/N), scored against `GT.ivecs` (the exact top-k over those ids); its lines
//! start with `filter_mod=N`. `--exact-threshold default|N` sets the exact-scan threshold
//! (default here 0, so every unfiltered search measures the graph; `default` keeps the
//! library's, which also lets a selective filter go to an exact scan, as a user would get).
//! `--churn F` removes a fraction F of the vectors one by one after the build and inserts them
//! again before the sweeps, printing the time spent and the worst single operation (`churn …`
//! lines); the sweeps then measure the graph after that churn.
//! Builds a [`DenseIndex`] with the exact-scan threshold forced to 0, so every search measures
//! the graph path. Prints `build_s=… build_per_s=… mem_mb=…` (index memory: heap bytes
//! allocated by the build and still held, counted by a global allocator wrapper; the loaded
//! files are allocated before and excluded), then one `ef=… recall@10=… qps=…` line per ef
//! (single thread; with `--repeat N` each ef pass runs N times and the fastest counts, which
//! tames a noisy shared machine).

use flowvec::vector::Metric;
use flowvec::vector::dense::{DenseConfig, DenseIndex, GraphBackend, Traversal};
use indicatif::{ProgressBar, ProgressStyle};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

#[path = "support/cpu_time.rs"]
mod cpu_time;
use cpu_time::{CLOCK_PROCESS_CPUTIME_ID, cpu_s, thread_cpu_s};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

struct Args {
    base: String,
    queries: String,
    gt: String,
    metric: Metric,
    efs: Vec<usize>,
    m: usize,
    ef_construction: usize,
    backend: GraphBackend,
    traversal: Traversal,
    limit: Option<usize>,
    repeat: usize,
    filters: Vec<(u32, String)>,
    /// `None`: the library default.
    exact_threshold: Option<usize>,
    /// Fraction of the vectors removed and then re-inserted after the build (0: none).
    churn: f64,
    /// Threads of the query-scaling pass (1: no such pass).
    query_threads: usize,
    /// Build with `DenseIndex::insert_batch` on this many threads (`None`: one `insert` per
    /// vector, as a host adding vectors one at a time would).
    build_threads: Option<usize>,
}

fn usage(msg: &str) -> ! {
    eprintln!("error: {msg}");
    eprintln!(
        "usage: ann_bench --base B.fvecs --queries Q.fvecs --gt G.ivecs [--metric cosine|euclidean|dot] \
         [--ef 16,32,64,128] [--m 16] [--ef-construction 200] [--backend native|hnsw_rs] [--traversal exact|int8|bits] [--limit N] [--repeat N] [--filter N=GT.ivecs] [--exact-threshold default|N] [--churn F] [--query-threads N] [--build-threads N]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        base: String::new(),
        queries: String::new(),
        gt: String::new(),
        metric: Metric::Cosine,
        efs: vec![16, 32, 64, 128],
        m: 16,
        ef_construction: 200,
        backend: GraphBackend::default(),
        traversal: Traversal::Exact,
        limit: None,
        repeat: 1,
        query_threads: 1,
        build_threads: None,
        filters: Vec::new(),
        exact_threshold: Some(0),
        churn: 0.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        let number = |s: String| {
            s.parse::<usize>()
                .unwrap_or_else(|_| usage(&format!("not a number: {s}")))
        };
        match flag.as_str() {
            "--base" => args.base = value(),
            "--queries" => args.queries = value(),
            "--gt" => args.gt = value(),
            "--metric" => {
                args.metric = match value().as_str() {
                    "cosine" => Metric::Cosine,
                    "euclidean" | "l2" => Metric::Euclidean,
                    "dot" => Metric::DotProduct,
                    other => usage(&format!("unknown metric {other}")),
                }
            }
            "--ef" => {
                args.efs = value()
                    .split(',')
                    .map(|s| number(s.trim().to_string()))
                    .collect()
            }
            "--m" => args.m = number(value()),
            "--ef-construction" => args.ef_construction = number(value()),
            "--limit" => args.limit = Some(number(value())),
            "--churn" => {
                let v = value();
                args.churn = match v.parse::<f64>() {
                    Ok(f) if (0.0..=1.0).contains(&f) => f,
                    _ => usage(&format!("--churn wants a fraction from 0 to 1, got {v}")),
                };
            }
            "--repeat" => args.repeat = number(value()).max(1),
            "--query-threads" => args.query_threads = number(value()).max(1),
            "--build-threads" => args.build_threads = Some(number(value()).max(1)),
            "--exact-threshold" => {
                args.exact_threshold = match value().as_str() {
                    "default" => None,
                    n => Some(number(n.to_string())),
                }
            }
            "--filter" => {
                let spec = value();
                let Some((n, path)) = spec.split_once('=') else {
                    usage(&format!("--filter wants N=GT.ivecs, got {spec}"))
                };
                let n = number(n.to_string());
                match u32::try_from(n) {
                    Ok(n) if n > 0 => args.filters.push((n, path.to_string())),
                    _ => usage(&format!("--filter modulus must be a positive u32, got {n}")),
                }
            }
            "--traversal" => {
                args.traversal = match value().as_str() {
                    "exact" => Traversal::Exact,
                    "int8" => Traversal::Int8,
                    "bits" => Traversal::Bits,
                    other => usage(&format!(
                        "--traversal wants exact, int8 or bits, got {other}"
                    )),
                }
            }
            "--backend" => {
                args.backend = match value().as_str() {
                    "native" => GraphBackend::Native,
                    "hnsw_rs" | "hnsw-rs" => GraphBackend::HnswRs,
                    other => usage(&format!("unknown backend {other}")),
                }
            }
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if args.base.is_empty() || args.queries.is_empty() || args.gt.is_empty() {
        usage("--base, --queries and --gt are required");
    }
    args
}

/// Reads a TEXMEX file: per row an int32 count, then that many 4-byte values.
fn read_vecs<T>(path: &str, convert: impl Fn([u8; 4]) -> T) -> Vec<Vec<T>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| usage(&format!("cannot read {path}: {e}")));
    let mut rows = Vec::new();
    let mut pos = 0;
    while pos + 4 <= bytes.len() {
        let word = |p: usize| [bytes[p], bytes[p + 1], bytes[p + 2], bytes[p + 3]];
        let n = i32::from_le_bytes(word(pos));
        let n =
            usize::try_from(n).unwrap_or_else(|_| usage(&format!("{path}: negative row length")));
        pos += 4;
        if pos + 4 * n > bytes.len() {
            usage(&format!("{path}: truncated row"));
        }
        rows.push((0..n).map(|i| convert(word(pos + 4 * i))).collect());
        pos += 4 * n;
    }
    rows
}

fn main() {
    let args = parse_args();
    let mut base = read_vecs(&args.base, f32::from_le_bytes);
    if let Some(limit) = args.limit {
        base.truncate(limit);
    }
    let queries = read_vecs(&args.queries, f32::from_le_bytes);
    let gt = read_vecs(&args.gt, i32::from_le_bytes);
    let dim = base.first().map_or_else(|| usage("empty base"), Vec::len);
    println!(
        "base={} queries={} dim={} metric={:?} m={} ef_construction={} backend={:?}",
        base.len(),
        queries.len(),
        dim,
        args.metric,
        args.m,
        args.ef_construction,
        args.backend
    );

    let mut config = DenseConfig::new(dim, args.metric)
        .with_m(args.m)
        .with_ef_construction(args.ef_construction)
        .with_backend(args.backend)
        .with_traversal(args.traversal);
    if let Some(threshold) = args.exact_threshold {
        config = config.with_exact_threshold(threshold);
    }
    if let Some(threads) = args.build_threads {
        config = config.with_build_threads(threads);
    }
    match args.exact_threshold {
        Some(0) => println!(
            "path=graph (exact-scan threshold forced to 0: every search below goes through the graph)"
        ),
        _ => println!(
            "exact_threshold={} (a filter passing fewer vectors goes to an exact scan)",
            config.exact_threshold
        ),
    }
    let before = LIVE.load(Ordering::Relaxed);
    let start = Instant::now();
    let cpu_start = thread_cpu_s();
    let process_cpu_start = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    let mut index = DenseIndex::new(config).unwrap_or_else(|e| usage(&e.to_string()));
    index.reserve(base.len());
    if let Some(threads) = args.build_threads {
        index
            .insert_batch(
                base.iter()
                    .enumerate()
                    .map(|(id, v)| (id as u32, v.as_slice())),
            )
            .unwrap_or_else(|e| usage(&format!("base: {e}")));
        let process_cpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID)
            .zip(process_cpu_start)
            .map_or(f64::NAN, |(end, begin)| end - begin);
        println!(
            "build_threads={threads} build_wall_s={:.2} process_cpu_s={process_cpu:.2} (one insert_batch call)",
            start.elapsed().as_secs_f64()
        );
    }
    let bar = ProgressBar::new(base.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("building {bar:40} {pos}/{len} {per_sec} eta {eta}")
            .expect("a valid template"),
    );
    for (id, v) in base
        .iter()
        .enumerate()
        .filter(|_| args.build_threads.is_none())
    {
        index
            .insert(id as u32, v)
            .unwrap_or_else(|e| usage(&format!("base row {id}: {e}")));
        if id % 256 == 0 {
            bar.set_position(id as u64);
        }
    }
    bar.finish_and_clear();
    let build_s = start.elapsed().as_secs_f64();
    let build_cpu_s = thread_cpu_s()
        .zip(cpu_start)
        .map(|(end, begin)| end - begin);
    let held = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    assert!(index.uses_graph(), "threshold 0 always builds the graph");
    println!(
        "build_s={:.2} build_per_s={:.0} mem_mb={:.1}",
        build_s,
        base.len() as f64 / build_s,
        held as f64 / 1e6
    );
    if let Some(cpu) = build_cpu_s.filter(|_| args.build_threads.is_none_or(|t| t == 1)) {
        println!(
            "cpu build_cpu_s={:.2} build_per_cpu_s={:.0} (thread CPU time; wall figures above suffer on a loaded machine)",
            cpu,
            base.len() as f64 / cpu
        );
    }
    println!(
        "mem_estimate_mb={:.1} (DenseIndex::memory_bytes) vectors_mb={:.1}",
        index.memory_bytes() as f64 / 1e6,
        (base.len() * dim * 4) as f64 / 1e6
    );

    if args.churn > 0.0 {
        churn(&mut index, &base, args.churn);
    }
    sweep(&index, &queries, &gt, &args, None);
    if args.query_threads > 1 {
        scaling(&index, &queries, &args);
    }
    for (modulus, path) in &args.filters {
        let gt = read_vecs(path, i32::from_le_bytes);
        if gt.len() < queries.len() {
            usage(&format!("{path}: fewer rows than queries"));
        }
        sweep(&index, &queries, &gt, &args, Some(*modulus));
    }
}

/// Removes a fixed pseudo-random `fraction` of the vectors one at a time, then inserts them
/// again (so the ground truth still holds), and prints the time spent and the worst single
/// operation (a graph rebuild inside one call shows up there).
fn churn(index: &mut DenseIndex, base: &[Vec<f32>], fraction: f64) {
    let chosen: Vec<u32> = (0..base.len() as u32)
        .filter(|&id| f64::from(id.wrapping_mul(2_654_435_761) % 1_000) < fraction * 1_000.0)
        .collect();
    let phase = |name: &str, op: &mut dyn FnMut(u32)| {
        let cpu_start = thread_cpu_s();
        let start = Instant::now();
        let mut worst = 0f64;
        for &id in &chosen {
            let t = Instant::now();
            op(id);
            worst = worst.max(t.elapsed().as_secs_f64());
        }
        let cpu = thread_cpu_s()
            .zip(cpu_start)
            .map_or(f64::NAN, |(e, b)| e - b);
        println!(
            "churn {name}={} wall_s={:.2} cpu_s={cpu:.2} per_op_us={:.0} worst_op_ms={:.1}",
            chosen.len(),
            start.elapsed().as_secs_f64(),
            cpu * 1e6 / chosen.len().max(1) as f64,
            worst * 1e3
        );
    };
    phase("removed", &mut |id| {
        assert!(index.remove(id));
    });
    phase("reinserted", &mut |id| {
        index
            .insert(id, &base[id as usize])
            .expect("a vector that was inserted before");
    });
    println!(
        "churn after: vectors={} memory_mb={:.1}",
        index.len(),
        index.memory_bytes() as f64 / 1e6
    );
}

/// One pass per ef over all queries: recall@10 against `gt`, wall and CPU QPS (best of
/// `--repeat`). With `modulus`, only ids divisible by it are allowed.
fn sweep(
    index: &DenseIndex,
    queries: &[Vec<f32>],
    gt: &[Vec<i32>],
    args: &Args,
    modulus: Option<u32>,
) {
    let pass = |id: u32| modulus.is_none_or(|n| id.is_multiple_of(n));
    let allow: Option<&dyn Fn(u32) -> bool> = modulus.map(|_| &pass as &dyn Fn(u32) -> bool);
    let prefix = modulus.map_or_else(String::new, |n| format!("filter_mod={n} "));
    for &ef in &args.efs {
        let (mut best_wall, mut best_cpu) = (f64::INFINITY, None::<f64>);
        let mut results = Vec::with_capacity(queries.len());
        for _ in 0..args.repeat {
            results.clear();
            let start = Instant::now();
            let cpu_start = thread_cpu_s();
            for q in queries {
                results.push(
                    index
                        .search(q, 10, Some(ef), allow, None)
                        .unwrap_or_else(|e| usage(&e.to_string())),
                );
            }
            best_wall = best_wall.min(start.elapsed().as_secs_f64());
            if let Some(cpu) = thread_cpu_s()
                .zip(cpu_start)
                .map(|(end, begin)| end - begin)
            {
                best_cpu = Some(best_cpu.map_or(cpu, |b: f64| b.min(cpu)));
            }
        }
        let mut hits = 0usize;
        for (got, truth) in results.iter().zip(gt) {
            let truth: HashSet<u32> = truth.iter().take(10).map(|t| *t as u32).collect();
            hits += got.iter().filter(|h| truth.contains(&h.0)).count();
        }
        println!(
            "{prefix}ef={} recall@10={:.4} qps={:.1}",
            ef,
            hits as f64 / (10 * queries.len()) as f64,
            queries.len() as f64 / best_wall
        );
        if let Some(cpu) = best_cpu {
            println!(
                "{prefix}cpu ef={} qps_cpu={:.1}",
                ef,
                queries.len() as f64 / cpu
            );
        }
    }
}

/// One search's hits: (id, score), best first.
type Hits = Vec<(u32, f32)>;

/// Answers every query on `threads` threads (query i on thread i mod `threads`); returns the
/// answers in query order and the wall-clock seconds.
fn answer_on(
    index: &DenseIndex,
    queries: &[Vec<f32>],
    ef: usize,
    threads: usize,
) -> (Vec<Hits>, f64) {
    let start = Instant::now();
    let parts: Vec<Vec<(usize, Hits)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (t..queries.len())
                        .step_by(threads)
                        .map(|i| {
                            let hits = index
                                .search(&queries[i], 10, Some(ef), None, None)
                                .unwrap_or_else(|e| usage(&e.to_string()));
                            (i, hits)
                        })
                        .collect()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a query thread panicked"))
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut answers = vec![Vec::new(); queries.len()];
    for (i, hits) in parts.into_iter().flatten() {
        answers[i] = hits;
    }
    (answers, secs)
}

/// Query throughput from one thread vs `--query-threads` threads, alternated, best of
/// `--repeat` each (wall clock: CPU time cannot show parallel speed-up).
fn scaling(index: &DenseIndex, queries: &[Vec<f32>], args: &Args) {
    let threads = args.query_threads;
    for &ef in &args.efs {
        let (mut one, mut many) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..args.repeat {
            let (single, t1) = answer_on(index, queries, ef, 1);
            let (parallel, tn) = answer_on(index, queries, ef, threads);
            assert_eq!(single, parallel, "threads answered differently at ef={ef}");
            one = one.min(t1);
            many = many.min(tn);
        }
        let n = queries.len() as f64;
        println!(
            "threads ef={ef} qps_1={:.1} qps_{threads}={:.1} speedup={:.2}",
            n / one,
            n / many,
            one / many
        );
    }
}
