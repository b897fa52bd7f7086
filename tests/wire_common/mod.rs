//! Shared harness of the `wire_*` tests: a service with known tokens, accounts and databases,
//! a manual clock, and a compact way to send a request.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use flowvec::flow::Timestamp;
use flowvec::management::{
    Accounts, ApiKey, BasicCredentials, Database, Password, Region, Registry,
};
use flowvec::vector::{Index, IndexConfig, Metric};
use flowvec::wire::{Method, Request, Response, Service, Tokens};
use serde_json::Value;

pub const VECTOR_TOKEN: &str = "vector-token";
pub const QUEUE_TOKEN: &str = "queue-token";
pub const DIMENSION: usize = 2;
pub const ANN: &str = "ann@example.com";
pub const ANN_KEY: &str = "ann-api-key";
pub const BOB: &str = "bob@example.com";
pub const BOB_KEY: &str = "bob-api-key";

pub fn t0() -> Timestamp {
    Timestamp::from_secs(1_700_000_000)
}

/// Which credentials a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cred {
    None,
    Vector,
    Queue,
    Wrong,
    Ann,
    AnnWrongKey,
    Bob,
}

impl Cred {
    pub fn header(self) -> Option<String> {
        let basic = |email: &str, key: &str| {
            BasicCredentials::new(email, ApiKey::new(key)).to_header_value()
        };
        match self {
            Self::None => None,
            Self::Vector => Some(format!("Bearer {VECTOR_TOKEN}")),
            Self::Queue => Some(format!("Bearer {QUEUE_TOKEN}")),
            Self::Wrong => Some("Bearer not-a-token".to_owned()),
            Self::Ann => Some(basic(ANN, ANN_KEY)),
            Self::AnnWrongKey => Some(basic(ANN, "guess")),
            Self::Bob => Some(basic(BOB, BOB_KEY)),
        }
    }
}

pub struct Harness {
    pub service: Service,
    /// Initial passwords of `db-ann` and `db-bob`.
    pub passwords: Vec<(String, Password)>,
}

impl Harness {
    /// A dense cosine index of dimension 2, accounts ann and bob owning `db-ann` / `db-bob`.
    pub fn new() -> Self {
        let index =
            Index::new(IndexConfig::dense(DIMENSION, Metric::Cosine)).expect("valid config");
        let tokens = Tokens::new()
            .with_vector_token(VECTOR_TOKEN)
            .with_queue_token(QUEUE_TOKEN);
        let accounts = Accounts::new();
        accounts
            .insert(ANN, &ApiKey::new(ANN_KEY))
            .expect("new account");
        accounts
            .insert(BOB, &ApiKey::new(BOB_KEY))
            .expect("new account");
        let registry = Registry::new();
        let mut passwords = Vec::new();
        for (id, owner) in [("db-ann", ANN), ("db-bob", BOB)] {
            let (_, pw) = registry
                .insert(Database::new(
                    id,
                    "cache",
                    owner,
                    Region::EuWest1,
                    1_700_000_000,
                ))
                .expect("new database");
            passwords.push((id.to_owned(), pw));
        }
        let service =
            Service::new(index, tokens).with_management(Arc::new(registry), Arc::new(accounts));
        Self { service, passwords }
    }

    pub fn send(
        &self,
        method: Method,
        path: &str,
        cred: Cred,
        body: &str,
        now: Timestamp,
    ) -> Response {
        self.send_with(method, path, cred, &[], body, now)
    }

    pub fn send_with(
        &self,
        method: Method,
        path: &str,
        cred: Cred,
        headers: &[(&str, &str)],
        body: &str,
        now: Timestamp,
    ) -> Response {
        let mut req = Request::new(method, path).with_body(body.as_bytes().to_vec());
        if let Some(h) = cred.header() {
            req = req.with_header("Authorization", h);
        }
        for (n, v) in headers {
            req = req.with_header(*n, *v);
        }
        self.service.handle(&req, now)
    }

    /// POST with the vector token; the parsed body.
    pub fn vector(&self, path: &str, body: &str) -> (u16, Value) {
        let res = self.send(Method::Post, path, Cred::Vector, body, t0());
        (res.status, res.body_json())
    }
}

/// Asserts the error envelope: `{"error": <non-empty>, "status": status}` with the same status.
pub fn assert_error(res: &Response, status: u16, context: &str) {
    let body = res.body_json();
    assert_eq!(res.status, status, "{context}: {body}");
    assert_eq!(body["status"], status, "{context}: {body}");
    assert!(
        body["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{context}: {body}"
    );
    assert_eq!(
        res.header("content-type"),
        Some("application/json"),
        "{context}"
    );
}
