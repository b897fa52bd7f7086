//! HTTP: axum accepts each request and hands it, untouched, to `flowvec::wire::Service`.
//! Reads (and bad input) are answered on a blocking thread (queries are CPU work); writes come
//! back as commands, which go through the committer (durable, then applied) before the
//! answer is written.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use flowvec::wire::{self, Method, Prepared, Service, WireError};

use crate::committer::{Committer, wall_clock};

/// Largest request body accepted (a big upsert batch).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// What every request handler shares.
pub(crate) struct App {
    pub(crate) service: Arc<Service>,
    pub(crate) committer: Committer,
}

/// The router: every path goes to [`handle`].
pub(crate) fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(app)
}

/// Every request: to `wire::Request`, prepared on a blocking thread, a write through the
/// committer, back to axum.
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
    let service = Arc::clone(&app.service);
    let prepared =
        tokio::task::spawn_blocking(move || service.prepare(&request, wall_clock())).await;
    let res = match prepared {
        Ok(Prepared::Answer(res)) => res,
        Ok(Prepared::Write(write)) => {
            let (command, reply) = write.into_parts();
            match app.committer.propose(command).await {
                Ok(outcome) => reply.respond(outcome),
                Err(unavailable) => WireError::Unavailable {
                    problem: unavailable.0,
                }
                .to_response(),
            }
        }
        Err(err) => WireError::Internal {
            problem: format!("handler failed: {err}"),
        }
        .to_response(),
    };
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
