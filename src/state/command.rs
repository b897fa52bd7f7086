//! [`Command`]: one state change of the engines, as a value; [`Applied`]: what it did.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

use crate::flow::{Dispatch, KeyInfo, Limits, MessageId, Pin, Unpin};
use crate::management::{ApiKeyHash, Database, DatabaseSecrets};
use crate::vector::{Delete, Update, Vector};
use crate::wire::{DeliveryResponse, Message, SigningKeys};

/// One change of the engines' state. Applied by [`StateMachine::apply`](super::StateMachine::apply)
/// with the `now` the host stamped on it; the same commands in the same order with the same
/// stamps give the same state.
///
/// Commands carry everything they need: a reset password's hash and tokens are drawn before
/// the command is made ([`DatabaseSecrets::generate`]), so replaying it does not draw again.
/// Serializes with serde (a host's log uses [`LogEntry`](super::LogEntry)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Command {
    /// `/upsert`: insert or replace records in a namespace (created if needed).
    Upsert {
        /// The namespace (`""` is the default one).
        namespace: String,
        /// The records, as the client sent them.
        vectors: Vec<Vector>,
    },
    /// `/update`: change parts of one record.
    Update {
        /// The namespace.
        namespace: String,
        /// What to change.
        update: Update,
    },
    /// `/delete`: by ids, prefix or filter.
    Delete {
        /// The namespace.
        namespace: String,
        /// Which records.
        delete: Delete,
    },
    /// `/reset/{namespace}`: empty one namespace.
    Reset {
        /// The namespace.
        namespace: String,
    },
    /// `/reset?all`: drop every namespace but the default one, and empty that.
    ResetAll,
    /// `/delete-namespace/{namespace}`.
    DeleteNamespace {
        /// The namespace (not `""`).
        namespace: String,
    },
    /// `/upsert-data`: insert or replace records from their text. The records carry `data`
    /// and, for a dense part, the host's embedding of it (made before logging, so a replay
    /// never runs the model); the BM25 sparse part is made when applied, from the namespace's
    /// records, so a replay makes the same weights.
    UpsertData {
        /// The namespace (created if needed).
        namespace: String,
        /// The records.
        vectors: Vec<Vector>,
    },
    /// `/v2/publish`: queue a message, optionally under a flow-control key with its limits.
    Publish {
        /// The flow-control key.
        key: Option<String>,
        /// The key's limits (required with a key).
        limits: Option<Limits>,
        /// The message.
        message: Box<Message>,
    },
    /// Pause delivery for a key.
    Pause {
        /// The key.
        key: String,
    },
    /// Resume delivery for a key.
    Resume {
        /// The key.
        key: String,
    },
    /// Pin parts of a key's limits.
    Pin {
        /// The key.
        key: String,
        /// What to pin.
        pin: Pin,
    },
    /// Unpin parts of a key's limits.
    Unpin {
        /// The key.
        key: String,
        /// What to unpin.
        unpin: Unpin,
    },
    /// End a key's rate window.
    ResetRate {
        /// The key.
        key: String,
    },
    /// Change the global parallelism cap (`None`: no cap).
    SetGlobalParallelism {
        /// The new cap.
        max: Option<NonZeroU32>,
    },
    /// Hand out up to `max` deliverable messages (they become active calls). The outcome,
    /// [`Applied::Dispatched`], tells the delivering host what to send; every replica applies
    /// it identically, so rate windows and parallelism counts survive a restart or a change of
    /// leader.
    Dispatch {
        /// At most this many messages.
        max: u32,
    },
    /// An active call ended (any outcome the host does not retry): the message is done.
    Complete {
        /// The message id.
        id: MessageId,
        /// What the call got back, when the message has a callback to tell it to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<DeliveryResponse>,
    },
    /// A delivery attempt of an active call failed (non-2xx, timeout, no response). If the
    /// message has retries left it is retried at `retry_at` (the host's backoff with jitter,
    /// held outside its key's waitlist until then), else it goes to the dead letter queue and
    /// its failure callback, if any, is published.
    Fail {
        /// The message id.
        id: MessageId,
        /// What the attempt got back.
        response: DeliveryResponse,
        /// When to try again, if it may.
        retry_at: crate::flow::Timestamp,
    },
    /// An active call failed and will be retried: the message waits again at its key's head.
    Requeue {
        /// The message.
        id: MessageId,
    },
    /// Every active call was lost (the delivering process restarted, or delivery moved to a
    /// new leader): requeue them all, so they are delivered again (at-least-once).
    RequeueAllActive,
    /// Cancel a waiting message.
    Cancel {
        /// The message.
        id: MessageId,
    },
    /// Cancels every waiting or delayed message, of `key` only if given.
    CancelPending {
        /// The flow-control key (`None`: every message).
        key: Option<String>,
    },
    /// Cancels the listed messages that are waiting or delayed; the others are left alone.
    CancelMany {
        /// The message ids.
        ids: Vec<MessageId>,
    },
    /// Removes entries from the dead letter queue (unknown ids are skipped).
    DeleteDeadLetters {
        /// The dlq ids.
        dlq_ids: Vec<String>,
    },
    /// Publishes a dead letter queue entry's message again (same destination, body,
    /// headers, key; retries from 0) and removes the entry.
    RetryDeadLetter {
        /// The dlq id.
        dlq_id: String,
        /// A retry count replacing the message's own (`Upstash-Retries` on the request).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retries: Option<u32>,
    },
    /// Set the queue's signing keys (a host's first start draws them).
    SetSigningKeys {
        /// The keys.
        keys: SigningKeys,
    },
    /// Rotate the signing keys: the next key becomes current, `next` is the new next key.
    RotateSigningKeys {
        /// The new next key (drawn by the host).
        next: String,
    },
    /// Create a management account from its key's hash.
    CreateAccount {
        /// The account's email.
        email: String,
        /// The hash of its API key.
        key_hash: ApiKeyHash,
    },
    /// Register a database with credentials drawn beforehand.
    CreateDatabase {
        /// The record (its tokens are replaced by those of `secrets`).
        record: Box<Database>,
        /// Password hash and REST tokens.
        secrets: DatabaseSecrets,
    },
    /// Reset a database's password to credentials drawn beforehand.
    ResetPassword {
        /// The asking account (it must own the database).
        account: String,
        /// The database id.
        id: String,
        /// The new password hash and REST tokens.
        secrets: DatabaseSecrets,
    },
}

impl Command {
    /// Whether applying it may make a waiting message deliverable (or free a slot): the host
    /// follows such commands with a [`Command::Dispatch`].
    #[must_use]
    pub fn affects_delivery(&self) -> bool {
        matches!(
            self,
            Self::Publish { .. }
                | Self::Resume { .. }
                | Self::Pin { .. }
                | Self::Unpin { .. }
                | Self::ResetRate { .. }
                | Self::SetGlobalParallelism { .. }
                | Self::Complete { .. }
                | Self::Fail { .. }
                | Self::Requeue { .. }
                | Self::RequeueAllActive
                | Self::RetryDeadLetter { .. }
        )
    }

    /// A short name for logs and metrics (`"upsert"`, `"publish"`, ...).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Upsert { .. } => "upsert",
            Self::UpsertData { .. } => "upsert-data",
            Self::Update { .. } => "update",
            Self::Delete { .. } => "delete",
            Self::Reset { .. } => "reset",
            Self::ResetAll => "reset-all",
            Self::DeleteNamespace { .. } => "delete-namespace",
            Self::Publish { .. } => "publish",
            Self::Pause { .. } => "pause",
            Self::Resume { .. } => "resume",
            Self::Pin { .. } => "pin",
            Self::Unpin { .. } => "unpin",
            Self::ResetRate { .. } => "reset-rate",
            Self::SetGlobalParallelism { .. } => "set-global-parallelism",
            Self::Dispatch { .. } => "dispatch",
            Self::Complete { .. } => "complete",
            Self::Requeue { .. } => "requeue",
            Self::RequeueAllActive => "requeue-all-active",
            Self::Cancel { .. } => "cancel",
            Self::CancelPending { .. } => "cancel-pending",
            Self::CancelMany { .. } => "cancel-many",
            Self::Fail { .. } => "fail",
            Self::DeleteDeadLetters { .. } => "delete-dead-letters",
            Self::RetryDeadLetter { .. } => "retry-dead-letter",
            Self::SetSigningKeys { .. } => "set-signing-keys",
            Self::RotateSigningKeys { .. } => "rotate-signing-keys",
            Self::CreateAccount { .. } => "create-account",
            Self::CreateDatabase { .. } => "create-database",
            Self::ResetPassword { .. } => "reset-password",
        }
    }
}

/// What a successfully applied [`Command`] did: what the host answers with.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// Done; nothing to report (upsert, reset, namespace deletion, account creation, ...).
    Done,
    /// `Update`: whether the record existed and changed.
    Updated(bool),
    /// `Delete`: how many records were deleted.
    Deleted(usize),
    /// `Publish`: the new message's id (stable: the same after a replay).
    Published(MessageId),
    /// `Publish` of a deduplication id seen within the window: nothing was queued; the id of
    /// the message that was ([`Deduplication`](super::Deduplication)).
    Deduplicated(MessageId),
    /// A key operation: the key's info afterwards (`None` if it has none).
    Key(Option<KeyInfo>),
    /// `CreateDatabase` / `ResetPassword`: the record afterwards.
    Database(Box<Database>),
    /// `Dispatch`: the calls to make.
    Dispatched(Vec<Dispatch<Message>>),
    /// `RequeueAllActive`: how many calls were requeued.
    Requeued(usize),
    /// `Cancel`: whether a waiting message was removed.
    Cancelled(bool),
    /// `CancelPending` / `CancelMany`: how many messages were cancelled.
    CancelledMany(usize),
    /// `Fail`: retried at the given time.
    Retrying(crate::flow::Timestamp),
    /// `Fail`: out of retries, now in the dead letter queue under this id.
    DeadLettered(String),
    /// `SetSigningKeys` / `RotateSigningKeys`: the keys afterwards.
    SigningKeys(SigningKeys),
}
