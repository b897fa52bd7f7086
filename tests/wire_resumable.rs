//! Resumable queries through `flowvec::wire`: `/resumable-query[-data]`, `-next`, `-end` with
//! the bodies the vector SDK sends, their answers, expiry at the `now` each request carries,
//! the cap (429), unknown ids (404) and bad input (400).

#[path = "wire_common/mod.rs"]
mod wire_common;

use flowvec::flow::Timestamp;
use flowvec::vector::text::Bm25Params;
use flowvec::vector::{Index, IndexConfig, ResumableLimits};
use flowvec::wire::{Method, Request, Response, Service, Tokens};
use serde_json::{Value, json};
use wire_common::{Cred, Harness, VECTOR_TOKEN, assert_error, t0};

fn at(secs: u64) -> Timestamp {
    t0().add_millis(secs * 1000)
}

fn post(service: &Service, path: &str, body: &Value, now: Timestamp) -> Response {
    let req = Request::new(Method::Post, path)
        .with_header("Authorization", format!("Bearer {VECTOR_TOKEN}"))
        .with_body(body.to_string().into_bytes());
    service.handle(&req, now)
}

/// 30 records in namespace `docs`: `r00` nearest to `[1, 0]`, then `r01`, ...
fn seeded(limits: ResumableLimits) -> Service {
    let service = Harness::new().service.with_resumable_limits(limits);
    let records: Vec<Value> = (0..30)
        .map(|i| json!({"id": format!("r{i:02}"), "vector": [1.0, f64::from(i) / 10.0], "metadata": {"i": i}}))
        .collect();
    let res = post(&service, "/upsert/docs", &json!(records), t0());
    assert_eq!(res.status, 200);
    service
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// What `index.resumable_query(vector=[1, 0], top_k=..., max_idle=...)` sends.
fn sdk_start(top_k: usize, max_idle: u64) -> Value {
    json!({
        "topK": top_k, "includeVectors": false, "includeMetadata": true, "includeData": false,
        "filter": "", "maxIdle": max_idle, "vector": [1.0, 0.0]
    })
}

#[test]
fn start_next_end_with_the_sdk_bodies() {
    let service = seeded(ResumableLimits::default());
    let res = post(&service, "/resumable-query/docs", &sdk_start(4, 3600), t0());
    assert_eq!(res.status, 200, "{}", res.body_json());
    let body = res.body_json();
    let uuid = body["result"]["uuid"].as_str().expect("a uuid").to_owned();
    assert_eq!(uuid.len(), 36);
    let scores = &body["result"]["scores"];
    assert_eq!(ids(scores), ["r00", "r01", "r02", "r03"]);
    assert_eq!(scores[1]["metadata"], json!({"i": 1}));
    assert!(scores[0].get("vector").is_none());

    let mut all = ids(scores);
    loop {
        let res = post(
            &service,
            "/resumable-query-next",
            &json!({"uuid": uuid, "additionalK": 7}),
            at(1),
        );
        assert_eq!(res.status, 200);
        let page = ids(&res.body_json()["result"]);
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 7);
        all.extend(page);
    }
    let want: Vec<String> = (0..30).map(|i| format!("r{i:02}")).collect();
    assert_eq!(all, want);

    let res = post(
        &service,
        "/resumable-query-end",
        &json!({"uuid": uuid}),
        at(2),
    );
    assert_eq!(res.status, 200);
    assert_eq!(res.body_json(), json!({"result": "Success"}));
    for path in ["/resumable-query-next", "/resumable-query-end"] {
        let res = post(
            &service,
            path,
            &json!({"uuid": uuid, "additionalK": 1}),
            at(3),
        );
        if path.ends_with("end") {
            let res = post(&service, path, &json!({"uuid": uuid}), at(3));
            assert_error(&res, 404, "end after end");
        } else {
            assert_error(&res, 404, "next after end");
            let msg = res.body_json()["error"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(msg.contains(&uuid) && msg.contains("not found"), "{msg}");
        }
    }
    let res = post(
        &service,
        "/resumable-query-next",
        &json!({"uuid": "00000000-0000-4000-8000-000000000000", "additionalK": 1}),
        at(3),
    );
    assert_error(&res, 404, "unknown uuid");
}

#[test]
fn idle_queries_expire_after_max_idle_seconds() {
    let service = seeded(ResumableLimits::default());
    let start = post(&service, "/resumable-query/docs", &sdk_start(2, 5), t0()).body_json();
    let uuid = start["result"]["uuid"].clone();
    let next = |now| {
        post(
            &service,
            "/resumable-query-next",
            &json!({"uuid": uuid, "additionalK": 1}),
            now,
        )
    };
    assert_eq!(next(at(4)).status, 200, "idle 4 s of 5");
    assert_eq!(next(at(8)).status, 200, "idle 4 s again");
    assert_eq!(service.resumable_queries().len(), 1);
    // Any request expires it once 5 s have passed without use.
    let res = post(&service, "/info", &json!(null), at(13));
    assert_eq!(res.status, 200);
    assert_eq!(service.resumable_queries().len(), 0);
    assert_error(&next(at(13)), 404, "expired");
}

#[test]
fn the_cap_answers_429_until_a_query_ends() {
    let service = seeded(ResumableLimits {
        max_open: 2,
        max_idle_secs: 600,
    });
    let uuids: Vec<Value> = (0..2)
        .map(|_| {
            let res = post(&service, "/resumable-query/docs", &sdk_start(1, 60), t0());
            assert_eq!(res.status, 200);
            res.body_json()["result"]["uuid"].clone()
        })
        .collect();
    let res = post(&service, "/resumable-query/docs", &sdk_start(1, 60), t0());
    assert_error(&res, 429, "third open query");
    let msg = res.body_json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(msg.contains("at most 2"), "{msg}");
    let res = post(
        &service,
        "/resumable-query-end",
        &json!({"uuid": uuids[0]}),
        at(1),
    );
    assert_eq!(res.status, 200);
    let res = post(&service, "/resumable-query/docs", &sdk_start(1, 60), at(1));
    assert_eq!(res.status, 200);
    // And after an expiry.
    let res = post(&service, "/resumable-query/docs", &sdk_start(1, 60), at(60));
    assert_eq!(res.status, 200, "the first two expired at 60 s");
}

#[test]
fn bad_input_is_400_and_routes_are_checked() {
    let service = seeded(ResumableLimits::default());
    let started = post(&service, "/resumable-query/docs", &sdk_start(1, 60), t0()).body_json();
    let uuid = started["result"]["uuid"].clone();
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "/resumable-query",
            json!({"vector": [1, 0], "maxIdle": 0}),
            400,
            "maxIdle",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "maxIdle": 86_401}),
            400,
            "maxIdle",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "maxIdle": -1}),
            400,
            "maxIdle",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "maxIdle": 1.5}),
            400,
            "maxIdle",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "maxIdle": "60"}),
            400,
            "maxIdle",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "topK": 0}),
            400,
            "topK",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "includeVector": true}),
            400,
            "includeVector",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0, 0]}),
            422,
            "dimension",
        ),
        (
            "/resumable-query",
            json!({"vector": [1, 0], "filter": "a ="}),
            400,
            "filter",
        ),
        (
            "/resumable-query",
            json!([{"vector": [1, 0]}]),
            400,
            "one object",
        ),
        ("/resumable-query", json!({}), 400, "`vector`"),
        (
            "/resumable-query-next",
            json!({"uuid": uuid}),
            400,
            "additionalK",
        ),
        (
            "/resumable-query-next",
            json!({"uuid": uuid, "additionalK": 0}),
            400,
            "topK",
        ),
        (
            "/resumable-query-next",
            json!({"uuid": uuid, "additionalK": 1001}),
            400,
            "topK",
        ),
        (
            "/resumable-query-next",
            json!({"additionalK": 1}),
            400,
            "uuid",
        ),
        (
            "/resumable-query-end",
            json!({"uuid": uuid, "extra": 1}),
            400,
            "extra",
        ),
        // A dense index without a model cannot embed text.
        (
            "/resumable-query-data/docs",
            json!({"data": "hello", "topK": 2}),
            400,
            "model",
        ),
    ];
    for (path, body, status, part) in cases {
        let res = post(&service, path, &body, at(1));
        assert_error(&res, status, &format!("{path} {body}"));
        let msg = res.body_json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(msg.contains(part), "{path} {body}: {msg:?} lacks {part:?}");
    }
    let empty = Request::new(Method::Post, "/resumable-query-end")
        .with_header("Authorization", format!("Bearer {VECTOR_TOKEN}"));
    assert_error(&service.handle(&empty, at(1)), 400, "empty body");
    // The query is still open after all that.
    let res = post(
        &service,
        "/resumable-query-next",
        &json!({"uuid": uuid, "additionalK": 1}),
        at(2),
    );
    assert_eq!(ids(&res.body_json()["result"]), ["r01"]);

    let h = Harness::new();
    for (method, path, cred, status) in [
        (
            Method::Post,
            "/resumable-query-next/docs",
            Cred::Vector,
            404,
        ),
        (Method::Post, "/resumable-query-end/docs", Cred::Vector, 404),
        (Method::Get, "/resumable-query", Cred::Vector, 405),
        (Method::Post, "/resumable-query", Cred::None, 401),
        (Method::Post, "/resumable-query-next", Cred::Queue, 401),
    ] {
        let res = h.send(method.clone(), path, cred, "{}", t0());
        assert_error(&res, status, &format!("{} {path}", method.as_str()));
    }
}

#[test]
fn a_missing_namespace_starts_an_empty_query() {
    let service = seeded(ResumableLimits::default());
    let res = post(
        &service,
        "/resumable-query/nowhere",
        &sdk_start(3, 60),
        t0(),
    );
    assert_eq!(res.status, 200);
    let body = res.body_json();
    assert_eq!(body["result"]["scores"], json!([]));
    let res = post(
        &service,
        "/resumable-query-next",
        &json!({"uuid": body["result"]["uuid"], "additionalK": 3}),
        t0(),
    );
    assert_eq!(res.body_json(), json!({"result": []}));
}

#[test]
fn text_queries_page_through_bm25_scores() {
    let index = Index::new(IndexConfig::sparse().with_bm25(Bm25Params::default())).unwrap();
    let service = Service::new(index, Tokens::shared(VECTOR_TOKEN));
    let docs = [
        ("a", "red apples and red cherries"),
        ("b", "green apples"),
        ("c", "apples apples apples"),
        ("d", "a field of wheat"),
        ("e", "red wine"),
    ];
    let records: Vec<Value> = docs
        .iter()
        .map(|(id, data)| json!({"id": id, "data": data}))
        .collect();
    assert_eq!(
        post(&service, "/upsert-data", &json!(records), t0()).status,
        200
    );
    let want = post(
        &service,
        "/query-data",
        &json!({"data": "red apples", "topK": 10, "includeData": true}),
        t0(),
    )
    .body_json()["result"]
        .clone();
    assert_eq!(want.as_array().map(Vec::len), Some(4), "{want}");
    for path in ["/resumable-query-data", "/resumable-query"] {
        let res = post(
            &service,
            path,
            &json!({"data": "red apples", "topK": 1, "includeData": true, "maxIdle": 60}),
            t0(),
        );
        assert_eq!(res.status, 200, "{}", res.body_json());
        let body = res.body_json();
        let mut got = body["result"]["scores"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let next = post(
            &service,
            "/resumable-query-next",
            &json!({"uuid": body["result"]["uuid"], "additionalK": 10}),
            t0(),
        );
        got.extend(
            next.body_json()["result"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        assert_eq!(Value::Array(got), want, "{path}");
    }
    // Text without terms: nothing to search, an empty query.
    let res = post(
        &service,
        "/resumable-query-data",
        &json!({"data": "the of and", "maxIdle": 60}),
        t0(),
    );
    assert_eq!(res.status, 200, "{}", res.body_json());
    assert_eq!(res.body_json()["result"]["scores"], json!([]));
    // `-data` needs `data`.
    let res = post(&service, "/resumable-query-data", &json!({"topK": 1}), t0());
    assert_error(&res, 400, "no data");
}
