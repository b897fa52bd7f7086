//! HTTP: axum accepts each request and hands it, untouched, to `flowvec::wire::Service`.
//! Reads (and bad input) are answered on a blocking thread (queries are CPU work) after the
//! read barrier of the cluster; writes come back as commands, which go through the committer
//! (committed on a majority, then applied) before the answer is written, or, on a node that
//! does not lead, are sent to the leader whole and its answer passed back.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use flowvec::wire::{self, Method, Prepared, WireError};

use crate::cluster::node::{Forwarded, SharedNode};
use crate::committer::{Committer, wall_clock};
use crate::current::Current;

/// Largest request body accepted (a big upsert batch).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// What every request handler shares.
pub(crate) struct App {
    pub(crate) current: Arc<Current>,
    pub(crate) committer: Committer,
    pub(crate) node: SharedNode,
}

/// The router: every path goes to [`handle`].
pub(crate) fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(app)
}

/// Every request: to `wire::Request`, answered by [`answer`], back to axum.
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
    let request = Forwarded {
        method: parts.method.as_str().to_owned(),
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
    to_axum(answer(&app, request, false).await)
}

/// Answers one request: after the read barrier, prepared on a blocking thread; a write goes
/// through the committer on the leader, or to the leader from any other node (`forwarded`:
/// it came from another node, and is not sent on again).
pub(crate) async fn answer(app: &App, request: Forwarded, forwarded: bool) -> wire::Response {
    if !surely_a_write(&request.method, &request.path)
        && let Err(problem) = app.node.read_barrier().await
    {
        return WireError::Unavailable { problem }.to_response();
    }
    let wire_request = wire::Request {
        method: Method::parse(&request.method),
        path: request.path.clone(),
        query: request.query.clone(),
        headers: request.headers.clone(),
        body: request.body.clone(),
    };
    let service = app.current.get();
    let prepared =
        tokio::task::spawn_blocking(move || service.prepare(&wire_request, wall_clock())).await;
    match prepared {
        Ok(Prepared::Answer(res)) => res,
        Ok(Prepared::Write(write)) => {
            if !app.node.is_leader() {
                return to_leader(app, &request, forwarded).await;
            }
            let (command, reply) = write.into_parts();
            match app.committer.propose(command).await {
                Ok(outcome) => reply.respond(outcome),
                Err(unavailable) if unavailable.not_leader => {
                    to_leader(app, &request, forwarded).await
                }
                Err(unavailable) => WireError::Unavailable {
                    problem: unavailable.problem,
                }
                .to_response(),
            }
        }
        Err(err) => WireError::Internal {
            problem: format!("handler failed: {err}"),
        }
        .to_response(),
    }
}

/// Whether the request can only be a write (it then skips the read barrier: it is ordered
/// by the log instead). Conservative: anything not listed waits for the barrier, which is
/// only slower for a write, never wrong for a read.
fn surely_a_write(method: &str, path: &str) -> bool {
    if matches!(method, "DELETE" | "PUT" | "PATCH") {
        return true;
    }
    if method != "POST" {
        return false;
    }
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    matches!(
        first,
        "upsert" | "upsert-data" | "update" | "delete" | "reset" | "delete-namespace"
    ) || ["/v2/publish/", "/v2/enqueue/", "/v2/batch"]
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

/// A write this node cannot make: the leader's answer to it, or 503.
async fn to_leader(app: &App, request: &Forwarded, forwarded: bool) -> wire::Response {
    if forwarded {
        return WireError::Unavailable {
            problem: "the node this write was forwarded to leads no longer; try again".to_owned(),
        }
        .to_response();
    }
    match app.node.forward(request).await {
        Ok(answer) => wire::Response {
            status: answer.status,
            headers: answer.headers,
            body: answer.body,
            flow_changed: false,
        },
        Err(problem) => WireError::Unavailable { problem }.to_response(),
    }
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

#[cfg(test)]
mod tests {
    use super::surely_a_write;

    #[test]
    fn only_writes_skip_the_read_barrier() {
        for (method, path) in [
            ("POST", "/upsert"),
            ("POST", "/upsert/ns"),
            ("POST", "/delete-namespace/ns"),
            ("POST", "/v2/publish/http://127.0.0.1:1/hook"),
            ("DELETE", "/v2/messages/m1"),
        ] {
            assert!(surely_a_write(method, path), "{method} {path}");
        }
        for (method, path) in [
            ("POST", "/query"),
            ("POST", "/fetch/ns"),
            ("POST", "/resumable-query"),
            ("GET", "/v2/messages/m1"),
            ("POST", "/info"),
            ("POST", "/upserted"),
        ] {
            assert!(!surely_a_write(method, path), "{method} {path}");
        }
    }
}
