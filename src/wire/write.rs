//! [`Prepared`]: a request either answered at once (reads, bad input) or turned into a
//! [`Command`] to make durable, apply, and answer with its [`Reply`].

use std::fmt;

use serde_json::json;

use crate::management::Password;
use crate::state::{Applied, ApplyError, Command};

use super::percent::quote;
use super::{Response, WireError};

/// What [`Service::prepare`](super::Service::prepare) made of a request.
#[derive(Debug)]
#[must_use = "a write is only done once its command is applied and its reply sent"]
pub enum Prepared {
    /// The answer: a read, or a request refused before it became a command.
    Answer(Response),
    /// A state change: write [`PendingWrite::command`] to the log, apply it, answer with
    /// [`Reply::respond`].
    Write(Box<PendingWrite>),
}

/// A checked write request: the [`Command`] to log and apply, and how to answer.
#[derive(Debug)]
pub struct PendingWrite {
    pub(crate) command: Command,
    pub(crate) reply: Reply,
}

impl PendingWrite {
    /// The command to make durable and apply.
    #[must_use]
    pub fn command(&self) -> &Command {
        &self.command
    }

    /// The command and the reply, separated (the command goes to the log and the applier; the
    /// reply waits for the outcome).
    pub fn into_parts(self) -> (Command, Reply) {
        (self.command, self.reply)
    }
}

/// How to answer a write once its command is applied. Holds what the answer needs that is not
/// in the command: a reset password in the clear (the command carries only its hash).
#[must_use = "the client waits for this answer"]
pub struct Reply(pub(crate) ReplyKind);

pub(crate) enum ReplyKind {
    /// `{"result": "Success"}`
    VectorSuccess,
    /// `{"result": {"updated": 0|1}}`
    VectorUpdated,
    /// `{"result": {"deleted": n}}`
    VectorDeleted,
    /// 201 `{"messageId"}`; 202 `{"messageId", "deduplicated": true}` for a duplicate
    Published,
    /// The key's info after a key operation.
    KeyInfo { key: String, flow_changed: bool },
    /// The database record with the new password.
    Password(Password),
    /// The signing keys after a rotation.
    SigningKeys,
    /// `DELETE /v2/messages/{id}`: 200 `{"cancelled": 1}`, 409 if it stopped waiting meanwhile.
    Cancelled { id: String },
    /// `{"cancelled": n}`
    CancelledMany,
    /// `DELETE /v2/dlq/{dlqId}`: 200 `{"deleted": 1}`, 404 if it went meanwhile.
    DeadLetterDeleted { dlq_id: String },
    /// `{"deleted": n}`
    DeadLettersDeleted,
}

impl Reply {
    /// The HTTP answer for the command's outcome.
    pub fn respond(self, outcome: Result<Applied, ApplyError>) -> Response {
        self.render(outcome).unwrap_or_else(|err| err.to_response())
    }

    fn render(self, outcome: Result<Applied, ApplyError>) -> Result<Response, WireError> {
        let applied = outcome.map_err(WireError::from)?;
        let unexpected = |applied: &Applied| WireError::Internal {
            problem: format!("unexpected outcome {applied:?} for this request"),
        };
        Ok(match (self.0, applied) {
            (ReplyKind::VectorSuccess, Applied::Done) => result(&"Success"),
            (ReplyKind::VectorUpdated, Applied::Updated(updated)) => {
                result(&json!({ "updated": u8::from(updated) }))
            }
            (ReplyKind::VectorDeleted, Applied::Deleted(deleted)) => {
                result(&json!({ "deleted": deleted }))
            }
            (ReplyKind::Published, Applied::Published(id)) => {
                let mut res = Response::json(201, &json!({ "messageId": id.to_string() }));
                res.flow_changed = true;
                res
            }
            // Accepted, not queued: the reference answers 202 with the first message's id.
            (ReplyKind::Published, Applied::Deduplicated(id)) => Response::json(
                202,
                &json!({ "messageId": id.to_string(), "deduplicated": true }),
            ),
            (ReplyKind::KeyInfo { key, flow_changed }, Applied::Key(info)) => {
                let info = info.ok_or_else(|| WireError::KeyNotFound { key: quote(&key) })?;
                let mut res = Response::json(200, &info);
                res.flow_changed = flow_changed;
                res
            }
            (ReplyKind::Password(password), Applied::Database(record)) => {
                Response::json(200, &record.with_password(&password))
            }
            (ReplyKind::SigningKeys, Applied::SigningKeys(keys)) => Response::json(200, &keys),
            (ReplyKind::Cancelled { id }, Applied::Cancelled(cancelled)) => {
                if !cancelled {
                    return Err(WireError::MessageInFlight { id });
                }
                Response::json(200, &json!({ "cancelled": 1 }))
            }
            (ReplyKind::CancelledMany, Applied::CancelledMany(n)) => {
                Response::json(200, &json!({ "cancelled": n }))
            }
            (ReplyKind::DeadLetterDeleted { dlq_id }, Applied::Deleted(n)) => {
                if n == 0 {
                    return Err(WireError::DeadLetterNotFound { dlq_id });
                }
                Response::json(200, &json!({ "deleted": n }))
            }
            (ReplyKind::DeadLettersDeleted, Applied::Deleted(n)) => {
                Response::json(200, &json!({ "deleted": n }))
            }
            (_, other) => return Err(unexpected(&other)),
        })
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.0 {
            ReplyKind::VectorSuccess => "VectorSuccess",
            ReplyKind::VectorUpdated => "VectorUpdated",
            ReplyKind::VectorDeleted => "VectorDeleted",
            ReplyKind::Published => "Published",
            ReplyKind::KeyInfo { .. } => "KeyInfo",
            ReplyKind::Password(_) => "Password(<redacted>)",
            ReplyKind::SigningKeys => "SigningKeys",
            ReplyKind::Cancelled { .. } => "Cancelled",
            ReplyKind::CancelledMany => "CancelledMany",
            ReplyKind::DeadLetterDeleted { .. } => "DeadLetterDeleted",
            ReplyKind::DeadLettersDeleted => "DeadLettersDeleted",
        };
        write!(f, "Reply({kind})")
    }
}

pub(crate) fn write(command: Command, reply: ReplyKind) -> Prepared {
    Prepared::Write(Box::new(PendingWrite {
        command,
        reply: Reply(reply),
    }))
}

pub(crate) fn result<T: serde::Serialize + ?Sized>(value: &T) -> Response {
    Response::json(200, &json!({ "result": value }))
}
