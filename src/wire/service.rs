//! [`Service`]: the whole wire contract as one I/O-free request → response function.

use std::fmt;
use std::sync::Arc;

use crate::flow::{FlowConfig, SharedFlowControl, Timestamp};
use crate::management::{Accounts, Registry};
use crate::state::StateMachine;
use crate::vector::text::Embedder;
use crate::vector::{Index, ResumableLimits, ResumableQueries};

use super::router::{Auth, Route};
use super::{Message, Method, Prepared, Request, Response, RetryPolicy, Tokens, WireError};
use super::{dlq_api, management_api, messages_api, queue_api, resumable_api, vector_api};

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
    machine: StateMachine,
    tokens: Tokens,
    retry_policy: RetryPolicy,
    /// The host's model for text `data` on an index with a dense part.
    dense_embedder: Option<Arc<dyn Embedder>>,
    /// Open resumable queries: in memory only, never logged.
    resumable: ResumableQueries,
}

impl Service {
    /// A service over `index` with a fresh flow-control engine (default [`FlowConfig`]) and an
    /// empty management registry and account store.
    #[must_use]
    pub fn new(index: Index, tokens: Tokens) -> Self {
        Self::from_machine(
            StateMachine::from_parts(
                index,
                SharedFlowControl::new(FlowConfig::default()),
                Registry::new(),
                Accounts::new(),
            ),
            tokens,
        )
    }

    /// A service over the engines of `machine` (e.g. one rebuilt from an image and a log).
    #[must_use]
    pub fn from_machine(machine: StateMachine, tokens: Tokens) -> Self {
        Self {
            machine,
            tokens,
            retry_policy: RetryPolicy::default(),
            dense_embedder: None,
            resumable: ResumableQueries::default(),
        }
    }

    /// Embeds text `data` (`/upsert-data`, `/query-data`, `data` in `/query`) for the dense
    /// part with `model`; without one, text on an index with a dense part answers 400 saying
    /// how to configure a model (a sparse or hybrid index still takes text with BM25 when its
    /// configuration names it). Embeddings are made in [`prepare`](Self::prepare), before a
    /// write is logged, so replaying the log never runs the model. `/info` shows the model's
    /// [`name`](Embedder::name) as the dense `embeddingModel`. Check that the model fits the
    /// index first with [`Index::check_dense_embedder`] (a model of another dimension would
    /// have every text write refused).
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use flowvec::flow::Timestamp;
    /// use flowvec::vector::text::{EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
    /// use flowvec::vector::{Index, IndexConfig, Metric};
    /// use flowvec::wire::{Method, Request, Service, Tokens};
    ///
    /// /// A toy model: whether the text mentions cats or dogs.
    /// #[derive(Debug)]
    /// struct Pets;
    /// impl Embedder for Pets {
    ///     fn name(&self) -> &str { "pets" }
    ///     fn kind(&self) -> EmbeddingKind { EmbeddingKind::Dense { dimension: 2 } }
    ///     fn embed(&self, texts: &[&str], _: TextRole) -> Result<Vec<Embedding>, EmbedError> {
    ///         Ok(texts.iter().map(|t| {
    ///             let cat = if t.contains("cat") { 1.0 } else { 0.1 };
    ///             let dog = if t.contains("dog") { 1.0 } else { 0.1 };
    ///             Embedding::Dense(vec![cat, dog])
    ///         }).collect())
    ///     }
    /// }
    /// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
    /// let service = Service::new(index, Tokens::shared("t")).with_dense_embedder(Arc::new(Pets));
    /// let now = Timestamp::from_secs(1_700_000_000);
    /// let call = |path: &str, body: &str| {
    ///     let req = Request::new(Method::Post, path)
    ///         .with_header("Authorization", "Bearer t")
    ///         .with_body(body.as_bytes().to_vec());
    ///     service.handle(&req, now)
    /// };
    /// let res = call("/upsert-data", r#"[{"id":"c","data":"a cat"},{"id":"d","data":"a dog"}]"#);
    /// assert_eq!(res.body_json()["result"], "Success");
    /// let res = call("/query-data", r#"{"data":"my dog","topK":1,"includeData":true}"#);
    /// assert_eq!(res.body_json()["result"][0]["data"], "a dog");
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    #[must_use]
    pub fn with_dense_embedder(mut self, model: Arc<dyn Embedder>) -> Self {
        self.dense_embedder = Some(model);
        self
    }

    /// Bounds on resumable queries (`/resumable-query`): how many may be open at once and the
    /// longest `maxIdle` (default [`ResumableLimits::default`]). Open queries are forgotten.
    #[must_use]
    pub fn with_resumable_limits(mut self, limits: ResumableLimits) -> Self {
        self.resumable = ResumableQueries::new(limits);
        self
    }

    /// The open resumable queries. Every request expires those idle past their `maxIdle`; a
    /// host that wants them freed without traffic calls [`ResumableQueries::expire`] now and
    /// then (one atomic load when nothing is due).
    #[must_use]
    pub fn resumable_queries(&self) -> &ResumableQueries {
        &self.resumable
    }

    /// The retry count of messages published without `Upstash-Retries`, and the most one
    /// may ask for (default 3 and 20).
    #[must_use]
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// Uses `flow` as the flow-control engine (e.g. one restored from a snapshot, or one the
    /// host's dispatcher also holds).
    #[must_use]
    pub fn with_flow(mut self, flow: Arc<SharedFlowControl<Message>>) -> Self {
        self.machine.set_flow(flow);
        self
    }

    /// Uses `registry` and `accounts` for the management API.
    #[must_use]
    pub fn with_management(mut self, registry: Arc<Registry>, accounts: Arc<Accounts>) -> Self {
        self.machine.set_management(registry, accounts);
        self
    }

    /// The engines, and [`StateMachine::apply`] for the commands of
    /// [`prepare`](Self::prepare).
    #[must_use]
    pub fn machine(&self) -> &StateMachine {
        &self.machine
    }

    /// The flow-control engine, for the host's dispatcher (`poll_dispatch`, `complete`, ...).
    #[must_use]
    pub fn flow(&self) -> &Arc<SharedFlowControl<Message>> {
        self.machine.flow()
    }

    /// The vector index.
    #[must_use]
    pub fn index(&self) -> &Arc<Index> {
        self.machine.index()
    }

    /// The management registry.
    #[must_use]
    pub fn registry(&self) -> &Arc<Registry> {
        self.machine.registry()
    }

    /// The management accounts.
    #[must_use]
    pub fn accounts(&self) -> &Arc<Accounts> {
        self.machine.accounts()
    }

    /// Answers one request at time `now`, applying a write at once (no log): for hosts that
    /// keep nothing, and for tests. Never panics on request content; every answer, errors
    /// included, has a JSON body (the vector SDK parses every body as JSON).
    pub fn handle(&self, req: &Request, now: Timestamp) -> Response {
        match self.prepare(req, now) {
            Prepared::Answer(res) => res,
            Prepared::Write(write) => {
                let (command, reply) = write.into_parts();
                reply.respond(self.machine.apply(command, now))
            }
        }
    }

    /// Answers a read at time `now`, or turns a write into its [`Command`](crate::state::Command) (checked: bad input
    /// is answered here and never becomes a command). A durable host writes the command to
    /// its log, applies it with [`StateMachine::apply`] (stamped with the `now` it logged),
    /// and answers with [`Reply::respond`](super::Reply::respond).
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::Timestamp;
    /// use flowvec::vector::{Index, IndexConfig, Metric};
    /// use flowvec::wire::{Method, Prepared, Request, Service, Tokens};
    ///
    /// let service = Service::new(Index::new(IndexConfig::dense(2, Metric::Cosine))?, Tokens::shared("t"));
    /// let now = Timestamp::from_secs(1_700_000_000);
    /// let req = Request::new(Method::Post, "/upsert")
    ///     .with_header("Authorization", "Bearer t")
    ///     .with_body(r#"{"id":"a","vector":[1,0]}"#);
    /// let Prepared::Write(write) = service.prepare(&req, now) else { unreachable!() };
    /// let (command, reply) = write.into_parts();
    /// // ... a durable host logs `command` here, then:
    /// let res = reply.respond(service.machine().apply(command, now));
    /// assert_eq!(res.status, 200);
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    pub fn prepare(&self, req: &Request, now: Timestamp) -> Prepared {
        // Idle resumable queries go first (one atomic load when none is due).
        self.resumable.expire(now);
        self.route(req, now)
            .unwrap_or_else(|err| Prepared::Answer(err.to_response()))
    }

    fn route(&self, req: &Request, now: Timestamp) -> Result<Prepared, WireError> {
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
        let flow = &**self.flow();
        let answer = Prepared::Answer;
        match route {
            Route::Vector { op, namespace } => vector_api::handle(
                self.index(),
                self.dense_embedder.as_deref(),
                op,
                &namespace,
                req,
            ),
            Route::Resumable { op, namespace } => resumable_api::handle(
                self.index(),
                self.dense_embedder.as_deref(),
                &self.resumable,
                op,
                &namespace,
                req,
                now,
            )
            .map(answer),
            Route::Publish { destination } => {
                queue_api::publish(req, &destination, self.retry_policy)
            }
            Route::FlowList => Ok(answer(queue_api::list(flow, now))),
            Route::FlowKey { key } => queue_api::key_info(flow, &key, now).map(answer),
            Route::FlowOp { key, op } => queue_api::operate(&key, op, &req.query),
            Route::GlobalParallelism => Ok(answer(queue_api::global(flow))),
            Route::SigningKeys => queue_api::signing_keys(self.machine.signing_keys()).map(answer),
            Route::RotateSigningKeys => queue_api::rotate_signing_keys(),
            Route::Message { id } => match req.method {
                Method::Delete => messages_api::cancel(flow, &id),
                _ => messages_api::get(flow, &id).map(answer),
            },
            Route::Messages => messages_api::cancel_many(req),
            Route::DeadLetters => match req.method {
                Method::Delete => dlq_api::delete_many(req),
                _ => dlq_api::list(&self.machine.dead_letters(), req).map(answer),
            },
            Route::DeadLetter { dlq_id } => match req.method {
                Method::Delete => dlq_api::delete(&self.machine.dead_letters(), &dlq_id),
                _ => dlq_api::get(&self.machine.dead_letters(), &dlq_id).map(answer),
            },
            Route::RetryDeadLetter { dlq_id } => dlq_api::retry(
                &self.machine.dead_letters(),
                &dlq_id,
                req,
                self.retry_policy,
            ),
            Route::ResetPassword { id } => {
                let account = account.unwrap_or_default();
                management_api::reset_password(self.registry(), &account, &id)
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
            Auth::Basic => Ok(Some(management_api::authenticate(self.accounts(), req)?)),
        }
    }
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("tokens", &self.tokens)
            .field("machine", &self.machine)
            .finish_non_exhaustive()
    }
}
