//! Shared by the server's integration tests: the real binary started on a data directory
//! (killed on drop), a blocking HTTP client, a delivery receiver that records every call, and
//! a seeded RNG. Every wait is bounded.

#![allow(dead_code)] // each test file uses part of it

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "test-token";

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "flowvec-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        Self(path)
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running server; SIGKILLed on drop.
pub struct Server {
    child: Child,
    pub url: String,
    pub output: Arc<Mutex<String>>,
}

/// How a start ended when the server did not come up.
#[derive(Debug)]
pub struct StartFailure {
    pub code: Option<i32>,
    pub output: String,
}

impl Server {
    /// Starts the server on `data_dir` with `--port 0 --token TOKEN` and `args`; panics if it
    /// does not listen within 60 s.
    pub fn start(data_dir: &Path, args: &[&str]) -> Self {
        Self::start_with_env(data_dir, args, &[])
            .unwrap_or_else(|f| panic!("server did not start (exit {:?}):\n{}", f.code, f.output))
    }

    /// As [`start`], with environment variables; a server that exits first is an `Err` with
    /// its exit code and output.
    pub fn start_with_env(
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self, StartFailure> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_flowvec-server"));
        cmd.args(["--port", "0", "--token", TOKEN, "--data-dir"])
            .arg(data_dir)
            .args(args)
            .env_remove("FLOWVEC_FAILPOINTS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn flowvec-server");
        let output = Arc::new(Mutex::new(String::new()));
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let output = Arc::clone(&output);
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mut out = output.lock().expect("output lock");
                    out.push_str(&line);
                    out.push('\n');
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = output.lock().expect("output lock").clone();
            if let Some(rest) = text.split("listening on http://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                return Ok(Self {
                    child,
                    url: format!("http://127.0.0.1:{port}"),
                    output,
                });
            }
            if let Ok(Some(status)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(100)); // let the readers finish
                return Err(StartFailure {
                    code: status.code(),
                    output: output.lock().expect("output lock").clone(),
                });
            }
            assert!(
                Instant::now() < deadline,
                "no listening line within 60 s:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM (a clean stop: final snapshot), waiting at most 60 s; returns the output.
    pub fn terminate(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(Instant::now() < deadline, "server did not stop within 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(50));
        self.output.lock().expect("output lock").clone()
    }

    pub fn output(&self) -> String {
        self.output.lock().expect("output lock").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking client with a short timeout.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

/// POST `body` to `url + path` with the bearer token: (status, JSON body), or `Err` when the
/// request did not complete (connection refused or reset: unknown outcome).
pub fn post(
    client: &reqwest::blocking::Client,
    url: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, serde_json::Value), String> {
    let mut req = client
        .post(format!("{url}{path}"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .body(body.to_owned());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().map_err(|e| e.to_string())?;
    let status = res.status().as_u16();
    let text = res.text().map_err(|e| e.to_string())?;
    let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    Ok((status, json))
}

/// Every file of `dir` with its bytes (LOCK left out: its presence is the lock itself).
pub fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("read_dir")
        .flatten()
        .filter(|e| e.file_name() != "LOCK")
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read"),
            )
        })
        .collect();
    out.sort();
    out
}

/// Every delivery a [`Receiver`] got: (`Upstash-Message-Id`, body).
pub type Calls = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A delivery receiver on 127.0.0.1: answers 200 to every request and records each one's
/// `Upstash-Message-Id` and body.
pub struct Receiver {
    pub port: u16,
    pub calls: Calls,
}

impl Receiver {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind receiver");
        let port = listener.local_addr().expect("addr").port();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&calls);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let calls = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &calls));
            }
        });
        Self { port, calls }
    }

    /// Deliveries per message id.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for (id, _) in self.calls.lock().expect("calls lock").iter() {
            *counts.entry(id.clone()).or_insert(0) += 1;
        }
        counts
    }
}

/// HTTP/1.1 with keep-alive: requests with Content-Length bodies, each answered 200.
fn serve(stream: TcpStream, calls: &Mutex<Vec<(String, Vec<u8>)>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let (mut length, mut id) = (0usize, String::new());
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("upstash-message-id") {
                    id = value.to_owned();
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        calls.lock().expect("calls lock").push((id, body));
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

/// xorshift64*: a fixed-seed generator, so a failing run can be repeated.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
}
