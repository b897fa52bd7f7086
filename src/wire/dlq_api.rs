//! The dead letter queue API, as the SDKs' `dlq` clients use it: `GET /v2/dlq` (paged, with
//! filters), `GET /v2/dlq/{dlqId}`, `DELETE /v2/dlq/{dlqId}`, `DELETE /v2/dlq`
//! (`{"dlqIds": [...]}`) and `POST /v2/dlq/retry/{dlqId}`.

use serde_json::{Map, Value, json};

use crate::state::{Command, DeadLetter, DeadLetters};

use super::percent::{query_pairs, quote};
use super::publish_headers::{RetryPolicy, retries};
use super::write::{Prepared, ReplyKind, write};
use super::{Request, Response, WireError};

/// One query parameter's test.
type Filter = Box<dyn Fn(&DeadLetter) -> bool>;

/// Entries per page unless `count` says otherwise; also the most a page holds.
const PAGE: usize = 100;

/// A DLQ entry as the SDKs' `DlqMessage` reads it.
fn entry_json(entry: &DeadLetter) -> Map<String, Value> {
    let mut out = super::messages_api::message_json(&entry.message_id.to_string(), &entry.message);
    out.insert("dlqId".into(), json!(entry.dlq_id));
    out.insert("responseStatus".into(), json!(entry.response.status));
    out.insert(
        "responseHeader".into(),
        json!(crate::state::header_map(&entry.response.headers)),
    );
    match std::str::from_utf8(&entry.response.body) {
        Ok(text) => out.insert("responseBody".into(), json!(text)),
        Err(_) => {
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(&entry.response.body);
            out.insert("responseBodyBase64".into(), json!(encoded))
        }
    };
    out
}

/// `GET /v2/dlq?cursor&count&messageId&url&responseStatus&fromDate&toDate&label`: a page of
/// entries in landing order, `{"messages": [...], "cursor": "..."}` (no cursor on the last
/// page). Filters this server has no such thing for (`topicName`, `queueName`, `scheduleId`,
/// `callerIp`) match nothing.
pub(crate) fn list(dlq: &DeadLetters, req: &Request) -> Result<Response, WireError> {
    let mut cursor = 0u64;
    let mut count = PAGE;
    let mut filters: Vec<Filter> = Vec::new();
    for (name, value) in query_pairs(&req.query)? {
        let number = |expected: &'static str| {
            value
                .parse::<u64>()
                .map_err(|_| WireError::BadQueryParameter {
                    name: name.clone(),
                    value: quote(&value),
                    expected,
                })
        };
        match name.as_str() {
            "cursor" => cursor = number("a cursor from a previous page")?,
            "count" => {
                count = usize::try_from(number("an integer from 1 to 100")?)
                    .ok()
                    .filter(|n| (1..=PAGE).contains(n))
                    .ok_or_else(|| WireError::BadQueryParameter {
                        name: name.clone(),
                        value: quote(&value),
                        expected: "an integer from 1 to 100",
                    })?;
            }
            "messageId" => filters.push(Box::new(move |e| e.message_id.to_string() == value)),
            "url" => filters.push(Box::new(move |e| e.message.destination == value)),
            "responseStatus" => {
                let status = number("an HTTP status")?;
                filters.push(Box::new(move |e| u64::from(e.response.status) == status));
            }
            "fromDate" => {
                let from = number("Unix ms")?;
                filters.push(Box::new(move |e| e.landed_at >= from));
            }
            "toDate" => {
                let to = number("Unix ms")?;
                filters.push(Box::new(move |e| e.landed_at <= to));
            }
            "label" => filters.push(Box::new(move |e| {
                e.message.label.as_deref() == Some(value.as_str())
            })),
            "topicName" | "queueName" | "scheduleId" | "callerIp" => {
                filters.push(Box::new(|_| false));
            }
            other => {
                return Err(WireError::UnknownQueryParameter {
                    name: quote(other),
                    expected: "cursor, count, messageId, url, responseStatus, fromDate, toDate, topicName, queueName, scheduleId, callerIp, label",
                });
            }
        }
    }
    let mut matching = dlq
        .from_cursor(cursor)
        .filter(|e| filters.iter().all(|f| f(e)));
    let page: Vec<Map<String, Value>> = matching.by_ref().take(count).map(entry_json).collect();
    let mut out = json!({ "messages": page });
    if let Some(next) = matching.next() {
        out["cursor"] = json!(DeadLetters::cursor_of(next).to_string());
    }
    Ok(Response::json(200, &out))
}

/// `GET /v2/dlq/{dlqId}`
pub(crate) fn get(dlq: &DeadLetters, dlq_id: &str) -> Result<Response, WireError> {
    dlq.get(dlq_id)
        .map(|entry| Response::json(200, &entry_json(entry)))
        .ok_or_else(|| WireError::DeadLetterNotFound {
            dlq_id: quote(dlq_id),
        })
}

/// `DELETE /v2/dlq/{dlqId}`: 404 for an unknown id.
pub(crate) fn delete(dlq: &DeadLetters, dlq_id: &str) -> Result<Prepared, WireError> {
    if dlq.get(dlq_id).is_none() {
        return Err(WireError::DeadLetterNotFound {
            dlq_id: quote(dlq_id),
        });
    }
    Ok(write(
        Command::DeleteDeadLetters {
            dlq_ids: vec![dlq_id.to_owned()],
        },
        ReplyKind::DeadLetterDeleted {
            dlq_id: quote(dlq_id),
        },
    ))
}

/// `DELETE /v2/dlq` with `{"dlqIds": [...]}`: `{"deleted": n}`.
pub(crate) fn delete_many(req: &Request) -> Result<Prepared, WireError> {
    const EXPECTED: &str = r#"{"dlqIds": ["<dlqId>", ...]}"#;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Ids {
        dlq_ids: Vec<String>,
    }
    let body = req.body.trim_ascii();
    if body.is_empty() {
        return Err(WireError::EmptyBody { expected: EXPECTED });
    }
    let ids: Ids = serde_json::from_slice(body).map_err(|err| WireError::BadJson {
        problem: err.to_string(),
        expected: EXPECTED,
    })?;
    Ok(write(
        Command::DeleteDeadLetters {
            dlq_ids: ids.dlq_ids,
        },
        ReplyKind::DeadLettersDeleted,
    ))
}

/// `POST /v2/dlq/retry/{dlqId}`: publishes the message again (`Upstash-Retries` on the
/// request replaces its retry count) and answers `{"messageId"}` with the new id.
pub(crate) fn retry(
    dlq: &DeadLetters,
    dlq_id: &str,
    req: &Request,
    policy: RetryPolicy,
) -> Result<Prepared, WireError> {
    if dlq.get(dlq_id).is_none() {
        return Err(WireError::DeadLetterNotFound {
            dlq_id: quote(dlq_id),
        });
    }
    let retries = req
        .header("Upstash-Retries")
        .map(|v| retries(v, policy.max_retries, "Upstash-Retries"))
        .transpose()?;
    Ok(write(
        Command::RetryDeadLetter {
            dlq_id: dlq_id.to_owned(),
            retries,
        },
        ReplyKind::Published,
    ))
}
