//! [`Service`]: the whole wire contract as one I/O-free request → response function.

use std::fmt;
use std::sync::Arc;

use crate::flow::{FlowConfig, SharedFlowControl, Timestamp};
use crate::management::{Accounts, Registry};
use crate::vector::Index;

use super::router::{Auth, Route};
use super::{Message, Request, Response, Tokens, WireError};
use super::{management_api, queue_api, vector_api};

/// The platform's HTTP contract (DESIGN §4) over the engines, without I/O: a host turns each
/// HTTP request into a [`Request`], calls [`handle`](Self::handle) with the current time and
/// writes the [`Response`] back.
///
/// It holds the flow-control engine (shared with the host's dispatcher, which delivers the
/// [`Message`]s), the vector [`Index`], the management [`Registry`] and [`Accounts`], and the
/// bearer [`Tokens`]. Every part is behind an `Arc` and locks internally, so `handle` takes
/// `&self` and runs concurrently from many threads.
///
/// Order of checks: route (404), credentials (401), method (405), then the operation's own
/// input (400/404/422).
///
/// # Examples
/// ```
/// use flowvec::flow::Timestamp;
/// use flowvec::vector::{Index, IndexConfig, Metric};
/// use flowvec::wire::{Method, Request, Service, Tokens};
///
/// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
/// let service = Service::new(index, Tokens::shared("secret"));
/// let now = Timestamp::from_secs(1_700_000_000);
/// let call = |path: &str, body: &str| {
///     let req = Request::new(Method::Post, path)
///         .with_header("Authorization", "Bearer secret")
///         .with_body(body.as_bytes().to_vec());
///     service.handle(&req, now)
/// };
///
/// let res = call("/upsert/docs", r#"[{"id":"a","vector":[1,0]},{"id":"b","vector":[0,1]}]"#);
/// assert_eq!(res.body_json()["result"], "Success");
/// let res = call("/query/docs", r#"{"vector":[1,0.1],"topK":1}"#);
/// assert_eq!(res.body_json()["result"][0]["id"], "a");
/// let res = call("/query/docs", r#"{"vector":[1,0,0]}"#);
/// assert_eq!(res.status, 422);
/// assert_eq!(res.body_json()["error"], "Invalid vector dimension: 3, expected: 2");
///
/// let res = call("/v2/publish/http://127.0.0.1:9/hook", "hello");
/// assert_eq!(res.status, 201);
/// let delivery = service.flow().poll_dispatch(now).expect("no limits: ready at once");
/// assert_eq!(delivery.message.body, b"hello");
/// # Ok::<(), flowvec::vector::VectorError>(())
/// ```
pub struct Service {
    flow: Arc<SharedFlowControl<Message>>,
    index: Arc<Index>,
    registry: Arc<Registry>,
    accounts: Arc<Accounts>,
    tokens: Tokens,
}

impl Service {
    /// A service over `index` with a fresh flow-control engine (default [`FlowConfig`]) and an
    /// empty management registry and account store.
    #[must_use]
    pub fn new(index: Index, tokens: Tokens) -> Self {
        Self {
            flow: Arc::new(SharedFlowControl::new(FlowConfig::default())),
            index: Arc::new(index),
            registry: Arc::new(Registry::new()),
            accounts: Arc::new(Accounts::new()),
            tokens,
        }
    }

    /// Uses `flow` as the flow-control engine (e.g. one restored from a snapshot, or one the
    /// host's dispatcher also holds).
    #[must_use]
    pub fn with_flow(mut self, flow: Arc<SharedFlowControl<Message>>) -> Self {
        self.flow = flow;
        self
    }

    /// Uses `registry` and `accounts` for the management API.
    #[must_use]
    pub fn with_management(mut self, registry: Arc<Registry>, accounts: Arc<Accounts>) -> Self {
        self.registry = registry;
        self.accounts = accounts;
        self
    }

    /// The flow-control engine, for the host's dispatcher (`poll_dispatch`, `complete`, ...).
    #[must_use]
    pub fn flow(&self) -> &Arc<SharedFlowControl<Message>> {
        &self.flow
    }

    /// The vector index.
    #[must_use]
    pub fn index(&self) -> &Arc<Index> {
        &self.index
    }

    /// The management registry.
    #[must_use]
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The management accounts.
    #[must_use]
    pub fn accounts(&self) -> &Arc<Accounts> {
        &self.accounts
    }

    /// Answers one request at time `now`. Never panics on request content; every answer,
    /// errors included, has a JSON body (the vector SDK parses every body as JSON).
    pub fn handle(&self, req: &Request, now: Timestamp) -> Response {
        self.route(req, now).unwrap_or_else(|err| err.to_response())
    }

    fn route(&self, req: &Request, now: Timestamp) -> Result<Response, WireError> {
        let route = match Route::parse(&req.path) {
            Ok(route) => route,
            Err(err @ WireError::BadEncoding { .. }) => {
                self.authenticate(Route::auth_of_path(&req.path), req)?;
                return Err(err);
            }
            Err(err) => return Err(err),
        };
        let account = self.authenticate(route.auth(), req)?;
        if !route.accepts(&req.method) {
            return Err(WireError::MethodNotAllowed {
                method: super::percent::quote(req.method.as_str()),
                path: super::percent::quote(&req.path),
                allowed: route.allowed(),
            });
        }
        let flow = &*self.flow;
        match route {
            Route::Vector { op, namespace } => vector_api::handle(&self.index, op, &namespace, req),
            Route::VectorUnsupported { feature } => Err(WireError::Unsupported {
                feature,
                path: super::percent::quote(&req.path),
            }),
            Route::Publish { destination } => queue_api::publish(flow, req, &destination, now),
            Route::FlowList => Ok(queue_api::list(flow, now)),
            Route::FlowKey { key } => queue_api::key_info(flow, &key, now),
            Route::FlowOp { key, op } => queue_api::operate(flow, &key, op, &req.query, now),
            Route::GlobalParallelism => Ok(queue_api::global(flow)),
            Route::ResetPassword { id } => {
                let account = account.unwrap_or_default();
                management_api::reset_password(&self.registry, &account, &id)
            }
        }
    }
}

impl Service {
    /// Checks the request's credentials; the management account for Basic routes.
    fn authenticate(&self, auth: Auth, req: &Request) -> Result<Option<String>, WireError> {
        match auth {
            Auth::Bearer(api) => {
                self.tokens.check(api, req.header("Authorization"))?;
                Ok(None)
            }
            Auth::Basic => Ok(Some(management_api::authenticate(&self.accounts, req)?)),
        }
    }
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("tokens", &self.tokens)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}
