//! The delivery loop: drives `poll_dispatch` / `poll_timeout` and POSTs each message to its
//! destination.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use flowvec::flow::{Dispatch, MessageId, SharedFlowControl, Timestamp};
use flowvec::wire::Message;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

/// Shared by the loop and the delivery tasks.
pub(crate) struct Dispatcher {
    pub(crate) flow: Arc<SharedFlowControl<Message>>,
    /// Woken on publish/resume/pin/unpin/resetRate (by the HTTP handler) and when a delivery
    /// ends (completion or requeue frees a slot).
    pub(crate) wake: Arc<Notify>,
    pub(crate) client: reqwest::Client,
    pub(crate) max_attempts: u32,
    /// Failed attempts so far per message id (entries removed when the message completes).
    attempts: Mutex<HashMap<MessageId, u32>>,
}

/// Wall-clock time for the engine.
pub(crate) fn now() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Timestamp::from_millis(ms)
}

impl Dispatcher {
    pub(crate) fn new(
        flow: Arc<SharedFlowControl<Message>>,
        wake: Arc<Notify>,
        client: reqwest::Client,
        max_attempts: u32,
    ) -> Arc<Self> {
        Arc::new(Self {
            flow,
            wake,
            client,
            max_attempts,
            attempts: Mutex::new(HashMap::new()),
        })
    }

    /// Runs until `stop` turns true: hands every dispatchable message to a delivery task, then
    /// sleeps until the engine's next timer or a wake-up.
    pub(crate) async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            let now = now();
            while let Some(dispatch) = self.flow.poll_dispatch(now) {
                tokio::spawn(Arc::clone(&self).deliver(dispatch));
            }
            // At least 1 ms: a deadline that is already due must not make this loop spin.
            let sleep = match self.flow.poll_timeout() {
                Some(at) => {
                    Duration::from_millis(at.as_millis().saturating_sub(now.as_millis()).max(1))
                }
                None => Duration::from_secs(3600),
            };
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(sleep) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// One delivery call. Any HTTP response completes the message; a transport failure
    /// (refused, reset, timeout) requeues it after a backoff, up to `max_attempts` attempts,
    /// after which it is completed (dropped) and logged.
    async fn deliver(self: Arc<Self>, dispatch: Dispatch<Message>) {
        let Dispatch { id, message, .. } = dispatch;
        let method =
            reqwest::Method::from_bytes(message.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let mut request = self.client.request(method, &message.destination);
        for (name, value) in &message.headers {
            request = request.header(name, value);
        }
        let outcome = request.body(message.body.clone()).send().await;
        match outcome {
            Ok(response) => {
                // Read (and discard) the body so the connection can be reused.
                let status = response.status();
                let _ = response.bytes().await;
                self.attempts.lock().remove(&id);
                if let Err(err) = self.flow.complete(id, now()) {
                    eprintln!("dispatcher: complete {id}: {err}");
                }
                if !status.is_success() {
                    eprintln!(
                        "delivery {id} to {}: HTTP {status} (not retried)",
                        message.destination
                    );
                }
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
                    if let Err(err) = self.flow.complete(id, now()) {
                        eprintln!("dispatcher: complete {id}: {err}");
                    }
                } else {
                    // 100 ms, 200 ms, 400 ms, ... capped at 10 s; the call keeps its slot meanwhile.
                    let backoff =
                        Duration::from_millis(100u64 << failed.min(7)).min(Duration::from_secs(10));
                    eprintln!(
                        "delivery {id} to {} failed (attempt {failed}), retrying in {backoff:?}: {err}",
                        message.destination
                    );
                    tokio::time::sleep(backoff).await;
                    if let Err(err) = self.flow.requeue(id, now()) {
                        eprintln!("dispatcher: requeue {id}: {err}");
                    }
                }
            }
        }
        self.wake.notify_one();
    }
}
