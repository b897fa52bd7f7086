//! Property tests of `flowvec::wire::Service`: any request (random method, path built from the
//! real routes and random pieces, query, headers, body bytes) gets a JSON answer whose envelope
//! agrees with its status and never panics; a request without valid credentials is refused
//! with 401 and changes nothing.

#[path = "wire_common/mod.rs"]
mod wire_common;

use flowvec::wire::{Method, Request};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use serde_json::Value;
use wire_common::{ANN, Cred, Harness, t0};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        rng_seed: RngSeed::Fixed(0x5eed_0006),
        ..ProptestConfig::default()
    }
}

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        4 => Just(Method::Post),
        2 => Just(Method::Get),
        1 => Just(Method::Delete),
        1 => Just(Method::Put),
        1 => "[A-Z]{1,7}".prop_map(|m| Method::parse(&m)),
    ]
}

/// Real route prefixes followed by random segments, escapes and junk.
fn path() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec![
        "/upsert",
        "/update",
        "/query",
        "/fetch",
        "/delete",
        "/range",
        "/reset",
        "/info",
        "/list-namespaces",
        "/delete-namespace",
        "/query-data",
        "/v2/publish/",
        "/v2/publish/http://h/",
        "/v2/flowControl",
        "/v2/flowControl/",
        "/v2/globalParallelism",
        "/v2/redis/reset-password/",
        "/",
        "",
        "/v2/",
    ]);
    let tail = prop::collection::vec(
        prop_oneof![
            12 => Just(String::new()),
            1 => Just("/".to_owned()),
            1 => Just("%".to_owned()),
            1 => Just("%2F".to_owned()),
            1 => Just("%zz".to_owned()),
            1 => Just("%FF".to_owned()),
            1 => Just("/pause".to_owned()),
            1 => Just("/pin".to_owned()),
            1 => Just("/unpin".to_owned()),
            1 => Just("/resetRate".to_owned()),
            3 => "[a-zA-Z0-9 ._~:?#\\[\\]@!$&'()*+,;=-]{0,6}",
            1 => any::<String>().prop_map(|s| s.chars().take(4).collect()),
        ],
        0..3,
    );
    (prefix, tail).prop_map(|(p, t)| format!("{p}{}", t.concat()))
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(String::new()),
        1 => Just("all".to_owned()),
        1 => Just("parallelism=2&rate=3&period=1m".to_owned()),
        1 => Just("parallelism=true&rate=false".to_owned()),
        2 => "[a-z=&%0-9+]{0,16}",
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => Just(Vec::new()),
        2 => prop::sample::select(vec![
            r#"[{"id":"a","vector":[1,0]}]"#, r#"{"id":1,"vector":[0.5,0.5],"metadata":{"g":1}}"#,
            r#"{"vector":[1,0],"topK":3,"filter":"g = 1"}"#, r#"[{"vector":[1,0]},{"vector":[0,1]}]"#,
            r#"{"ids":["a","b"]}"#, r#"{"prefix":"a"}"#, r#"{"cursor":"","limit":2}"#,
            r#"{"id":"a","metadata":{"x":null},"metadataUpdateMode":"PATCH"}"#, "[]", "{}", "null",
            r#"{"vector":[1e400]}"#, r#"{"topK":-1}"#, r#"[{"id":"","vector":[1]}]"#,
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop::sample::select(vec![
        "Upstash-Flow-Control-Key",
        "Upstash-Flow-Control-Value",
        "Service-Flow-Control-Key",
        "Service-Flow-Control-Value",
        "Upstash-Method",
        "Upstash-Forward-X",
        "Content-Type",
    ]);
    let value = prop_oneof![
        Just("k".to_owned()),
        Just("parallelism=1, rate=2".to_owned()),
        Just(String::new()),
        "[ -~]{0,12}",
    ];
    prop::collection::vec((name.prop_map(str::to_owned), value), 0..4)
}

/// `None` stands for the right credentials for the path's API, so most requests get past
/// authentication.
fn cred() -> impl Strategy<Value = Option<Cred>> {
    let any_cred = prop::sample::select(vec![
        Cred::Vector,
        Cred::Queue,
        Cred::Ann,
        Cred::Wrong,
        Cred::None,
    ]);
    prop_oneof![4 => Just(None), 1 => any_cred.prop_map(Some)]
}

fn right_cred(path: &str) -> Cred {
    if path.starts_with("/v2/redis/") {
        Cred::Ann
    } else if path.starts_with("/v2/") {
        Cred::Queue
    } else {
        Cred::Vector
    }
}

/// The checks every answer passes.
fn assert_well_formed(status: u16, body: &Value, headers: &[(String, String)]) {
    assert!(
        [200, 201, 400, 401, 404, 405, 409, 422, 500, 503].contains(&status),
        "unexpected status {status}: {body}"
    );
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "Content-Type" && v == "application/json")
    );
    if status >= 400 {
        assert_eq!(body["status"], status, "{body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    } else {
        assert!(body.is_object() || body.is_array(), "{body}");
        assert!(body.get("error").is_none(), "{body}");
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn any_request_gets_a_well_formed_json_answer(
        method in method(), path in path(), query in query(), cred in cred(),
        headers in headers(), body in body(),
    ) {
        let h = Harness::new();
        let mut req = Request::new(method, "/").with_body(body);
        req.path = path;
        req.query = query;
        req.headers = headers;
        if let Some(auth) = cred.unwrap_or_else(|| right_cred(&req.path)).header() {
            req = req.with_header("Authorization", auth);
        }
        let res = h.service.handle(&req, t0());
        let json: Value = serde_json::from_slice(&res.body).expect("every body is JSON");
        assert_well_formed(res.status, &json, &res.headers);
    }

    #[test]
    fn refused_credentials_change_nothing(
        method in method(), path in path(), query in query(),
        headers in headers(), body in body(), cred in prop::sample::select(vec![Cred::Wrong, Cred::None]),
    ) {
        let h = Harness::new();
        let before = h.vector("/info", "").1;
        let mut req = Request::new(method, "/").with_body(body);
        req.path = path;
        req.query = query;
        req.headers = headers;
        if let Some(auth) = cred.header() {
            req = req.with_header("Authorization", auth);
        }
        let res = h.service.handle(&req, t0());
        prop_assert!(res.status == 401 || res.status == 404, "{} {:?}", res.status, res.body_json());
        prop_assert_eq!(h.vector("/info", "").1, before);
        prop_assert!(h.service.flow().keys(t0()).is_empty());
        prop_assert!(h.service.flow().poll_dispatch(t0()).is_none());
        let (id, pw) = &h.passwords[0];
        prop_assert!(h.service.registry().verify_password(ANN, id, pw.expose()));
    }
}
