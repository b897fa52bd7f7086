//! Passages per second of the Rust all-MiniLM-L6-v2 on the dataset's 1,000 dev passages, at
//! one and two threads, and the cosine to the sentence-transformers vectors.
//!
//! ```sh
//! cargo run --release -p flowvec-minilm --example minilm_throughput -- [--rounds 3] [--data DIR]
//! ```
//! The model directory is `$FLOWVEC_MODEL_DIR` or the cache `scripts/fetch-minilm` fills. The
//! program runs itself once per configuration and round (the thread count of the matrix
//! products is fixed when a process starts: `RAYON_NUM_THREADS`), interleaved, and prints the
//! best round of each:
//! - `1 thread`: one process-wide thread;
//! - `2 threads, one batch`: the matrix products of one call split over two threads;
//! - `2 workers`: two threads each embedding half of the passages with one-thread products
//!   (what a server with two concurrent requests does).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use flowvec_minilm::{MiniLm, default_model_dir};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn read_fvecs(path: &std::path::Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).expect("dev_queries.fvecs");
    bytes
        .chunks_exact(4 + 4 * 384)
        .map(|row| {
            row[4..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// One measured configuration, in a child process.
fn child(mode: &str, data: &std::path::Path) {
    let dir = default_model_dir().expect("FLOWVEC_MODEL_DIR or HOME is set");
    let model = MiniLm::load(&dir).unwrap_or_else(|err| panic!("{err}"));
    let text = std::fs::read_to_string(data.join("dev_passages.txt")).expect("dev_passages.txt");
    let passages: Vec<&str> = text.lines().collect();
    // Warm up (first-touch of the weights, allocator).
    model.embed_texts(&passages[..32]).unwrap();
    let start = Instant::now();
    let vectors: Vec<Vec<f32>> = if mode == "workers" {
        let half = passages.len() / 2;
        std::thread::scope(|s| {
            let a = s.spawn(|| model.embed_texts(&passages[..half]).unwrap());
            let b = model.embed_texts(&passages[half..]).unwrap();
            let mut v = a.join().unwrap();
            v.extend(b);
            v
        })
    } else {
        model.embed_texts(&passages).unwrap()
    };
    let secs = start.elapsed().as_secs_f64();
    let reference = read_fvecs(&data.join("dev_queries.fvecs"));
    let min_cos = vectors
        .iter()
        .zip(&reference)
        .map(|(a, b)| cosine(a, b))
        .fold(f64::INFINITY, f64::min);
    println!("{} {secs} {min_cos}", passages.len());
}

fn main() {
    let data = PathBuf::from(
        arg("--data").unwrap_or_else(|| "/work/shared/datasets/minilm-text".to_string()),
    );
    if let Ok(mode) = std::env::var("MINILM_BENCH_CHILD") {
        child(&mode, &data);
        return;
    }
    let rounds: usize = arg("--rounds").map_or(3, |r| r.parse().expect("--rounds N"));
    let configs = [
        ("1 thread", "1", "single"),
        ("2 threads, one batch", "2", "single"),
        ("2 workers x 1 thread", "1", "workers"),
    ];
    let exe = std::env::current_exe().unwrap();
    let mut best = vec![(f64::INFINITY, 0usize, 0f64); configs.len()];
    for round in 0..rounds {
        for (c, (label, threads, mode)) in configs.iter().enumerate() {
            let out = Command::new(&exe)
                .args(std::env::args().skip(1))
                .env("MINILM_BENCH_CHILD", mode)
                .env("RAYON_NUM_THREADS", threads)
                .output()
                .expect("run the child");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = String::from_utf8_lossy(&out.stdout);
            let f: Vec<f64> = line
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            eprintln!("round {round} {label}: {:.1} passages/s", f[0] / f[1]);
            if f[1] < best[c].0 {
                best[c] = (f[1], f[0] as usize, f[2]);
            }
        }
    }
    println!("| configuration | passages/s | lowest cosine to sentence-transformers |");
    println!("|---|---|---|");
    for ((label, _, _), (secs, n, cos)) in configs.iter().zip(&best) {
        println!("| {label} | {:.1} | {cos:.6} |", *n as f64 / secs);
    }
    println!(
        "(best of {rounds} rounds, {} dev passages, mean 30 words each)",
        best[0].1
    );
}
