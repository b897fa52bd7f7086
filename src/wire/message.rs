//! [`Message`]: what the queue keeps for each published message until it is delivered.

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
/// };
/// let json = serde_json::to_string(&m).unwrap();
/// assert!(json.contains("eyJuIjoxfQ==")); // the body, base64
/// assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), m);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
