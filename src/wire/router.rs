//! The route table: a raw path to a [`Route`] and the methods it accepts.

use super::auth::Api;
use super::percent::{decode, quote};
use super::{Method, WireError};

/// A vector API operation (`/{op}[/{namespace}]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VectorOp {
    Upsert,
    UpsertData,
    QueryData,
    Update,
    Query,
    Fetch,
    Delete,
    Range,
    Reset,
    Info,
    ListNamespaces,
    DeleteNamespace,
}

/// A resumable query operation (`/resumable-query[-data][/{namespace}]`,
/// `/resumable-query-next`, `/resumable-query-end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumableOp {
    /// Start with a vector query; answers the first page and the query's `uuid`.
    Start,
    /// Start with a text (`data`) query.
    StartData,
    /// The next page (`{"uuid", "additionalK"}`).
    Next,
    /// End the query (`{"uuid"}`).
    End,
}

/// A flow-control key operation (`POST /v2/flowControl/{key}/{op}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowOp {
    Pause,
    Resume,
    Pin,
    Unpin,
    ResetRate,
}

/// What a request asks for, with its path parameters decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A vector operation on a namespace (`""` is the default one).
    Vector { op: VectorOp, namespace: String },
    /// A resumable query operation; `namespace` is the start's (`""` for next and end).
    Resumable { op: ResumableOp, namespace: String },
    /// `POST /v2/publish/{destination}`; the destination as sent (not decoded: it is a URL).
    Publish { destination: String },
    /// `GET /v2/flowControl`
    FlowList,
    /// `GET /v2/flowControl/{key}`
    FlowKey { key: String },
    /// `POST /v2/flowControl/{key}/{op}`
    FlowOp { key: String, op: FlowOp },
    /// `GET /v2/globalParallelism`
    GlobalParallelism,
    /// `GET /v2/keys`: the signing keys.
    SigningKeys,
    /// `POST /v2/keys/rotate`
    RotateSigningKeys,
    /// `POST /v2/redis/reset-password/{id}`
    ResetPassword { id: String },
    /// `/v2/messages/{id}`: GET or DELETE one message.
    Message { id: String },
    /// `/v2/messages`: DELETE (cancel many).
    Messages,
    /// `/v2/dlq`: GET (list) or DELETE (delete many).
    DeadLetters,
    /// `/v2/dlq/{dlqId}`: GET or DELETE one entry.
    DeadLetter { dlq_id: String },
    /// `/v2/dlq/retry/{dlqId}`: POST.
    RetryDeadLetter { dlq_id: String },
}

/// How a route authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    Bearer(Api),
    Basic,
}

impl Route {
    /// The route of a raw (percent-encoded) path.
    ///
    /// # Errors
    /// [`WireError::RouteNotFound`] for an unknown path, [`WireError::BadEncoding`] for a broken
    /// percent-escape in a path parameter.
    pub(crate) fn parse(path: &str) -> Result<Self, WireError> {
        let not_found = || WireError::RouteNotFound { path: quote(path) };
        let rest = path.strip_prefix('/').ok_or_else(not_found)?;
        if let Some(queue) = rest.strip_prefix("v2/") {
            return Self::parse_queue(queue).ok_or_else(not_found)?;
        }
        let (head, namespace) = rest.split_once('/').unwrap_or((rest, ""));
        let op = match head {
            "upsert" => VectorOp::Upsert,
            "update" => VectorOp::Update,
            "query" => VectorOp::Query,
            "fetch" => VectorOp::Fetch,
            "delete" => VectorOp::Delete,
            "range" => VectorOp::Range,
            "reset" => VectorOp::Reset,
            "delete-namespace" => VectorOp::DeleteNamespace,
            "info" | "list-namespaces" if namespace.is_empty() => {
                if head == "info" {
                    VectorOp::Info
                } else {
                    VectorOp::ListNamespaces
                }
            }
            "upsert-data" => VectorOp::UpsertData,
            "query-data" => VectorOp::QueryData,
            "resumable-query" | "resumable-query-data" => {
                let op = if head == "resumable-query" {
                    ResumableOp::Start
                } else {
                    ResumableOp::StartData
                };
                return Ok(Self::Resumable {
                    op,
                    namespace: decode(namespace, false, "namespace")?,
                });
            }
            // Next and end name the query by its uuid, not by a namespace.
            "resumable-query-next" | "resumable-query-end" if namespace.is_empty() => {
                let op = if head == "resumable-query-next" {
                    ResumableOp::Next
                } else {
                    ResumableOp::End
                };
                return Ok(Self::Resumable {
                    op,
                    namespace: String::new(),
                });
            }
            _ => return Err(not_found()),
        };
        Ok(Self::Vector {
            op,
            namespace: decode(namespace, false, "namespace")?,
        })
    }

    fn parse_queue(rest: &str) -> Option<Result<Self, WireError>> {
        if let Some(destination) = rest.strip_prefix("publish/") {
            return Some(Ok(Self::Publish {
                destination: destination.to_owned(),
            }));
        }
        if rest == "flowControl" || rest == "flowControl/" {
            return Some(Ok(Self::FlowList));
        }
        if rest == "globalParallelism" {
            return Some(Ok(Self::GlobalParallelism));
        }
        if rest == "keys" {
            return Some(Ok(Self::SigningKeys));
        }
        if rest == "keys/rotate" {
            return Some(Ok(Self::RotateSigningKeys));
        }
        if rest == "messages" || rest == "messages/" {
            return Some(Ok(Self::Messages));
        }
        if let Some(id) = rest.strip_prefix("messages/") {
            return Some(decode(id, false, "message id").map(|id| Self::Message { id }));
        }
        if rest == "dlq" || rest == "dlq/" {
            return Some(Ok(Self::DeadLetters));
        }
        if let Some(id) = rest.strip_prefix("dlq/retry/") {
            return Some(decode(id, false, "dlqId").map(|dlq_id| Self::RetryDeadLetter { dlq_id }));
        }
        if let Some(id) = rest.strip_prefix("dlq/") {
            return Some(decode(id, false, "dlqId").map(|dlq_id| Self::DeadLetter { dlq_id }));
        }
        if let Some(id) = rest.strip_prefix("redis/reset-password/") {
            return Some(decode(id, false, "database id").map(|id| Self::ResetPassword { id }));
        }
        let key_part = rest.strip_prefix("flowControl/")?;
        let op = key_part.rsplit_once('/').and_then(|(key, op)| {
            let op = match op {
                "pause" => FlowOp::Pause,
                "resume" => FlowOp::Resume,
                "pin" => FlowOp::Pin,
                "unpin" => FlowOp::Unpin,
                "resetRate" => FlowOp::ResetRate,
                _ => return None,
            };
            Some((key, op))
        });
        Some(match op {
            Some((key, op)) => {
                decode(key, false, "flow-control key").map(|key| Self::FlowOp { key, op })
            }
            None => decode(key_part, false, "flow-control key").map(|key| Self::FlowKey { key }),
        })
    }

    /// The methods this route accepts, as the `Allow` header lists them. The SDKs always POST
    /// to the vector API, so POST is accepted on every vector route; the reference's other
    /// methods (GET for reads without a body, DELETE for deletions) are accepted too.
    pub(crate) fn allowed(&self) -> &'static str {
        match self {
            Self::Vector { op, .. } => match op {
                VectorOp::Info | VectorOp::ListNamespaces => "GET, POST",
                VectorOp::Delete | VectorOp::Reset | VectorOp::DeleteNamespace => "DELETE, POST",
                VectorOp::Upsert
                | VectorOp::UpsertData
                | VectorOp::QueryData
                | VectorOp::Update
                | VectorOp::Query
                | VectorOp::Fetch
                | VectorOp::Range => "POST",
            },
            Self::Resumable { .. }
            | Self::Publish { .. }
            | Self::FlowOp { .. }
            | Self::RotateSigningKeys
            | Self::RetryDeadLetter { .. }
            | Self::ResetPassword { .. } => "POST",
            Self::Message { .. } | Self::DeadLetters | Self::DeadLetter { .. } => "GET, DELETE",
            Self::Messages => "DELETE",
            Self::FlowList | Self::FlowKey { .. } | Self::GlobalParallelism | Self::SigningKeys => {
                "GET"
            }
        }
    }

    /// Whether `method` is one of [`allowed`](Self::allowed).
    pub(crate) fn accepts(&self, method: &Method) -> bool {
        self.allowed().split(", ").any(|m| m == method.as_str())
    }

    /// How a path that did not parse would authenticate (by its API's prefix), so a request
    /// with a malformed path parameter still gets 401 before 400 when it has no credentials.
    pub(crate) fn auth_of_path(path: &str) -> Auth {
        if path.starts_with("/v2/redis/") {
            Auth::Basic
        } else if path.starts_with("/v2/") {
            Auth::Bearer(Api::Queue)
        } else {
            Auth::Bearer(Api::Vector)
        }
    }

    /// How this route authenticates.
    pub(crate) fn auth(&self) -> Auth {
        match self {
            Self::Vector { .. } | Self::Resumable { .. } => Auth::Bearer(Api::Vector),
            Self::Publish { .. }
            | Self::FlowList
            | Self::FlowKey { .. }
            | Self::FlowOp { .. }
            | Self::GlobalParallelism
            | Self::SigningKeys
            | Self::RotateSigningKeys
            | Self::Message { .. }
            | Self::Messages
            | Self::DeadLetters
            | Self::DeadLetter { .. }
            | Self::RetryDeadLetter { .. } => Auth::Bearer(Api::Queue),
            Self::ResetPassword { .. } => Auth::Basic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(op: VectorOp, namespace: &str) -> Route {
        Route::Vector {
            op,
            namespace: namespace.to_owned(),
        }
    }

    #[test]
    fn vector_paths_with_and_without_namespace() {
        assert_eq!(
            Route::parse("/upsert").unwrap(),
            vector(VectorOp::Upsert, "")
        );
        assert_eq!(
            Route::parse("/query/docs").unwrap(),
            vector(VectorOp::Query, "docs")
        );
        assert_eq!(
            Route::parse("/delete-namespace/a%20b/c").unwrap(),
            vector(VectorOp::DeleteNamespace, "a b/c")
        );
        assert_eq!(Route::parse("/info").unwrap(), vector(VectorOp::Info, ""));
        assert!(matches!(
            Route::parse("/info/x"),
            Err(WireError::RouteNotFound { .. })
        ));
        assert!(matches!(
            Route::parse("/nope"),
            Err(WireError::RouteNotFound { .. })
        ));
        assert!(matches!(
            Route::parse("upsert"),
            Err(WireError::RouteNotFound { .. })
        ));
        assert!(matches!(
            Route::parse("/query/%zz"),
            Err(WireError::BadEncoding { .. })
        ));
        assert_eq!(
            Route::parse("/query-data/ns").unwrap(),
            vector(VectorOp::QueryData, "ns")
        );
        assert_eq!(
            Route::parse("/upsert-data").unwrap(),
            vector(VectorOp::UpsertData, "")
        );
        let resumable = |op, namespace: &str| Route::Resumable {
            op,
            namespace: namespace.to_owned(),
        };
        assert_eq!(
            Route::parse("/resumable-query").unwrap(),
            resumable(ResumableOp::Start, "")
        );
        assert_eq!(
            Route::parse("/resumable-query-data/a%20b").unwrap(),
            resumable(ResumableOp::StartData, "a b")
        );
        assert_eq!(
            Route::parse("/resumable-query-next").unwrap(),
            resumable(ResumableOp::Next, "")
        );
        assert_eq!(
            Route::parse("/resumable-query-end").unwrap(),
            resumable(ResumableOp::End, "")
        );
        assert!(matches!(
            Route::parse("/resumable-query-next/ns"),
            Err(WireError::RouteNotFound { .. })
        ));
    }

    #[test]
    fn queue_paths() {
        assert_eq!(
            Route::parse("/v2/publish/http://h:1/a//b").unwrap(),
            Route::Publish {
                destination: "http://h:1/a//b".to_owned()
            }
        );
        assert_eq!(Route::parse("/v2/flowControl").unwrap(), Route::FlowList);
        assert_eq!(
            Route::parse("/v2/flowControl/k%2F1").unwrap(),
            Route::FlowKey {
                key: "k/1".to_owned()
            }
        );
        assert_eq!(
            Route::parse("/v2/flowControl/a/b/resetRate").unwrap(),
            Route::FlowOp {
                key: "a/b".to_owned(),
                op: FlowOp::ResetRate
            }
        );
        assert_eq!(
            Route::parse("/v2/globalParallelism").unwrap(),
            Route::GlobalParallelism
        );
        assert_eq!(
            Route::parse("/v2/redis/reset-password/db%201").unwrap(),
            Route::ResetPassword {
                id: "db 1".to_owned()
            }
        );
        assert!(matches!(
            Route::parse("/v2/other"),
            Err(WireError::RouteNotFound { .. })
        ));
    }

    #[test]
    fn methods() {
        let info = vector(VectorOp::Info, "");
        assert!(info.accepts(&Method::Get) && info.accepts(&Method::Post));
        assert!(!info.accepts(&Method::Delete));
        assert!(!vector(VectorOp::Upsert, "").accepts(&Method::Get));
        assert!(Route::FlowList.accepts(&Method::Get));
        assert!(!Route::FlowList.accepts(&Method::Post));
        assert!(!Route::GlobalParallelism.accepts(&Method::Other("BREW".into())));
    }
}
