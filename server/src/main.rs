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

mod committer;
mod config;
mod dispatcher;
mod faults;
mod http;
mod log;
mod recovery;
mod snapshot;

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use flowvec::management::{ApiKey, ApiKeyHash, Database, DatabaseSecrets, Region};
use flowvec::state::Command;
use flowvec::vector::text::Embedder;
use flowvec::wire::{Service, SigningKeys, Tokens};

use committer::{Committer, SnapshotPolicy, Worker, wall_clock};
use config::Config;
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
        next_index,
        last_now,
        lock: _lock,
        ..
    } = recovered;

    let tokens = Tokens::new()
        .with_vector_token(&config.vector_token)
        .with_queue_token(&config.queue_token);
    let mut service = Service::from_machine(machine, tokens)
        .with_retry_policy(config.retry_policy)
        .with_resumable_limits(config.resumable);
    if let Some(model) = dense_model {
        service
            .index()
            .check_dense_embedder(&*model)
            .map_err(|err| format!("dense text model: {err}"))?;
        println!("  dense text model: {}", model.name());
        service = service.with_dense_embedder(model);
    }
    let service = Arc::new(service);
    let active = service.flow().lock().active_count();
    let global_now = service.flow().lock().config().global_parallelism;

    let (deliveries_tx, deliveries_rx) = tokio::sync::mpsc::unbounded_channel();
    let committer = committer::start(Worker {
        service: Arc::clone(&service),
        log,
        next_index,
        last_now,
        data_dir: config.data_dir.clone(),
        policy: SnapshotPolicy {
            every_entries: config.snapshot_every,
            interval: config.snapshot_interval,
        },
        deliveries: deliveries_tx,
    });

    // Calls that were under way when the last process stopped were lost with it.
    if active > 0 {
        must(
            committer.propose(Command::RequeueAllActive).await,
            "requeue",
        )?;
        println!("  {active} deliveries under way at the last stop will be made again");
    }
    if global_now != config.global_parallelism {
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
    let management = seed_management(&config, &service, &committer).await?;
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
        Arc::clone(&service),
        client,
        config.delivery_timeout,
        config.backoff,
    );
    tokio::spawn(Arc::clone(&dispatcher).run(deliveries_rx));
    // Idle resumable queries free their memory even when no request comes (every request
    // expires them too); a check costs one atomic load when none is due.
    let expiring = Arc::clone(&service);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            expiring.resumable_queries().expire(wall_clock());
        }
    });

    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;
    print_banner(&config, &service, addr, &management);

    let app = Arc::new(App {
        service: Arc::clone(&service),
        committer: committer.clone(),
    });
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
    println!("stopped; the data directory is consistent");
    Ok(())
}

fn must(outcome: committer::Outcome, what: &str) -> Result<flowvec::state::Applied, String> {
    match outcome {
        Ok(Ok(applied)) => Ok(applied),
        Ok(Err(err)) => Err(format!("{what}: {err}")),
        Err(unavailable) => Err(format!("{what}: {}", unavailable.0)),
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

fn print_banner(config: &Config, service: &Service, addr: SocketAddr, management: &str) {
    let info = service.index().info();
    println!("flowvec-server listening on http://{addr}");
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
