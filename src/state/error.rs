//! [`ApplyError`] (a command the engines refused) and [`StateError`] (bytes that are not a
//! valid entry or image).

use thiserror::Error;

use crate::flow::FlowError;
use crate::management::ManagementError;
use crate::vector::VectorError;

/// A command an engine refused; the state is unchanged (each engine checks before it writes).
/// Deterministic: replaying the same command on the same state refuses it the same way.
#[derive(Debug, Error)]
pub enum ApplyError {
    /// The vector index refused it.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// The flow-control engine refused it.
    #[error(transparent)]
    Flow(#[from] FlowError),
    /// The management registry or accounts refused it.
    #[error(transparent)]
    Management(#[from] ManagementError),
    /// No dead letter queue entry has this id.
    #[error("no message with dlqId {dlq_id:?} in the dead letter queue")]
    UnknownDeadLetter {
        /// The id asked for.
        dlq_id: String,
    },
}

/// Bytes that are not a valid [`LogEntry`](super::LogEntry) or state image, or an image whose
/// parts the engines refuse. Every message says where (byte offset) and what.
#[derive(Debug, Error)]
pub enum StateError {
    /// A log entry that fails its checksum or does not decode.
    #[error("log entry is damaged: {reason}")]
    BadEntry {
        /// What is wrong.
        reason: String,
    },
    /// A state image that is truncated, fails a checksum, or is not framed as written.
    #[error("state image is damaged at byte {offset}: {reason}")]
    BadImage {
        /// Byte offset of the problem in the image.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The vector index part of an image does not load.
    #[error("state image: vector index: {0}")]
    Vector(#[from] VectorError),
    /// The flow-control part of an image does not restore.
    #[error("state image: flow control: {0}")]
    Flow(#[from] FlowError),
    /// The management part of an image does not restore.
    #[error("state image: management: {0}")]
    Management(#[from] ManagementError),
    /// Reading or writing the image failed.
    #[error("state image I/O: {0}")]
    Io(#[from] std::io::Error),
}
