//! Resumable queries on the wire: `/resumable-query[/{ns}]`, `/resumable-query-data[/{ns}]`,
//! `/resumable-query-next`, `/resumable-query-end` over [`ResumableQueries`].
//!
//! | route | body | result |
//! |---|---|---|
//! | `/resumable-query[/{ns}]` | a `/query` object plus `maxIdle` (seconds, default 3600) | `{"uuid", "scores": [first topK results]}` |
//! | `/resumable-query-data[/{ns}]` | a `/query-data` object plus `maxIdle` | the same |
//! | `/resumable-query-next` | `{"uuid", "additionalK"}` | the next `additionalK` results (`[]` once exhausted) |
//! | `/resumable-query-end` | `{"uuid"}` | `"Success"` |
//!
//! Statuses: 404 for a uuid that is unknown, ended or expired; 429 when the index has its
//! most open queries ([`ResumableLimits::max_open`](crate::vector::ResumableLimits)); 400 for
//! bad input (`maxIdle` outside `1..=max_idle_secs`, `additionalK` outside `1..=topK max`).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::flow::Timestamp;
use crate::vector::text::Embedder;
use crate::vector::{Index, Query, ResumableQueries};

use super::router::ResumableOp;
use super::vector_api::text_query;
use super::write::result;
use super::{Request, Response, WireError};

/// `maxIdle` when a start does not give one (the vector SDK's default).
const DEFAULT_MAX_IDLE_SECS: u64 = 3600;

const START: &str =
    "a query object {\"vector\"?, \"sparseVector\"?, \"data\"?, \"topK\"?, ..., \"maxIdle\"?}";
const NEXT: &str = "{\"uuid\": \"...\", \"additionalK\": n}";
const END: &str = "{\"uuid\": \"...\"}";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Next {
    uuid: String,
    additional_k: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct End {
    uuid: String,
}

/// One resumable query operation at `now`. `dense` is the host's model for text `data`.
pub(crate) fn handle(
    index: &Index,
    dense: Option<&dyn Embedder>,
    queries: &ResumableQueries,
    op: ResumableOp,
    namespace: &str,
    req: &Request,
    now: Timestamp,
) -> Result<Response, WireError> {
    match op {
        ResumableOp::Start => start(index, dense, queries, namespace, &req.body, false, now),
        ResumableOp::StartData => start(index, dense, queries, namespace, &req.body, true, now),
        ResumableOp::Next => {
            let next = parse::<Next>(&req.body, NEXT)?;
            Ok(result(&queries.next(&next.uuid, next.additional_k, now)?))
        }
        ResumableOp::End => {
            let end = parse::<End>(&req.body, END)?;
            queries.end(&end.uuid, now)?;
            Ok(result("Success"))
        }
    }
}

/// Starts a query: a text query on `-data` (`text`), or when the body has `data` (as `/query`
/// accepts it too); else a vector query.
fn start(
    index: &Index,
    dense: Option<&dyn Embedder>,
    queries: &ResumableQueries,
    namespace: &str,
    body: &[u8],
    text: bool,
    now: Timestamp,
) -> Result<Response, WireError> {
    let mut object = match parse::<Value>(body, START)? {
        Value::Object(object) => object,
        other => {
            return Err(WireError::BadJson {
                problem: format!("expected one object, got {}", kind(&other)),
                expected: START,
            });
        }
    };
    let max_idle = match object.remove("maxIdle") {
        None | Some(Value::Null) => DEFAULT_MAX_IDLE_SECS,
        Some(v) => v.as_u64().ok_or_else(|| WireError::BadJson {
            problem: format!("`maxIdle` is {v}, expected a whole number of seconds"),
            expected: START,
        })?,
    };
    // Refused before the ranking is paid for.
    queries.check_open(max_idle, now)?;
    let (first, cursor) = if text || object.contains_key("data") {
        match text_query(index, dense, Value::Object(object))? {
            Some(query) => index.resumable_query(namespace, &query)?,
            None => (Vec::new(), index.empty_resumable_query()),
        }
    } else {
        let query: Query =
            serde_json::from_value(Value::Object(object)).map_err(|err| WireError::BadJson {
                problem: err.to_string(),
                expected: START,
            })?;
        index.resumable_query(namespace, &query)?
    };
    let uuid = queries.open(cursor, max_idle, now)?;
    Ok(result(&json!({ "uuid": uuid, "scores": first })))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "an array",
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Object(_) => "an object",
    }
}

/// The body as `T`; an empty body or JSON of the wrong shape is a 400 naming what was expected.
fn parse<T: DeserializeOwned>(body: &[u8], expected: &'static str) -> Result<T, WireError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(WireError::EmptyBody { expected });
    }
    serde_json::from_slice(body).map_err(|err| WireError::BadJson {
        problem: err.to_string(),
        expected,
    })
}
