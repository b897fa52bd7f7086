//! `flowvec-server`: the vector, queue and management HTTP API of `flowvec` on 127.0.0.1, with
//! a durable command log: nothing acknowledged is lost, and it recovers by itself.
//!
//! ```text
//! cargo run --release -p flowvec-server -- --port 8787 --token secret --dimension 256
//! cargo run --release -p flowvec-server -- --help
//! ```
//!
//! - `http.rs`: axum hands each request to `flowvec::wire::Service`; reads are answered at
//!   once, writes become commands.
//! - `committer.rs`: the one thread that changes state: group commit to the log, then apply
//!   in log order, then answer; drives delivery with logged `Dispatch` commands; snapshots.
//! - `log.rs`: the command log (redb); `faults.rs`: its failpoints for tests.
//! - `snapshot.rs`: snapshot files; `recovery.rs`: the data directory, snapshot + log replay.
//! - `dispatcher.rs`: the delivery calls, whose outcomes are logged commands.
//! - `config.rs`: flags and environment variables.

// openraft's storage traits return its `StorageError` (224 bytes) by value; so do our helpers.
#[allow(clippy::result_large_err)]
mod cluster;
mod committer;
mod config;
mod current;
mod dispatcher;
mod faults;
mod http;
mod log;
mod recovery;
mod snapshot;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use base64::Engine as _;
use flowvec::management::{ApiKey, ApiKeyHash, Database, DatabaseSecrets, Region};
use flowvec::state::{Command, StateMachine};
use flowvec::vector::text::Embedder;
use flowvec::wire::{Service, SigningKeys, Tokens};
use openraft::BasicNode;

use cluster::log_store::LogStore;
use cluster::network::Network;
use cluster::node::Node;
use cluster::state_machine::{MakeService, Store};
use cluster::types::{NodeId, Raft};
use committer::{Committer, Worker, wall_clock};
use config::Config;
use current::Current;
use dispatcher::Dispatcher;
use faults::Faults;
use http::App;

fn main() {
    let config = match Config::from_args(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => return,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the OS can start a tokio runtime");
    let result = runtime.block_on(serve(config));
    runtime.shutdown_timeout(Duration::from_millis(200));
    if let Err(err) = result {
        eprintln!("error: {err}");
        std::process::exit(1);
    }
}

/// The dense text model that embeds `data` (`/upsert-data`, `/query-data`) for an index with a
/// dense part, made before a write is logged: all-MiniLM-L6-v2 from `--model-dir`. `None`
/// without the flag: such text then answers 400 saying how to configure one (a sparse or hybrid
/// index's sparse part always uses the built-in BM25). What it returns is checked against the
/// index (dense, same dimension) before the server listens.
fn dense_embedder(config: &Config) -> Result<Option<Arc<dyn Embedder>>, String> {
    let Some(dir) = &config.model_dir else {
        return Ok(None);
    };
    let model = flowvec_minilm::MiniLm::load(dir).map_err(|err| format!("--model-dir: {err}"))?;
    Ok(Some(Arc::new(model)))
}

async fn serve(config: Config) -> Result<(), String> {
    // Signal handlers first: a Ctrl-C during start-up must not be lost (a background process
    // of a non-interactive shell starts with SIGINT ignored until a handler is installed).
    let shutdown = shutdown_signal()?;
    let faults = Arc::new(Faults::from_env()?);
    // The model first: a bad --model-dir refuses before the data directory is touched.
    let dense_model = dense_embedder(&config)?;
    let recovery_config = config.clone();
    let recovery_faults = Arc::clone(&faults);
    let recovered =
        tokio::task::spawn_blocking(move || recovery::recover(&recovery_config, recovery_faults))
            .await
            .map_err(|err| format!("recovery failed: {err}"))??;
    println!("{}", recovered.report);
    let recovery::Recovered {
        machine,
        log,
        applied,
        last_now,
        lock: _lock,
        ..
    } = recovered;

    let tokens = Tokens::new()
        .with_vector_token(&config.vector_token)
        .with_queue_token(&config.queue_token);
    let make_service: MakeService = {
        let config = config.clone();
        let dense_model = dense_model.clone();
        Arc::new(move |machine: StateMachine| {
            recovery::check_machine(&config, &machine)?;
            let mut service = Service::from_machine(machine, tokens.clone())
                .with_retry_policy(config.retry_policy)
                .with_resumable_limits(config.resumable);
            if let Some(model) = &dense_model {
                service
                    .index()
                    .check_dense_embedder(&**model)
                    .map_err(|err| format!("dense text model: {err}"))?;
                service = service.with_dense_embedder(Arc::clone(model));
            }
            Ok(service)
        })
    };
    if let Some(model) = &dense_model {
        println!("  dense text model: {}", model.name());
    }
    let service = make_service(machine)?;
    let current = Arc::new(Current::new(service));
    let applied_now = Arc::new(AtomicU64::new(last_now.as_millis()));

    // The Raft node: the command log is its log, the engines its state machine.
    let log_store = LogStore::new(log);
    let store = Store::new(
        Arc::clone(&current),
        Arc::clone(&make_service),
        applied,
        config.data_dir.clone(),
        Arc::clone(&applied_now),
    );
    let peers = Arc::new(config.peers.clone());
    let network = Network::new(Arc::clone(&peers))?;
    let raft_config = openraft::Config {
        cluster_name: "flowvec".to_owned(),
        heartbeat_interval: 100,
        election_timeout_min: 500,
        election_timeout_max: 1000,
        install_snapshot_timeout: 30_000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(config.snapshot_every),
        max_in_snapshot_log_to_keep: 0,
        snapshot_max_chunk_size: 32 << 20,
        // Entries are whole batches (up to 64 MiB): a few per append request.
        max_payload_entries: 8,
        ..Default::default()
    }
    .validate()
    .map_err(|err| format!("raft configuration: {err}"))?;
    let raft = Raft::new(
        config.node_id,
        Arc::new(raft_config),
        network.clone(),
        log_store.clone(),
        store,
    )
    .await
    .map_err(|err| format!("raft: {err}"))?;
    let node = Arc::new(Node {
        id: config.node_id,
        raft: raft.clone(),
        network,
        read: config.read_consistency,
    });

    let (deliveries_tx, deliveries_rx) = tokio::sync::mpsc::unbounded_channel();
    let committer = committer::start(Worker {
        current: Arc::clone(&current),
        node: Arc::clone(&node),
        runtime: tokio::runtime::Handle::current(),
        applied_now,
        snapshot_interval: config.snapshot_interval,
        deliveries: deliveries_tx,
    });
    let app = Arc::new(App {
        current: Arc::clone(&current),
        committer: committer.clone(),
        node: Arc::clone(&node),
    });

    // The cluster port first: the other nodes must reach this one to elect a leader.
    let raft_addr = match config.raft_port {
        Some(port) => {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|err| format!("cannot listen on {addr} (--raft-port): {err}"))?;
            let addr = listener.local_addr().map_err(|err| err.to_string())?;
            let router = cluster::rpc::router(Arc::clone(&app));
            tokio::spawn(async move {
                if let Err(err) = axum::serve(listener, router).await {
                    eprintln!("cluster port: {err}");
                }
            });
            Some(addr)
        }
        None => None,
    };
    let alone = config.peers.is_empty();
    if !config.join
        && !raft
            .is_initialized()
            .await
            .map_err(|err| format!("raft: {err}"))?
    {
        let members: BTreeMap<NodeId, BasicNode> = if alone {
            BTreeMap::from([(
                config.node_id,
                BasicNode {
                    addr: raft_addr.map(|a| a.to_string()).unwrap_or_default(),
                },
            )])
        } else {
            config
                .peers
                .iter()
                .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
                .collect()
        };
        match raft.initialize(members).await {
            Ok(()) => {}
            // Another node of the group initialized it first: the same membership.
            Err(openraft::error::RaftError::APIError(
                openraft::error::InitializeError::NotAllowed(_),
            )) => {}
            Err(err) => return Err(format!("raft: forming the group: {err}")),
        }
    }
    // The membership as openraft has it (read from the log, or just initialized): the
    // metrics show it once the node's core has started.
    if !config.join {
        raft.wait(Some(Duration::from_secs(10)))
            .metrics(
                |m| m.membership_config.membership().voter_ids().count() > 0,
                "the group's membership",
            )
            .await
            .map_err(|err| format!("raft: the group's membership did not load: {err}"))?;
    }
    let sole_voter = {
        let m = raft.metrics();
        let m = m.borrow();
        let voters: Vec<NodeId> = m.membership_config.membership().voter_ids().collect();
        voters == [config.node_id]
    };
    let management = if sole_voter && !config.join {
        // One voter: it leads at once; serve only after it has applied its whole log.
        let _ = raft.trigger().elect().await;
        raft.wait(Some(Duration::from_secs(20)))
            .metrics(
                |m| {
                    m.state == openraft::ServerState::Leader
                        && m.last_applied.map(|id| id.index) >= m.last_log_index
                },
                "leading, with the log applied",
            )
            .await
            .map_err(|err| {
                let m = raft.metrics().borrow().clone();
                format!(
                    "raft: this one-node group did not start leading: {err} (state {:?}, term {}, last log {:?}, applied {:?}, membership {:?})",
                    m.state, m.current_term, m.last_log_index, m.last_applied, m.membership_config
                )
            })?;
        let term = raft.metrics().borrow().current_term;
        let management = bootstrap(&config, &current, &committer).await?;
        tokio::spawn(watch_leadership(
            raft.clone(),
            config.clone(),
            Arc::clone(&current),
            committer.clone(),
            Some(term),
        ));
        management
    } else {
        tokio::spawn(watch_leadership(
            raft.clone(),
            config.clone(),
            Arc::clone(&current),
            committer.clone(),
            None,
        ));
        "seeded by the leader at its first election (its output shows the key and password)"
            .to_owned()
    };
    if faults.any() {
        faults.arm();
        println!(
            "  failpoints armed: {}",
            std::env::var("FLOWVEC_FAILPOINTS").unwrap_or_default()
        );
    }

    let client = reqwest::Client::builder()
        .build()
        .map_err(|err| format!("HTTP client: {err}"))?;
    let dispatcher = Dispatcher::new(
        committer.clone(),
        Arc::clone(&current),
        client,
        config.delivery_timeout,
        config.backoff,
    );
    tokio::spawn(Arc::clone(&dispatcher).run(deliveries_rx));
    // Idle resumable queries free their memory even when no request comes (every request
    // expires them too); a check costs one atomic load when none is due.
    let expiring = Arc::clone(&current);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            expiring.get().resumable_queries().expire(wall_clock());
        }
    });

    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;
    print_banner(&config, &current.get(), addr, raft_addr, &management);

    axum::serve(listener, http::router(app))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|err| format!("server: {err}"))?;

    // Stopped accepting: let the calls under way report (bounded), then a final snapshot.
    committer.stop_dispatching();
    let left = dispatcher.drain(Duration::from_secs(5)).await;
    if left > 0 {
        println!("  {left} deliveries still under way: they will be made again at the next start");
    }
    committer.shutdown().await;
    let _ = raft.shutdown().await;
    log_store.compact();
    println!("stopped; the data directory is consistent");
    Ok(())
}

/// What a new leader does before anything else: give back the calls the old one had under
/// way (their outcomes died with it; at-least-once), then the settings and seeds of the
/// first start (global cap, signing keys, the management account and its demo database).
/// Each step is a logged command, so it happens once for the group.
async fn bootstrap(
    config: &Config,
    current: &Current,
    committer: &Committer,
) -> Result<String, String> {
    let active = current.get().flow().lock().active_count();
    must(
        committer.propose(Command::RequeueAllActive).await,
        "requeue",
    )?;
    if active > 0 {
        println!(
            "  {active} deliveries under way under the last leader (or before the last stop) will be made again"
        );
    }
    let service = current.get();
    if service.flow().lock().config().global_parallelism != config.global_parallelism {
        must(
            committer
                .propose(Command::SetGlobalParallelism {
                    max: config.global_parallelism,
                })
                .await,
            "--global-parallelism",
        )?;
    }
    if service.machine().signing_keys().is_none() {
        let keys = SigningKeys::generate().map_err(|err| format!("signing keys: {err}"))?;
        must(
            committer.propose(Command::SetSigningKeys { keys }).await,
            "signing keys",
        )?;
    }
    seed_management(config, &service, committer).await
}

/// Runs [`bootstrap`] each time this node starts leading (a new term).
async fn watch_leadership(
    raft: Raft,
    config: Config,
    current: Arc<Current>,
    committer: Committer,
    mut done_term: Option<u64>,
) {
    let mut metrics = raft.metrics();
    loop {
        let lead_term = {
            let m = metrics.borrow_and_update();
            (m.state == openraft::ServerState::Leader && m.current_leader == Some(m.id))
                .then_some(m.current_term)
        };
        if let Some(term) = lead_term
            && done_term != Some(term)
        {
            match bootstrap(&config, &current, &committer).await {
                Ok(management) => {
                    done_term = Some(term);
                    println!("node {} leads (term {term}); {management}", config.node_id);
                    let _ = std::io::stdout().flush();
                }
                Err(err) => {
                    eprintln!("node {}: leading term {term}: {err}", config.node_id);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            }
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

fn must(outcome: committer::Outcome, what: &str) -> Result<flowvec::state::Applied, String> {
    match outcome {
        Ok(Ok(applied)) => Ok(applied),
        Ok(Err(err)) => Err(format!("{what}: {err}")),
        Err(unavailable) => Err(format!("{what}: {}", unavailable.problem)),
    }
}

/// The management account and its demo database: created at the first start only (the
/// account's key and the database's password are printed then, and only hashes are kept).
async fn seed_management(
    config: &Config,
    service: &Service,
    committer: &Committer,
) -> Result<String, String> {
    let email = &config.admin_email;
    if service.accounts().contains(email) {
        return Ok(format!(
            "{email} owns database demo-db (its API key and password were printed at the first start; reset the password with the API)"
        ));
    }
    let key = match &config.admin_api_key {
        Some(key) => ApiKey::new(key.clone()),
        None => ApiKey::generate().map_err(|err| format!("management: {err}"))?,
    };
    let key_hash =
        ApiKeyHash::of(&key).map_err(|err| format!("--admin-email/--admin-api-key: {err}"))?;
    must(
        committer
            .propose(Command::CreateAccount {
                email: email.clone(),
                key_hash,
            })
            .await,
        "--admin-email",
    )?;
    let mut password = None;
    if service.registry().get(email, "demo-db").is_err() {
        let (secrets, pw) =
            DatabaseSecrets::generate().map_err(|err| format!("management: {err}"))?;
        let created = i64::try_from(wall_clock().as_secs()).unwrap_or(i64::MAX);
        let record = Database::new("demo-db", "demo", email, Region::UsEast1, created);
        must(
            committer
                .propose(Command::CreateDatabase {
                    record: Box::new(record),
                    secrets,
                })
                .await,
            "demo database",
        )?;
        password = Some(pw);
    }
    Ok(format!(
        "{email} / api key {} owns database demo-db{} (shown once: only hashes are stored)\n  management Authorization: {}",
        key.expose(),
        password
            .map(|p| format!(" (password {})", p.expose()))
            .unwrap_or_default(),
        basic_header(email, key.expose()),
    ))
}

fn print_banner(
    config: &Config,
    service: &Service,
    addr: SocketAddr,
    raft_addr: Option<SocketAddr>,
    management: &str,
) {
    let info = service.index().info();
    println!("flowvec-server listening on http://{addr}");
    match raft_addr {
        Some(raft) => println!(
            "  cluster:      node {} on {raft} (GET http://{raft}/cluster/metrics), peers {}",
            config.node_id,
            if config.peers.is_empty() {
                "none".to_owned()
            } else {
                config
                    .peers
                    .iter()
                    .map(|(id, addr)| format!("{id}={addr}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }
        ),
        None => println!("  cluster:      one node (no --raft-port)"),
    }
    println!(
        "  index:        {} dimension={} metric={} ({} vectors)",
        serde_json::to_value(config.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        config.dimension,
        serde_json::to_value(config.metric)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        info.vector_count,
    );
    println!("  vector token: {}", config.vector_token);
    println!("  queue token:  {}", config.queue_token);
    println!(
        "  data dir:     {} (fsync {:?}, {} messages waiting)",
        config.data_dir.display(),
        config.fsync,
        service.flow().lock().waiting_count(),
    );
    println!("  management:   {management}");
    println!("  signing keys: deliveries carry Upstash-Signature; GET /v2/keys shows the keys");
    println!(
        "  try: curl -s -X POST http://{addr}/info -H 'Authorization: Bearer {}'",
        config.vector_token
    );
    println!("  (--help lists every flag and its environment variable)");
    let _ = std::io::stdout().flush();
}

/// Ctrl-C, or SIGTERM on Unix. The handlers are installed now; the future resolves on the
/// first signal.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    #[cfg(unix)]
    let (mut int, mut term) = {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind| signal(kind).map_err(|err| format!("signal handler: {err}"));
        (
            install(SignalKind::interrupt())?,
            install(SignalKind::terminate())?,
        )
    };
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        println!("shutting down: finishing writes, then a snapshot");
    })
}

/// The management API's `Authorization` value for an account.
fn basic_header(email: &str, key: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"))
    )
}
