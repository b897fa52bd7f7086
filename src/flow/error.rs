//! [`FlowError`]: misuse and bad input. Being limited is never an error.

use super::MessageId;

/// Everything the flow-control engine rejects: a malformed header value, a bad key, an
/// operation on a message that is not in the required state, or a corrupt snapshot.
///
/// Being held back by a limit is *not* an error: [`poll_dispatch`](super::FlowControl::poll_dispatch)
/// simply returns `None`. Each message quotes the offending input and says what was expected.
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowError, Limits};
/// let err = "rate=10,speed=3".parse::<Limits>().unwrap_err();
/// assert!(matches!(err, FlowError::UnknownLimit { ref name } if name == "speed"));
/// assert!(err.to_string().contains("`speed`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// The flow-control value is empty.
    #[error("flow-control value is empty; expected e.g. `parallelism=5,rate=10,period=1m`")]
    EmptyLimits,
    /// The flow-control value has an empty part (`rate=1,,parallelism=2` or a trailing comma).
    #[error("flow-control value `{value}` has an empty part between commas")]
    EmptyLimitPart {
        /// The whole value.
        value: String,
    },
    /// A part has no `=`.
    #[error("flow-control part `{part}` has no `=`; expected `name=value`")]
    MissingEquals {
        /// The offending part.
        part: String,
    },
    /// A part names something other than `parallelism`, `rate` or `period`.
    #[error("unknown flow-control limit `{name}`; expected `parallelism`, `rate` or `period`")]
    UnknownLimit {
        /// The unknown name as written.
        name: String,
    },
    /// The same name appears twice.
    #[error("flow-control limit `{name}` is given more than once")]
    RepeatedLimit {
        /// The repeated name as written the second time.
        name: String,
    },
    /// `parallelism` or `rate` is not an integer in `1..=4294967295`.
    #[error("flow-control `{name}={value}`: {reason}; expected an integer from 1 to 4294967295")]
    InvalidLimitValue {
        /// `parallelism` or `rate`.
        name: String,
        /// The value as written.
        value: String,
        /// What is wrong with it (zero, negative, too large, not an integer).
        reason: &'static str,
    },
    /// `period` is not an integer with unit `s`, `m`, `h` or `d` between 1 s and 7 d.
    #[error(
        "flow-control `period={value}`: {reason}; expected an integer with unit s, m, h or d \
         (bare = seconds) from 1s to 7d"
    )]
    InvalidPeriod {
        /// The value as written.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `period` is given without `rate`.
    #[error("flow-control `period={period}` is given without `rate`; add e.g. `rate=10`")]
    PeriodWithoutRate {
        /// The period as written.
        period: String,
    },
    /// A key is empty, longer than 512 bytes or contains an ASCII control character.
    #[error("flow-control key {key:?} is invalid: {reason}")]
    InvalidKey {
        /// The key (its first 64 characters if it is longer).
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A message has a key but no limits.
    #[error("flow-control key {key:?} is given without a flow-control value (limits)")]
    MissingLimits {
        /// The key.
        key: String,
    },
    /// A message has limits but no key.
    #[error("flow-control value `{limits}` is given without a flow-control key")]
    LimitsWithoutKey {
        /// The limits in canonical form.
        limits: String,
    },
    /// The operation needs a key the engine does not hold.
    #[error("flow-control key {key:?} not found")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// `complete` or `requeue` of a message that is not an active call.
    #[error(
        "message `{id}` is not an active call (never dispatched, already completed or requeued, or unknown)"
    )]
    NotActive {
        /// The id.
        id: MessageId,
    },
    /// `pin` without any value.
    #[error(
        "pin of key {key:?} gives no value; expected at least one of parallelism, rate, period"
    )]
    EmptyPin {
        /// The key.
        key: String,
    },
    /// An engine-wide capacity (`u32` slots) is exhausted.
    #[error("flow-control capacity exhausted: too many {what}")]
    CapacityExceeded {
        /// What ran out (messages, keys, waiting messages of one key).
        what: &'static str,
    },
    /// A message id string is not `<sequence>-<slot>`.
    #[error("message id `{id}` is invalid; expected `<sequence>-<slot>` (two decimal integers)")]
    InvalidMessageId {
        /// The text as given.
        id: String,
    },
    /// A snapshot is inconsistent (hand-edited or corrupt).
    #[error("flow-control snapshot is inconsistent: {reason}")]
    InvalidSnapshot {
        /// What is inconsistent.
        reason: String,
    },
}
