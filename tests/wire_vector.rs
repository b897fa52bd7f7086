//! The vector API through `flowvec::wire` alone: every route's success, bad input, wrong
//! method, credentials and missing namespace, table-driven.

#[path = "wire_common/mod.rs"]
mod wire_common;

use flowvec::wire::Method;
use serde_json::{Value, json};
use wire_common::{Cred, Harness, assert_error, t0};

/// Two records in the default namespace, three in `docs`.
fn seeded() -> Harness {
    let h = Harness::new();
    let (s, _) = h.vector(
        "/upsert",
        r#"[{"id":"a","vector":[1,0],"metadata":{"g":1},"data":"alpha"},
            {"id":"b","vector":[0,1],"metadata":{"g":2}}]"#,
    );
    assert_eq!(s, 200);
    let (s, _) = h.vector(
        "/upsert/docs",
        r#"[{"id":"d1","vector":[1,0]},{"id":"d2","vector":[1,1]},{"id":"d3","vector":[0,1]}]"#,
    );
    assert_eq!(s, 200);
    h
}

struct Case {
    name: &'static str,
    path: &'static str,
    body: &'static str,
    status: u16,
    /// Expected `result` (for 200), or a substring of `error` (otherwise).
    expect: Expect,
}

enum Expect {
    Result(Value),
    ErrorContains(&'static str),
    Check(fn(&Value)),
}

fn ids(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("an id"))
        .collect()
}

fn cases() -> Vec<Case> {
    use Expect::{Check, ErrorContains, Result};
    vec![
        // upsert
        Case {
            name: "upsert array",
            path: "/upsert",
            body: r#"[{"id":"c","vector":[1,2]}]"#,
            status: 200,
            expect: Result(json!("Success")),
        },
        Case {
            name: "upsert one object with numeric id",
            path: "/upsert/docs",
            body: r#"{"id":5,"vector":[1,2],"sparseVector":null,"metadata":null,"data":null}"#,
            status: 200,
            expect: Result(json!("Success")),
        },
        Case {
            name: "upsert bad json",
            path: "/upsert",
            body: r#"[{"id":"c","vector":[1,2]"#,
            status: 400,
            expect: ErrorContains("invalid JSON body"),
        },
        Case {
            name: "upsert unknown field",
            path: "/upsert",
            body: r#"[{"id":"c","vectors":[1,2]}]"#,
            status: 400,
            expect: ErrorContains("vectors"),
        },
        Case {
            name: "upsert empty body",
            path: "/upsert",
            body: "",
            status: 400,
            expect: ErrorContains("empty"),
        },
        Case {
            name: "upsert wrong dimension",
            path: "/upsert",
            body: r#"[{"id":"c","vector":[1,2,3]}]"#,
            status: 422,
            expect: ErrorContains("Invalid vector dimension: 3, expected: 2"),
        },
        // update
        Case {
            name: "update existing",
            path: "/update",
            body: r#"{"id":"a","metadata":{"g":9},"metadataUpdateMode":"PATCH"}"#,
            status: 200,
            expect: Result(json!({"updated": 1})),
        },
        Case {
            name: "update missing id",
            path: "/update",
            body: r#"{"id":"zz","data":"x"}"#,
            status: 200,
            expect: Result(json!({"updated": 0})),
        },
        Case {
            name: "update bad json",
            path: "/update",
            body: "{",
            status: 400,
            expect: ErrorContains("invalid JSON body"),
        },
        Case {
            name: "update wrong dimension",
            path: "/update",
            body: r#"{"id":"a","vector":[1]}"#,
            status: 422,
            expect: ErrorContains("Invalid vector dimension: 1, expected: 2"),
        },
        // query
        Case {
            name: "query single is a flat list",
            path: "/query",
            body: r#"{"vector":[1,0.1],"topK":2,"includeMetadata":true}"#,
            status: 200,
            expect: Check(|r| {
                assert_eq!(ids(r), ["a", "b"]);
                assert_eq!(r[0]["metadata"], json!({"g":1}));
                assert!(r[0].get("vector").is_none());
            }),
        },
        Case {
            name: "query batch of one is a flat list",
            path: "/query/docs",
            body: r#"[{"vector":[1,0],"topK":1}]"#,
            status: 200,
            expect: Check(|r| assert_eq!(ids(r), ["d1"])),
        },
        Case {
            name: "query batch of two is a list of lists",
            path: "/query/docs",
            body: r#"[{"vector":[1,0],"topK":1},{"vector":[0,1],"topK":2}]"#,
            status: 200,
            expect: Check(|r| {
                assert_eq!(ids(&r[0]), ["d1"]);
                assert_eq!(ids(&r[1]), ["d3", "d2"]);
            }),
        },
        Case {
            name: "query unknown namespace is empty",
            path: "/query/nowhere",
            body: r#"{"vector":[1,0]}"#,
            status: 200,
            expect: Result(json!([])),
        },
        Case {
            name: "query bad json",
            path: "/query",
            body: "[{]",
            status: 400,
            expect: ErrorContains("invalid JSON body"),
        },
        Case {
            name: "query unknown field",
            path: "/query",
            body: r#"{"vector":[1,0],"includeVector":true}"#,
            status: 400,
            expect: ErrorContains("includeVector"),
        },
        Case {
            name: "query wrong dimension",
            path: "/query",
            body: r#"{"vector":[1,0,0,0]}"#,
            status: 422,
            expect: ErrorContains("Invalid vector dimension: 4, expected: 2"),
        },
        Case {
            name: "fetch keeps order and nulls",
            path: "/fetch",
            body: r#"{"ids":["b","zz","a"],"includeData":true}"#,
            status: 200,
            expect: Check(|r| {
                assert_eq!(r[0]["id"], "b");
                assert!(r[1].is_null());
                assert_eq!(r[2]["data"], "alpha");
            }),
        },
        Case {
            name: "fetch by prefix in a namespace",
            path: "/fetch/docs",
            body: r#"{"prefix":"d"}"#,
            status: 200,
            expect: Check(|r| assert_eq!(ids(r), ["d1", "d2", "d3"])),
        },
        Case {
            name: "fetch bad json",
            path: "/fetch",
            body: r#"{"ids":"#,
            status: 400,
            expect: ErrorContains("invalid JSON body"),
        },
        Case {
            name: "fetch both ids and prefix",
            path: "/fetch",
            body: r#"{"ids":["a"],"prefix":"a"}"#,
            status: 400,
            expect: ErrorContains("exactly one"),
        },
        // delete
        Case {
            name: "delete ids",
            path: "/delete",
            body: r#"{"ids":["a","zz"]}"#,
            status: 200,
            expect: Result(json!({"deleted": 1})),
        },
        Case {
            name: "delete by prefix in a namespace",
            path: "/delete/docs",
            body: r#"{"prefix":"d"}"#,
            status: 200,
            expect: Result(json!({"deleted": 3})),
        },
        Case {
            name: "delete bad json",
            path: "/delete",
            body: "nope",
            status: 400,
            expect: ErrorContains("invalid JSON body"),
        },
        // range
        Case {
            name: "range pages with a string cursor",
            path: "/range/docs",
            body: r#"{"cursor":"","limit":2,"includeMetadata":true}"#,
            status: 200,
            expect: Check(|r| {
                assert_eq!(ids(&r["vectors"]), ["d1", "d2"]);
                assert!(r["nextCursor"].as_str().is_some_and(|c| !c.is_empty()));
            }),
        },
        Case {
            name: "range last page has an empty cursor",
            path: "/range",
            body: r#"{"cursor":"0","limit":10}"#,
            status: 200,
            expect: Check(|r| {
                assert_eq!(ids(&r["vectors"]), ["a", "b"]);
                assert_eq!(r["nextCursor"], "");
            }),
        },
        Case {
            name: "range bad json",
            path: "/range",
            body: r#"{"limit":"x"}"#,
            status: 400,
            expect: ErrorContains("invalid JSON body"),
        },
        Case {
            name: "range zero limit",
            path: "/range",
            body: r#"{"cursor":"","limit":0}"#,
            status: 400,
            expect: ErrorContains("limit"),
        },
        // reset
        Case {
            name: "reset a namespace, empty body",
            path: "/reset/docs",
            body: "",
            status: 200,
            expect: Result(json!("Success")),
        },
        Case {
            name: "reset bad parameter",
            path: "/reset?everything",
            body: "",
            status: 400,
            expect: ErrorContains("everything"),
        },
        // info / list / delete namespace
        Case {
            name: "info",
            path: "/info",
            body: "",
            status: 200,
            expect: Check(|r| {
                assert_eq!(r["vectorCount"], 5);
                assert_eq!(r["dimension"], 2);
                assert_eq!(r["similarityFunction"], "COSINE");
                assert_eq!(r["namespaces"]["docs"]["vectorCount"], 3);
                assert_eq!(r["namespaces"][""]["pendingVectorCount"], 0);
                assert_eq!(r["denseIndex"]["embeddingModel"], "");
            }),
        },
        Case {
            name: "list namespaces",
            path: "/list-namespaces",
            body: "",
            status: 200,
            expect: Result(json!(["", "docs"])),
        },
        Case {
            name: "delete namespace",
            path: "/delete-namespace/docs",
            body: "",
            status: 200,
            expect: Result(json!("Success")),
        },
        Case {
            name: "delete unknown namespace",
            path: "/delete-namespace/nowhere",
            body: "",
            status: 404,
            expect: ErrorContains("nowhere"),
        },
        Case {
            name: "delete percent-encoded unknown namespace",
            path: "/delete-namespace/a%20b",
            body: "",
            status: 404,
            expect: ErrorContains("a b"),
        },
        Case {
            name: "delete default namespace",
            path: "/delete-namespace",
            body: "",
            status: 400,
            expect: ErrorContains("default namespace"),
        },
        // routes we do not offer
        Case {
            name: "unknown route",
            path: "/nope",
            body: "",
            status: 404,
            expect: ErrorContains("/nope"),
        },
        Case {
            name: "info with a namespace",
            path: "/info/docs",
            body: "",
            status: 404,
            expect: ErrorContains("/info/docs"),
        },
        Case {
            name: "text on a dense index without a model",
            path: "/upsert-data",
            body: "[]",
            status: 400,
            expect: ErrorContains("no dense embedding model"),
        },
        Case {
            name: "resumable query without a vector",
            path: "/resumable-query/docs",
            body: "{}",
            status: 400,
            expect: ErrorContains("`vector`"),
        },
        Case {
            name: "broken percent escape",
            path: "/query/%zz",
            body: "{}",
            status: 400,
            expect: ErrorContains("namespace"),
        },
    ]
}

#[test]
fn every_vector_route_answers_per_the_contract() {
    for case in cases() {
        let h = seeded();
        let res = h.send(Method::Post, case.path, Cred::Vector, case.body, t0());
        let body = res.body_json();
        match case.expect {
            Expect::Result(want) => {
                assert_eq!(res.status, case.status, "{}: {body}", case.name);
                assert_eq!(body, json!({ "result": want }), "{}", case.name);
            }
            Expect::Check(check) => {
                assert_eq!(res.status, case.status, "{}: {body}", case.name);
                assert!(body.get("error").is_none(), "{}: {body}", case.name);
                check(&body["result"]);
            }
            Expect::ErrorContains(part) => {
                assert_error(&res, case.status, case.name);
                let msg = body["error"].as_str().unwrap_or_default();
                assert!(msg.contains(part), "{}: {msg:?} lacks {part:?}", case.name);
            }
        }
    }
}

#[test]
fn writes_are_visible_to_later_reads() {
    let h = seeded();
    assert_eq!(
        h.vector("/delete", r#"{"ids":["a"]}"#).1["result"]["deleted"],
        1
    );
    assert_eq!(
        h.vector("/fetch", r#"{"ids":["a"]}"#).1["result"],
        json!([null])
    );
    h.vector("/update", r#"{"id":"b","data":"new"}"#);
    assert_eq!(
        h.vector("/fetch", r#"{"ids":["b"],"includeData":true}"#).1["result"][0]["data"],
        "new"
    );
    assert_eq!(h.vector("/reset", "").1["result"], "Success");
    assert_eq!(
        h.vector("/info", "").1["result"]["namespaces"][""]["vectorCount"],
        0
    );
    assert_eq!(
        h.vector("/info", "").1["result"]["namespaces"]["docs"]["vectorCount"],
        3
    );
    assert_eq!(h.vector("/reset?all", "").1["result"], "Success");
    assert_eq!(h.vector("/list-namespaces", "").1["result"], json!([""]));
    assert_eq!(h.vector("/info", "").1["result"]["vectorCount"], 0);
}

#[test]
fn every_vector_route_demands_the_vector_token() {
    let h = seeded();
    let routes = [
        "/upsert",
        "/update",
        "/query",
        "/fetch",
        "/delete",
        "/range",
        "/reset",
        "/info",
        "/list-namespaces",
        "/delete-namespace/docs",
        "/query/docs",
        "/upsert-data",
    ];
    for path in routes {
        for cred in [Cred::None, Cred::Wrong, Cred::Queue, Cred::Ann] {
            let res = h.send(Method::Post, path, cred, "{}", t0());
            assert_error(&res, 401, &format!("{path} with {cred:?}"));
            assert!(res.header("www-authenticate").is_some(), "{path}");
        }
    }
    // A malformed path parameter is not looked at before the credentials are.
    for cred in [Cred::None, Cred::Wrong] {
        assert_error(
            &h.send(Method::Post, "/query/%zz", cred, "{}", t0()),
            401,
            "bad escape",
        );
    }
    // Nothing was deleted by the refused calls.
    assert_eq!(h.vector("/info", "").1["result"]["vectorCount"], 5);
}

#[test]
fn wrong_methods_are_405_with_allow() {
    let h = seeded();
    let cases = [
        (Method::Get, "/upsert", "POST"),
        (Method::Get, "/query/docs", "POST"),
        (Method::Put, "/fetch", "POST"),
        (Method::Delete, "/update", "POST"),
        (Method::Get, "/range", "POST"),
        (Method::Get, "/delete", "DELETE, POST"),
        (Method::Get, "/reset", "DELETE, POST"),
        (Method::Delete, "/info", "GET, POST"),
        (Method::Put, "/list-namespaces", "GET, POST"),
        (Method::Get, "/delete-namespace/docs", "DELETE, POST"),
        (Method::Other("BREW".to_owned()), "/query", "POST"),
    ];
    for (method, path, allow) in cases {
        let res = h.send(method.clone(), path, Cred::Vector, "{}", t0());
        assert_error(&res, 405, &format!("{method} {path}"));
        assert_eq!(res.header("allow"), Some(allow), "{method} {path}");
    }
    // The non-POST methods the reference also uses work.
    assert_eq!(
        h.send(Method::Get, "/info", Cred::Vector, "", t0()).status,
        200
    );
    assert_eq!(
        h.send(
            Method::Delete,
            "/delete-namespace/docs",
            Cred::Vector,
            "",
            t0()
        )
        .status,
        200
    );
}

/// Separate from the table so the rest of the table runs while the filter engine is
/// unfinished.
#[test]
fn query_filters_through_the_wire() {
    let h = seeded();
    let (s, body) = h.vector(
        "/query",
        r#"{"vector":[1,0],"topK":5,"filter":"g = 2","includeVectors":true,"includeData":true}"#,
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(ids(&body["result"]), ["b"]);
    assert_eq!(body["result"][0]["vector"], json!([0.0, 1.0]));
    let res = h.send(
        Method::Post,
        "/query",
        Cred::Vector,
        r#"{"vector":[1,0],"filter":"g ="}"#,
        t0(),
    );
    assert_error(&res, 400, "bad filter");
    assert!(
        res.body_json()["error"]
            .as_str()
            .unwrap_or_default()
            .contains("filter")
    );
}

/// Invalid UTF-8 reaches the library only through the wire: in a record id inside the JSON
/// body, and percent-encoded in a namespace path segment. Each is a 400 with the JSON envelope,
/// and nothing is written.
#[test]
fn invalid_utf8_in_ids_and_namespaces_is_a_400_and_writes_nothing() {
    use flowvec::wire::Request;
    let h = seeded();
    let before = h.vector("/info", "").1;
    let auth = format!("Bearer {}", wire_common::VECTOR_TOKEN);

    let mut body = br#"[{"id":"ok-"#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(br#"","vector":[1,0]}]"#);
    let req = Request::new(Method::Post, "/upsert")
        .with_header("Authorization", auth.as_str())
        .with_body(body);
    assert_error(&h.service.handle(&req, t0()), 400, "invalid UTF-8 in an id");

    let req = Request::new(Method::Post, "/upsert/bad%FFns")
        .with_header("Authorization", auth.as_str())
        .with_body(br#"[{"id":"x","vector":[1,0]}]"#.to_vec());
    assert_error(
        &h.service.handle(&req, t0()),
        400,
        "invalid UTF-8 in a namespace",
    );

    let req = Request::new(Method::Post, "/fetch")
        .with_header("Authorization", auth.as_str())
        .with_body(b"{\"ids\":[\"\xc3\x28\"]}".to_vec());
    assert_error(
        &h.service.handle(&req, t0()),
        400,
        "invalid UTF-8 in a fetched id",
    );

    assert_eq!(
        h.vector("/info", "").1,
        before,
        "a rejected write changed the index"
    );
}
