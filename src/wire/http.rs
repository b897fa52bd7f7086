//! The I/O-free request and response: [`Method`], [`Request`], [`Response`].

use std::fmt;

use serde::Serialize;

/// An HTTP request method, as far as the wire contract cares.
///
/// # Examples
/// ```
/// use flowvec::wire::Method;
/// assert_eq!(Method::parse("POST"), Method::Post);
/// assert_eq!(Method::parse("BREW").as_str(), "BREW");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`
    Get,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `DELETE`
    Delete,
    /// `PATCH`
    Patch,
    /// `HEAD`
    Head,
    /// Any other method, kept as sent (always answered with 405).
    Other(String),
}

impl Method {
    /// The method named by `name` (case-sensitive, as HTTP methods are).
    #[must_use]
    pub fn parse(name: &str) -> Self {
        match name {
            "GET" => Self::Get,
            "POST" => Self::Post,
            "PUT" => Self::Put,
            "DELETE" => Self::Delete,
            "PATCH" => Self::Patch,
            "HEAD" => Self::Head,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The method's name on the wire.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
            Self::Patch => "PATCH",
            Self::Head => "HEAD",
            Self::Other(name) => name,
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One HTTP request as the host received it: nothing decoded yet.
///
/// `path` is the raw (still percent-encoded) path, `query` the raw query string without the
/// `?` (empty if none), `headers` name/value pairs in any case (names are compared
/// case-insensitively), `body` the bytes as sent.
///
/// # Examples
/// ```
/// use flowvec::wire::{Method, Request};
/// let req = Request::new(Method::Post, "/query/docs")
///     .with_header("Authorization", "Bearer t")
///     .with_body(br#"{"vector":[1,0],"topK":1}"#.to_vec());
/// assert_eq!(req.header("authorization"), Some("Bearer t"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The raw path, starting with `/`, still percent-encoded.
    pub path: String,
    /// The raw query string without the leading `?`; empty when there is none.
    pub query: String,
    /// Header name/value pairs, names in any case.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Request {
    /// A request without query, headers or body. A `?` in `path_and_query` splits off the
    /// query string.
    #[must_use]
    pub fn new(method: Method, path_and_query: &str) -> Self {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        Self {
            method,
            path: path.to_owned(),
            query: query.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The value of the first header named `name` (ASCII case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the host sends back: status, headers and a JSON body.
///
/// # Examples
/// ```
/// use flowvec::wire::Response;
/// let res = Response::json(200, &serde_json::json!({"result": "Success"}));
/// assert_eq!(res.status, 200);
/// assert_eq!(res.header("content-type"), Some("application/json"));
/// assert_eq!(res.body, br#"{"result":"Success"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Header name/value pairs (`Content-Type: application/json` always; `Allow` on 405,
    /// `WWW-Authenticate` on 401).
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Vec<u8>,
    /// Whether the request may have made a waiting message deliverable (publish, resume, pin,
    /// unpin, resetRate): a host's dispatcher should call `poll_dispatch` again.
    pub flow_changed: bool,
}

impl Response {
    /// A response with `value` serialised as its JSON body.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Self {
        // Serialising our own response types (plain data, string map keys) cannot fail.
        let body = serde_json::to_vec(value).unwrap_or_else(|err| {
            format!(r#"{{"error":"response serialisation failed: {err}","status":500}}"#)
                .into_bytes()
        });
        Self {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body,
            flow_changed: false,
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The value of the first header named `name` (ASCII case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` if it is not JSON; never the case for responses of
    /// [`Service`](super::Service)).
    #[must_use]
    pub fn body_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}
