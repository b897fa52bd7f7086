//! The vector API: `/{op}[/{namespace}]` over [`Index`], answered in the `{"result": …}`
//! envelope.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::state::Command;
use crate::vector::{Delete, Fetch, Index, Query, Range, Update, Vector};

use super::percent::{query_pairs, quote};
use super::router::VectorOp;
use super::write::{Prepared, ReplyKind, result, write};
use super::{Request, Response, WireError};

/// One vector operation on `namespace`: reads are answered, writes become commands.
pub(crate) fn handle(
    index: &Index,
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
        VectorOp::Update => write(
            Command::Update {
                namespace,
                update: parse::<Update>(&req.body, UPDATE)?,
            },
            ReplyKind::VectorUpdated,
        ),
        VectorOp::Query => Prepared::Answer(query(index, &namespace, &req.body)?),
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
        VectorOp::Info => Prepared::Answer(result(&info(index))),
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
fn query(index: &Index, namespace: &str, body: &[u8]) -> Result<Response, WireError> {
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

/// `/info`, with `embeddingModel: ""` in `denseIndex` / `sparseIndex` (the vector SDK reads
/// that key whenever the object is present; we host no embedding model).
fn info(index: &Index) -> Value {
    let mut info = serde_json::to_value(index.info()).unwrap_or(Value::Null);
    for part in ["denseIndex", "sparseIndex"] {
        if let Some(Value::Object(obj)) = info.get_mut(part) {
            obj.entry("embeddingModel")
                .or_insert_with(|| Value::String(String::new()));
        }
    }
    info
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
