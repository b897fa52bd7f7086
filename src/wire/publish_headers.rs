//! The delivery options of a publish request: `Upstash-Retries`, `Upstash-Retry-Delay`,
//! `Upstash-Delay`, `Upstash-Not-Before`, `Upstash-Timeout`, `Upstash-Callback` and
//! `Upstash-Failure-Callback` with their `-<Name>` headers, `Upstash-Label`, and the
//! deduplication id (`Upstash-Deduplication-Id`, `Upstash-Content-Based-Deduplication`). Each
//! bad value is a 400 naming the header and what it takes.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::percent::quote;
use super::{Message, Request, WireError};

/// The longest `Upstash-Deduplication-Id`, in bytes.
pub const MAX_DEDUPLICATION_ID_LEN: usize = 512;
/// The longest `Upstash-Label`, in bytes.
pub const MAX_LABEL_LEN: usize = 512;

/// The server's retry settings: the count a message gets without `Upstash-Retries`, and the
/// most it may ask for.
///
/// # Examples
/// ```
/// use flowvec::wire::RetryPolicy;
/// let policy = RetryPolicy::default();
/// assert_eq!((policy.default_retries, policy.max_retries), (3, 20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries of a message published without `Upstash-Retries`.
    pub default_retries: u32,
    /// The largest `Upstash-Retries` accepted.
    pub max_retries: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            default_retries: 3,
            max_retries: 20,
        }
    }
}

/// Fills `message`'s delivery options from the request's headers.
pub(crate) fn apply(
    req: &Request,
    policy: RetryPolicy,
    message: &mut Message,
) -> Result<(), WireError> {
    if let Some(value) = req.header("Upstash-Retry-Delay") {
        super::RetryDelay::parse(value).map_err(|e| WireError::BadHeader {
            name: "Upstash-Retry-Delay",
            problem: format!("{:?} is not a retry delay expression: {e}", quote(value)),
        })?;
        message.retry_delay = Some(value.trim().to_owned());
    }
    message.retries = match req.header("Upstash-Retries") {
        Some(value) => retries(value, policy.max_retries, "Upstash-Retries")?,
        None => policy.default_retries,
    };
    if let Some(value) = req.header("Upstash-Delay") {
        message.delay_ms = duration_ms(value, "Upstash-Delay")?;
    }
    if let Some(value) = req.header("Upstash-Not-Before") {
        let secs = value
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| *s <= u64::MAX / 1000)
            .ok_or_else(|| WireError::BadHeader {
                name: "Upstash-Not-Before",
                problem: format!(
                    "{:?} is not a Unix time in seconds (a non-negative integer)",
                    quote(value)
                ),
            })?;
        // It overrides Upstash-Delay, as in the reference.
        message.not_before = secs * 1000;
        message.delay_ms = 0;
    }
    if let Some(value) = req.header("Upstash-Timeout") {
        let ms = duration_ms(value, "Upstash-Timeout")?;
        if ms == 0 {
            return Err(WireError::BadHeader {
                name: "Upstash-Timeout",
                problem: "a timeout must be longer than 0".to_owned(),
            });
        }
        message.timeout_ms = Some(ms);
    }
    message.callback = callback_url(req, "Upstash-Callback")?;
    message.failure_callback = callback_url(req, "Upstash-Failure-Callback")?;
    message.callback_headers = prefixed(req, "upstash-callback-");
    message.failure_callback_headers = prefixed(req, "upstash-failure-callback-");
    message.label = req
        .header("Upstash-Label")
        .map(|value| bounded_text(value, "Upstash-Label", "label", MAX_LABEL_LEN))
        .transpose()?;
    if let Some(value) = req.header("Upstash-Redact-Fields") {
        message.redact = redact_fields(value)?;
    }
    message.deduplication_id = deduplication_id(req, message)?;
    Ok(())
}

/// `Upstash-Redact-Fields`: a comma-separated list of `body`, `header` (every header) and
/// `header[Name]`; the reference's documentation spells them `headers`, `headers[Name]`, and
/// both are taken.
fn redact_fields(value: &str) -> Result<super::Redact, WireError> {
    let mut redact = super::Redact::default();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let named = item
            .strip_prefix("headers[")
            .or_else(|| item.strip_prefix("header["))
            .and_then(|rest| rest.strip_suffix(']'))
            .map(str::trim);
        match (item, named) {
            ("body", _) => redact.body = true,
            ("header" | "headers", _) => redact.all_headers = true,
            (_, Some(name)) if !name.is_empty() => redact.headers.push(name.to_owned()),
            _ => {
                return Err(WireError::BadHeader {
                    name: "Upstash-Redact-Fields",
                    problem: format!(
                        "{:?} is not a field to redact; expected body, header or header[Name]",
                        quote(item)
                    ),
                });
            }
        }
    }
    Ok(redact)
}

/// A header's text, trimmed, of 1 to `max` bytes.
fn bounded_text(
    value: &str,
    name: &'static str,
    what: &str,
    max: usize,
) -> Result<String, WireError> {
    let text = value.trim();
    if text.is_empty() || text.len() > max {
        return Err(WireError::BadHeader {
            name,
            problem: format!(
                "{:?} ({} bytes) is not a {what}: expected 1 to {max} bytes",
                quote(value),
                text.len()
            ),
        });
    }
    Ok(text.to_owned())
}

/// The message's deduplication id: `Upstash-Deduplication-Id` as sent (trimmed, 1 to
/// [`MAX_DEDUPLICATION_ID_LEN`] bytes), else, with `Upstash-Content-Based-Deduplication: true`,
/// `content:` and a digest of what the reference names: the destination, the body and the
/// headers to deliver (`Content-Type` and the `Upstash-Forward-` ones, in any order).
fn deduplication_id(req: &Request, message: &Message) -> Result<Option<String>, WireError> {
    const CONTENT: &str = "Upstash-Content-Based-Deduplication";
    let content_based = match req.header(CONTENT) {
        None => false,
        Some(value) if value.trim().eq_ignore_ascii_case("true") => true,
        Some(value) if value.trim().eq_ignore_ascii_case("false") => false,
        Some(value) => {
            return Err(WireError::BadHeader {
                name: CONTENT,
                problem: format!("{:?} is not true or false", quote(value)),
            });
        }
    };
    if let Some(value) = req.header("Upstash-Deduplication-Id") {
        return bounded_text(
            value,
            "Upstash-Deduplication-Id",
            "deduplication id",
            MAX_DEDUPLICATION_ID_LEN,
        )
        .map(Some);
    }
    Ok(content_based.then(|| content_digest(message)))
}

/// `content:` and the URL-safe base64 of a SHA-256 over the destination, the headers (sorted,
/// names lower-cased) and the body, each field prefixed by its length so no two messages share
/// an input.
fn content_digest(message: &Message) -> String {
    let mut headers: Vec<(String, &str)> = message
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.as_str()))
        .collect();
    headers.sort_unstable();
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    // Every field is length-prefixed and the headers come in pairs before the body, so the
    // sequence splits one way only: no count is needed.
    field(message.destination.as_bytes());
    for (name, value) in &headers {
        field(name.as_bytes());
        field(value.as_bytes());
    }
    field(&message.body);
    format!("content:{}", URL_SAFE_NO_PAD.encode(hash.finalize()))
}

/// A retry count from 0 to `max`.
pub(crate) fn retries(value: &str, max: u32, name: &'static str) -> Result<u32, WireError> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| WireError::BadHeader {
            name,
            problem: format!("{:?} is not an integer from 0 to {max}", quote(value)),
        })
}

/// A duration: a sequence of numbers with units `ms`, `s`, `m`, `h`, `d` (`1500ms`, `10s`,
/// `1m30s`, `2h`, `1d`), or a bare number of seconds.
fn duration_ms(value: &str, name: &'static str) -> Result<u64, WireError> {
    let bad = || WireError::BadHeader {
        name,
        problem: format!(
            "{:?} is not a duration; expected a non-negative number with a unit (ms, s, m, h, d), e.g. 10s, 1500ms or 1m30s",
            quote(value)
        ),
    };
    let text = value.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let secs: u64 = text.parse().map_err(|_| bad())?;
        return secs.checked_mul(1000).ok_or_else(bad);
    }
    let mut total: u64 = 0;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let scale = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = number
            .checked_mul(scale)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(bad)?;
    }
    Ok(total)
}

/// A callback URL header: absolute http(s), or absent.
fn callback_url(req: &Request, name: &'static str) -> Result<Option<String>, WireError> {
    let Some(value) = req.header(name) else {
        return Ok(None);
    };
    let url = value.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let host = rest.map_or("", |r| r.split(['/', '?', '#']).next().unwrap_or(""));
    if host.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(WireError::BadHeader {
            name,
            problem: format!(
                "{:?} is not an absolute http:// or https:// URL",
                quote(value)
            ),
        });
    }
    Ok(Some(url.to_owned()))
}

/// `<prefix><Name>: v` headers as `<Name>: v`.
fn prefixed(req: &Request, prefix: &str) -> Vec<(String, String)> {
    req.headers
        .iter()
        .filter_map(|(name, value)| {
            let head = name.get(..prefix.len())?;
            let rest = &name[prefix.len()..];
            (head.eq_ignore_ascii_case(prefix) && !rest.is_empty())
                .then(|| (rest.to_owned(), value.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Method;

    fn with(headers: &[(&str, &str)]) -> Result<Message, WireError> {
        let mut req = Request::new(Method::Post, "/v2/publish/http://h/");
        for (name, value) in headers {
            req = req.with_header(*name, *value);
        }
        let mut message = Message::default();
        apply(&req, RetryPolicy::default(), &mut message).map(|()| message)
    }

    #[test]
    fn durations() {
        for (text, ms) in [
            ("10s", 10_000),
            ("1500ms", 1_500),
            ("2m", 120_000),
            ("1h", 3_600_000),
            ("1d", 86_400_000),
            ("1m30s", 90_000),
            ("7", 7_000),
            ("0s", 0),
        ] {
            assert_eq!(duration_ms(text, "X").unwrap(), ms, "{text}");
        }
        for bad in [
            "",
            "-1s",
            "1x",
            "s",
            "1.5s",
            "10 s",
            "99999999999999999999d",
        ] {
            assert!(duration_ms(bad, "X").is_err(), "{bad}");
        }
    }

    #[test]
    fn options_and_their_errors() {
        let m = with(&[
            ("Upstash-Retries", "5"),
            ("Upstash-Delay", "2s"),
            ("Upstash-Callback", "http://cb/ok"),
            ("Upstash-Callback-X-A", "1"),
            ("Upstash-Failure-Callback", "https://cb/fail"),
            ("Upstash-Failure-Callback-X-B", "2"),
            ("Upstash-Timeout", "3s"),
        ])
        .unwrap();
        assert_eq!(
            (m.retries, m.delay_ms, m.timeout_ms),
            (5, 2_000, Some(3_000))
        );
        assert_eq!(m.callback.as_deref(), Some("http://cb/ok"));
        assert_eq!(m.callback_headers, vec![("X-A".into(), "1".into())]);
        assert_eq!(m.failure_callback_headers, vec![("X-B".into(), "2".into())]);
        assert_eq!(with(&[]).unwrap().retries, 3, "the default");
        assert_eq!(with(&[]).unwrap().retry_delay, None, "the host's backoff");
        assert_eq!(with(&[]).unwrap().label, None);
        let m = with(&[("Upstash-Label", " nightly ")]).unwrap();
        assert_eq!(m.label.as_deref(), Some("nightly"));
        let m = with(&[(
            "Upstash-Redact-Fields",
            "body, header[Authorization],headers[X-B]",
        )])
        .unwrap();
        assert_eq!(
            m.redact,
            crate::wire::Redact {
                body: true,
                all_headers: false,
                headers: vec!["Authorization".into(), "X-B".into()],
            }
        );
        let m = with(&[("Upstash-Redact-Fields", "headers")]).unwrap();
        assert!(m.redact.all_headers && !m.redact.body);
        let m = with(&[("Upstash-Retry-Delay", " pow(2, retried) * 1000 ")]).unwrap();
        assert_eq!(m.retry_delay.as_deref(), Some("pow(2, retried) * 1000"));

        let m = with(&[
            ("Upstash-Delay", "2s"),
            ("Upstash-Not-Before", "1700000000"),
        ])
        .unwrap();
        assert_eq!(
            (m.delay_ms, m.not_before),
            (0, 1_700_000_000_000),
            "not-before wins"
        );

        for (name, value) in [
            ("Upstash-Retries", "21"),
            ("Upstash-Retries", "-1"),
            ("Upstash-Retries", "two"),
            ("Upstash-Delay", "-5s"),
            ("Upstash-Not-Before", "soon"),
            ("Upstash-Not-Before", "-1"),
            ("Upstash-Timeout", "0s"),
            ("Upstash-Callback", "cb/ok"),
            ("Upstash-Failure-Callback", "ftp://x"),
            ("Upstash-Retry-Delay", "pow(2, tries) * 1000"),
            ("Upstash-Retry-Delay", ""),
            ("Upstash-Deduplication-Id", " "),
            (
                "Upstash-Deduplication-Id",
                &"x".repeat(MAX_DEDUPLICATION_ID_LEN + 1),
            ),
            ("Upstash-Content-Based-Deduplication", "yes"),
            ("Upstash-Label", ""),
            ("Upstash-Redact-Fields", "body,password"),
            ("Upstash-Redact-Fields", "header[]"),
            ("Upstash-Label", &"l".repeat(MAX_LABEL_LEN + 1)),
        ] {
            let err = with(&[(name, value)]).unwrap_err();
            assert_eq!(err.status(), 400, "{name}: {value}");
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    fn message(destination: &str, headers: &[(&str, &str)], body: &[u8]) -> Message {
        Message {
            destination: destination.into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.to_vec(),
            ..Message::default()
        }
    }

    #[test]
    fn deduplication_ids() {
        assert_eq!(with(&[]).unwrap().deduplication_id, None);
        let id = |headers: &[(&str, &str)]| with(headers).unwrap().deduplication_id;
        assert_eq!(
            id(&[("Upstash-Deduplication-Id", " abc ")]).as_deref(),
            Some("abc")
        );
        let longest = "x".repeat(MAX_DEDUPLICATION_ID_LEN);
        assert_eq!(
            id(&[("Upstash-Deduplication-Id", &longest)]),
            Some(longest.clone())
        );
        assert_eq!(
            id(&[("Upstash-Content-Based-Deduplication", "false")]),
            None
        );
        // Content based: the digest of the message; an explicit id wins over it.
        let content = id(&[("Upstash-Content-Based-Deduplication", "TRUE")]).unwrap();
        assert_eq!(content, content_digest(&Message::default()));
        assert!(
            content.starts_with("content:") && content.len() == 8 + 43,
            "{content}"
        );
        let both = [
            ("Upstash-Content-Based-Deduplication", "true"),
            ("Upstash-Deduplication-Id", "mine"),
        ];
        assert_eq!(id(&both).as_deref(), Some("mine"));
    }

    #[test]
    fn content_digest_covers_destination_headers_and_body_and_nothing_else() {
        let base = message(
            "http://h/a",
            &[("Content-Type", "text/plain"), ("X-A", "1")],
            b"hi",
        );
        let digest = content_digest(&base);
        // Header order and the case of names do not matter; other fields do not count.
        let mut same = message(
            "http://h/a",
            &[("x-a", "1"), ("content-type", "text/plain")],
            b"hi",
        );
        same.retries = 7;
        same.method = "PUT".into();
        assert_eq!(content_digest(&same), digest);
        for other in [
            message(
                "http://h/b",
                &[("Content-Type", "text/plain"), ("X-A", "1")],
                b"hi",
            ),
            message(
                "http://h/a",
                &[("Content-Type", "text/json"), ("X-A", "1")],
                b"hi",
            ),
            message("http://h/a", &[("Content-Type", "text/plain")], b"hi"),
            message(
                "http://h/a",
                &[("Content-Type", "text/plain"), ("X-A", "1")],
                b"hi!",
            ),
            // Field boundaries count: the same bytes split differently.
            message(
                "http://h/a",
                &[("Content-Type", "text/plain"), ("X-A", "1h")],
                b"i",
            ),
        ] {
            assert_ne!(content_digest(&other), digest, "{other:?}");
        }
    }
}
