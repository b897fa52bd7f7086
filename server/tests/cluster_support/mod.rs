//! Shared by `tests/cluster.rs` and `examples/failover_bench.rs`: a replicated `flowvec-server`
//! cluster of real processes on 127.0.0.1, with every directed Raft link optionally routed
//! through an in-process TCP proxy the caller can cut and heal, a blocking client for the HTTP
//! API (which tells an answer from an unknown outcome) and for the cluster endpoints, and
//! bounded waits for a leader and for convergence.
//!
//! It does not use `harness/mod.rs` (whose binary path is `env!("CARGO_BIN_EXE_…")`, which an
//! example does not have): the caller passes the binary. Each node keeps its flags, ports and
//! data directory across restarts; its stdout and stderr are appended to `node-N.out` and
//! `node-N.err` beside its data directory. A node is SIGKILLed when dropped; the cluster's
//! directory is removed on drop, or kept (and its path printed) when a panic is unwinding.

#![allow(dead_code)] // the test and the example each use part of it

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The bearer token every node is started with.
pub const TOKEN: &str = "cluster-token";
/// The dense dimension every node is started with.
pub const DIMENSION: usize = 4;
/// What a node prints once its HTTP port serves.
const BANNER: &str = "flowvec-server listening on http://127.0.0.1:";
/// Longest wait for a node to print its banner.
pub const START_LIMIT: Duration = Duration::from_secs(30);
/// The flag of a node that waits to be added by a membership change instead of initializing
/// the cluster (assumed to be a bare switch; kept last on the command line).
pub const JOIN: &[&str] = &["--join"];

/// `n` distinct free ports on 127.0.0.1, below the kernel's ephemeral range when it leaves room
/// (so an outgoing connection cannot take a port while its node is down for a restart).
pub fn free_ports(n: usize) -> Vec<u16> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768)
        .min(65_000);
    let lo = 10_000u32;
    if ephemeral_low < lo + 2_000 {
        // No room below the range: let the kernel choose (all at once, so they differ).
        let listeners: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
            .collect();
        return listeners
            .iter()
            .map(|l| l.local_addr().expect("local address").port())
            .collect();
    }
    let span = ephemeral_low - lo;
    let start = std::process::id().wrapping_mul(7_919) % span;
    let mut ports = Vec::with_capacity(n);
    for _ in 0..span {
        let port = (lo + (start + NEXT.fetch_add(1, Ordering::SeqCst)) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports.push(port);
            if ports.len() == n {
                return ports;
            }
        }
    }
    panic!("fewer than {n} free ports in {lo}..{ephemeral_low}");
}

/// A fresh directory under the system temp dir, removed on drop unless a panic is unwinding
/// (then it is kept with the nodes' logs, and its path printed).
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "flowvec-cluster-{tag}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a scratch dir");
        Self { path }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "kept {} (node-N.out / node-N.err are the nodes' output)",
                self.path.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Proxies

/// A TCP forwarder for one directed link: accepts on its own port and forwards to `target`.
/// While cut, its connections are closed and new ones are closed as soon as they are accepted.
pub struct Proxy {
    pub port: u16,
    shared: Arc<ProxyShared>,
}

struct ProxyShared {
    target: SocketAddr,
    cut: AtomicBool,
    stop: AtomicBool,
    next: AtomicU64,
    /// Both sockets of every open connection, by connection number.
    open: Mutex<BTreeMap<u64, [TcpStream; 2]>>,
}

impl Proxy {
    pub fn start(target_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(ProxyShared {
            target: SocketAddr::from(([127, 0, 0, 1], target_port)),
            cut: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            next: AtomicU64::new(0),
            open: Mutex::new(BTreeMap::new()),
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                if accepting.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(inbound) = inbound else { continue };
                if accepting.cut.load(Ordering::SeqCst) {
                    let _ = inbound.shutdown(Shutdown::Both);
                    continue;
                }
                let shared = Arc::clone(&accepting);
                std::thread::spawn(move || forward(&shared, inbound));
            }
        });
        Self { port, shared }
    }

    /// Closes every connection and refuses new ones until [`heal`](Self::heal).
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
        let open = std::mem::take(&mut *self.shared.open.lock().expect("proxy lock"));
        for [a, b] in open.into_values() {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    pub fn is_cut(&self) -> bool {
        self.shared.cut.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes the accept loop
    }
}

/// One connection: connect to the target, then copy both ways until either side ends (or a cut
/// shuts both sockets down).
fn forward(shared: &ProxyShared, inbound: TcpStream) {
    let Ok(outbound) = TcpStream::connect_timeout(&shared.target, Duration::from_secs(1)) else {
        let _ = inbound.shutdown(Shutdown::Both);
        return;
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (Ok(a), Ok(b)) = (inbound.try_clone(), outbound.try_clone()) else {
        return;
    };
    let number = shared.next.fetch_add(1, Ordering::SeqCst);
    shared
        .open
        .lock()
        .expect("proxy lock")
        .insert(number, [a, b]);
    // A cut that drained the table before this connection was registered: close it here.
    if shared.cut.load(Ordering::SeqCst) {
        let _ = inbound.shutdown(Shutdown::Both);
        let _ = outbound.shutdown(Shutdown::Both);
    }
    let (Ok(mut up_from), Ok(mut up_to)) = (inbound.try_clone(), outbound.try_clone()) else {
        return;
    };
    let upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_from, &mut up_to);
        let _ = up_from.shutdown(Shutdown::Both);
        let _ = up_to.shutdown(Shutdown::Both);
    });
    let (mut down_from, mut down_to) = (outbound, inbound);
    let _ = std::io::copy(&mut down_from, &mut down_to);
    let _ = down_from.shutdown(Shutdown::Both);
    let _ = down_to.shutdown(Shutdown::Both);
    let _ = upstream.join();
    shared.open.lock().expect("proxy lock").remove(&number);
}

// ---------------------------------------------------------------------------------------------
// HTTP client

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub text: String,
    /// The body as JSON (`Null` when it is not JSON).
    pub json: Value,
}

impl Reply {
    pub fn is_2xx(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Status and the start of the body, for messages.
    pub fn brief(&self) -> String {
        let text: String = self.text.chars().take(200).collect();
        format!("{} {text}", self.status)
    }
}

/// A blocking client. A request that gets no HTTP answer (refused, reset, timeout) is an `Err`:
/// its outcome is unknown.
pub struct Client {
    http: reqwest::blocking::Client,
}

impl Client {
    pub fn new(timeout: Duration) -> Self {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(2))
            .build()
            .expect("an HTTP client");
        Self { http }
    }

    fn send(request: reqwest::blocking::RequestBuilder) -> Result<Reply, String> {
        let response = request.send().map_err(|err| format!("{err}"))?;
        let status = response.status().as_u16();
        let text = response.text().map_err(|err| format!("{err}"))?;
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply { status, text, json })
    }

    /// POSTs JSON to the API at `url` with the bearer token and `headers`.
    pub fn post(
        &self,
        url: &str,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        let mut request = self
            .http
            .post(format!("{url}{path}"))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Self::send(request)
    }

    pub fn post_json(&self, url: &str, path: &str, body: &Value) -> Result<Reply, String> {
        let headers = [("Content-Type", "application/json")];
        self.post(url, path, body.to_string().into_bytes(), &headers)
    }

    /// `GET` on a cluster endpoint (no auth).
    pub fn cluster_get(&self, raft_url: &str, path: &str) -> Result<Reply, String> {
        Self::send(self.http.get(format!("{raft_url}{path}")))
    }

    /// `POST` of JSON to a cluster endpoint (no auth).
    pub fn cluster_post(&self, raft_url: &str, path: &str, body: &Value) -> Result<Reply, String> {
        Self::send(
            self.http
                .post(format!("{raft_url}{path}"))
                .header("Content-Type", "application/json")
                .body(body.to_string()),
        )
    }

    /// `POST /upsert` of `(id, vector)` records.
    pub fn upsert(&self, url: &str, records: &[(String, Vec<f32>)]) -> Result<Reply, String> {
        let body: Vec<Value> = records
            .iter()
            .map(|(id, vector)| json!({ "id": id, "vector": vector }))
            .collect();
        self.post_json(url, "/upsert", &Value::Array(body))
    }

    /// `POST /delete`.
    pub fn delete(&self, url: &str, ids: &[String]) -> Result<Reply, String> {
        self.post_json(url, "/delete", &json!({ "ids": ids }))
    }

    /// `POST /v2/publish/<destination>` of `body`.
    pub fn publish(&self, url: &str, destination: &str, body: &[u8]) -> Result<Reply, String> {
        self.post(
            url,
            &format!("/v2/publish/{destination}"),
            body.to_vec(),
            &[],
        )
    }

    /// `POST /query` for the `top_k` nearest records of `vector`.
    pub fn query(&self, url: &str, vector: &[f32], top_k: usize) -> Result<Reply, String> {
        self.post_json(url, "/query", &json!({ "vector": vector, "topK": top_k }))
    }

    /// `POST /fetch` with vectors: for each id, its vector or `None`. `Err` unless every chunk
    /// answers 200 with one entry per id.
    pub fn fetch(&self, url: &str, ids: &[String]) -> Result<Vec<Option<Vec<f32>>>, String> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let body = json!({ "ids": chunk, "includeVectors": true });
            let reply = self.post_json(url, "/fetch", &body)?;
            if reply.status != 200 {
                return Err(format!("fetch answered {}", reply.brief()));
            }
            let records = reply.json["result"]
                .as_array()
                .ok_or_else(|| format!("fetch: not a list: {}", reply.brief()))?;
            if records.len() != chunk.len() {
                return Err(format!("fetch of {} ids: {}", chunk.len(), reply.brief()));
            }
            for (id, record) in chunk.iter().zip(records) {
                if record.is_null() {
                    out.push(None);
                } else if record["id"].as_str() != Some(id.as_str()) {
                    return Err(format!("fetch of {id} answered {record}"));
                } else {
                    out.push(Some(vector_of(record)?));
                }
            }
        }
        Ok(out)
    }

    /// Every record of the default namespace with its vector, by `/range` pages (at most 10,000
    /// pages).
    pub fn dump(&self, url: &str) -> Result<BTreeMap<String, Vec<f32>>, String> {
        let mut all = BTreeMap::new();
        let mut cursor = String::new();
        for _ in 0..10_000 {
            let body = json!({ "cursor": cursor, "limit": 1000, "includeVectors": true });
            let reply = self.post_json(url, "/range", &body)?;
            if reply.status != 200 {
                return Err(format!("range answered {}", reply.brief()));
            }
            let page = &reply.json["result"];
            let records = page["vectors"]
                .as_array()
                .ok_or_else(|| format!("range: no vectors: {}", reply.brief()))?;
            for record in records {
                let id = record["id"]
                    .as_str()
                    .ok_or_else(|| format!("range: a record without an id: {record}"))?;
                if all.insert(id.to_owned(), vector_of(record)?).is_some() {
                    return Err(format!("range listed {id} twice"));
                }
            }
            cursor = page["nextCursor"].as_str().unwrap_or_default().to_owned();
            if cursor.is_empty() {
                return Ok(all);
            }
        }
        Err("range: more than 10,000 pages".to_owned())
    }

    /// `POST /info`: the index's `vectorCount`.
    pub fn count(&self, url: &str) -> Result<u64, String> {
        let reply = self.post(url, "/info", Vec::new(), &[])?;
        reply.json["result"]["vectorCount"]
            .as_u64()
            .filter(|_| reply.status == 200)
            .ok_or_else(|| format!("info answered {}", reply.brief()))
    }
}

/// The `vector` of a fetched record, as f32 (JSON numbers from f32 round-trip exactly).
fn vector_of(record: &Value) -> Result<Vec<f32>, String> {
    record["vector"]
        .as_array()
        .ok_or_else(|| format!("a record without a vector: {record}"))?
        .iter()
        .map(|x| {
            x.as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| format!("not a number in {record}"))
        })
        .collect()
}

/// SplitMix64 of `n`: the same vector for the same number, in any process.
pub fn vector_for(n: u64) -> Vec<f32> {
    let mut state = n.wrapping_mul(0x2545_F491_4F6C_DD1D);
    (0..DIMENSION)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let unit = (z >> 40) as f32 / (1u64 << 24) as f32;
            if z & 1 == 0 {
                0.001 + unit * 100.0
            } else {
                -0.001 - unit * 100.0
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Nodes

/// `GET /cluster/metrics` of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    pub id: u64,
    pub state: String,
    pub leader: Option<u64>,
    pub term: u64,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
}

impl Metrics {
    pub fn parse(json: &Value) -> Result<Self, String> {
        let ids = |name: &str| -> Result<Vec<u64>, String> {
            let mut ids: Vec<u64> = json[name]
                .as_array()
                .ok_or_else(|| format!("metrics without {name}: {json}"))?
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            ids.sort_unstable();
            Ok(ids)
        };
        Ok(Self {
            id: json["id"]
                .as_u64()
                .ok_or_else(|| format!("metrics without an id: {json}"))?,
            state: json["state"].as_str().unwrap_or_default().to_owned(),
            leader: json["leader"].as_u64(),
            term: json["term"].as_u64().unwrap_or(0),
            last_log_index: json["lastLogIndex"].as_u64(),
            last_applied: json["lastApplied"].as_u64(),
            voters: ids("voters")?,
            learners: ids("learners")?,
        })
    }
}

/// One server process: its flags, ports and data directory stay the same across restarts.
pub struct Node {
    pub id: u64,
    /// Started with [`JOIN`]: waits to be added.
    pub joins: bool,
    pub raft_port: u16,
    pub http_port: u16,
    pub data_dir: PathBuf,
    bin: PathBuf,
    args: Vec<String>,
    out: PathBuf,
    err: PathBuf,
    child: Option<Child>,
    /// Where this start's output begins in `out`.
    out_from: u64,
    /// How the process ended by itself, once it did.
    pub exited: Option<String>,
}

impl Node {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    pub fn raft_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.raft_port)
    }

    /// Starts the process without waiting for it to serve.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "node {} is already running", self.id);
        let append = |path: &Path| -> File {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap_or_else(|err| panic!("open {}: {err}", path.display()))
        };
        let out = append(&self.out);
        self.out_from = out.metadata().map_or(0, |m| m.len());
        let child = Command::new(&self.bin)
            .args(&self.args)
            .env_remove("FLOWVEC_FAILPOINTS")
            .env_remove("FLOWVEC_MODEL_DIR")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(append(&self.err))
            .spawn()
            .unwrap_or_else(|err| panic!("spawn {}: {err}", self.bin.display()));
        self.child = Some(child);
        self.exited = None;
    }

    /// Waits (at most [`START_LIMIT`]) for this start's banner; panics with the output when
    /// the process exits first or stays silent.
    pub fn wait_serving(&mut self) {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if read_from(&self.out, self.out_from).contains(BANNER) {
                return;
            }
            if !self.is_running() {
                panic!(
                    "node {} ended before serving ({}):\n{}",
                    self.id,
                    self.exited.as_deref().unwrap_or("not started"),
                    self.tail(40)
                );
            }
            if Instant::now() > deadline {
                self.kill();
                panic!(
                    "node {} printed no banner within {START_LIMIT:?}; killed it:\n{}",
                    self.id,
                    self.tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn start(&mut self) {
        self.spawn();
        self.wait_serving();
    }

    /// SIGKILL (`Child::kill` on Unix) and wait until the process is gone; nothing when it is
    /// not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process runs; a process that ended by itself is noted in `exited`.
    pub fn is_running(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                self.exited = Some(format!("{status}"));
                self.child = None;
                false
            }
            Err(err) => panic!("try_wait on node {}: {err}", self.id),
        }
    }

    /// Appends flags for the next starts (a later flag wins over an earlier one).
    pub fn add_args(&mut self, args: &[&str]) {
        self.args.extend(args.iter().map(|s| (*s).to_owned()));
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The last `lines` lines of stderr and of stdout (every start of this node).
    pub fn tail(&self, lines: usize) -> String {
        let last = |path: &Path| {
            let text = read_from(path, 0);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        };
        format!(
            "--- node {} stderr ({})\n{}\n--- node {} stdout\n{}",
            self.id,
            self.err.display(),
            last(&self.err),
            self.id,
            last(&self.out)
        )
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The text of `path` from byte `from` (empty when it cannot be read).
fn read_from(path: &Path, from: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = File::open(path)
        && file.seek(SeekFrom::Start(from)).is_ok()
    {
        let _ = file.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

// ---------------------------------------------------------------------------------------------
// The cluster

/// Nodes `1..=voters` (the initial members) and `spares` more (started later with `--join`),
/// with ports chosen now. When `proxied`, node `i` reaches node `j` through the proxy of the
/// link `(i, j)`; otherwise at `j`'s Raft port. Only a spare's own `--peers` lists the spares:
/// the initial members reach a spare at the address its add-learner recorded (its Raft port).
pub struct Cluster {
    pub nodes: Vec<Node>,
    proxies: BTreeMap<(u64, u64), Proxy>,
    /// Metrics polls: a short timeout.
    probe: Client,
    /// Membership changes: a long one.
    admin: Client,
    /// Last: removed after the nodes are killed.
    pub dir: Scratch,
}

impl Cluster {
    /// Every node gets `--node-id`, `--raft-port`, `--port`, `--token`, `--data-dir`,
    /// `--dimension`, then `extra`; `--peers` unless it is a one-node cluster; spares get
    /// [`JOIN`] last. Nothing is started.
    pub fn new(
        bin: &Path,
        tag: &str,
        voters: u64,
        spares: u64,
        proxied: bool,
        extra: &[&str],
    ) -> Self {
        assert!(
            bin.is_file(),
            "no server binary at {} (build it first)",
            bin.display()
        );
        let dir = Scratch::new(tag);
        let total = voters + spares;
        let ports = free_ports(2 * total as usize);
        let raft_port = |id: u64| ports[2 * (id as usize - 1)];
        let mut proxies = BTreeMap::new();
        if proxied {
            for from in 1..=total {
                for to in (1..=total).filter(|&to| to != from) {
                    proxies.insert((from, to), Proxy::start(raft_port(to)));
                }
            }
        }
        let nodes = (1..=total)
            .map(|id| {
                let known = if id <= voters { voters } else { total };
                let peers: Vec<String> = (1..=known)
                    .map(|to| match proxies.get(&(id, to)) {
                        Some(proxy) => format!("{to}=127.0.0.1:{}", proxy.port),
                        None => format!("{to}=127.0.0.1:{}", raft_port(to)),
                    })
                    .collect();
                let data_dir = dir.path.join(format!("node-{id}"));
                let http_port = ports[2 * (id as usize - 1) + 1];
                let mut args: Vec<String> = vec![
                    "--node-id".into(),
                    id.to_string(),
                    "--raft-port".into(),
                    raft_port(id).to_string(),
                    "--port".into(),
                    http_port.to_string(),
                    "--token".into(),
                    TOKEN.into(),
                    "--data-dir".into(),
                    data_dir.to_string_lossy().into_owned(),
                    "--dimension".into(),
                    DIMENSION.to_string(),
                ];
                if total > 1 {
                    args.extend(["--peers".to_owned(), peers.join(",")]);
                }
                args.extend(extra.iter().map(|s| (*s).to_owned()));
                if id > voters {
                    args.extend(JOIN.iter().map(|s| (*s).to_owned()));
                }
                Node {
                    id,
                    joins: id > voters,
                    raft_port: raft_port(id),
                    http_port,
                    data_dir,
                    bin: bin.to_owned(),
                    args,
                    out: dir.path.join(format!("node-{id}.out")),
                    err: dir.path.join(format!("node-{id}.err")),
                    child: None,
                    out_from: 0,
                    exited: None,
                }
            })
            .collect();
        Self {
            nodes,
            proxies,
            probe: Client::new(Duration::from_secs(2)),
            admin: Client::new(Duration::from_secs(60)),
            dir,
        }
    }

    /// Starts every initial member (all processes first, then each waited for).
    pub fn start_voters(&mut self) {
        let voters: Vec<u64> = self
            .nodes
            .iter()
            .filter(|n| !n.joins)
            .map(|n| n.id)
            .collect();
        for &id in &voters {
            self.node_mut(id).spawn();
        }
        for &id in &voters {
            self.node_mut(id).wait_serving();
        }
    }

    pub fn node(&self, id: u64) -> &Node {
        &self.nodes[id as usize - 1]
    }

    pub fn node_mut(&mut self, id: u64) -> &mut Node {
        &mut self.nodes[id as usize - 1]
    }

    /// The ids of the nodes whose process runs.
    pub fn running(&mut self) -> Vec<u64> {
        self.nodes
            .iter_mut()
            .filter_map(|n| n.is_running().then_some(n.id))
            .collect()
    }

    pub fn metrics(&self, id: u64) -> Result<Metrics, String> {
        let reply = self
            .probe
            .cluster_get(&self.node(id).raft_url(), "/cluster/metrics")?;
        if reply.status != 200 {
            return Err(format!("metrics answered {}", reply.brief()));
        }
        let metrics = Metrics::parse(&reply.json)?;
        if metrics.id != id {
            return Err(format!("node {id}'s metrics name node {}", metrics.id));
        }
        Ok(metrics)
    }

    /// Panics (with its output) when a node of `among` ended by itself.
    fn assert_alive(&mut self, among: &[u64]) {
        for &id in among {
            let node = self.node_mut(id);
            if !node.is_running()
                && let Some(how) = node.exited.clone()
            {
                panic!("node {id} ended by itself ({how}):\n{}", node.tail(40));
            }
        }
    }

    /// Waits (at most `limit`) until every node of `among` answers its metrics and they agree
    /// on one leader of `among` that says it is the leader, in one term; returns (leader,
    /// term), or the last metrics seen.
    pub fn wait_leader(&mut self, among: &[u64], limit: Duration) -> Result<(u64, u64), String> {
        self.wait_until(among, limit, |all| {
            let first = &all[0];
            let leader = first.leader?;
            let agreed = all
                .iter()
                .all(|m| m.leader == Some(leader) && m.term == first.term);
            let leads = all.iter().any(|m| m.id == leader && m.state == "Leader");
            (agreed && leads).then_some((leader, first.term))
        })
    }

    /// As [`wait_leader`](Self::wait_leader), and every node of `among` has applied its whole
    /// log, the same index on all, and has the same voters (the cluster is quiet): returns
    /// (leader, last applied).
    pub fn wait_converged(&mut self, among: &[u64], limit: Duration) -> Result<(u64, u64), String> {
        self.wait_until(among, limit, |all| {
            let first = &all[0];
            let leader = first.leader?;
            let applied = first.last_applied?;
            let same = all.iter().all(|m| {
                m.leader == Some(leader)
                    && m.term == first.term
                    && m.last_applied == Some(applied)
                    && m.last_log_index == Some(applied)
                    && m.voters == first.voters
            });
            let leads = all.iter().any(|m| m.id == leader && m.state == "Leader");
            (same && leads).then_some((leader, applied))
        })
    }

    /// Polls the metrics of `among` every 50 ms until `done` says yes (bounded by `limit`).
    pub fn wait_until<T>(
        &mut self,
        among: &[u64],
        limit: Duration,
        mut done: impl FnMut(&[Metrics]) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + limit;
        loop {
            self.assert_alive(among);
            let polled: Result<Vec<Metrics>, String> = among
                .iter()
                .map(|&id| self.metrics(id).map_err(|err| format!("node {id}: {err}")))
                .collect();
            let last = match polled {
                Ok(all) => match done(&all) {
                    Some(found) => return Ok(found),
                    None => format!("{all:?}"),
                },
                Err(err) => err,
            };
            if Instant::now() > deadline {
                return Err(format!("not within {limit:?}; last seen: {last}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every node's recent output and metrics, for failure messages.
    pub fn describe(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let metrics = self
                    .metrics(n.id)
                    .map_or_else(|err| format!("no metrics: {err}"), |m| format!("{m:?}"));
                format!("node {}: {metrics}\n{}", n.id, n.tail(15))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn proxy(&self, from: u64, to: u64) -> &Proxy {
        self.proxies
            .get(&(from, to))
            .unwrap_or_else(|| panic!("no proxy for the link {from} -> {to}"))
    }

    /// Cuts every link to and from `id`.
    pub fn isolate(&self, id: u64) {
        for (&(from, to), proxy) in &self.proxies {
            if from == id || to == id {
                proxy.cut();
            }
        }
    }

    pub fn heal_all(&self) {
        for proxy in self.proxies.values() {
            proxy.heal();
        }
    }

    /// `POST /cluster/add-learner` to `leader` for node `id` at its own Raft address.
    pub fn add_learner(&self, leader: u64, id: u64) -> Result<Reply, String> {
        let body = json!({ "id": id, "addr": format!("127.0.0.1:{}", self.node(id).raft_port) });
        self.admin
            .cluster_post(&self.node(leader).raft_url(), "/cluster/add-learner", &body)
    }

    /// `POST /cluster/change-membership` to `leader`.
    pub fn change_membership(&self, leader: u64, voters: &[u64]) -> Result<Reply, String> {
        self.admin.cluster_post(
            &self.node(leader).raft_url(),
            "/cluster/change-membership",
            &json!({ "voters": voters }),
        )
    }
}
