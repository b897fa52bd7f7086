//! [`StateMachine`]: the engines together, changed only by [`StateMachine::apply`].

use std::fmt;
use std::sync::Arc;

use crate::flow::{FlowConfig, SharedFlowControl, Timestamp};
use crate::management::{Accounts, Registry};
use crate::vector::{Index, IndexConfig, VectorError};
use crate::wire::{Message, SigningKeys};
use parking_lot::{RwLock, RwLockReadGuard};

use super::{Applied, ApplyError, Command, DeadLetters, Deduplication};

/// The vector index, the flow-control engine (holding [`Message`]s) and the management
/// registry and accounts, changed only through [`apply`](Self::apply).
///
/// Reads go straight to the engines ([`index`](Self::index), [`flow`](Self::flow), ...), from
/// any thread. Writes are [`Command`]s applied in one order by one applier (the host's log
/// order); applying the same commands with the same `now` stamps to equal states gives equal
/// states. A host that changes an engine behind `apply`'s back loses that property.
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, Timestamp};
/// use flowvec::state::{Applied, Command, StateMachine};
/// use flowvec::vector::{IndexConfig, Metric};
/// use flowvec::wire::Message;
///
/// let machine = StateMachine::new(IndexConfig::dense(2, Metric::Cosine), FlowConfig::default())?;
/// let now = Timestamp::from_secs(1_700_000_000);
/// let message = Message {
///     destination: "http://127.0.0.1:9/hook".into(),
///     method: "POST".into(),
///     headers: vec![],
///     body: b"hi".to_vec(),
///     ..Message::default()
/// };
/// let Applied::Published(id) = machine.apply(Command::Publish { key: None, limits: None, message: Box::new(message) }, now)? else {
///     unreachable!()
/// };
/// let Applied::Dispatched(calls) = machine.apply(Command::Dispatch { max: 10 }, now)? else {
///     unreachable!()
/// };
/// assert_eq!(calls[0].id, id);
/// machine.apply(Command::Complete { id, response: None }, now)?;
/// assert_eq!(machine.flow().global_info().parallelism_count, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StateMachine {
    index: Arc<Index>,
    flow: Arc<SharedFlowControl<Message>>,
    registry: Arc<Registry>,
    accounts: Arc<Accounts>,
    signing: Arc<RwLock<Option<SigningKeys>>>,
    pub(super) dead_letters: Arc<RwLock<DeadLetters>>,
    pub(super) deduplication: Arc<RwLock<Deduplication>>,
}

impl StateMachine {
    /// Empty engines: an index of `config`, a flow-control engine of `flow`, no databases and
    /// no accounts.
    ///
    /// # Errors
    /// [`VectorError`] for an index configuration [`Index::new`] refuses.
    pub fn new(config: IndexConfig, flow: FlowConfig) -> Result<Self, VectorError> {
        Ok(Self::from_parts(
            Index::new(config)?,
            SharedFlowControl::new(flow),
            Registry::new(),
            Accounts::new(),
        ))
    }

    /// The machine over existing engines (e.g. restored ones).
    #[must_use]
    pub fn from_parts(
        index: Index,
        flow: SharedFlowControl<Message>,
        registry: Registry,
        accounts: Accounts,
    ) -> Self {
        Self {
            index: Arc::new(index),
            flow: Arc::new(flow),
            registry: Arc::new(registry),
            accounts: Arc::new(accounts),
            signing: Arc::new(RwLock::new(None)),
            dead_letters: Arc::new(RwLock::new(DeadLetters::default())),
            deduplication: Arc::new(RwLock::new(Deduplication::default())),
        }
    }

    /// The queue's signing keys, once set ([`Command::SetSigningKeys`]).
    #[must_use]
    pub fn signing_keys(&self) -> Option<SigningKeys> {
        self.signing.read().clone()
    }

    /// The dead letter queue, for reads.
    pub fn dead_letters(&self) -> RwLockReadGuard<'_, DeadLetters> {
        self.dead_letters.read()
    }

    pub(crate) fn set_dead_letters(&self, dead_letters: DeadLetters) {
        *self.dead_letters.write() = dead_letters;
    }

    /// The publish deduplication ids of the last 10 minutes, for reads.
    pub fn deduplication(&self) -> RwLockReadGuard<'_, Deduplication> {
        self.deduplication.read()
    }

    pub(crate) fn set_deduplication(&self, deduplication: Deduplication) {
        *self.deduplication.write() = deduplication;
    }

    pub(crate) fn set_signing_keys(&self, keys: Option<SigningKeys>) {
        *self.signing.write() = keys;
    }

    pub(crate) fn set_flow(&mut self, flow: Arc<SharedFlowControl<Message>>) {
        self.flow = flow;
    }

    pub(crate) fn set_management(&mut self, registry: Arc<Registry>, accounts: Arc<Accounts>) {
        self.registry = registry;
        self.accounts = accounts;
    }

    /// The vector index, for reads.
    #[must_use]
    pub fn index(&self) -> &Arc<Index> {
        &self.index
    }

    /// The flow-control engine, for reads (`key_info`, `keys`, `global_info`, `peek_timeout`).
    #[must_use]
    pub fn flow(&self) -> &Arc<SharedFlowControl<Message>> {
        &self.flow
    }

    /// The management registry, for reads.
    #[must_use]
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The management accounts, for reads (authentication).
    #[must_use]
    pub fn accounts(&self) -> &Arc<Accounts> {
        &self.accounts
    }

    /// Applies one command at time `now` (the stamp the host logged with it).
    ///
    /// Apply commands from one thread at a time, in log order: the engines lock internally,
    /// but the *order* of commands is what makes replay give the same state.
    ///
    /// # Errors
    /// [`ApplyError`] when an engine refuses the command (bad input, an unknown message id, a
    /// capacity limit); that engine's state is unchanged, and a replay refuses it the same way.
    pub fn apply(&self, command: Command, now: Timestamp) -> Result<Applied, ApplyError> {
        let index = &*self.index;
        let flow = &*self.flow;
        Ok(match command {
            Command::Upsert { namespace, vectors } => {
                index.upsert(&namespace, vectors)?;
                Applied::Done
            }
            Command::UpsertData { namespace, vectors } => {
                index.upsert_data(&namespace, vectors)?;
                Applied::Done
            }
            Command::Update { namespace, update } => {
                Applied::Updated(index.update(&namespace, update)?)
            }
            Command::Delete { namespace, delete } => {
                Applied::Deleted(index.delete(&namespace, delete)?)
            }
            Command::Reset { namespace } => {
                index.reset(&namespace);
                Applied::Done
            }
            Command::ResetAll => {
                index.reset_all();
                Applied::Done
            }
            Command::DeleteNamespace { namespace } => {
                index.delete_namespace(&namespace)?;
                Applied::Done
            }
            Command::Publish {
                key,
                limits,
                message,
            } => self.publish_once(key, limits, *message, now)?,
            Command::Pause { key } => {
                flow.pause(&key, now)?;
                Applied::Key(flow.key_info(&key, now))
            }
            Command::Resume { key } => {
                flow.resume(&key, now)?;
                Applied::Key(flow.key_info(&key, now))
            }
            Command::Pin { key, pin } => {
                flow.pin(&key, pin, now)?;
                Applied::Key(flow.key_info(&key, now))
            }
            Command::Unpin { key, unpin } => {
                flow.unpin(&key, unpin, now)?;
                Applied::Key(flow.key_info(&key, now))
            }
            Command::ResetRate { key } => {
                flow.reset_rate(&key, now)?;
                Applied::Key(flow.key_info(&key, now))
            }
            Command::SetGlobalParallelism { max } => {
                let mut engine = flow.lock();
                engine.handle_timeout(now);
                engine.set_global_parallelism(max);
                Applied::Done
            }
            Command::Dispatch { max } => {
                let mut engine = flow.lock();
                engine.handle_timeout(now);
                let mut calls = Vec::new();
                while calls.len() < max as usize {
                    match engine.poll_dispatch(now) {
                        Some(call) => calls.push(call),
                        None => break,
                    }
                }
                Applied::Dispatched(calls)
            }
            Command::Complete { id, response } => self.complete(id, response, now)?,
            Command::Fail {
                id,
                response,
                retry_at,
            } => self.fail(id, response, retry_at, now)?,
            Command::Requeue { id } => {
                flow.requeue(id, now)?;
                Applied::Done
            }
            Command::RequeueAllActive => Applied::Requeued(flow.lock().requeue_all_active(now)),
            Command::Cancel { id } => {
                let mut engine = flow.lock();
                engine.handle_timeout(now);
                Applied::Cancelled(engine.cancel(id).is_some())
            }
            Command::CancelPending { key } => {
                let mut engine = flow.lock();
                engine.handle_timeout(now);
                let ids = engine.pending(key.as_deref());
                Self::cancel_many(&mut engine, ids)
            }
            Command::CancelMany { ids } => {
                let mut engine = flow.lock();
                engine.handle_timeout(now);
                Self::cancel_many(&mut engine, ids)
            }
            Command::DeleteDeadLetters { dlq_ids } => {
                let mut dead_letters = self.dead_letters.write();
                Applied::Deleted(
                    dlq_ids
                        .iter()
                        .filter(|id| dead_letters.remove(id).is_some())
                        .count(),
                )
            }
            Command::RetryDeadLetter { dlq_id, retries } => {
                self.retry_dead_letter(&dlq_id, retries, now)?
            }
            Command::SetSigningKeys { keys } => {
                *self.signing.write() = Some(keys.clone());
                Applied::SigningKeys(keys)
            }
            Command::RotateSigningKeys { next } => {
                let mut signing = self.signing.write();
                let keys = match signing.as_ref() {
                    Some(keys) => keys.rotated(next),
                    None => SigningKeys {
                        current: next.clone(),
                        next,
                    },
                };
                *signing = Some(keys.clone());
                Applied::SigningKeys(keys)
            }
            Command::CreateAccount { email, key_hash } => {
                self.accounts.insert_hash(&email, key_hash)?;
                Applied::Done
            }
            Command::CreateDatabase { record, secrets } => {
                Applied::Database(Box::new(self.registry.insert_with(*record, secrets)?))
            }
            Command::ResetPassword {
                account,
                id,
                secrets,
            } => Applied::Database(Box::new(
                self.registry.reset_password_with(&account, &id, secrets)?,
            )),
        })
    }
}

impl fmt::Debug for StateMachine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMachine")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}
