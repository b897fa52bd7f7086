//! The queue's side of [`StateMachine::apply`]: publication (delays), delivery outcomes
//! (retry, dead letter, callbacks), cancellation and the dead letter queue.
//!
//! The host decides *whether* an attempt failed and *when* to try again (its backoff with
//! jitter, logged in [`Command::Fail`](super::Command::Fail)); whether the message has retries
//! left is decided here, from the message's own count, so a replay decides the same.
//!
//! Callbacks are messages like any other: published here, unkeyed (their destination is not
//! the one the key's limits protect; the global parallelism cap still applies), delivered,
//! signed and retried by the host with the source message's retry count, without callbacks of
//! their own. Their body is the JSON the reference sends: `status`, `header`, `body` (base64
//! of the response body), `retried`, `maxRetries`, `sourceMessageId`, `url`, `method`,
//! `sourceHeader`, `sourceBody` (base64), `notBefore`, `createdAt`, and `dlqId` for a failure
//! callback.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use crate::flow::{FlowControl, FlowError, Limits, MessageId, MessageState, Timestamp};
use crate::wire::{DeliveryResponse, Message};

use super::{Applied, ApplyError, StateMachine};

impl StateMachine {
    /// `Publish` as a client asked for it: a message whose deduplication id was accepted less
    /// than [`DEDUPLICATION_WINDOW_MS`](super::DEDUPLICATION_WINDOW_MS) ago is not queued again
    /// (the answer names the message that was); otherwise [`publish`](Self::publish), and the
    /// id is remembered.
    pub(super) fn publish_once(
        &self,
        key: Option<String>,
        limits: Option<Limits>,
        message: Message,
        now: Timestamp,
    ) -> Result<Applied, ApplyError> {
        let Some(dedup_id) = message.deduplication_id.clone() else {
            return self.publish(key, limits, message, now);
        };
        let now_ms = now.as_millis();
        {
            let mut seen = self.deduplication.write();
            seen.expire(now_ms);
            if let Some(first) = seen.get(&dedup_id, now_ms) {
                return Ok(Applied::Deduplicated(first));
            }
        }
        let applied = self.publish(key, limits, message, now)?;
        if let Applied::Published(id) = applied {
            self.deduplication.write().insert(dedup_id, id, now_ms);
        }
        Ok(applied)
    }

    /// `Publish`: stamps the message with its publication time, key and limits, and turns
    /// a delay into a not-before time.
    pub(super) fn publish(
        &self,
        key: Option<String>,
        limits: Option<Limits>,
        mut message: Message,
        now: Timestamp,
    ) -> Result<Applied, ApplyError> {
        message.created_at = now.as_millis();
        if message.not_before == 0 && message.delay_ms > 0 {
            message.not_before = now.as_millis().saturating_add(message.delay_ms);
        }
        message.flow_control_key.clone_from(&key);
        message.flow_control = limits;
        let not_before = message.not_before;
        let mut engine = self.flow().lock();
        let id = if not_before > now.as_millis() {
            engine.publish_at(
                key.as_deref(),
                limits,
                message,
                Timestamp::from_millis(not_before),
                now,
            )?
        } else {
            engine.publish(key.as_deref(), limits, message, now)?
        };
        Ok(Applied::Published(id))
    }

    /// `Complete`: the call succeeded (or the host gave up on it); publishes the callback if
    /// the message has one and the host sent the response.
    pub(super) fn complete(
        &self,
        id: MessageId,
        response: Option<DeliveryResponse>,
        now: Timestamp,
    ) -> Result<Applied, ApplyError> {
        let mut engine = self.flow().lock();
        let message = engine.complete(id, now)?;
        if let (Some(url), Some(response)) = (&message.callback, response) {
            let body = callback_body(id, &message, &response, None);
            let call = callback(url, &message.callback_headers, &message, body);
            // A full engine refuses the callback; the completion stands either way (and a
            // replay refuses it the same way).
            let _ = engine.publish(None, None, call, now);
        }
        Ok(Applied::Done)
    }

    /// `Fail`: retry at `retry_at` while retries are left, else dead-letter the message and
    /// publish its failure callback.
    pub(super) fn fail(
        &self,
        id: MessageId,
        response: DeliveryResponse,
        retry_at: Timestamp,
        now: Timestamp,
    ) -> Result<Applied, ApplyError> {
        let mut engine = self.flow().lock();
        let (retried, retries) = match engine.message(id) {
            Some(view) if view.state == MessageState::Active => {
                (view.message.retried, view.message.retries)
            }
            _ => return Err(FlowError::NotActive { id }.into()),
        };
        if retried < retries {
            engine.retry(id, retry_at, now)?;
            if let Some(message) = engine.message_mut(id) {
                message.retried += 1;
            }
            return Ok(Applied::Retrying(retry_at.max(now)));
        }
        let message = engine.complete(id, now)?;
        let dlq_id =
            self.dead_letters
                .write()
                .push(id, message.clone(), response.clone(), now.as_millis());
        if let Some(url) = &message.failure_callback {
            let body = callback_body(id, &message, &response, Some(&dlq_id));
            let call = callback(url, &message.failure_callback_headers, &message, body);
            let _ = engine.publish(None, None, call, now);
        }
        Ok(Applied::DeadLettered(dlq_id))
    }

    /// `CancelPending` / `CancelMany`.
    pub(super) fn cancel_many(
        engine: &mut FlowControl<Message>,
        ids: impl IntoIterator<Item = MessageId>,
    ) -> Applied {
        Applied::CancelledMany(
            ids.into_iter()
                .filter(|&id| engine.cancel(id).is_some())
                .count(),
        )
    }

    /// `RetryDeadLetter`: the entry's message, published again with its key.
    pub(super) fn retry_dead_letter(
        &self,
        dlq_id: &str,
        retries: Option<u32>,
        now: Timestamp,
    ) -> Result<Applied, ApplyError> {
        let entry = self
            .dead_letters
            .read()
            .get(dlq_id)
            .cloned()
            .ok_or_else(|| ApplyError::UnknownDeadLetter {
                dlq_id: dlq_id.to_owned(),
            })?;
        let mut message = entry.message;
        message.retried = 0;
        message.retries = retries.unwrap_or(message.retries);
        message.delay_ms = 0;
        message.not_before = 0;
        let key = message.flow_control_key.clone();
        // A keyed publish carries limits: the ones the message was published with (a pinned
        // key keeps its pins, as for any publish).
        let limits = key
            .as_ref()
            .map(|_| message.flow_control.unwrap_or(Limits::UNLIMITED));
        let applied = self.publish(key, limits, message, now)?;
        self.dead_letters.write().remove(dlq_id);
        Ok(applied)
    }
}

/// The callback message to `url`: a JSON POST with the callback headers.
fn callback(url: &str, headers: &[(String, String)], source: &Message, body: Vec<u8>) -> Message {
    let mut all = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    all.extend(headers.iter().cloned());
    Message {
        destination: url.to_owned(),
        method: "POST".to_owned(),
        headers: all,
        body,
        retries: source.retries,
        ..Message::default()
    }
}

/// The reference's callback body.
fn callback_body(
    id: MessageId,
    source: &Message,
    response: &DeliveryResponse,
    dlq_id: Option<&str>,
) -> Vec<u8> {
    let mut body = json!({
        "status": response.status,
        "header": header_map(&response.headers),
        "body": STANDARD.encode(&response.body),
        "retried": source.retried,
        "maxRetries": source.retries,
        "sourceMessageId": id.to_string(),
        "url": source.destination,
        "method": source.method,
        "sourceHeader": header_map(&source.headers),
        "sourceBody": STANDARD.encode(&source.body),
        "notBefore": source.not_before,
        "createdAt": source.created_at,
    });
    if let Some(dlq_id) = dlq_id {
        body["dlqId"] = json!(dlq_id);
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Headers as the reference shows them: name → values.
pub(crate) fn header_map(headers: &[(String, String)]) -> BTreeMap<&str, Vec<&str>> {
    let mut map: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, value) in headers {
        map.entry(name.as_str()).or_default().push(value.as_str());
    }
    map
}
