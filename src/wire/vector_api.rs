//! The vector API: `/{op}[/{namespace}]` over [`Index`], answered in the `{"result": …}`
//! envelope.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::state::Command;
use crate::vector::text::{Embedder, Embedding, TextRole};
use crate::vector::{Delete, Fetch, Index, Query, QueryResult, Range, Update, Vector, VectorError};

use super::percent::{query_pairs, quote};
use super::router::VectorOp;
use super::write::{Prepared, ReplyKind, result, write};
use super::{Request, Response, WireError};

/// One vector operation on `namespace`: reads are answered, writes become commands. `dense`
/// is the host's model for text `data` on an index with a dense part.
pub(crate) fn handle(
    index: &Index,
    dense: Option<&dyn Embedder>,
    op: VectorOp,
    namespace: &str,
    req: &Request,
) -> Result<Prepared, WireError> {
    let namespace = namespace.to_owned();
    Ok(match op {
        VectorOp::Upsert => {
            let vectors = match first_byte(&req.body) {
                Some(b'{') => vec![parse::<Vector>(&req.body, UPSERT)?],
                _ => parse::<Vec<Vector>>(&req.body, UPSERT)?,
            };
            // Checked here so bad input is refused before it reaches the log.
            index.check_upsert(&vectors)?;
            write(
                Command::Upsert { namespace, vectors },
                ReplyKind::VectorSuccess,
            )
        }
        VectorOp::UpsertData => {
            let mut vectors = match first_byte(&req.body) {
                Some(b'{') => vec![parse::<Vector>(&req.body, UPSERT_DATA)?],
                _ => parse::<Vec<Vector>>(&req.body, UPSERT_DATA)?,
            };
            if let Some(v) = vectors.iter().find(|v| v.vector.is_some()) {
                return Err(VectorError::VectorWithData {
                    id: v.id.clone(),
                    part: "vector",
                }
                .into());
            }
            // Cheap checks first, so a bad batch costs no model time.
            index.check_upsert_data(&without_dense(index, &vectors))?;
            if index.config().kind.has_dense() {
                embed_documents(dense, &mut vectors)?;
            }
            index.check_upsert_data(&vectors)?;
            write(
                Command::UpsertData { namespace, vectors },
                ReplyKind::VectorSuccess,
            )
        }
        VectorOp::QueryData => Prepared::Answer(query_data(index, dense, &namespace, &req.body)?),
        VectorOp::Update => write(
            Command::Update {
                namespace,
                update: parse::<Update>(&req.body, UPDATE)?,
            },
            ReplyKind::VectorUpdated,
        ),
        VectorOp::Query => Prepared::Answer(query(index, dense, &namespace, &req.body)?),
        VectorOp::Fetch => Prepared::Answer(result(
            &index.fetch(&namespace, parse::<Fetch>(&req.body, FETCH)?)?,
        )),
        VectorOp::Delete => write(
            Command::Delete {
                namespace,
                delete: parse::<Delete>(&req.body, DELETE)?,
            },
            ReplyKind::VectorDeleted,
        ),
        VectorOp::Range => Prepared::Answer(result(
            &index.range(&namespace, parse::<Range>(&req.body, RANGE)?)?,
        )),
        VectorOp::Reset => {
            let command = if reset_all(&req.query)? {
                Command::ResetAll
            } else {
                Command::Reset { namespace }
            };
            write(command, ReplyKind::VectorSuccess)
        }
        VectorOp::Info => Prepared::Answer(result(&info(index, dense))),
        VectorOp::ListNamespaces => Prepared::Answer(result(&index.list_namespaces())),
        VectorOp::DeleteNamespace => {
            index.check_delete_namespace(&namespace)?;
            write(
                Command::DeleteNamespace { namespace },
                ReplyKind::VectorSuccess,
            )
        }
    })
}

const UPSERT: &str = "a record {\"id\", \"vector\"?, \"sparseVector\"?, \"metadata\"?, \"data\"?} or an array of them";
const UPSERT_DATA: &str = "a record {\"id\", \"data\", \"metadata\"?} or an array of them";
const QUERY_DATA: &str =
    "a query object {\"data\", \"topK\"?, \"filter\"?, ...} or an array of them";
const UPDATE: &str =
    "{\"id\", \"vector\"?, \"sparseVector\"?, \"metadata\"?, \"data\"?, \"metadataUpdateMode\"?}";
const QUERY: &str =
    "a query object {\"vector\"?, \"sparseVector\"?, \"topK\"?, ...} or an array of them";
const FETCH: &str = "{\"ids\": [...]} or {\"prefix\": \"...\"} with optional include flags";
const DELETE: &str = "{\"ids\": [...]}, {\"prefix\": \"...\"} or {\"filter\": \"...\"}";
const RANGE: &str = "{\"cursor\", \"limit\", \"prefix\"?, include flags}";

/// `/query`: one object gives a flat list; an array gives a list of lists, except that an
/// array of one gives a flat list (DESIGN §4: the SDKs send `query_many([q])` as one query and
/// read a flat list either way).
fn query(
    index: &Index,
    dense: Option<&dyn Embedder>,
    namespace: &str,
    body: &[u8],
) -> Result<Response, WireError> {
    // `data` in a `/query` body is a text query, as `/query-data` (checked on the raw bytes
    // first, so vector queries pay nothing).
    if body.windows(6).any(|w| w == b"\"data\"") && has_data_field(body) {
        return query_data(index, dense, namespace, body);
    }
    if first_byte(body) == Some(b'[') {
        let queries = parse::<Vec<Query>>(body, QUERY)?;
        if let [single] = queries.as_slice() {
            return Ok(result(&index.query(namespace, single)?));
        }
        return Ok(result(&index.query_batch(namespace, &queries)?));
    }
    let query = parse::<Query>(body, QUERY)?;
    Ok(result(&index.query(namespace, &query)?))
}

/// The records as [`Index::check_upsert_data`] sees them before the dense model ran: with a
/// placeholder dense part (a unit vector) where the index has one, so every other rule is
/// checked first.
fn without_dense(index: &Index, vectors: &[Vector]) -> Vec<Vector> {
    let dimension = index.config().dimension;
    if !index.config().kind.has_dense() {
        return vectors.to_vec();
    }
    vectors
        .iter()
        .map(|v| {
            let mut v = v.clone();
            if v.data.is_some() {
                let mut unit = vec![0.0; dimension];
                unit[0] = 1.0;
                v.vector = Some(unit);
            }
            v
        })
        .collect()
}

/// Fills each record's dense part with `model`'s embedding of its `data` (one batch).
fn embed_documents(model: Option<&dyn Embedder>, vectors: &mut [Vector]) -> Result<(), WireError> {
    let model = model.ok_or(VectorError::NoEmbedder {
        part: "dense",
        hint: crate::vector::DENSE_EMBEDDER_HINT,
    })?;
    let texts: Vec<&str> = vectors
        .iter()
        .map(|v| v.data.as_deref().unwrap_or(""))
        .collect();
    let out = model
        .embed(&texts, TextRole::Document)
        .map_err(VectorError::from)?;
    for (v, e) in vectors.iter_mut().zip(out) {
        v.vector = Some(dense_part(model, e)?);
    }
    Ok(())
}

fn dense_part(model: &dyn Embedder, e: Embedding) -> Result<Vec<f32>, WireError> {
    match e {
        Embedding::Dense(v) => Ok(v),
        Embedding::Sparse(_) => Err(VectorError::Embed(crate::vector::text::EmbedError::new(
            model.name(),
            "made a sparse vector, expected a dense one",
        ))
        .into()),
    }
}

/// A `/query-data` object (or a `/query` object with `data`) as the [`Query`] it searches
/// with: `data` embedded by BM25 for the sparse part and by `dense` for the dense part. `None`
/// when nothing is left to search (a sparse index and text without terms: no results).
pub(crate) fn text_query(
    index: &Index,
    dense: Option<&dyn Embedder>,
    mut object: Value,
) -> Result<Option<Query>, WireError> {
    let data = match object.as_object_mut().and_then(|o| o.remove("data")) {
        Some(Value::String(data)) => data,
        other => {
            return Err(WireError::BadJson {
                problem: match other {
                    None => "no `data` field".to_owned(),
                    Some(v) => format!("`data` is {v}, expected a string"),
                },
                expected: QUERY_DATA,
            });
        }
    };
    let query: Query = serde_json::from_value(object).map_err(|err| WireError::BadJson {
        problem: err.to_string(),
        expected: QUERY_DATA,
    })?;
    let embedding = match dense {
        Some(model) if index.text_query_uses_dense(query.query_mode) => {
            let out = model
                .embed(&[data.as_str()], TextRole::Query)
                .map_err(VectorError::from)?;
            match out.into_iter().next() {
                Some(e) => Some(dense_part(model, e)?),
                None => None,
            }
        }
        _ => None,
    };
    Ok(index.text_query(query, &data, embedding)?)
}

/// `/query-data`: like `/query`, each query's `data` embedded.
fn query_data(
    index: &Index,
    dense: Option<&dyn Embedder>,
    namespace: &str,
    body: &[u8],
) -> Result<Response, WireError> {
    let value = parse::<Value>(body, QUERY_DATA)?;
    let objects = match value {
        Value::Array(items) => items,
        object => return text_answer(index, namespace, text_query(index, dense, object)?),
    };
    let queries = objects
        .into_iter()
        .map(|o| text_query(index, dense, o))
        .collect::<Result<Vec<_>, _>>()?;
    if let [single] = queries.as_slice() {
        return text_answer(index, namespace, single.clone());
    }
    // Run the searchable ones as one batch (one consistent view); the rest answer `[]`.
    let runnable: Vec<Query> = queries.iter().flatten().cloned().collect();
    let mut answers = index.query_batch(namespace, &runnable)?.into_iter();
    let out: Vec<Vec<QueryResult>> = queries
        .iter()
        .map(|q| match q {
            Some(_) => answers.next().unwrap_or_default(),
            None => Vec::new(),
        })
        .collect();
    Ok(result(&out))
}

fn text_answer(
    index: &Index,
    namespace: &str,
    query: Option<Query>,
) -> Result<Response, WireError> {
    match query {
        Some(q) => Ok(result(&index.query(namespace, &q)?)),
        None => Ok(result(&Vec::<QueryResult>::new())),
    }
}

/// Whether `/reset` has `all` in its query (`?all`, `?all=true`); `?all=false` is one
/// namespace; any other parameter is an error.
fn reset_all(query: &str) -> Result<bool, WireError> {
    let mut all = false;
    for (name, value) in query_pairs(query)? {
        if name != "all" {
            return Err(WireError::UnknownQueryParameter {
                name: quote(&name),
                expected: "all",
            });
        }
        all = match value.as_str() {
            "" | "true" | "1" => true,
            "false" | "0" => false,
            other => {
                return Err(WireError::BadQueryParameter {
                    name,
                    value: quote(other),
                    expected: "no value, true or false",
                });
            }
        };
    }
    Ok(all)
}

/// `/info`, with `embeddingModel` in `denseIndex` / `sparseIndex` (the vector SDK reads that
/// key whenever the object is present): the dense model's name (the configuration's, else the
/// host's model's), `"BM25"`, or `""` for none.
fn info(index: &Index, dense: Option<&dyn Embedder>) -> Value {
    let mut info = serde_json::to_value(index.info()).unwrap_or(Value::Null);
    let embedders = &index.config().embedders;
    let dense_name = embedders
        .dense
        .clone()
        .or_else(|| dense.map(|m| m.name().to_owned()))
        .unwrap_or_default();
    let models = [
        ("denseIndex", dense_name),
        (
            "sparseIndex",
            if embedders.bm25.is_some() {
                "BM25".to_owned()
            } else {
                String::new()
            },
        ),
    ];
    for (part, model) in models {
        if let Some(Value::Object(obj)) = info.get_mut(part) {
            obj.entry("embeddingModel")
                .or_insert_with(|| Value::String(model));
        }
    }
    info
}

/// Whether the body (an object or an array of them) has a top-level `data` field.
fn has_data_field(body: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => o.contains_key("data"),
        Ok(Value::Array(items)) => items
            .iter()
            .any(|i| i.as_object().is_some_and(|o| o.contains_key("data"))),
        _ => false,
    }
}

fn first_byte(body: &[u8]) -> Option<u8> {
    body.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// The body as `T`; an empty body or JSON of the wrong shape is a 400 naming what was expected.
fn parse<T: DeserializeOwned>(body: &[u8], expected: &'static str) -> Result<T, WireError> {
    if first_byte(body).is_none() {
        return Err(WireError::EmptyBody { expected });
    }
    serde_json::from_slice(body).map_err(|err| WireError::BadJson {
        problem: err.to_string(),
        expected,
    })
}
