//! Shared by `crash.rs` and `startup.rs`: the real `flowvec-server` binary on a data directory
//! (SIGKILLed when its guard drops, so a failing test leaves no process behind), a blocking
//! HTTP client that tells an answer from an unknown outcome, a delivery receiver that records
//! every call, directory snapshots, and a seeded RNG. Every wait here is bounded.

#![allow(dead_code)] // each test file uses part of it

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The bearer token every test server is started with.
pub const TOKEN: &str = "harness-token";
/// What the server prints once it serves.
const BANNER: &str = "flowvec-server listening on http://127.0.0.1:";
/// Longest wait for a server to print its banner or to exit.
const START_LIMIT: Duration = Duration::from_secs(30);
/// Longest wait for a server to stop after SIGTERM.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// A fresh directory under the system temp dir, removed (with everything in it) on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "flowvec-test-{tag}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temp dir");
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Lines a child printed on one stream, gathered by a reader thread.
struct Stream {
    text: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Stream {
    fn read(source: impl Read + Send + 'static) -> Self {
        let text = Arc::new(Mutex::new(String::new()));
        let shared = Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(source).lines().map_while(Result::ok) {
                let mut text = shared.lock().expect("output lock");
                text.push_str(&line);
                text.push('\n');
            }
        });
        Self {
            text,
            reader: Some(reader),
        }
    }

    fn text(&self) -> String {
        self.text.lock().expect("output lock").clone()
    }

    /// The whole output, once the process is gone (the pipe closes, the reader ends).
    fn finish(&mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.text()
    }
}

/// How a server process ended.
#[derive(Debug)]
pub struct Exit {
    /// `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Exit {
    /// Both streams, for failure messages.
    pub fn output(&self) -> String {
        format!(
            "exit code {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// A running server. Dropping it SIGKILLs the process.
pub struct Server {
    child: Child,
    stdout: Stream,
    stderr: Stream,
    pub port: u16,
    pub url: String,
}

/// The server's command line: `--port 0 --token TOKEN --data-dir DIR` and `args`.
fn command(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flowvec-server"));
    cmd.args(["--port", "0", "--token", TOKEN, "--data-dir"])
        .arg(data_dir)
        .args(args)
        .env_remove("FLOWVEC_FAILPOINTS")
        .env_remove("FLOWVEC_MODEL_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd
}

impl Server {
    /// Starts a server and waits (bounded) for its banner. `Err` when the process exits
    /// first, with its code and output.
    pub fn try_start(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Self, Exit> {
        let mut child = command(data_dir, args, env)
            .spawn()
            .expect("spawn flowvec-server");
        let stdout = Stream::read(child.stdout.take().expect("piped stdout"));
        let stderr = Stream::read(child.stderr.take().expect("piped stderr"));
        let mut server = Self {
            child,
            stdout,
            stderr,
            port: 0,
            url: String::new(),
        };
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let text = server.stdout.text();
            if let Some(port) = banner_port(&text) {
                server.port = port;
                server.url = format!("http://127.0.0.1:{port}");
                return Ok(server);
            }
            if let Ok(Some(_)) = server.child.try_wait() {
                return Err(server.wait_exit());
            }
            if Instant::now() > deadline {
                let _ = server.child.kill();
                let exit = server.wait_exit();
                panic!(
                    "no banner within {START_LIMIT:?}; killed it:\n{}",
                    exit.output()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// As [`try_start`](Self::try_start), panicking with the output when it does not start.
    pub fn start(data_dir: &Path, args: &[&str]) -> Self {
        Self::try_start(data_dir, args, &[])
            .unwrap_or_else(|exit| panic!("the server did not start:\n{}", exit.output()))
    }

    /// Starts a server that must refuse: waits for it to exit (bounded) and returns how.
    pub fn refused(data_dir: &Path, args: &[&str]) -> Exit {
        match Self::try_start(data_dir, args, &[]) {
            Ok(server) => {
                let exit = server.kill();
                panic!(
                    "the server started, but it should have refused:\n{}",
                    exit.output()
                )
            }
            Err(exit) => exit,
        }
    }

    /// Starts a server and SIGKILLs it after `delay`, whether it serves by then or is still
    /// recovering; returns how it ended (`code: None` when the signal ended it).
    pub fn start_and_kill_after(data_dir: &Path, args: &[&str], delay: Duration) -> Exit {
        let mut child = command(data_dir, args, &[])
            .spawn()
            .expect("spawn flowvec-server");
        let stdout = Stream::read(child.stdout.take().expect("piped stdout"));
        let stderr = Stream::read(child.stderr.take().expect("piped stderr"));
        let server = Self {
            child,
            stdout,
            stderr,
            port: 0,
            url: String::new(),
        };
        std::thread::sleep(delay);
        server.kill()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and returns at once (see [`terminate`](Self::terminate) to wait).
    pub fn send_sigterm(&self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill -TERM");
        assert!(sent.success(), "kill -TERM {pid} failed");
    }

    /// Output so far.
    pub fn stdout(&self) -> String {
        self.stdout.text()
    }

    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    fn wait_exit(&mut self) -> Exit {
        let status = self.child.wait().expect("wait for flowvec-server");
        Exit {
            code: status.code(),
            stdout: self.stdout.finish(),
            stderr: self.stderr.finish(),
        }
    }

    /// SIGKILL (`Child::kill` on Unix), and wait until the process is gone.
    pub fn kill(mut self) -> Exit {
        let _ = self.child.kill();
        self.wait_exit()
    }

    /// SIGTERM (a clean stop), waiting at most [`STOP_LIMIT`]; panics (after a SIGKILL) when
    /// the server does not stop in time.
    pub fn terminate(mut self) -> Exit {
        self.send_sigterm();
        let deadline = Instant::now() + STOP_LIMIT;
        while self.child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let exit = self.wait_exit();
                panic!(
                    "no exit within {STOP_LIMIT:?} of SIGTERM; killed it:\n{}",
                    exit.output()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.wait_exit()
    }

    /// A client for this server.
    pub fn api(&self) -> Api {
        Api::new(&self.url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The port of the banner line, once the line is complete.
fn banner_port(stdout: &str) -> Option<u16> {
    let rest = &stdout[stdout.find(BANNER)? + BANNER.len()..];
    let line = &rest[..rest.find('\n')?];
    line.trim().parse().ok()
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub text: String,
    /// The body as JSON (`Null` when it is not JSON).
    pub json: serde_json::Value,
}

/// A blocking client for one server. A request that gets no HTTP answer (connection refused
/// or reset, timeout) is an `Err`: its outcome is unknown.
pub struct Api {
    client: reqwest::blocking::Client,
    pub url: String,
}

impl Api {
    pub fn new(url: &str) -> Self {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client");
        Self {
            client,
            url: url.to_owned(),
        }
    }

    /// POSTs `body` to `path` with the bearer token and `headers`.
    pub fn post(
        &self,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        let mut request = self
            .client
            .post(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().map_err(|err| format!("{err:?}"))?;
        let status = response.status().as_u16();
        let text = response.text().map_err(|err| format!("{err:?}"))?;
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        Ok(Reply { status, text, json })
    }

    fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<Reply, String> {
        self.post(
            path,
            body.to_string().into_bytes(),
            &[("Content-Type", "application/json")],
        )
    }

    /// `POST /upsert` of `(id, vector)` records.
    pub fn upsert(&self, records: &[(String, Vec<f32>)]) -> Result<Reply, String> {
        let body: Vec<serde_json::Value> = records
            .iter()
            .map(|(id, vector)| serde_json::json!({ "id": id, "vector": vector }))
            .collect();
        self.post_json("/upsert", &serde_json::Value::Array(body))
    }

    /// `POST /delete`.
    pub fn delete(&self, ids: &[String]) -> Result<Reply, String> {
        self.post_json("/delete", &serde_json::json!({ "ids": ids }))
    }

    /// `POST /publish/<destination>` with a flow-control key and value.
    pub fn publish(
        &self,
        destination: &str,
        body: &[u8],
        key: &str,
        value: &str,
    ) -> Result<Reply, String> {
        self.post(
            &format!("/v2/publish/{destination}"),
            body.to_vec(),
            &[
                ("Upstash-Flow-Control-Key", key),
                ("Upstash-Flow-Control-Value", value),
            ],
        )
    }

    /// `POST /info`, which must answer 200: the index's `vectorCount`.
    pub fn vector_count(&self) -> u64 {
        let reply = self.post("/info", Vec::new(), &[]).expect("info answers");
        assert_eq!(reply.status, 200, "info: {}", reply.text);
        reply.json["result"]["vectorCount"]
            .as_u64()
            .unwrap_or_else(|| panic!("info has no vectorCount: {}", reply.text))
    }

    /// `POST /fetch` with vectors, which must answer 200: for each id, its vector or `None`.
    /// Chunked, so any number of ids can be asked.
    pub fn fetch_vectors(&self, ids: &[String]) -> Vec<Option<Vec<f32>>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let body = serde_json::json!({ "ids": chunk, "includeVectors": true });
            let reply = self.post_json("/fetch", &body).expect("fetch answers");
            assert_eq!(reply.status, 200, "fetch: {}", reply.text);
            let records = reply.json["result"]
                .as_array()
                .unwrap_or_else(|| panic!("fetch: not a list: {}", reply.text));
            assert_eq!(records.len(), chunk.len(), "fetch: {}", reply.text);
            for (id, record) in chunk.iter().zip(records) {
                if record.is_null() {
                    out.push(None);
                    continue;
                }
                assert_eq!(record["id"].as_str(), Some(id.as_str()), "fetch: {record}");
                let vector = record["vector"]
                    .as_array()
                    .unwrap_or_else(|| panic!("fetch: {id} has no vector: {record}"))
                    .iter()
                    .map(|x| x.as_f64().expect("a number") as f32)
                    .collect();
                out.push(Some(vector));
            }
        }
        out
    }
}

/// Bit-for-bit equality of vectors (the fetched one must be exactly the upserted one).
pub fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Checks that `body` is the error body `{"error": "...", "status": status}`.
pub fn assert_error_body(reply: &Reply, status: u16) {
    assert_eq!(reply.status, status, "{}", reply.text);
    let object = reply
        .json
        .as_object()
        .unwrap_or_else(|| panic!("error body is not a JSON object: {}", reply.text));
    assert_eq!(
        object.get("status").and_then(serde_json::Value::as_u64),
        Some(u64::from(status)),
        "{}",
        reply.text
    );
    assert!(
        object
            .get("error")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|e| !e.is_empty()),
        "error body without an error text: {}",
        reply.text
    );
}

/// One call a [`Receiver`] got.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `Upstash-Message-Id` (empty when the header was missing).
    pub id: String,
    pub path: String,
    pub body: Vec<u8>,
}

/// A delivery receiver on 127.0.0.1: an HTTP/1.1 server (keep-alive, `Content-Length` or
/// chunked bodies) that answers every request 200 and records it. It runs until dropped,
/// independent of the servers that call it.
pub struct Receiver {
    pub port: u16,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let port = listener.local_addr().expect("receiver address").port();
        let deliveries = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopping) = (Arc::clone(&deliveries), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let deliveries = Arc::clone(&shared);
                std::thread::spawn(move || serve_connection(stream, &deliveries));
            }
        });
        Self {
            port,
            deliveries,
            stop,
        }
    }

    /// A destination URL on this receiver.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    pub fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().expect("deliveries lock").clone()
    }

    /// Calls per message id.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for delivery in self.deliveries.lock().expect("deliveries lock").iter() {
            *counts.entry(delivery.id.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// Waits (at most `limit`) until every id of `ids` was delivered; the ids still missing.
    pub fn wait_for<'a>(
        &self,
        ids: impl Iterator<Item = &'a String> + Clone,
        limit: Duration,
    ) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            let counts = self.counts();
            let missing: Vec<String> = ids
                .clone()
                .filter(|id| !counts.contains_key(*id))
                .cloned()
                .collect();
            if missing.is_empty() || Instant::now() > deadline {
                return missing;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes the accept loop
    }
}

/// One connection: requests until the peer closes (or sends garbage), each recorded once its
/// whole body has arrived, then answered 200.
fn serve_connection(stream: TcpStream, deliveries: &Mutex<Vec<Delivery>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let (mut length, mut chunked, mut id) = (0usize, false, String::new());
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                return;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                let Ok(n) = value.parse() else { return };
                length = n;
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            } else if name.eq_ignore_ascii_case("upstash-message-id") {
                value.clone_into(&mut id);
            }
        }
        let body = if chunked {
            match read_chunked(&mut reader) {
                Some(body) => body,
                None => return,
            }
        } else {
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            body
        };
        deliveries
            .lock()
            .expect("deliveries lock")
            .push(Delivery { id, path, body });
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
    }
}

fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).ok()? == 0 {
            return None;
        }
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).ok()? == 0 || line.trim_end().is_empty() {
                    return Some(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).ok()?;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf).ok()?;
    }
}

/// Every file of `dir` (not recursive) with its bytes, by name; `skip` names are left out.
pub fn dir_files(dir: &Path, skip: &[&str]) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("list {}: {err}", dir.display()))
        .map(|entry| entry.expect("a directory entry"))
        .filter(|entry| !skip.iter().any(|s| entry.file_name() == *s))
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(entry.path())
                .unwrap_or_else(|err| panic!("read {}: {err}", entry.path().display()));
            (name, bytes)
        })
        .collect()
}

/// Asserts that `dir` holds exactly `before` (names and bytes), `skip` names aside.
pub fn assert_files_unchanged(dir: &Path, before: &BTreeMap<String, Vec<u8>>, skip: &[&str]) {
    let after = dir_files(dir, skip);
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&after),
        names(before),
        "the file list of {} changed",
        dir.display()
    );
    for (name, bytes) in before {
        assert!(
            after[name] == *bytes,
            "{} changed ({} bytes before, {} after)",
            dir.join(name).display(),
            bytes.len(),
            after[name].len()
        );
    }
}

/// Copies the files of `from` (not recursive) into a new directory `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for (name, bytes) in dir_files(from, &[]) {
        std::fs::write(to.join(name), bytes).expect("write the copy");
    }
}

/// Where `needle` occurs in `haystack`.
pub fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, window)| *window == needle)
        .map(|(at, _)| at)
        .collect()
}

/// SplitMix64: a fixed-seed generator, so a failing run can be repeated.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `lo..hi` (`hi > lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// A vector of `dimension` finite, non-zero floats with arbitrary low bits (so a lossy
    /// round trip through text or a normalisation would show).
    pub fn vector(&mut self, dimension: usize) -> Vec<f32> {
        (0..dimension)
            .map(|_| {
                let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
                let sign = if self.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
                sign * (0.001 + unit * 100.0)
            })
            .collect()
    }
}
