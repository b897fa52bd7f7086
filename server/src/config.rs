//! Command-line flags and environment variables of the server.

use std::fmt::Write as _;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use flowvec::vector::text::Bm25Params;
use flowvec::vector::{IndexConfig, IndexKind, Metric, ResumableLimits};
use flowvec::wire::RetryPolicy;

use crate::cluster::node::ReadConsistency;
use crate::cluster::types::{NodeId, Peers};

/// When the command log reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fsync {
    /// Before every answer (group commit: one fsync per batch of concurrent writes).
    Always,
    /// When the OS flushes its page cache: a process crash loses nothing (the data is in the
    /// kernel), a machine crash or power loss loses what was not flushed yet.
    Off,
}

/// The wait before a retry: `base` doubled per retry already made, capped at `max`, of which
/// a random half to all is waited (jitter spreads retries of messages that failed together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub(crate) base: Duration,
    pub(crate) max: Duration,
}

impl Backoff {
    /// The wait before retry number `retried + 1`, with `unit` a uniform draw in `[0, 1)`.
    pub(crate) fn delay(&self, retried: u32, unit: f64) -> Duration {
        let full = self
            .base
            .saturating_mul(1u32 << retried.min(30))
            .min(self.max);
        full.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
    }

    /// The wait before `message`'s next retry: its publisher's `Upstash-Retry-Delay`
    /// expression of `retried` when it has one (exactly, no jitter, at most a day), else
    /// [`Backoff::delay`].
    pub(crate) fn for_message(&self, message: &flowvec::wire::Message, unit: f64) -> Duration {
        // Checked at publication; one that no longer parses (it cannot) falls back.
        match message
            .retry_delay
            .as_deref()
            .map(flowvec::wire::RetryDelay::parse)
        {
            Some(Ok(expression)) => Duration::from_millis(expression.delay_ms(message.retried)),
            _ => self.delay(message.retried, unit),
        }
    }
}

/// Everything the server can be told; each flag also reads an environment variable.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) port: u16,
    pub(crate) vector_token: String,
    pub(crate) queue_token: String,
    pub(crate) kind: IndexKind,
    pub(crate) dimension: usize,
    pub(crate) metric: Metric,
    pub(crate) data_dir: PathBuf,
    pub(crate) fsync: Fsync,
    pub(crate) snapshot_every: u64,
    pub(crate) snapshot_interval: Duration,
    pub(crate) global_parallelism: Option<NonZeroU32>,
    pub(crate) admin_email: String,
    pub(crate) admin_api_key: Option<String>,
    pub(crate) retry_policy: RetryPolicy,
    pub(crate) backoff: Backoff,
    pub(crate) delivery_timeout: Duration,
    pub(crate) resumable: ResumableLimits,
    /// The dense text model's directory (`--model-dir`), if any.
    pub(crate) model_dir: Option<PathBuf>,
    /// This node's id in the Raft group.
    pub(crate) node_id: NodeId,
    /// Node id -> the address this node reaches it at (empty: a one-node group).
    pub(crate) peers: Peers,
    /// The cluster port this node listens on (Raft RPCs, forwarded writes, operators).
    pub(crate) raft_port: Option<u16>,
    /// Start without initializing the group: this node waits to be added.
    pub(crate) join: bool,
    pub(crate) read_consistency: ReadConsistency,
}

/// One flag: name, environment variable, default (as text, printed by `--help`), help.
struct Flag {
    name: &'static str,
    env: &'static str,
    default: &'static str,
    help: &'static str,
}

const FLAGS: &[Flag] = &[
    Flag {
        name: "port",
        env: "FLOWVEC_PORT",
        default: "8787",
        help: "TCP port on 127.0.0.1",
    },
    Flag {
        name: "token",
        env: "FLOWVEC_TOKEN",
        default: "flowvec-dev-token",
        help: "bearer token for the vector and queue APIs",
    },
    Flag {
        name: "vector-token",
        env: "FLOWVEC_VECTOR_TOKEN",
        default: "",
        help: "bearer token for the vector API only (default: --token)",
    },
    Flag {
        name: "queue-token",
        env: "FLOWVEC_QUEUE_TOKEN",
        default: "",
        help: "bearer token for the queue API only (default: --token)",
    },
    Flag {
        name: "kind",
        env: "FLOWVEC_INDEX_KIND",
        default: "DENSE",
        help: "index kind: DENSE, SPARSE or HYBRID",
    },
    Flag {
        name: "dimension",
        env: "FLOWVEC_DIMENSION",
        default: "256",
        help: "dense dimension (DENSE and HYBRID)",
    },
    Flag {
        name: "metric",
        env: "FLOWVEC_METRIC",
        default: "COSINE",
        help: "COSINE, EUCLIDEAN or DOT_PRODUCT",
    },
    Flag {
        name: "data-dir",
        env: "FLOWVEC_DATA_DIR",
        default: "./flowvec-data",
        help: "data directory: command log, snapshots, lock file (created if missing)",
    },
    Flag {
        name: "fsync",
        env: "FLOWVEC_FSYNC",
        default: "always",
        help: "always: every write is on disk before its answer; off: the OS flushes later (a machine crash loses the last ~30 s, a process crash nothing)",
    },
    Flag {
        name: "snapshot-every",
        env: "FLOWVEC_SNAPSHOT_EVERY",
        default: "10000",
        help: "write a snapshot (and drop the log before it) after this many log entries",
    },
    Flag {
        name: "snapshot-interval-secs",
        env: "FLOWVEC_SNAPSHOT_INTERVAL_SECS",
        default: "600",
        help: "also write one when this much time has passed since the last and the log grew",
    },
    Flag {
        name: "global-parallelism",
        env: "FLOWVEC_GLOBAL_PARALLELISM",
        default: "",
        help: "cap on all active deliveries (default: none)",
    },
    Flag {
        name: "admin-email",
        env: "FLOWVEC_ADMIN_EMAIL",
        default: "admin@example.com",
        help: "management account seeded at start (owns database `demo-db`)",
    },
    Flag {
        name: "admin-api-key",
        env: "FLOWVEC_ADMIN_API_KEY",
        default: "",
        help: "its API key (default: generated and printed)",
    },
    Flag {
        name: "default-retries",
        env: "FLOWVEC_DEFAULT_RETRIES",
        default: "3",
        help: "retries of a failed delivery (non-2xx, timeout, no connection) when publish sends no Upstash-Retries",
    },
    Flag {
        name: "max-retries",
        env: "FLOWVEC_MAX_RETRIES",
        default: "20",
        help: "the largest Upstash-Retries accepted",
    },
    Flag {
        name: "retry-backoff-ms",
        env: "FLOWVEC_RETRY_BACKOFF_MS",
        default: "1000",
        help: "backoff before the first retry; doubles with each retry, with jitter (half to all of it)",
    },
    Flag {
        name: "retry-backoff-max-secs",
        env: "FLOWVEC_RETRY_BACKOFF_MAX_SECS",
        default: "86400",
        help: "the longest backoff",
    },
    Flag {
        name: "delivery-timeout-secs",
        env: "FLOWVEC_DELIVERY_TIMEOUT_SECS",
        default: "30",
        help: "timeout of one delivery call",
    },
    Flag {
        name: "resumable-max-open",
        env: "FLOWVEC_RESUMABLE_MAX_OPEN",
        default: "100",
        help: "resumable queries open at once; one more answers 429 (each holds 8 bytes per ranked record)",
    },
    Flag {
        name: "resumable-max-idle-secs",
        env: "FLOWVEC_RESUMABLE_MAX_IDLE_SECS",
        default: "86400",
        help: "the largest maxIdle a resumable query may ask for",
    },
    Flag {
        name: "model-dir",
        env: "FLOWVEC_MODEL_DIR",
        default: "",
        help: "directory of all-MiniLM-L6-v2's files (scripts/fetch-minilm prints one): embeds text `data` for a DENSE or HYBRID index of dimension 384 (default: no dense model; text to a DENSE index answers 400)",
    },
    Flag {
        name: "node-id",
        env: "FLOWVEC_NODE_ID",
        default: "1",
        help: "this node's id in the Raft group (an integer >= 1)",
    },
    Flag {
        name: "peers",
        env: "FLOWVEC_PEERS",
        default: "",
        help: "the group's nodes as id=host:port of their --raft-port, comma-separated, this node included (default: none, a one-node group)",
    },
    Flag {
        name: "raft-port",
        env: "FLOWVEC_RAFT_PORT",
        default: "",
        help: "the cluster port on 127.0.0.1: Raft between nodes, forwarded writes, /cluster/metrics and membership changes; no tokens, keep it private (needed with --peers)",
    },
    Flag {
        name: "join",
        env: "FLOWVEC_JOIN",
        default: "false",
        help: "start without forming a group: wait to be added by POST /cluster/add-learner on the leader (a bare --join means true)",
    },
    Flag {
        name: "read-consistency",
        env: "FLOWVEC_READ_CONSISTENCY",
        default: "linearizable",
        help: "linearizable: a read on any node sees every write acknowledged before it (the leader's read index); local: a node answers from what it has applied",
    },
];

/// Parses `--peers`: `1=127.0.0.1:9101,2=127.0.0.1:9102`.
fn parse_peers(text: &str) -> Result<Peers, String> {
    let mut peers = Peers::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| format!("--peers {part:?}: expected id=host:port"))?;
        let id: NodeId = id
            .trim()
            .parse()
            .ok()
            .filter(|id| *id >= 1)
            .ok_or_else(|| {
                format!("--peers {part:?}: the node id {id:?} is not an integer >= 1")
            })?;
        let addr = addr.trim();
        if addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(format!(
                "--peers {part:?}: {addr:?} is not host:port (an IP address and a port)"
            ));
        }
        if peers.insert(id, addr.to_owned()).is_some() {
            return Err(format!("--peers: node {id} is listed twice"));
        }
    }
    Ok(peers)
}

impl Config {
    /// Parses `--name value` / `--name=value` flags, falling back to the environment and then
    /// to the defaults. `Ok(None)` after printing `--help`.
    pub(crate) fn from_args(args: impl Iterator<Item = String>) -> Result<Option<Self>, String> {
        let mut given: Vec<(&'static str, String)> = Vec::new();
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            if arg == "--help" || arg == "-h" {
                println!("{}", usage());
                return Ok(None);
            }
            let Some(body) = arg.strip_prefix("--") else {
                return Err(format!("unexpected argument {arg:?}; see --help"));
            };
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (body, None),
            };
            let flag = FLAGS
                .iter()
                .find(|f| f.name == name)
                .ok_or_else(|| format!("unknown flag --{name}; see --help"))?;
            let bare_switch = flag.name == "join"
                && inline.is_none()
                && args.peek().is_none_or(|next| next.starts_with("--"));
            let value = match inline {
                Some(v) => v,
                None if bare_switch => "true".to_owned(),
                None => args
                    .next()
                    .ok_or_else(|| format!("flag --{name} needs a value"))?,
            };
            given.push((flag.name, value));
        }
        let get = |name: &str| -> String {
            let flag = FLAGS
                .iter()
                .find(|f| f.name == name)
                .expect("every looked-up flag is in FLAGS");
            given
                .iter()
                .rev()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(flag.env).ok())
                .unwrap_or_else(|| flag.default.to_owned())
        };
        let number = |name: &str| -> Result<u64, String> {
            let v = get(name);
            v.parse()
                .map_err(|_| format!("--{name} {v:?}: expected a non-negative integer"))
        };
        let token = get("token");
        let or_token = |v: String| if v.is_empty() { token.clone() } else { v };
        let kind = match get("kind").to_ascii_uppercase().as_str() {
            "DENSE" => IndexKind::Dense,
            "SPARSE" => IndexKind::Sparse,
            "HYBRID" => IndexKind::Hybrid,
            other => {
                return Err(format!(
                    "--kind {other:?}: expected DENSE, SPARSE or HYBRID"
                ));
            }
        };
        let metric_text = get("metric").to_ascii_uppercase();
        let metric: Metric = serde_json::from_value(serde_json::Value::String(metric_text.clone()))
            .map_err(|_| {
                format!("--metric {metric_text:?}: expected COSINE, EUCLIDEAN or DOT_PRODUCT")
            })?;
        let global = get("global-parallelism");
        let global_parallelism = if global.is_empty() {
            None
        } else {
            Some(global.parse::<NonZeroU32>().map_err(|_| {
                format!("--global-parallelism {global:?}: expected an integer >= 1")
            })?)
        };
        let api_key = get("admin-api-key");
        let model_dir = get("model-dir");
        let node_id = number("node-id")?;
        if node_id == 0 {
            return Err("--node-id 0: expected an integer >= 1".to_owned());
        }
        let peers = parse_peers(&get("peers"))?;
        let raft_port = match get("raft-port").as_str() {
            "" => None,
            text => Some(
                text.parse::<u16>()
                    .map_err(|_| format!("--raft-port {text:?}: expected a port 0..=65535"))?,
            ),
        };
        let join = match get("join").to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" | "" => false,
            other => return Err(format!("--join {other:?}: expected true or false")),
        };
        if !peers.is_empty() && !join && !peers.contains_key(&node_id) {
            return Err(format!(
                "--peers lists nodes {:?} but not this node (--node-id {node_id}); list every node of the group, this one included",
                peers.keys().collect::<Vec<_>>()
            ));
        }
        if (!peers.is_empty() || join) && raft_port.is_none() {
            return Err(
                "--peers and --join need --raft-port (the port the other nodes reach this one at)"
                    .to_owned(),
            );
        }
        let read_consistency = match get("read-consistency").to_ascii_lowercase().as_str() {
            "linearizable" => ReadConsistency::Linearizable,
            "local" => ReadConsistency::Local,
            other => {
                return Err(format!(
                    "--read-consistency {other:?}: expected linearizable or local"
                ));
            }
        };
        let config = Self {
            node_id,
            peers,
            raft_port,
            join,
            read_consistency,
            port: u16::try_from(number("port")?)
                .map_err(|_| "--port: expected 0..=65535".to_owned())?,
            vector_token: or_token(get("vector-token")),
            queue_token: or_token(get("queue-token")),
            kind,
            dimension: usize::try_from(number("dimension")?)
                .map_err(|_| "--dimension too large".to_owned())?,
            metric,
            data_dir: PathBuf::from(get("data-dir")),
            fsync: match get("fsync").to_ascii_lowercase().as_str() {
                "always" => Fsync::Always,
                "off" => Fsync::Off,
                other => return Err(format!("--fsync {other:?}: expected always or off")),
            },
            snapshot_every: number("snapshot-every")?.max(1),
            snapshot_interval: Duration::from_secs(number("snapshot-interval-secs")?.max(1)),
            global_parallelism,
            admin_email: get("admin-email"),
            admin_api_key: (!api_key.is_empty()).then_some(api_key),
            retry_policy: {
                let policy = RetryPolicy {
                    default_retries: u32::try_from(number("default-retries")?)
                        .map_err(|_| "--default-retries too large".to_owned())?,
                    max_retries: u32::try_from(number("max-retries")?)
                        .map_err(|_| "--max-retries too large".to_owned())?,
                };
                if policy.default_retries > policy.max_retries {
                    return Err(format!(
                        "--default-retries {} is above --max-retries {}",
                        policy.default_retries, policy.max_retries
                    ));
                }
                policy
            },
            backoff: Backoff {
                base: Duration::from_millis(number("retry-backoff-ms")?.max(1)),
                max: Duration::from_secs(number("retry-backoff-max-secs")?.max(1)),
            },
            delivery_timeout: Duration::from_secs(number("delivery-timeout-secs")?.max(1)),
            resumable: ResumableLimits {
                max_open: usize::try_from(number("resumable-max-open")?)
                    .map_err(|_| "--resumable-max-open too large".to_owned())?,
                max_idle_secs: number("resumable-max-idle-secs")?.max(1),
            },
            model_dir: (!model_dir.is_empty()).then(|| PathBuf::from(model_dir)),
        };
        Ok(Some(config))
    }

    /// The index configuration the flags describe. Sparse and hybrid indexes embed text
    /// `data` with BM25 (default parameters) for their sparse part.
    pub(crate) fn index_config(&self) -> IndexConfig {
        match self.kind {
            IndexKind::Dense => IndexConfig::dense(self.dimension, self.metric),
            IndexKind::Sparse => IndexConfig::sparse().with_bm25(Bm25Params::default()),
            IndexKind::Hybrid => {
                IndexConfig::hybrid(self.dimension, self.metric).with_bm25(Bm25Params::default())
            }
        }
    }
}

fn usage() -> String {
    let mut out = String::from(
        "flowvec-server: the vector, queue and management HTTP API on 127.0.0.1, durable\n\n\
         usage: cargo run --release -p flowvec-server -- [--flag value]...\n\nflags (environment variable, default):\n",
    );
    for f in FLAGS {
        let default = if f.default.is_empty() { "-" } else { f.default };
        let _ = writeln!(
            out,
            "  --{:<24} {} ({}, {})",
            f.name, f.help, f.env, default
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_with_a_retry_delay_expression_waits_exactly_that_long() {
        let backoff = Backoff {
            base: Duration::from_millis(500),
            max: Duration::from_secs(60),
        };
        let mut message = flowvec::wire::Message::default();
        for (retried, want) in [(0, 250..=500), (1, 500..=1000), (10, 30_000..=60_000)] {
            message.retried = retried;
            for unit in [0.0, 0.5, 0.999] {
                let ms = backoff.for_message(&message, unit).as_millis();
                assert!(want.contains(&ms), "backoff {retried}: {ms}");
            }
        }
        message.retry_delay = Some("pow(2, retried) * 1000".into());
        for (retried, want) in [(0, 1_000), (3, 8_000), (40, 86_400_000)] {
            message.retried = retried;
            for unit in [0.0, 0.999] {
                assert_eq!(backoff.for_message(&message, unit).as_millis(), want);
            }
        }
    }
}
