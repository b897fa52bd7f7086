//! [`Message`]: what the queue keeps for each published message until it is delivered;
//! [`DeliveryResponse`]: what a delivery attempt got back, as the host reports it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A published message: where to deliver it and what to send.
///
/// Kept in the flow-control engine from publish until the host completes its delivery; it is
/// part of the engine's snapshot, where the body is base64 text so snapshots stay compact JSON.
///
/// # Examples
/// ```
/// use flowvec::wire::Message;
/// let m = Message {
///     destination: "http://127.0.0.1:9000/hook?x=1".into(),
///     method: "POST".into(),
///     headers: vec![("Content-Type".into(), "application/json".into())],
///     body: b"{\"n\":1}".to_vec(),
///     retries: 3,
///     ..Message::default()
/// };
/// let json = serde_json::to_string(&m).unwrap();
/// assert!(json.contains("eyJuIjoxfQ==")); // the body, base64
/// assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), m);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Message {
    /// The absolute destination URL, with the query string the publisher gave it.
    pub destination: String,
    /// The method of the delivery call (`POST` unless the publisher sent `Upstash-Method`).
    pub method: String,
    /// Headers to send with the delivery: the publish request's `Content-Type` and every
    /// `Upstash-Forward-<Name>` header as `<Name>`.
    pub headers: Vec<(String, String)>,
    /// The body bytes, exactly as published.
    #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
    pub body: Vec<u8>,
    /// How many times a failed delivery is retried (`Upstash-Retries`); after that many
    /// retries fail too, the message goes to the dead letter queue.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// How many retries were made so far (sent as `Upstash-Retried`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u32,
    /// The publisher's delay between retries (`Upstash-Retry-Delay`), an expression of
    /// `retried` in ms checked at publication ([`RetryDelay`](super::RetryDelay)); `None` for
    /// the host's own backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_delay: Option<String>,
    /// Delay from publication (`Upstash-Delay`), ms; the state machine turns it into
    /// [`not_before`](Self::not_before) with the publish command's `now`.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub delay_ms: u64,
    /// Not delivered before this Unix time, ms (`Upstash-Not-Before`, or publication plus the
    /// delay); 0 for at once.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub not_before: u64,
    /// Publication time, Unix ms (set by the state machine).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub created_at: u64,
    /// Per-attempt timeout (`Upstash-Timeout`), ms; `None` for the host's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Called after a successful delivery (`Upstash-Callback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<String>,
    /// Headers of the callback call (`Upstash-Callback-<Name>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callback_headers: Vec<(String, String)>,
    /// Called after the last failed attempt (`Upstash-Failure-Callback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_callback: Option<String>,
    /// Headers of the failure callback call (`Upstash-Failure-Callback-<Name>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_callback_headers: Vec<(String, String)>,
    /// Its deduplication id (`Upstash-Deduplication-Id`, or a digest of its destination, body
    /// and headers for `Upstash-Content-Based-Deduplication: true`): a publish with an id
    /// accepted in the last 10 minutes is not queued again
    /// ([`Deduplication`](crate::state::Deduplication)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deduplication_id: Option<String>,
    /// The publisher's label (`Upstash-Label`), shown with the message and its dead letter
    /// entry, and a filter of the dead letter list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What the API shows only as `REDACTED:<SHA-256>` (`Upstash-Redact-Fields`); delivery
    /// always sends the real values.
    #[serde(default, skip_serializing_if = "Redact::is_nothing")]
    pub redact: Redact,
    /// The flow-control key it was published with (set by the state machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control_key: Option<String>,
    /// The flow-control limits it was published with (set by the state machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<crate::flow::Limits>,
}

/// The fields of a message that API answers (`GET /v2/messages/{id}`, dead letter entries)
/// show as `REDACTED:<hex SHA-256 of the value>` (`Upstash-Redact-Fields: body, header,
/// header[Name]`). The hash lets a publisher check a value without the API revealing it.
///
/// # Examples
/// ```
/// use flowvec::wire::Redact;
/// let redact = Redact { headers: vec!["Authorization".into()], ..Redact::default() };
/// assert!(redact.header("authorization") && !redact.header("Content-Type"));
/// assert_eq!(&Redact::redacted(b"")[..16], "REDACTED:e3b0c44");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redact {
    /// The body.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub body: bool,
    /// Every header.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_headers: bool,
    /// These headers (names compared without regard to case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
}

impl Redact {
    /// Whether nothing is redacted.
    #[must_use]
    pub fn is_nothing(&self) -> bool {
        !self.body && !self.all_headers && self.headers.is_empty()
    }

    /// Whether the header `name` is redacted.
    #[must_use]
    pub fn header(&self, name: &str) -> bool {
        self.all_headers || self.headers.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// `value` as the API shows a redacted field: `REDACTED:` and its SHA-256 in hex.
    #[must_use]
    pub fn redacted(value: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        format!("REDACTED:{:x}", Sha256::digest(value))
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// What one delivery attempt got back: the status (0 when no response came: refused,
/// reset, timed out), the response headers and body (bounded by the host). The host reports
/// it with [`Command::Complete`](crate::state::Command::Complete) or
/// [`Command::Fail`](crate::state::Command::Fail); callbacks and the dead letter queue show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliveryResponse {
    /// The HTTP status, 0 without a response.
    pub status: u16,
    /// The response headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The response body (or the transport error's text when there was no response).
    #[serde(
        default,
        serialize_with = "to_base64",
        deserialize_with = "from_base64"
    )]
    pub body: Vec<u8>,
}

fn to_base64<S: Serializer>(body: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&STANDARD.encode(body))
}

fn from_base64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    STANDARD
        .decode(text.as_bytes())
        .map_err(|err| serde::de::Error::custom(format!("message body is not base64: {err}")))
}
