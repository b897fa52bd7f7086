//! The queue API through `flowvec::wire` alone, with a manual clock: publish (both header
//! names, body bytes, forwarded headers, destination query), flow-control info, list, pause,
//! resume, pin, unpin, resetRate, global parallelism; bad input, wrong methods, credentials.

#[path = "wire_common/mod.rs"]
mod wire_common;

use flowvec::flow::Timestamp;
use flowvec::wire::Method;
use serde_json::Value;
use wire_common::{Cred, Harness, assert_error, t0};

/// Extra headers of a request.
type Headers = Vec<(&'static str, &'static str)>;

const DEST: &str = "/v2/publish/http://127.0.0.1:9/hook";

fn publish(h: &Harness, headers: &[(&str, &str)], body: &str, now: Timestamp) -> (u16, Value) {
    let res = h.send_with(Method::Post, DEST, Cred::Queue, headers, body, now);
    (res.status, res.body_json())
}

fn get(h: &Harness, path: &str, now: Timestamp) -> (u16, Value) {
    let res = h.send(Method::Get, path, Cred::Queue, "", now);
    (res.status, res.body_json())
}

fn post(h: &Harness, path: &str, now: Timestamp) -> (u16, Value) {
    let res = h.send(Method::Post, path, Cred::Queue, "", now);
    (res.status, res.body_json())
}

fn limited(key: &'static str, value: &'static str) -> [(&'static str, &'static str); 2] {
    [
        ("Upstash-Flow-Control-Key", key),
        ("Upstash-Flow-Control-Value", value),
    ]
}

#[test]
fn publish_keeps_body_headers_and_destination_query() {
    let h = Harness::new();
    let body = "{\"n\": 1}\n\u{e9}";
    let res = h.send_with(
        Method::Post,
        "/v2/publish/http://127.0.0.1:9/a//b?x=1&y=%20",
        Cred::Queue,
        &[
            ("Content-Type", "application/json"),
            ("Upstash-Forward-X-Trace", "t-1"),
            ("Upstash-Method", "put"),
        ],
        body,
        t0(),
    );
    assert_eq!(res.status, 201, "{:?}", res.body_json());
    assert!(res.flow_changed);
    let id = res.body_json()["messageId"]
        .as_str()
        .expect("messageId")
        .to_owned();
    let d = h
        .service
        .flow()
        .poll_dispatch(t0())
        .expect("no limits: ready at once");
    assert_eq!(d.id.to_string(), id);
    assert_eq!(d.message.destination, "http://127.0.0.1:9/a//b?x=1&y=%20");
    assert_eq!(d.message.body, body.as_bytes());
    assert_eq!(d.message.method, "PUT");
    assert!(
        d.message
            .headers
            .contains(&("Content-Type".into(), "application/json".into()))
    );
    assert!(
        d.message
            .headers
            .contains(&("X-Trace".into(), "t-1".into()))
    );
    assert_eq!(d.message.headers.len(), 2);
}

#[test]
fn both_header_names_carry_flow_control() {
    for names in [
        ["Upstash-Flow-Control-Key", "Upstash-Flow-Control-Value"],
        ["Service-Flow-Control-Key", "Service-Flow-Control-Value"],
        ["upstash-flow-control-key", "SERVICE-FLOW-CONTROL-VALUE"],
    ] {
        let h = Harness::new();
        for _ in 0..3 {
            let headers = [
                (names[0], "k"),
                (names[1], "parallelism=2, rate=5, period=1m"),
            ];
            assert_eq!(publish(&h, &headers, "m", t0()).0, 201, "{names:?}");
        }
        let (s, info) = get(&h, "/v2/flowControl/k", t0());
        assert_eq!(s, 200);
        assert_eq!(info["parallelismMax"], 2, "{names:?}: {info}");
        assert_eq!(info["rateMax"], 5);
        assert_eq!(info["ratePeriod"], 60);
        assert_eq!(info["waitListSize"], 3);
        let flow = h.service.flow();
        let dispatched: Vec<_> = std::iter::from_fn(|| flow.poll_dispatch(t0())).collect();
        assert_eq!(dispatched.len(), 2, "parallelism 2 holds the third");
    }
}

#[test]
fn publish_rejects_bad_input_with_400() {
    let h = Harness::new();
    let cases: Vec<(&str, Headers, &str)> = vec![
        (
            "key without value",
            vec![("Upstash-Flow-Control-Key", "k")],
            "without a flow-control value",
        ),
        (
            "value without key",
            vec![("Upstash-Flow-Control-Value", "rate=1")],
            "without a flow-control key",
        ),
        ("empty value", limited("k", "").to_vec(), "empty"),
        ("unknown limit", limited("k", "speed=3").to_vec(), "speed"),
        (
            "zero parallelism",
            limited("k", "parallelism=0").to_vec(),
            "parallelism=0",
        ),
        (
            "compound period",
            limited("k", "rate=1, period=3d5h").to_vec(),
            "3d5h",
        ),
        (
            "conflicting names",
            vec![
                ("Upstash-Flow-Control-Key", "a"),
                ("Service-Flow-Control-Key", "b"),
                ("Upstash-Flow-Control-Value", "rate=1"),
            ],
            "send one of them",
        ),
        (
            "bad method",
            vec![("Upstash-Method", "P0ST")],
            "Upstash-Method",
        ),
    ];
    for (name, headers, part) in cases {
        let res = h.send_with(Method::Post, DEST, Cred::Queue, &headers, "x", t0());
        assert_error(&res, 400, name);
        let msg = res.body_json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(msg.contains(part), "{name}: {msg:?} lacks {part:?}");
    }
    for dest in [
        "/v2/publish/ftp://h/x",
        "/v2/publish/not-a-url",
        "/v2/publish/http://",
    ] {
        let res = h.send(Method::Post, dest, Cred::Queue, "x", t0());
        assert_error(&res, 400, dest);
    }
    assert!(
        h.service.flow().poll_dispatch(t0()).is_none(),
        "nothing was queued"
    );
}

#[test]
fn key_operations_change_what_is_dispatched() {
    let h = Harness::new();
    let flow = h.service.flow();
    let now = t0();
    assert_eq!(post(&h, "/v2/flowControl/k/pause", now).1["isPaused"], true);
    for _ in 0..4 {
        assert_eq!(publish(&h, &limited("k", "parallelism=1"), "m", now).0, 201);
    }
    assert!(flow.poll_dispatch(now).is_none(), "paused");
    let (s, info) = post(&h, "/v2/flowControl/k/resume", now);
    assert_eq!((s, info["isPaused"].clone()), (200, Value::Bool(false)));
    let first = flow.poll_dispatch(now).expect("resumed");
    assert!(flow.poll_dispatch(now).is_none(), "parallelism 1");

    // Pin parallelism 3 (query parameters as the SDK sends them): two more may go.
    let (s, info) = post(
        &h,
        "/v2/flowControl/k/pin?parallelism=3&rate=2&period=60",
        now,
    );
    assert_eq!(s, 200, "{info}");
    assert_eq!(
        (
            info["isPinnedParallelism"].clone(),
            info["isPinnedRate"].clone()
        ),
        (Value::Bool(true), Value::Bool(true))
    );
    assert_eq!(
        (
            info["parallelismMax"].clone(),
            info["rateMax"].clone(),
            info["ratePeriod"].clone()
        ),
        (3.into(), 2.into(), 60.into())
    );
    let second = flow.poll_dispatch(now).expect("pinned parallelism 3");
    let third = flow
        .poll_dispatch(now)
        .expect("rate 2 per minute: the window was reset by pin");
    assert!(flow.poll_dispatch(now).is_none(), "rate 2 per 60 s reached");
    // A message cannot change pinned parts.
    assert_eq!(
        publish(&h, &limited("k", "parallelism=1, rate=100"), "m", now).0,
        201
    );
    assert_eq!(get(&h, "/v2/flowControl/k", now).1["parallelismMax"], 3);

    let (_, info) = get(&h, "/v2/flowControl/k", now);
    assert_eq!(info["rateCount"], 2);
    let (s, info) = post(&h, "/v2/flowControl/k/resetRate", now);
    assert_eq!((s, info["rateCount"].clone()), (200, 0.into()));
    for d in [first, second, third] {
        flow.complete(d.id, now).expect("active");
    }
    assert!(
        flow.poll_dispatch(now).is_some(),
        "after resetRate the window has room"
    );

    let (s, info) = post(
        &h,
        "/v2/flowControl/k/unpin?parallelism=true&rate=false",
        now,
    );
    assert_eq!(s, 200);
    assert_eq!(
        (
            info["isPinnedParallelism"].clone(),
            info["isPinnedRate"].clone()
        ),
        (Value::Bool(false), Value::Bool(true))
    );

    let (s, global) = get(&h, "/v2/globalParallelism", now);
    assert_eq!((s, global["parallelismCount"].clone()), (200, 1.into()));

    let (s, list) = get(&h, "/v2/flowControl", now);
    assert_eq!(s, 200);
    let keys: Vec<_> = list
        .as_array()
        .expect("bare array")
        .iter()
        .map(|k| k["flowControlKey"].clone())
        .collect();
    assert_eq!(keys, [Value::from("k")]);
}

#[test]
fn rate_window_follows_the_manual_clock() {
    let h = Harness::new();
    let flow = h.service.flow();
    for _ in 0..5 {
        publish(&h, &limited("r", "rate=2, period=10s"), "m", t0());
    }
    let count = |now: Timestamp| {
        let ds: Vec<_> = std::iter::from_fn(|| flow.poll_dispatch(now)).collect();
        for d in &ds {
            flow.complete(d.id, now).expect("active");
        }
        ds.len()
    };
    assert_eq!(count(t0()), 2);
    assert_eq!(count(t0().add_millis(9_999)), 0);
    let (_, info) = get(&h, "/v2/flowControl/r", t0().add_millis(9_999));
    assert_eq!(
        (info["rateCount"].clone(), info["ratePeriodStart"].clone()),
        (2.into(), 1_700_000_000.into())
    );
    assert_eq!(count(t0().add_millis(10_000)), 2);
    assert_eq!(count(t0().add_millis(20_000)), 1);
}

#[test]
fn flow_control_errors() {
    let h = Harness::new();
    let now = t0();
    let cases = [
        (Method::Get, "/v2/flowControl/unknown", 404, "unknown"),
        (Method::Get, "/v2/flowControl/a%20b", 404, "a b"),
        (
            Method::Post,
            "/v2/flowControl/unknown/resume",
            404,
            "unknown",
        ),
        (Method::Post, "/v2/flowControl/k/pin", 400, "at least one"),
        (
            Method::Post,
            "/v2/flowControl/k/pin?parallelism=0",
            400,
            "parallelism",
        ),
        (Method::Post, "/v2/flowControl/k/pin?period=8d", 400, "8d"),
        (Method::Post, "/v2/flowControl/k/pin?speed=2", 400, "speed"),
        (
            Method::Post,
            "/v2/flowControl/k/unpin?rate=maybe",
            400,
            "maybe",
        ),
        (Method::Post, "/v2/flowControl/k/pause?now=1", 400, "now"),
        (Method::Get, "/v2/other", 404, "/v2/other"),
    ];
    for (method, path, status, part) in cases {
        let res = h.send(method.clone(), path, Cred::Queue, "", now);
        assert_error(&res, status, path);
        let msg = res.body_json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(msg.contains(part), "{path}: {msg:?} lacks {part:?}");
    }
}

#[test]
fn queue_routes_demand_the_queue_token_and_their_method() {
    let h = Harness::new();
    let now = t0();
    let routes = [
        (Method::Post, DEST, Method::Get, "POST"),
        (Method::Get, "/v2/flowControl", Method::Post, "GET"),
        (Method::Get, "/v2/flowControl/k", Method::Delete, "GET"),
        (Method::Post, "/v2/flowControl/k/pause", Method::Get, "POST"),
        (
            Method::Post,
            "/v2/flowControl/k/resume",
            Method::Get,
            "POST",
        ),
        (
            Method::Post,
            "/v2/flowControl/k/pin?rate=1",
            Method::Get,
            "POST",
        ),
        (
            Method::Post,
            "/v2/flowControl/k/unpin?rate=true",
            Method::Put,
            "POST",
        ),
        (
            Method::Post,
            "/v2/flowControl/k/resetRate",
            Method::Get,
            "POST",
        ),
        (Method::Get, "/v2/globalParallelism", Method::Post, "GET"),
    ];
    for (method, path, wrong, allow) in routes {
        for cred in [Cred::None, Cred::Wrong, Cred::Vector, Cred::Ann] {
            let res = h.send(method.clone(), path, cred, "x", now);
            assert_error(&res, 401, &format!("{path} with {cred:?}"));
        }
        let res = h.send(wrong.clone(), path, Cred::Queue, "x", now);
        assert_error(&res, 405, &format!("{wrong} {path}"));
        assert_eq!(res.header("allow"), Some(allow));
    }
    // None of the refused calls changed anything.
    assert!(h.service.flow().poll_dispatch(now).is_none());
    assert_eq!(get(&h, "/v2/flowControl", now).1, Value::Array(Vec::new()));
}

#[test]
fn waiting_messages_survive_a_snapshot_and_a_new_service() {
    use std::sync::Arc;

    use flowvec::flow::{FlowControl, FlowSnapshot, SharedFlowControl};
    use flowvec::wire::Message;

    let h = Harness::new();
    let now = t0();
    post(&h, "/v2/flowControl/s/pause", now);
    for body in ["one", "two"] {
        let headers = [
            ("Content-Type", "text/plain"),
            limited("s", "rate=1")[0],
            limited("s", "rate=1")[1],
        ];
        assert_eq!(publish(&h, &headers, body, now).0, 201);
    }
    let json = serde_json::to_string(&h.service.flow().snapshot()).expect("plain data");

    let snapshot: FlowSnapshot<Message> = serde_json::from_str(&json).expect("own output");
    let engine = FlowControl::restore(snapshot, now.add_millis(5)).expect("consistent");
    // A new service (as after a restart) over the restored engine.
    let service = Harness::new()
        .service
        .with_flow(Arc::new(SharedFlowControl::from_engine(engine)));
    let req = |method, path: &str| {
        flowvec::wire::Request::new(method, path).with_header("Authorization", "Bearer queue-token")
    };
    let info = service
        .handle(&req(Method::Get, "/v2/flowControl/s"), now)
        .body_json();
    assert_eq!(
        (info["waitListSize"].clone(), info["isPaused"].clone()),
        (2.into(), Value::Bool(true))
    );
    assert!(
        service
            .handle(&req(Method::Post, "/v2/flowControl/s/resume"), now)
            .flow_changed
    );
    let d = service.flow().poll_dispatch(now).expect("resumed");
    assert_eq!(d.message.body, b"one");
    assert_eq!(d.message.destination, "http://127.0.0.1:9/hook");
    assert_eq!(
        d.message.headers,
        [("Content-Type".to_owned(), "text/plain".to_owned())]
    );
}

#[test]
fn deduplication_ids_and_content_answer_202_with_the_first_id_for_ten_minutes() {
    use flowvec::state::DEDUPLICATION_WINDOW_MS;

    let h = Harness::new();
    let now = t0();
    post(&h, "/v2/flowControl/d/pause", now);
    let keyed = |extra: (&'static str, &'static str)| {
        let [k, v] = limited("d", "parallelism=1");
        [k, v, extra]
    };
    let by_id = keyed(("Upstash-Deduplication-Id", "order-1"));
    let (status, first) = publish(&h, &by_id, "one", now);
    assert_eq!(status, 201, "{first}");
    assert_eq!(first.get("deduplicated"), None);
    // The same id with another body, a minute later: accepted, not queued.
    let (status, again) = publish(&h, &by_id, "two", now.add_millis(60_000));
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["messageId"], first["messageId"]);
    assert_eq!(again["deduplicated"], Value::Bool(true));

    // Content based: the same destination, body and headers; `True` as the SDK spells it.
    let by_content = keyed(("Upstash-Content-Based-Deduplication", "True"));
    let soon = now.add_millis(60_001);
    let (status, a) = publish(&h, &by_content, "same", soon);
    assert_eq!(status, 201, "{a}");
    let (status, b) = publish(&h, &by_content, "same", soon.add_millis(1));
    assert_eq!((status, &b["messageId"]), (202, &a["messageId"]));
    assert_eq!(
        publish(&h, &by_content, "other", soon.add_millis(2)).0,
        201,
        "another body"
    );
    assert_ne!(a["messageId"], first["messageId"]);

    let (_, info) = get(&h, "/v2/flowControl/d", soon.add_millis(2));
    assert_eq!(info["waitListSize"], 3, "one, same, other: {info}");

    // The window is 10 minutes from the first publish, not from the repeat.
    let expired = now.add_millis(DEDUPLICATION_WINDOW_MS);
    let (status, later) = publish(&h, &by_id, "three", expired);
    assert_eq!(status, 201, "{later}");
    assert_ne!(later["messageId"], first["messageId"]);
    let (status, _) = publish(&h, &by_id, "four", expired.add_millis(1));
    assert_eq!(status, 202, "the new publish starts a new window");

    // A refused publish remembers nothing.
    let bad = [
        ("Upstash-Deduplication-Id", "order-9"),
        ("Upstash-Retries", "99"),
    ];
    assert_eq!(publish(&h, &bad, "x", expired).0, 400);
    let good = [("Upstash-Deduplication-Id", "order-9")];
    assert_eq!(publish(&h, &good, "x", expired).0, 201);
}
