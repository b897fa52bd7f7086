//! The delivery side: makes the HTTP calls for the messages the committer's `Dispatch`
//! entries hand out, and reports each outcome back as a logged command (`Complete`, or
//! `Requeue` to retry), so an outcome is never lost with the process.
//!
//! Each call carries `Upstash-Message-Id: <id>`, the id publish answered with; it stays the
//! same across retries and restarts, so a receiver can drop the duplicates that at-least-once
//! delivery allows. Each call is signed: `Upstash-Signature` is a JWT over the destination and
//! the body's hash, made with the current signing key (`flowvec::wire::sign_delivery`), as the
//! SDKs' `Receiver` verifies it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use flowvec::flow::{Dispatch, MessageId};
use flowvec::state::Command;
use flowvec::wire::{Message, Service, sign_delivery};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::committer::{Committer, wall_clock};

/// Shared by the loop and the delivery tasks.
pub(crate) struct Dispatcher {
    committer: Committer,
    /// For the signing keys.
    service: Arc<Service>,
    client: reqwest::Client,
    max_attempts: u32,
    /// Failed attempts so far per message id (in memory: a restart starts counting again).
    attempts: Mutex<HashMap<MessageId, u32>>,
    /// Calls under way, for a bounded wait at shutdown.
    in_flight: AtomicUsize,
}

impl Dispatcher {
    pub(crate) fn new(
        committer: Committer,
        service: Arc<Service>,
        client: reqwest::Client,
        max_attempts: u32,
    ) -> Arc<Self> {
        Arc::new(Self {
            committer,
            service,
            client,
            max_attempts,
            attempts: Mutex::new(HashMap::new()),
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

    /// One delivery call. Any HTTP response completes the message; a transport failure
    /// (refused, reset, timeout) requeues it after a backoff, up to `max_attempts` attempts,
    /// after which it is completed (dropped) and reported.
    async fn deliver(self: Arc<Self>, call: Dispatch<Message>) {
        let Dispatch { id, message, .. } = call;
        let method =
            reqwest::Method::from_bytes(message.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let mut request = self.client.request(method, &message.destination);
        for (name, value) in &message.headers {
            request = request.header(name, value);
        }
        if let Some(keys) = self.service.machine().signing_keys() {
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
            .body(message.body.clone())
            .send()
            .await;
        let command = match outcome {
            Ok(response) => {
                let status = response.status();
                let _ = response.bytes().await; // read it, so the connection can be reused
                self.attempts.lock().remove(&id);
                if !status.is_success() {
                    eprintln!(
                        "delivery {id} to {}: HTTP {status} (not retried)",
                        message.destination
                    );
                }
                Command::Complete { id }
            }
            Err(err) => {
                let failed = {
                    let mut attempts = self.attempts.lock();
                    let n = attempts.entry(id).or_insert(0);
                    *n += 1;
                    *n
                };
                if failed >= self.max_attempts {
                    self.attempts.lock().remove(&id);
                    eprintln!(
                        "delivery {id} to {} failed {failed} times, dropping it: {err}",
                        message.destination
                    );
                    Command::Complete { id }
                } else {
                    // 100 ms, 200 ms, 400 ms, ... capped at 10 s; the call keeps its slot meanwhile.
                    let backoff =
                        Duration::from_millis(100u64 << failed.min(7)).min(Duration::from_secs(10));
                    tokio::time::sleep(backoff).await;
                    Command::Requeue { id }
                }
            }
        };
        if let Err(unavailable) = self.committer.propose(command).await {
            // Not durable: after a restart the message is delivered again (at-least-once).
            eprintln!("delivery {id}: outcome not logged: {}", unavailable.0);
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
