//! [`WireError`]: everything a request can get wrong, its HTTP status and the error envelope.

use crate::flow::FlowError;
use crate::management::ManagementError;
use crate::vector::{ResumableError, VectorError};

use super::Response;

/// Why a request failed; [`status`](Self::status) maps it to the HTTP status of DESIGN §4 and
/// [`to_response`](Self::to_response) renders the envelope `{"error": "...", "status": N}`.
///
/// | status | variants |
/// |---|---|
/// | 400 | malformed input: JSON, encoding, query parameters, headers, engine validation |
/// | 401 | [`Unauthorized`](Self::Unauthorized), the management credential errors |
/// | 404 | [`RouteNotFound`](Self::RouteNotFound), [`KeyNotFound`](Self::KeyNotFound), [`MessageNotFound`](Self::MessageNotFound), [`DeadLetterNotFound`](Self::DeadLetterNotFound), a missing namespace or database, an unknown or expired resumable query |
/// | 405 | [`MethodNotAllowed`](Self::MethodNotAllowed) |
/// | 409 | [`MessageInFlight`](Self::MessageInFlight), an existing database or account |
/// | 422 | a vector of the wrong dimension |
/// | 429 | too many open resumable queries ([`ResumableError::TooManyOpen`]) |
/// | 500 | the OS random number generator failed, [`Internal`](Self::Internal) |
/// | 503 | the flow-control engine is at capacity, [`Unavailable`](Self::Unavailable) (the host's log failed) |
///
/// # Examples
/// ```
/// use flowvec::wire::WireError;
/// let err = WireError::RouteNotFound { path: "/nope".into() };
/// assert_eq!(err.status(), 404);
/// let res = err.to_response();
/// assert_eq!(res.body_json()["status"], 404);
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// No valid bearer token for the queue or vector API.
    #[error("Unauthorized: {reason}")]
    Unauthorized {
        /// What was wrong (never the token itself).
        reason: &'static str,
    },
    /// No route has this path.
    #[error("no route for path {path:?}")]
    RouteNotFound {
        /// The raw path (shortened if very long).
        path: String,
    },
    /// The route exists but not for this method.
    #[error("method {method} is not allowed on {path:?}; allowed: {allowed}")]
    MethodNotAllowed {
        /// The method that was used.
        method: String,
        /// The raw path (shortened if very long).
        path: String,
        /// The methods the route accepts, comma-separated (also the `Allow` header).
        allowed: &'static str,
    },
    /// A route of the reference service that this service does not offer.
    #[error("{feature} is not supported by this server (path {path:?})")]
    Unsupported {
        /// What the route would do.
        feature: &'static str,
        /// The raw path (shortened if very long).
        path: String,
    },
    /// A route that needs a JSON body got none.
    #[error("request body is empty; expected {expected}")]
    EmptyBody {
        /// What the body should hold.
        expected: &'static str,
    },
    /// The body is not JSON of the expected shape.
    #[error("invalid JSON body: {problem}; expected {expected}")]
    BadJson {
        /// The parser's message (position, unknown field, wrong type).
        problem: String,
        /// What the body should hold.
        expected: &'static str,
    },
    /// A malformed percent-escape or non-UTF-8 bytes in a path segment or query string.
    #[error("invalid {what} {value:?}: {problem}")]
    BadEncoding {
        /// Which part of the request.
        what: String,
        /// The raw value (shortened if very long).
        value: String,
        /// What is wrong.
        problem: String,
    },
    /// A query parameter with a value outside what the route accepts.
    #[error("invalid query parameter {name}={value:?}; expected {expected}")]
    BadQueryParameter {
        /// The parameter's name.
        name: String,
        /// The value given (shortened if very long).
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// A query parameter the route does not know.
    #[error("unknown query parameter {name:?}; expected {expected}")]
    UnknownQueryParameter {
        /// The parameter's name (shortened if very long).
        name: String,
        /// The parameters the route accepts.
        expected: &'static str,
    },
    /// A header that must be text or appear consistently does not.
    #[error("invalid header {name}: {problem}")]
    BadHeader {
        /// The header's name.
        name: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A publish destination that is not an absolute `http://` or `https://` URL.
    #[error("invalid destination {destination:?}; expected an absolute http:// or https:// URL")]
    BadDestination {
        /// The destination given (shortened if very long).
        destination: String,
    },
    /// `GET /v2/flowControl/{key}` for a key the engine does not know.
    #[error("flow-control key {key:?} not found")]
    KeyNotFound {
        /// The key (shortened if very long).
        key: String,
    },
    /// No message with this id is held: never published, already delivered, cancelled or
    /// dead-lettered.
    #[error("message {id:?} not found (unknown, delivered, cancelled or in the dead letter queue)")]
    MessageNotFound {
        /// The id (shortened if very long).
        id: String,
    },
    /// The message's call is under way: too late to cancel.
    #[error("message {id:?} is being delivered right now and cannot be cancelled")]
    MessageInFlight {
        /// The id.
        id: String,
    },
    /// No dead letter queue entry has this id.
    #[error("no message with dlqId {dlq_id:?} in the dead letter queue")]
    DeadLetterNotFound {
        /// The id (shortened if very long).
        dlq_id: String,
    },
    /// The host could not make the write durable (its log failed, or it is shutting down).
    /// It was not applied by this process, but its outcome is unknown: the entry may have
    /// reached the disk before the failure and then reappears after a restart. Retry only
    /// writes that are idempotent (upserts, deletes), or check first.
    #[error("service unavailable: {problem}")]
    Unavailable {
        /// What failed.
        problem: String,
    },
    /// A bug: the engines answered something the contract does not expect.
    #[error("internal error: {problem}")]
    Internal {
        /// What happened.
        problem: String,
    },
    /// The vector engine refused the request.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// The table of resumable queries refused the request (its
    /// [`ResumableError::Vector`] errors become [`Vector`](Self::Vector)).
    #[error(transparent)]
    Resumable(ResumableError),
    /// The flow-control engine refused the request.
    #[error(transparent)]
    Flow(#[from] FlowError),
    /// The management part refused the request (credentials, missing database, randomness).
    #[error(transparent)]
    Management(#[from] ManagementError),
}

impl From<ResumableError> for WireError {
    fn from(err: ResumableError) -> Self {
        match err {
            ResumableError::Vector(err) => Self::Vector(err),
            other => Self::Resumable(other),
        }
    }
}

impl From<crate::state::ApplyError> for WireError {
    fn from(err: crate::state::ApplyError) -> Self {
        use crate::state::ApplyError;
        match err {
            ApplyError::Vector(err) => Self::Vector(err),
            ApplyError::Flow(err) => Self::Flow(err),
            ApplyError::Management(err) => Self::Management(err),
            ApplyError::UnknownDeadLetter { dlq_id } => Self::DeadLetterNotFound {
                dlq_id: super::percent::quote(&dlq_id),
            },
        }
    }
}

impl WireError {
    /// The HTTP status of this error (table above).
    #[must_use]
    pub fn status(&self) -> u16 {
        match self {
            Self::Unauthorized { .. } => 401,
            Self::RouteNotFound { .. }
            | Self::KeyNotFound { .. }
            | Self::MessageNotFound { .. }
            | Self::DeadLetterNotFound { .. } => 404,
            Self::MessageInFlight { .. } => 409,
            Self::MethodNotAllowed { .. } => 405,
            Self::Unavailable { .. } => 503,
            Self::Internal { .. } => 500,
            Self::Vector(err) => match err {
                VectorError::DimensionMismatch { .. } => 422,
                VectorError::NamespaceNotFound { .. } => 404,
                _ => 400,
            },
            Self::Resumable(err) => match err {
                ResumableError::NotFound { .. } => 404,
                ResumableError::TooManyOpen { .. } => 429,
                ResumableError::Vector(err) => Self::Vector(err.clone()).status(),
                _ => 400,
            },
            Self::Flow(err) => match err {
                FlowError::UnknownKey { .. } => 404,
                FlowError::CapacityExceeded { .. } => 503,
                _ => 400,
            },
            Self::Management(err) => match err {
                ManagementError::DatabaseNotFound { .. } => 404,
                ManagementError::Randomness { .. } => 500,
                ManagementError::DatabaseExists { .. } | ManagementError::AccountExists { .. } => {
                    409
                }
                ManagementError::InvalidField { .. } | ManagementError::UnknownValue { .. } => 400,
                // Every credential variant (missing, scheme, base64, UTF-8, colon, empty,
                // control character, too long, invalid) and any added later.
                _ => 401,
            },
            Self::Unsupported { .. }
            | Self::EmptyBody { .. }
            | Self::BadJson { .. }
            | Self::BadEncoding { .. }
            | Self::BadQueryParameter { .. }
            | Self::UnknownQueryParameter { .. }
            | Self::BadHeader { .. }
            | Self::BadDestination { .. } => 400,
        }
    }

    /// The error envelope `{"error": "<message>", "status": N}` with the status of
    /// [`status`](Self::status); 401 adds `WWW-Authenticate`, 405 adds `Allow`.
    pub fn to_response(&self) -> Response {
        let status = self.status();
        let res = Response::json(
            status,
            &serde_json::json!({ "error": self.to_string(), "status": status }),
        );
        match self {
            Self::MethodNotAllowed { allowed, .. } => res.with_header("Allow", *allowed),
            Self::Management(_) if status == 401 => {
                res.with_header("WWW-Authenticate", r#"Basic realm="management""#)
            }
            Self::Unauthorized { .. } => res.with_header("WWW-Authenticate", "Bearer"),
            _ => res,
        }
    }
}
