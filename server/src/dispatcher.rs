//! The delivery side: makes the HTTP calls for the messages the committer's `Dispatch`
//! entries hand out, and reports each outcome back as a logged command, so an outcome is
//! never lost with the process: `Complete` for a 2xx (with the response when the message has
//! a callback), `Fail` for anything else (non-2xx, timeout, no connection) with the time of
//! the next attempt. The state machine retries the message then (held in the engine's timers,
//! counted against its key's limits again) while it has retries left, else moves it to the
//! dead letter queue; this side only decides *that* an attempt failed and *when* to try again
//! (exponential backoff with jitter, or the publisher's `Upstash-Retry-Delay` expression).
//!
//! Each call carries `Upstash-Message-Id: <id>`, the id publish answered with; it stays the
//! same across retries and restarts, so a receiver can drop the duplicates that at-least-once
//! delivery allows. Each call is signed: `Upstash-Signature` is a JWT over the destination and
//! the body's hash, made with the current signing key (`flowvec::wire::sign_delivery`), as the
//! SDKs' `Receiver` verifies it. `Upstash-Retried` says how many retries came before.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use flowvec::flow::Dispatch;
use flowvec::state::Command;
use flowvec::wire::{DeliveryResponse, Message, sign_delivery};
use tokio::sync::mpsc;

use crate::committer::{Committer, wall_clock};
use crate::config::Backoff;
use crate::current::Current;

/// The most of a response body kept for a callback or the dead letter queue.
const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// Shared by the loop and the delivery tasks.
pub(crate) struct Dispatcher {
    committer: Committer,
    /// For the signing keys.
    service: Arc<Current>,
    client: reqwest::Client,
    /// Per-attempt timeout unless the message has its own (`Upstash-Timeout`).
    timeout: Duration,
    backoff: Backoff,
    /// Jitter state (splitmix64).
    jitter: AtomicU64,
    /// Calls under way, for a bounded wait at shutdown.
    in_flight: AtomicUsize,
}

impl Dispatcher {
    pub(crate) fn new(
        committer: Committer,
        service: Arc<Current>,
        client: reqwest::Client,
        timeout: Duration,
        backoff: Backoff,
    ) -> Arc<Self> {
        // A per-process seed: std's hash keys are drawn from the OS.
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(wall_clock().as_millis());
            h.finish()
        };
        Arc::new(Self {
            committer,
            service,
            client,
            timeout,
            backoff,
            jitter: AtomicU64::new(seed),
            in_flight: AtomicUsize::new(0),
        })
    }

    /// Starts one delivery task per call the committer hands out, until the channel closes.
    pub(crate) async fn run(
        self: Arc<Self>,
        mut calls: mpsc::UnboundedReceiver<Vec<Dispatch<Message>>>,
    ) {
        while let Some(batch) = calls.recv().await {
            for call in batch {
                self.in_flight.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(Arc::clone(&self).deliver(call));
            }
        }
    }

    /// Waits (at most `limit`) for the calls under way to end and report.
    pub(crate) async fn drain(&self, limit: Duration) -> usize {
        let until = tokio::time::Instant::now() + limit;
        while self.in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.in_flight.load(Ordering::SeqCst)
    }

    /// A uniform draw in `[0, 1)`.
    fn unit(&self) -> f64 {
        let mut z = self
            .jitter
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One delivery attempt, reported as `Complete` or `Fail`.
    async fn deliver(self: Arc<Self>, call: Dispatch<Message>) {
        let Dispatch { id, message, .. } = call;
        let method =
            reqwest::Method::from_bytes(message.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let timeout = message
            .timeout_ms
            .map_or(self.timeout, Duration::from_millis);
        let mut request = self
            .client
            .request(method, &message.destination)
            .timeout(timeout);
        for (name, value) in &message.headers {
            request = request.header(name, value);
        }
        if let Some(keys) = self.service.get().machine().signing_keys() {
            let signature = sign_delivery(
                &keys.current,
                &message.destination,
                &message.body,
                &id.to_string(),
                wall_clock(),
            );
            request = request.header("Upstash-Signature", signature);
        }
        let outcome = request
            .header("Upstash-Message-Id", id.to_string())
            .header("Upstash-Retried", message.retried.to_string())
            .body(message.body.clone())
            .send()
            .await;
        // The response is only logged where it is used: a callback, or the dead letter queue
        // after the last attempt.
        let last = message.retried >= message.retries;
        let (success, response) = match outcome {
            Ok(mut response) => {
                let status = response.status();
                let keep = if status.is_success() {
                    message.callback.is_some()
                } else {
                    last
                };
                let mut kept = DeliveryResponse {
                    status: status.as_u16(),
                    ..DeliveryResponse::default()
                };
                if keep {
                    kept.headers = response
                        .headers()
                        .iter()
                        .filter_map(|(n, v)| Some((n.to_string(), v.to_str().ok()?.to_owned())))
                        .collect();
                }
                // Read the body (so the connection can be reused), keeping a bounded prefix.
                while let Ok(Ok(Some(chunk))) =
                    tokio::time::timeout(timeout, response.chunk()).await
                {
                    if keep && kept.body.len() < MAX_RESPONSE_BODY {
                        let room = MAX_RESPONSE_BODY - kept.body.len();
                        kept.body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
                }
                (status.is_success(), kept)
            }
            Err(err) => {
                let what = if err.is_timeout() {
                    format!("no answer within {} ms", timeout.as_millis())
                } else {
                    format!("no response: {err}")
                };
                (
                    false,
                    DeliveryResponse {
                        status: 0,
                        headers: Vec::new(),
                        body: what.into_bytes(),
                    },
                )
            }
        };
        let command = if success {
            Command::Complete {
                id,
                response: message.callback.is_some().then_some(response),
            }
        } else {
            let delay = self.backoff.for_message(&message, self.unit());
            if last {
                eprintln!(
                    "delivery {id} to {}: attempt {} failed ({}), no retries left: to the dead letter queue",
                    message.destination,
                    message.retried + 1,
                    describe(&response)
                );
            }
            Command::Fail {
                id,
                response,
                retry_at: wall_clock()
                    .add_millis(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
            }
        };
        if let Err(unavailable) = self.committer.propose(command).await {
            // Not durable: after a restart the message is delivered again (at-least-once).
            eprintln!("delivery {id}: outcome not logged: {}", unavailable.problem);
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn describe(response: &DeliveryResponse) -> String {
    if response.status == 0 {
        String::from_utf8_lossy(&response.body).into_owned()
    } else {
        format!("HTTP {}", response.status)
    }
}
