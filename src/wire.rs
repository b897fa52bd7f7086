//! Wire: the platform's HTTP contract mapped onto the engines, without I/O (DESIGN §4).
//!
//! A host (axum, hyper, a test) turns each HTTP request into a [`Request`] (method, raw path,
//! raw query string, headers, body bytes), calls [`Service::handle`] with the current time, and
//! writes the [`Response`] (status, headers, JSON body) back. Every host therefore speaks the
//! exact same contract; `flowvec-server` (`server/`) is one such host, and it also delivers the queued
//! [`Message`]s by driving the flow-control engine that [`Service::flow`] shares.
//!
//! # Routes
//! | API | routes | auth |
//! |---|---|---|
//! | vector | `/upsert`, `/update`, `/query`, `/fetch`, `/delete`, `/range`, `/reset` (`?all`), `/delete-namespace`, each with an optional `/{namespace}`; `/info`, `/list-namespaces`; `/resumable-query[-data][/{namespace}]`, `/resumable-query-next`, `/resumable-query-end`. POST everywhere; also GET for info/list, DELETE for deletions | Bearer |
//! | queue | `POST /v2/publish/{destination}`, `GET /v2/flowControl`, `GET /v2/flowControl/{key}`, `POST /v2/flowControl/{key}/pause\|resume\|pin\|unpin\|resetRate`, `GET /v2/globalParallelism`, `GET /v2/keys`, `POST /v2/keys/rotate`, `GET\|DELETE /v2/messages/{id}`, `DELETE /v2/messages`, `GET\|DELETE /v2/dlq`, `GET\|DELETE /v2/dlq/{dlqId}`, `POST /v2/dlq/retry/{dlqId}` | Bearer |
//! | management | `POST /v2/redis/reset-password/{id}` | Basic |
//!
//! Vector answers are `{"result": …}`; queue and management answers are the bare objects the
//! reference returns (`{"messageId"}`, key info, the Database record). Errors everywhere are
//! `{"error": "...", "status": N}` with the statuses of [`WireError::status`]. Path parameters
//! (namespace, key, database id) are percent-decoded; the publish destination is kept as sent
//! and gets the request's query string back. The exact request and response shapes the public
//! SDKs use are pinned in `tests/e2e/WIRE.md`.
//!
//! # Layout
//! `http.rs` [`Request`]/[`Response`]/[`Method`]; `percent.rs` decoding; `router.rs` path →
//! route, allowed methods, auth kind; `auth.rs` [`Tokens`]; `error.rs` [`WireError`] and the
//! envelope; `vector_api.rs`, `queue_api.rs`, `messages_api.rs`, `dlq_api.rs`,
//! `management_api.rs`, `resumable_api.rs` the handlers; `publish_headers.rs` the delivery
//! options, label, redaction and deduplication id of a publish ([`RetryPolicy`]); `message.rs`
//! the queued [`Message`], its [`Redact`] and a [`DeliveryResponse`];
//! `signing.rs` the signing keys; `service.rs` [`Service`] ties them together.

mod auth;
mod dlq_api;
mod error;
mod http;
mod management_api;
mod message;
mod messages_api;
mod percent;
mod publish_headers;
mod queue_api;
mod resumable_api;
mod retry_delay;
mod router;
mod service;
mod signing;
mod vector_api;
mod write;

pub use auth::Tokens;
pub use error::WireError;
pub use http::{Method, Request, Response};
pub use message::{DeliveryResponse, Message, Redact};
pub use publish_headers::{MAX_DEDUPLICATION_ID_LEN, MAX_LABEL_LEN, RetryPolicy};
pub use retry_delay::{MAX_EXPRESSION_LEN, MAX_RETRY_DELAY_MS, RetryDelay, RetryDelayError};
pub use service::Service;
pub use signing::{SIGNATURE_LIFETIME_SECS, SigningKeys, new_key, sign_delivery};
pub use write::{PendingWrite, Prepared, Reply};
