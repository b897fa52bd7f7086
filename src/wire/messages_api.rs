//! The messages API: `GET /v2/messages/{id}` (a held message: where it stands, attempts,
//! next delivery time), `DELETE /v2/messages/{id}` (cancel while waiting, delayed or in a
//! retry's backoff), `DELETE /v2/messages` (cancel a list, a key's pending messages, or all).

use serde_json::{Map, Value, json};

use crate::flow::{MessageId, MessageState, SharedFlowControl};
use crate::state::Command;

use super::percent::{query_pairs, quote};
use super::write::{Prepared, ReplyKind, write};
use super::{Message, Request, Response, WireError};

/// A message as the reference shows it (the SDKs' `Message`), plus `retried`.
pub(crate) fn message_json(id: &str, message: &Message) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("messageId".into(), json!(id));
    out.insert("url".into(), json!(message.destination));
    out.insert("method".into(), json!(message.method));
    let redact = &message.redact;
    let headers: Vec<(String, String)> = message
        .headers
        .iter()
        .map(|(name, value)| {
            let shown = if redact.header(name) {
                super::Redact::redacted(value.as_bytes())
            } else {
                value.clone()
            };
            (name.clone(), shown)
        })
        .collect();
    out.insert("header".into(), json!(crate::state::header_map(&headers)));
    match std::str::from_utf8(&message.body) {
        _ if redact.body => {
            out.insert("body".into(), json!(super::Redact::redacted(&message.body)))
        }
        Ok(text) => out.insert("body".into(), json!(text)),
        Err(_) => {
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(&message.body);
            out.insert("bodyBase64".into(), json!(encoded))
        }
    };
    out.insert("maxRetries".into(), json!(message.retries));
    out.insert("retried".into(), json!(message.retried));
    if let Some(expression) = &message.retry_delay {
        out.insert("retryDelayExpression".into(), json!(expression));
    }
    if let Some(label) = &message.label {
        out.insert("label".into(), json!(label));
    }
    out.insert("notBefore".into(), json!(message.not_before));
    out.insert("createdAt".into(), json!(message.created_at));
    if let Some(url) = &message.callback {
        out.insert("callback".into(), json!(url));
        out.insert(
            "callbackHeader".into(),
            json!(crate::state::header_map(&message.callback_headers)),
        );
    }
    if let Some(url) = &message.failure_callback {
        out.insert("failureCallback".into(), json!(url));
        out.insert(
            "failureCallbackHeader".into(),
            json!(crate::state::header_map(&message.failure_callback_headers)),
        );
    }
    if let Some(key) = &message.flow_control_key {
        out.insert("flowControlKey".into(), json!(key));
        let limits = message.flow_control.unwrap_or_default();
        if let Some(p) = limits.parallelism {
            out.insert("parallelism".into(), json!(p.get()));
        }
        if let Some(rate) = limits.rate {
            out.insert("rate".into(), json!(rate.max.get()));
            out.insert("period".into(), json!(rate.period.as_secs()));
        }
    }
    out
}

fn parse_id(raw: &str) -> Result<MessageId, WireError> {
    raw.parse()
        .map_err(|_| WireError::MessageNotFound { id: quote(raw) })
}

/// `GET /v2/messages/{id}`: the message with `state` (`WAITING`, `ACTIVE`, `DELAYED`, or
/// `RETRY` for a retry's backoff) and, while held, `nextDeliveryAt` (Unix ms).
pub(crate) fn get(flow: &SharedFlowControl<Message>, raw: &str) -> Result<Response, WireError> {
    let id = parse_id(raw)?;
    let engine = flow.lock();
    let view = engine
        .message(id)
        .ok_or_else(|| WireError::MessageNotFound { id: quote(raw) })?;
    let mut out = message_json(&id.to_string(), view.message);
    let state = match view.state {
        MessageState::Waiting => "WAITING",
        MessageState::Active => "ACTIVE",
        MessageState::Delayed { .. } if view.message.retried > 0 => "RETRY",
        MessageState::Delayed { .. } => "DELAYED",
    };
    out.insert("state".into(), json!(state));
    if let MessageState::Delayed { until } = view.state {
        out.insert("nextDeliveryAt".into(), json!(until.as_millis()));
    }
    Ok(Response::json(200, &out))
}

/// `DELETE /v2/messages/{id}`: 404 for an unknown id, 409 while its call is under way;
/// otherwise the cancel command.
pub(crate) fn cancel(flow: &SharedFlowControl<Message>, raw: &str) -> Result<Prepared, WireError> {
    let id = parse_id(raw)?;
    match flow.lock().message(id).map(|view| view.state) {
        None => Err(WireError::MessageNotFound { id: quote(raw) }),
        Some(MessageState::Active) => Err(WireError::MessageInFlight { id: quote(raw) }),
        Some(_) => Ok(write(
            Command::Cancel { id },
            ReplyKind::Cancelled { id: quote(raw) },
        )),
    }
}

/// `DELETE /v2/messages`: with a body `{"messageIds": [...]}` those messages; else, with
/// `?flowControlKey=k`, that key's pending messages; else every pending message. Answers
/// `{"cancelled": n}`.
pub(crate) fn cancel_many(req: &Request) -> Result<Prepared, WireError> {
    let mut key = None;
    for (name, value) in query_pairs(&req.query)? {
        match name.as_str() {
            "flowControlKey" => key = Some(value),
            other => {
                return Err(WireError::UnknownQueryParameter {
                    name: quote(other),
                    expected: "flowControlKey",
                });
            }
        }
    }
    let body = req.body.trim_ascii();
    if body.is_empty() {
        return Ok(write(
            Command::CancelPending { key },
            ReplyKind::CancelledMany,
        ));
    }
    const EXPECTED: &str = r#"{"messageIds": ["<id>", ...]}"#;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Ids {
        message_ids: Vec<String>,
    }
    let ids: Ids = serde_json::from_slice(body).map_err(|err| WireError::BadJson {
        problem: err.to_string(),
        expected: EXPECTED,
    })?;
    if key.is_some() {
        return Err(WireError::BadJson {
            problem: "both a body with messageIds and ?flowControlKey; send one".to_owned(),
            expected: EXPECTED,
        });
    }
    // Ids that are not message ids cannot be held: skipped, like unknown ones.
    let ids = ids
        .message_ids
        .iter()
        .filter_map(|id| id.parse().ok())
        .collect();
    Ok(write(Command::CancelMany { ids }, ReplyKind::CancelledMany))
}
