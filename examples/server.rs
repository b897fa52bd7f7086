//! A real host of `flowvec::wire`: the vector, queue and management HTTP API on 127.0.0.1, with
//! delivery of published messages and a flow-control snapshot that survives restarts.
//!
//! ```text
//! cargo run --release --example server -- --port 8787 --token secret --dimension 256
//! cargo run --release --example server -- --help
//! ```
//!
//! - HTTP: axum accepts each request and hands it, untouched, to `wire::Service::handle`
//!   (on a blocking thread: queries are CPU work); the route table, auth, errors and JSON
//!   shapes all live in the library.
//! - Delivery: a dispatcher task drives `poll_dispatch` / `poll_timeout`, woken by publishes
//!   and flow-control changes (`Response::flow_changed`) and by finished deliveries. Each
//!   message is sent to its destination with reqwest; any HTTP response completes it, a
//!   transport failure requeues it with exponential backoff (`--max-attempts` in all).
//! - Durability: on Ctrl-C or SIGTERM the server stops accepting, saves the flow-control
//!   snapshot (waiting *and* in-flight messages) to `--snapshot`, and loads it at the next
//!   start; in-flight calls are delivered again (at-least-once).
//! - Management: an account (`--admin-email`, `--admin-api-key`) owning database `demo-db`
//!   is seeded and printed, for `POST /v2/redis/reset-password/demo-db` with Basic auth.
//!
//! # A curl walk-through
//! ```text
//! cargo run --release --example server -- --token secret --dimension 2
//! T='Authorization: Bearer secret'; U=http://127.0.0.1:8787
//! curl -s -X POST $U/upsert/docs -H "$T" -d '[{"id":"a","vector":[1,0],"metadata":{"g":1}},{"id":"b","vector":[0,1]}]'
//! curl -s -X POST $U/query/docs -H "$T" -d '{"vector":[1,0.1],"topK":2,"includeMetadata":true}'
//! curl -s -X POST $U/query/docs -H "$T" -d '[{"vector":[1,0],"topK":1},{"vector":[0,1],"topK":1}]'
//! curl -s -X POST $U/info -H "$T"
//! # queue: deliver to a local endpoint, 2 at a time, 5 per second
//! curl -s -X POST $U/v2/publish/http://127.0.0.1:9000/hook -H "$T" \
//!      -H 'Upstash-Flow-Control-Key: hook' -H 'Upstash-Flow-Control-Value: parallelism=2, rate=5' -d hello
//! curl -s $U/v2/flowControl/hook -H "$T"
//! curl -s -X POST "$U/v2/flowControl/hook/pin?parallelism=1" -H "$T"
//! curl -s $U/v2/globalParallelism -H "$T"
//! # management: the Basic header is printed at start
//! curl -s -X POST $U/v2/redis/reset-password/demo-db -H 'Authorization: Basic ...'
//! ```

#[path = "server/config.rs"]
mod config;
#[path = "server/dispatcher.rs"]
mod dispatcher;
#[path = "server/snapshot.rs"]
mod snapshot;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use base64::Engine as _;
use flowvec::flow::FlowConfig;
use flowvec::management::{Accounts, ApiKey, Database, Region, Registry};
use flowvec::vector::Index;
use flowvec::wire::{self, Method, Service, Tokens};
use tokio::sync::{Notify, watch};

use config::Config;
use dispatcher::{Dispatcher, now};

/// Largest request body accepted (a big upsert batch).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

struct App {
    service: Service,
    wake: Arc<Notify>,
}

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
    // The snapshot is saved: do not wait for deliveries still in flight (they are in it).
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    if let Err(err) = result {
        eprintln!("error: {err}");
        std::process::exit(1);
    }
}

async fn serve(config: Config) -> Result<(), String> {
    // Signal handlers first: a Ctrl-C during start-up must not be lost (a background process
    // of a non-interactive shell starts with SIGINT ignored until a handler is installed).
    let shutdown = shutdown_signal()?;
    let flow_config = FlowConfig {
        global_parallelism: config.global_parallelism,
        ..FlowConfig::default()
    };
    let flow = Arc::new(snapshot::load(&config.snapshot, flow_config, now())?);
    let restored = {
        let engine = flow.lock();
        engine.waiting_count()
    };
    let index = Index::new(config.index_config()).map_err(|err| format!("index: {err}"))?;
    let (registry, accounts, admin_key, db_password) = seed_management(&config)?;
    let tokens = Tokens::new()
        .with_vector_token(&config.vector_token)
        .with_queue_token(&config.queue_token);
    let service = Service::new(index, tokens)
        .with_flow(Arc::clone(&flow))
        .with_management(registry, accounts);

    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;

    println!("flowvec example server on http://{addr}");
    println!(
        "  index:        {} dimension={} metric={}",
        config.kind,
        config.dimension,
        serde_json::to_value(config.metric)
            .map(|v| v.as_str().unwrap_or("").to_owned())
            .unwrap_or_default()
    );
    println!("  vector token: {}", config.vector_token);
    println!("  queue token:  {}", config.queue_token);
    println!(
        "  snapshot:     {} ({restored} waiting messages restored)",
        config.snapshot.display()
    );
    println!(
        "  management:   {} / api key {admin_key} owns database demo-db (password {db_password})",
        config.admin_email
    );
    println!(
        "  management Authorization: {}",
        basic_header(&config.admin_email, &admin_key)
    );
    println!(
        "  try: curl -s -X POST http://{addr}/info -H 'Authorization: Bearer {}'",
        config.vector_token
    );
    println!("  (--help lists every flag and its environment variable)");

    let wake = Arc::new(Notify::new());
    let client = reqwest::Client::builder()
        .timeout(config.delivery_timeout)
        .build()
        .map_err(|err| format!("HTTP client: {err}"))?;
    let dispatcher = Dispatcher::new(
        Arc::clone(&flow),
        Arc::clone(&wake),
        client,
        config.max_attempts,
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let dispatch_loop = tokio::spawn(dispatcher.run(stop_rx));

    let app = Arc::new(App { service, wake });
    let router = axum::Router::new().fallback(handle).with_state(app);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|err| format!("server: {err}"))?;

    let _ = stop_tx.send(true);
    let _ = dispatch_loop.await;
    let saved = snapshot::save(&flow, &config.snapshot)?;
    println!("saved {saved} messages to {}", config.snapshot.display());
    Ok(())
}

/// The management account and its demo database.
fn seed_management(
    config: &Config,
) -> Result<(Arc<Registry>, Arc<Accounts>, String, String), String> {
    let accounts = Accounts::new();
    let key = match &config.admin_api_key {
        Some(key) => {
            let key = ApiKey::new(key.clone());
            accounts.insert(&config.admin_email, &key).map(|()| key)
        }
        None => accounts.create(&config.admin_email),
    }
    .map_err(|err| format!("--admin-email/--admin-api-key: {err}"))?;
    let registry = Registry::new();
    let created = i64::try_from(now().as_secs()).unwrap_or(i64::MAX);
    let (_, password) = registry
        .insert(Database::new(
            "demo-db",
            "demo",
            &config.admin_email,
            Region::UsEast1,
            created,
        ))
        .map_err(|err| format!("demo database: {err}"))?;
    Ok((
        Arc::new(registry),
        Arc::new(accounts),
        key.expose().to_owned(),
        password.expose().to_owned(),
    ))
}

/// Every request: to `wire::Request`, through the service on a blocking thread, back.
async fn handle(
    State(app): State<Arc<App>>,
    req: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(body) => body.to_vec(),
        Err(err) => {
            let res = wire::Response::json(
                413,
                &serde_json::json!({ "error": format!("request body: {err}"), "status": 413 }),
            );
            return to_axum(res);
        }
    };
    let request = wire::Request {
        method: Method::parse(parts.method.as_str()),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let worker = Arc::clone(&app);
    let res = tokio::task::spawn_blocking(move || worker.service.handle(&request, now())).await;
    let res = res.unwrap_or_else(|err| {
        wire::Response::json(
            500,
            &serde_json::json!({ "error": format!("handler failed: {err}"), "status": 500 }),
        )
    });
    if res.flow_changed {
        app.wake.notify_one();
    }
    to_axum(res)
}

fn to_axum(res: wire::Response) -> axum::response::Response {
    let mut out = axum::response::Response::new(Body::from(res.body));
    *out.status_mut() =
        StatusCode::from_u16(res.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in res.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            out.headers_mut().append(name, value);
        }
    }
    out
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
        println!("shutting down: saving the flow-control snapshot");
    })
}

/// The management API's `Authorization` value for an account.
fn basic_header(email: &str, key: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"))
    )
}
