//! The cluster port (`--raft-port`, 127.0.0.1): the Raft RPCs between nodes, writes other
//! nodes forward to the leader, read indices, and the operator's endpoints. It carries no
//! tokens: bind it only where the other nodes (and operators) alone can reach it.
//!
//! - `POST /raft/{append,vote,snapshot}`: MessagePack request, MessagePack `Result` answer.
//! - `POST /raft/read-index`: the leader's commit index after a heartbeat round (MessagePack
//!   `Option<u64>`), 503 on a node that does not lead.
//! - `POST /raft/forward`: a client request another node received, answered here as if it
//!   had come here (MessagePack both ways).
//! - `GET /cluster/metrics`: JSON: `id`, `state`, `leader`, `term`, `lastLogIndex`,
//!   `lastApplied`, `voters`, `learners`.
//! - `POST /cluster/add-learner` `{"id": 4, "addr": "127.0.0.1:9104"}` and
//!   `POST /cluster/change-membership` `{"voters": [1, 2, 3, 4]}`: on the leader; they answer
//!   the metrics when the change is committed (add-learner: and the learner has caught up).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use openraft::BasicNode;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::node::{Forwarded, ForwardedAnswer};
use super::types::NodeId;
use crate::http::{self, App};

/// How long `add-learner` waits for the new node to catch up.
const LEARNER_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(600);

/// The largest Raft message accepted.
const MAX_RPC_BYTES: usize = 1 << 30;

pub(crate) fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new()
        .route("/raft/append", post(append))
        .route("/raft/vote", post(vote))
        .route("/raft/snapshot", post(snapshot))
        .route("/raft/read-index", post(read_index))
        .route("/raft/forward", post(forward))
        .route("/cluster/metrics", get(metrics))
        .route("/cluster/add-learner", post(add_learner))
        .route("/cluster/change-membership", post(change_membership))
        // Append requests carry whole batches (up to 64 MiB each, `max_payload_entries` of
        // them) and snapshot chunks 32 MiB: axum's 2 MB default would refuse them (413), and
        // a leader whose appends fail never learns of a newer term.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_RPC_BYTES))
        .with_state(app)
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn msgpack<T: Serialize>(value: &T) -> Response {
    match rmp_serde::to_vec_named(value) {
        Ok(bytes) => (StatusCode::OK, bytes).into_response(),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
    }
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Response> {
    rmp_serde::from_slice(body).map_err(|err| {
        (
            StatusCode::BAD_REQUEST,
            format!("not a Raft message: {err}"),
        )
            .into_response()
    })
}

async fn append(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(req) => msgpack(&app.node.raft.append_entries(req).await),
        Err(res) => res,
    }
}

async fn vote(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(req) => msgpack(&app.node.raft.vote(req).await),
        Err(res) => res,
    }
}

async fn snapshot(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(req) => msgpack(&app.node.raft.install_snapshot(req).await),
        Err(res) => res,
    }
}

async fn read_index(State(app): State<Arc<App>>) -> Response {
    if !app.node.is_leader() {
        return (StatusCode::SERVICE_UNAVAILABLE, "this node does not lead").into_response();
    }
    match app.node.raft.ensure_linearizable().await {
        Ok(log_id) => msgpack(&log_id.map(|id| id.index)),
        Err(err) => (StatusCode::SERVICE_UNAVAILABLE, err.to_string()).into_response(),
    }
}

async fn forward(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let request: Forwarded = match decode(&body) {
        Ok(req) => req,
        Err(res) => return res,
    };
    let res = http::answer(&app, request, true).await;
    msgpack(&ForwardedAnswer {
        status: res.status,
        headers: res.headers,
        body: res.body,
    })
}

/// The metrics an operator (or a test) reads.
fn metrics_json(app: &App) -> serde_json::Value {
    let m = app.node.raft.metrics();
    let m = m.borrow();
    let membership = m.membership_config.membership();
    serde_json::json!({
        "id": m.id,
        "state": format!("{:?}", m.state),
        "leader": m.current_leader,
        "term": m.current_term,
        "lastLogIndex": m.last_log_index,
        "lastApplied": m.last_applied.map(|id| id.index),
        "snapshot": m.snapshot.map(|id| id.index),
        "voters": membership.voter_ids().collect::<Vec<_>>(),
        "learners": membership.learner_ids().collect::<Vec<_>>(),
    })
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    json(StatusCode::OK, &metrics_json(&app))
}

fn refused(status: StatusCode, error: impl std::fmt::Display) -> Response {
    json(status, &serde_json::json!({ "error": error.to_string() }))
}

#[derive(Deserialize)]
struct AddLearner {
    id: NodeId,
    addr: String,
}

async fn add_learner(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let req: AddLearner = match serde_json::from_slice(&body) {
        Ok(req) => req,
        Err(err) => {
            return refused(
                StatusCode::BAD_REQUEST,
                format!("expected {{\"id\": <node id>, \"addr\": \"host:port\"}}: {err}"),
            );
        }
    };
    let raft = &app.node.raft;
    if let Err(err) = raft
        .add_learner(req.id, BasicNode { addr: req.addr }, true)
        .await
    {
        return refused(StatusCode::SERVICE_UNAVAILABLE, err);
    }
    // openraft answers once the change is committed; wait (bounded) until the learner holds
    // the log as it was then (by snapshot if the leader purged what it needs).
    let target = raft.metrics().borrow().last_log_index;
    let id = req.id;
    let caught_up = raft
        .wait(Some(LEARNER_CATCH_UP))
        .metrics(
            |m| {
                m.replication
                    .as_ref()
                    .and_then(|r| r.get(&id).copied().flatten())
                    .map(|log_id| log_id.index)
                    >= target
            },
            "the learner to catch up",
        )
        .await;
    match caught_up {
        Ok(_) => json(StatusCode::OK, &metrics_json(&app)),
        Err(err) => refused(
            StatusCode::GATEWAY_TIMEOUT,
            format!("node {id} was added as a learner but has not caught up: {err}"),
        ),
    }
}

#[derive(Deserialize)]
struct ChangeMembership {
    voters: BTreeSet<NodeId>,
}

async fn change_membership(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let req: ChangeMembership = match serde_json::from_slice(&body) {
        Ok(req) => req,
        Err(err) => {
            return refused(
                StatusCode::BAD_REQUEST,
                format!("expected {{\"voters\": [<node id>, ...]}}: {err}"),
            );
        }
    };
    if req.voters.is_empty() {
        return refused(
            StatusCode::BAD_REQUEST,
            "voters: expected at least one node id, got none",
        );
    }
    match app.node.raft.change_membership(req.voters, false).await {
        Ok(_) => json(StatusCode::OK, &metrics_json(&app)),
        Err(err) => refused(StatusCode::SERVICE_UNAVAILABLE, err),
    }
}
