//! The queue API: `POST /v2/publish/{destination}`, the flow-control routes and global
//! parallelism.

use std::num::NonZeroU32;

use crate::flow::{Limits, Period, Pin, SharedFlowControl, Timestamp, Unpin, validate_key};
use crate::state::Command;

use super::percent::{decode, query_pairs, quote};
use super::router::FlowOp;
use super::write::{Prepared, ReplyKind, write};
use super::{Message, Request, Response, SigningKeys, WireError, new_key};

/// The flow-control key header under our name and the reference's.
const KEY_HEADERS: [&str; 2] = ["Service-Flow-Control-Key", "Upstash-Flow-Control-Key"];
/// The flow-control value header under our name and the reference's.
const VALUE_HEADERS: [&str; 2] = ["Service-Flow-Control-Value", "Upstash-Flow-Control-Value"];
/// Prefix of headers forwarded to the destination without it.
const FORWARD_PREFIX: &str = "upstash-forward-";

/// `POST /v2/publish/{destination}`: the command that queues the body for delivery; answered
/// 201 `{"messageId": "..."}` once applied, or 202 with the first message's id and
/// `"deduplicated": true` for a deduplication id seen in the last 10 minutes.
pub(crate) fn publish(
    req: &Request,
    destination: &str,
    policy: super::RetryPolicy,
) -> Result<Prepared, WireError> {
    let destination = destination_url(destination, &req.query)?;
    let key = one_of(req, KEY_HEADERS)?;
    let limits = one_of(req, VALUE_HEADERS)?
        .map(str::parse::<Limits>)
        .transpose()?;
    if let Some(key) = key {
        validate_key(key)?;
    }
    let mut message = Message {
        destination,
        method: delivery_method(req)?,
        headers: forwarded_headers(req),
        body: req.body.clone(),
        ..Message::default()
    };
    super::publish_headers::apply(req, policy, &mut message)?;
    Ok(write(
        Command::Publish {
            key: key.map(str::to_owned),
            limits,
            message: Box::new(message),
        },
        ReplyKind::Published,
    ))
}

/// The destination as an absolute URL: as sent, or percent-decoded if the publisher encoded
/// it (`https%3A%2F%2F...`), with the publish request's query string put back (the SDKs append
/// the destination raw, so its `?query` arrives as the publish request's query).
fn destination_url(raw: &str, query: &str) -> Result<String, WireError> {
    let lower = raw.get(..8).unwrap_or(raw).to_ascii_lowercase();
    let mut url = if lower.starts_with("http%3a") || lower.starts_with("https%3a") {
        decode(raw, false, "destination")?
    } else {
        raw.to_owned()
    };
    let after_scheme = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let host_ok = after_scheme.is_some_and(|rest| {
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
    });
    if !host_ok {
        return Err(WireError::BadDestination {
            destination: quote(raw),
        });
    }
    if !query.is_empty() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(query);
    }
    Ok(url)
}

/// The value of a header sent under either of two names; both with different values is an
/// error (which one wins would be a guess).
fn one_of<'r>(req: &'r Request, names: [&'static str; 2]) -> Result<Option<&'r str>, WireError> {
    match (req.header(names[0]), req.header(names[1])) {
        (Some(a), Some(b)) if a.trim() != b.trim() => Err(WireError::BadHeader {
            name: names[0],
            problem: format!(
                "{} is {:?} but {} is {:?}; send one of them",
                names[0],
                quote(a),
                names[1],
                quote(b)
            ),
        }),
        (Some(v), _) | (None, Some(v)) => Ok(Some(v.trim())),
        (None, None) => Ok(None),
    }
}

/// `Upstash-Method` (an HTTP token, upper-cased), else `POST`.
fn delivery_method(req: &Request) -> Result<String, WireError> {
    let Some(method) = req.header("Upstash-Method") else {
        return Ok("POST".to_owned());
    };
    let method = method.trim();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) || method.len() > 16 {
        return Err(WireError::BadHeader {
            name: "Upstash-Method",
            problem: format!("{:?} is not an HTTP method name", quote(method)),
        });
    }
    Ok(method.to_ascii_uppercase())
}

/// The publish request's `Content-Type`, and `Upstash-Forward-<Name>: v` as `<Name>: v`.
fn forwarded_headers(req: &Request) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    if let Some(ct) = req.header("Content-Type") {
        headers.push(("Content-Type".to_owned(), ct.to_owned()));
    }
    for (name, value) in &req.headers {
        let forwarded = name
            .get(..FORWARD_PREFIX.len())
            .filter(|p| p.eq_ignore_ascii_case(FORWARD_PREFIX))
            .map(|_| &name[FORWARD_PREFIX.len()..]);
        if let Some(name) = forwarded.filter(|n| !n.is_empty()) {
            headers.push((name.to_owned(), value.clone()));
        }
    }
    headers
}

/// `GET /v2/flowControl`: every live key's info, a bare JSON array.
pub(crate) fn list(flow: &SharedFlowControl<Message>, now: Timestamp) -> Response {
    Response::json(200, &flow.keys(now))
}

/// `GET /v2/flowControl/{key}`: the key's info, 404 for an unknown key.
pub(crate) fn key_info(
    flow: &SharedFlowControl<Message>,
    key: &str,
    now: Timestamp,
) -> Result<Response, WireError> {
    flow.key_info(key, now)
        .map(|info| Response::json(200, &info))
        .ok_or_else(|| WireError::KeyNotFound { key: quote(key) })
}

/// `GET /v2/keys`: `{"current", "next"}`; 404 until the host has set keys.
pub(crate) fn signing_keys(keys: Option<SigningKeys>) -> Result<Response, WireError> {
    keys.map(|keys| Response::json(200, &keys))
        .ok_or(WireError::RouteNotFound {
            path: "/v2/keys (this server signs no deliveries: no signing keys are set)".to_owned(),
        })
}

/// `POST /v2/keys/rotate`: the command that makes the next key current and draws a new next
/// key; answered with the keys afterwards.
pub(crate) fn rotate_signing_keys() -> Result<Prepared, WireError> {
    let next = new_key()?;
    Ok(write(
        Command::RotateSigningKeys { next },
        ReplyKind::SigningKeys,
    ))
}

/// `GET /v2/globalParallelism`
pub(crate) fn global(flow: &SharedFlowControl<Message>) -> Response {
    Response::json(200, &flow.global_info())
}

/// `POST /v2/flowControl/{key}/{op}`: the operation's command; answered with the key's info
/// once applied.
pub(crate) fn operate(key: &str, op: FlowOp, query: &str) -> Result<Prepared, WireError> {
    let params = query_pairs(query)?;
    let key = key.to_owned();
    let command = match op {
        FlowOp::Pause => {
            no_params(&params)?;
            Command::Pause { key: key.clone() }
        }
        FlowOp::Resume => {
            no_params(&params)?;
            Command::Resume { key: key.clone() }
        }
        FlowOp::ResetRate => {
            no_params(&params)?;
            Command::ResetRate { key: key.clone() }
        }
        FlowOp::Pin => Command::Pin {
            key: key.clone(),
            pin: pin(&params)?,
        },
        FlowOp::Unpin => Command::Unpin {
            key: key.clone(),
            unpin: unpin(&params)?,
        },
    };
    Ok(write(
        command,
        ReplyKind::KeyInfo {
            key,
            flow_changed: op != FlowOp::Pause,
        },
    ))
}

fn no_params(params: &[(String, String)]) -> Result<(), WireError> {
    match params.first() {
        Some((name, _)) => Err(WireError::UnknownQueryParameter {
            name: quote(name),
            expected: "no query parameters",
        }),
        None => Ok(()),
    }
}

/// `pin?parallelism=3&rate=7&period=60` (period: bare seconds or with a unit, as in the
/// flow-control header value).
fn pin(params: &[(String, String)]) -> Result<Pin, WireError> {
    let mut pin = Pin::default();
    for (name, value) in params {
        let positive = |value: &str| {
            value
                .parse::<NonZeroU32>()
                .map_err(|_| WireError::BadQueryParameter {
                    name: name.clone(),
                    value: quote(value),
                    expected: "an integer from 1 to 4294967295",
                })
        };
        match name.as_str() {
            "parallelism" => pin.parallelism = Some(positive(value)?),
            "rate" => pin.rate = Some(positive(value)?),
            "period" => pin.period = Some(value.parse::<Period>()?),
            other => {
                return Err(WireError::UnknownQueryParameter {
                    name: quote(other),
                    expected: "parallelism, rate, period",
                });
            }
        }
    }
    Ok(pin)
}

/// `unpin?parallelism=true&rate=false`
fn unpin(params: &[(String, String)]) -> Result<Unpin, WireError> {
    let mut unpin = Unpin::default();
    for (name, value) in params {
        let flag = if value.eq_ignore_ascii_case("true") {
            true
        } else if value.eq_ignore_ascii_case("false") {
            false
        } else {
            return Err(WireError::BadQueryParameter {
                name: name.clone(),
                value: quote(value),
                expected: "true or false",
            });
        };
        match name.as_str() {
            "parallelism" => unpin.parallelism = flag,
            "rate" => unpin.rate = flag,
            other => {
                return Err(WireError::UnknownQueryParameter {
                    name: quote(other),
                    expected: "parallelism, rate",
                });
            }
        }
    }
    Ok(unpin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destination_keeps_slashes_and_gets_the_query_back() {
        assert_eq!(
            destination_url("http://h:1/a//b", "x=1&y=2").unwrap(),
            "http://h:1/a//b?x=1&y=2"
        );
        assert_eq!(
            destination_url("https%3A%2F%2Fh%2Fp%3Fa%3D1", "b=2").unwrap(),
            "https://h/p?a=1&b=2"
        );
        for bad in [
            "",
            "ftp://h/",
            "http://",
            "http:///x",
            "h/p",
            "http://h/a b",
        ] {
            assert!(
                matches!(
                    destination_url(bad, ""),
                    Err(WireError::BadDestination { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn pin_and_unpin_parameters() {
        let params = query_pairs("parallelism=3&rate=7&period=60").unwrap();
        let p = pin(&params).unwrap();
        assert_eq!(p.parallelism.map(NonZeroU32::get), Some(3));
        assert_eq!(p.rate.map(NonZeroU32::get), Some(7));
        assert_eq!(p.period.map(Period::as_secs), Some(60));
        assert!(pin(&query_pairs("parallelism=0").unwrap()).is_err());
        assert!(pin(&query_pairs("speed=1").unwrap()).is_err());
        assert!(pin(&query_pairs("period=8d").unwrap()).is_err());

        let u = unpin(&query_pairs("parallelism=true&rate=False").unwrap()).unwrap();
        assert!(u.parallelism && !u.rate);
        assert!(unpin(&query_pairs("rate=yes").unwrap()).is_err());
    }
}
