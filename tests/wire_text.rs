//! Text `data` through `flowvec::wire`: `/upsert-data`, `/query-data` and `data` in `/query`
//! (single and batch forms, as the upstash-vector SDK sends them) on a BM25 sparse index, a
//! dense index with a host model, and a dense index without one.

use flowvec::flow::Timestamp;
use flowvec::state::Command;
use flowvec::vector::text::{Bm25Params, EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
use flowvec::vector::{Index, IndexConfig, Metric};
use flowvec::wire::{Method, Prepared, Request, Service, Tokens};
use serde_json::{Value, json};
use std::sync::Arc;

fn now() -> Timestamp {
    Timestamp::from_secs(1_700_000_000)
}

fn call(service: &Service, path: &str, body: &str) -> (u16, Value) {
    let req = Request::new(Method::Post, path)
        .with_header("Authorization", "Bearer t")
        .with_body(body.as_bytes().to_vec());
    let res = service.handle(&req, now());
    (res.status, res.body_json())
}

fn ids(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("id"))
        .collect()
}

fn sparse_service() -> Service {
    let index = Index::new(IndexConfig::sparse().with_bm25(Bm25Params::default())).expect("valid");
    Service::new(index, Tokens::shared("t"))
}

#[test]
fn sparse_index_takes_text_in_every_form_the_sdk_sends() {
    let s = sparse_service();
    let (status, body) = call(
        &s,
        "/upsert-data/ns",
        r#"[{"id":"a","data":"Red apples and red cherries","metadata":{"g":1}},
            {"id":"b","data":"Green apples","metadata":null},
            {"id":"c","data":"A pear, a plum."}]"#,
    );
    assert_eq!(
        (status, &body["result"]),
        (200, &json!("Success")),
        "{body}"
    );
    let (status, body) = call(&s, "/upsert-data/ns", r#"{"id":"d","data":"plum jam"}"#);
    assert_eq!(status, 200, "{body}");

    // One query: "red" only in a (twice), "apples" in a and b.
    let (status, body) = call(
        &s,
        "/query-data/ns",
        r#"{"data":"red apples","topK":5,"includeMetadata":true,"includeData":true,"filter":""}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body["result"]), ["a", "b"]);
    assert_eq!(body["result"][0]["metadata"], json!({"g": 1}));
    assert_eq!(body["result"][0]["data"], "Red apples and red cherries");
    // A filter, IDF weighting, and `data` in a /query body.
    let (_, body) = call(
        &s,
        "/query-data/ns",
        r#"{"data":"apples","topK":5,"filter":"g = 1"}"#,
    );
    assert_eq!(ids(&body["result"]), ["a"]);
    let (_, body) = call(
        &s,
        "/query/ns",
        r#"{"data":"jam plum","topK":5,"weightingStrategy":"IDF"}"#,
    );
    assert_eq!(ids(&body["result"]), ["d", "c"]);
    // Batches: a list of lists; stopword-only text answers an empty list.
    let (status, body) = call(
        &s,
        "/query-data/ns",
        r#"[{"data":"jam","topK":1},{"data":"the of and","topK":3},{"data":"cherries"}]"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body["result"][0]), ["d"]);
    assert_eq!(body["result"][1], json!([]));
    assert_eq!(ids(&body["result"][2]), ["a"]);
    // info names the sparse model.
    let (_, body) = call(&s, "/info", "");
    assert_eq!(body["result"]["sparseIndex"]["embeddingModel"], "BM25");
}

#[test]
fn bad_text_input_answers_400_naming_the_problem() {
    let s = sparse_service();
    for (path, body, needle) in [
        ("/upsert-data", r#"[{"id":"a"}]"#, "has no `data`"),
        ("/upsert-data", r#"[{"id":"a","data":"to be"}]"#, "no terms"),
        (
            "/upsert-data",
            r#"[{"id":"a","data":"x","sparseVector":{"indices":[1],"values":[1]}}]"#,
            "expected only `data`",
        ),
        (
            "/upsert-data",
            r#"[{"id":"a","data":"x","vector":[1]}]"#,
            "expected only `data`",
        ),
        ("/query-data", r#"{"topK":3}"#, "no `data` field"),
        ("/query-data", r#"{"data":7}"#, "expected a string"),
        ("/query-data", r#"{"data":"x","topK":0}"#, "topK"),
        ("/query-data", "", "a query object"),
    ] {
        let (status, res) = call(&s, path, body);
        assert_eq!(status, 400, "{path} {body}: {res}");
        let error = res["error"].as_str().expect("error");
        assert!(error.contains(needle), "{path} {body}: {error}");
    }
    // Nothing of a bad batch was written.
    let (_, res) = call(
        &s,
        "/upsert-data",
        r#"[{"id":"ok","data":"fig"},{"id":"bad","data":"a"}]"#,
    );
    assert!(res["error"].as_str().is_some());
    let (_, info) = call(&s, "/info", "");
    assert_eq!(info["result"]["vectorCount"], 0);
}

/// A toy dense model: counts of "cat" and "dog".
#[derive(Debug)]
struct Pets;

impl Embedder for Pets {
    fn name(&self) -> &str {
        "pets"
    }
    fn kind(&self) -> EmbeddingKind {
        EmbeddingKind::Dense { dimension: 2 }
    }
    fn embed(&self, texts: &[&str], _: TextRole) -> Result<Vec<Embedding>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let n = |w: &str| t.matches(w).count() as f32 + 0.1;
                Embedding::Dense(vec![n("cat"), n("dog")])
            })
            .collect())
    }
}

#[test]
fn dense_text_is_embedded_before_it_is_logged_and_without_a_model_says_how_to_get_one() {
    let index = Index::new(IndexConfig::dense(2, Metric::Cosine)).expect("valid");
    let s = Service::new(index, Tokens::shared("t")).with_dense_embedder(Arc::new(Pets));
    let req = Request::new(Method::Post, "/upsert-data")
        .with_header("Authorization", "Bearer t")
        .with_body(r#"[{"id":"c","data":"cat cat"},{"id":"d","data":"dog"}]"#);
    let Prepared::Write(write) = s.prepare(&req, now()) else {
        panic!("a write")
    };
    let (command, reply) = write.into_parts();
    let Command::UpsertData { vectors, .. } = &command else {
        panic!("{command:?}")
    };
    assert_eq!(
        vectors[0].vector,
        Some(vec![2.1, 0.1]),
        "the logged command holds the embedding"
    );
    assert_eq!(reply.respond(s.machine().apply(command, now())).status, 200);
    let (_, body) = call(
        &s,
        "/query-data",
        r#"{"data":"a dog","topK":1,"includeVectors":true}"#,
    );
    assert_eq!(ids(&body["result"]), ["d"]);
    assert_eq!(body["result"][0]["vector"], json!([0.1f32, 1.1f32]));
    let (_, info) = call(&s, "/info", "");
    assert_eq!(info["result"]["denseIndex"]["embeddingModel"], "pets");

    // The host checks its model against the index before serving.
    let fits = Index::new(IndexConfig::dense(2, Metric::Cosine)).expect("valid");
    assert!(fits.check_dense_embedder(&Pets).is_ok());
    for (config, says) in [
        (
            IndexConfig::dense(3, Metric::Cosine),
            "dimension 2, for an index of dimension 3",
        ),
        (IndexConfig::sparse(), "a SPARSE index has no dense part"),
    ] {
        let e = Index::new(config)
            .expect("valid")
            .check_dense_embedder(&Pets)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }

    let bare = Service::new(
        Index::new(IndexConfig::dense(2, Metric::Cosine)).expect("valid"),
        Tokens::shared("t"),
    );
    for (path, body) in [
        ("/upsert-data", r#"[{"id":"c","data":"cat"}]"#),
        ("/query-data", r#"{"data":"cat"}"#),
        ("/query", r#"{"data":"cat","topK":2}"#),
    ] {
        let (status, res) = call(&bare, path, body);
        assert_eq!(status, 400, "{path}: {res}");
        let error = res["error"].as_str().expect("error");
        assert!(
            error.contains("no dense embedding model") && error.contains("with_dense_embedder"),
            "{error}"
        );
    }
    // Vector queries are unaffected.
    let (status, _) = call(&bare, "/query", r#"{"vector":[1,0],"topK":1}"#);
    assert_eq!(status, 200);
}
