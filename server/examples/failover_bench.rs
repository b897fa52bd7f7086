//! Failover time and throughput of a 3-node `flowvec-server` cluster on this machine.
//!
//! Each round SIGKILLs the leader while one client writes single upserts back to back through a
//! surviving node, and measures the kill -> the first acknowledged write that started after it;
//! then restarts the killed node, stops the client and waits until all three report one leader
//! and have applied their whole logs, to the same index. It prints every round and the median, min and max. Then `--threads` clients
//! do single upserts for `--seconds`, spread over the 3 nodes and then on a 1-node server, and
//! the same with queries (topK 10); it prints both rates and the CPU model. All servers share
//! this machine's cores, so the 3-node figures include the replicas' work.
//!
//! ```text
//! cargo build --release -p flowvec-server
//! cargo run --release -p flowvec-server --example failover_bench -- [--rounds 10] [--seconds 5] [--threads 4]
//! ```
//! The server binary is `FLOWVEC_SERVER_BIN`, else `target/release/flowvec-server` (an example
//! does not build the package's binary: build it first).

#[path = "../tests/cluster_support/mod.rs"]
mod cluster_support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cluster_support::{Client, Cluster, vector_for};

const LIMIT: Duration = Duration::from_secs(30);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(12);

fn main() {
    let rounds = flag("--rounds", 10).max(1);
    let seconds = flag("--seconds", 5).max(1);
    let threads = flag("--threads", 4).max(1);
    let bin = std::env::var_os("FLOWVEC_SERVER_BIN").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../target/release/flowvec-server"
            ))
        },
        PathBuf::from,
    );
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "CPU: {} ({cores} cores); server {}",
        cpu_model(),
        bin.display()
    );

    let ids = [1, 2, 3];
    let mut cluster = Cluster::new(&bin, "failover-bench", 3, 0, false, &[]);
    cluster.start_voters();
    let mut times = Vec::new();
    for round in 1..=rounds {
        let (leader, term) = cluster.wait_leader(&ids, LIMIT).expect("a leader");
        let through = ids
            .into_iter()
            .find(|&id| id != leader)
            .expect("a follower");
        let writer = Writer::start(cluster.node(through).url(), round);
        std::thread::sleep(Duration::from_millis(500));
        cluster.node_mut(leader).kill();
        let killed = Instant::now();
        let failover = writer.first_ack_after(killed, LIMIT).unwrap_or_else(|| {
            panic!(
                "round {round}: nothing acknowledged within {LIMIT:?} of the kill\n{}",
                cluster.describe()
            )
        });
        cluster.node_mut(leader).start();
        let acked = writer.stop();
        let (new_leader, applied) = cluster.wait_converged(&ids, LIMIT).unwrap_or_else(|err| {
            panic!(
                "round {round}: no convergence: {err}\n{}",
                cluster.describe()
            )
        });
        println!(
            "round {round:2}: killed leader {leader} (term {term}); first write through node {through} acknowledged {:.0} ms after the kill; \
             node {new_leader} leads, all at index {applied} ({acked} writes acknowledged this round)",
            millis(failover)
        );
        times.push(failover);
    }
    times.sort();
    println!(
        "leader kill -> first acknowledged write over {rounds} rounds: median {:.0} ms, min {:.0} ms, max {:.0} ms",
        millis(times[times.len() / 2]),
        millis(times[0]),
        millis(times[times.len() - 1])
    );

    let urls: Vec<String> = ids.iter().map(|&id| cluster.node(id).url()).collect();
    let writes3 = throughput(&urls, threads, seconds, Some("three"));
    let queries3 = throughput(&urls, threads, seconds, None);
    let count3 = Client::new(LIMIT).count(&urls[0]).unwrap_or(0);
    drop(cluster);

    let mut single = Cluster::new(&bin, "single-bench", 1, 0, false, &[]);
    single.start_voters();
    single.wait_leader(&[1], LIMIT).expect("the one node leads");
    let urls = vec![single.node(1).url()];
    let writes1 = throughput(&urls, threads, seconds, Some("one"));
    let queries1 = throughput(&urls, threads, seconds, None);
    let count1 = Client::new(LIMIT).count(&urls[0]).unwrap_or(0);

    println!(
        "{threads} client threads, {seconds} s per row, single-record upserts of dimension 4, queries topK 10"
    );
    println!("| setup | upserts/s | queries/s | vectors at the end |");
    println!("|---|---|---|---|");
    println!("| 1 node | {writes1:.0} | {queries1:.0} | {count1} |");
    println!("| 3 nodes, requests spread | {writes3:.0} | {queries3:.0} | {count3} |");
    println!(
        "3 nodes / 1 node: upserts {:.2}x, queries {:.2}x",
        writes3 / writes1.max(1e-9),
        queries3 / queries1.max(1e-9)
    );
}

/// `--name N` from the command line, or `default`.
fn flag(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).map_or(default, |at| {
        args.get(at + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} needs a number"))
    })
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One client writing single upserts back to back, remembering when each acknowledged one
/// started and ended.
struct Writer {
    stop: Arc<AtomicBool>,
    acks: Arc<Mutex<Vec<(Instant, Instant)>>>,
    thread: JoinHandle<()>,
}

impl Writer {
    fn start(url: String, round: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let acks = Arc::new(Mutex::new(Vec::new()));
        let (stopping, acked) = (Arc::clone(&stop), Arc::clone(&acks));
        let thread = std::thread::spawn(move || {
            let client = Client::new(CLIENT_TIMEOUT);
            let mut n = 0u64;
            while !stopping.load(Ordering::SeqCst) {
                n += 1;
                let record = (format!("failover-{round}-{n}"), vector_for(round << 32 | n));
                let start = Instant::now();
                if client.upsert(&url, &[record]).is_ok_and(|r| r.is_2xx()) {
                    acked.lock().expect("acks").push((start, Instant::now()));
                } else {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        });
        Self { stop, acks, thread }
    }

    /// How long after `t` the first write that started at or after `t` was acknowledged
    /// (waits at most `limit`).
    fn first_ack_after(&self, t: Instant, limit: Duration) -> Option<Duration> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let acks = self.acks.lock().expect("acks");
            if let Some(end) = acks
                .iter()
                .filter(|(start, _)| *start >= t)
                .map(|(_, end)| *end)
                .min()
            {
                return Some(end - t);
            }
            drop(acks);
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }

    /// Stops the client; the number of writes acknowledged.
    fn stop(self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("the writer panicked");
        self.acks.lock().expect("acks").len()
    }
}

/// Requests answered 2xx per second: `threads` clients for `seconds`, each sending to the
/// `urls` in turn; single-record upserts with ids tagged `upsert_tag`, or (`None`) queries.
fn throughput(urls: &[String], threads: u64, seconds: u64, upsert_tag: Option<&str>) -> f64 {
    let done = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let done = &done;
            scope.spawn(move || {
                let client = Client::new(CLIENT_TIMEOUT);
                let mut i = 0u64;
                while Instant::now() < deadline {
                    let url = &urls[((t + i) % urls.len() as u64) as usize];
                    let vector = vector_for(t << 40 | i);
                    let reply = match upsert_tag {
                        Some(tag) => client.upsert(url, &[(format!("{tag}-{t}-{i}"), vector)]),
                        None => client.query(url, &vector, 10),
                    };
                    if reply.is_ok_and(|r| r.is_2xx()) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            });
        }
    });
    done.load(Ordering::Relaxed) as f64 / seconds as f64
}
