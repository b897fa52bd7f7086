//! Time and identity: [`Timestamp`] (supplied by the host) and [`MessageId`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::FlowError;

/// An instant in milliseconds since the Unix epoch, supplied by the host.
///
/// The engine never reads a clock: every call that depends on time takes a `Timestamp`.
/// Time never runs backwards inside the engine; an earlier `now` than one already seen is
/// treated as the latest one seen.
///
/// # Examples
/// ```
/// use flowvec::flow::Timestamp;
/// let t = Timestamp::from_millis(90_500);
/// assert_eq!(t.as_secs(), 90);
/// assert_eq!(t.add_millis(500).as_millis(), 91_000);
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Self = Self(0);

    /// An instant `ms` milliseconds after the Unix epoch.
    #[must_use]
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    /// An instant `secs` seconds after the Unix epoch (saturating).
    #[must_use]
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs.saturating_mul(1000))
    }

    /// Milliseconds since the Unix epoch.
    #[must_use]
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Whole seconds since the Unix epoch (rounded down).
    #[must_use]
    pub const fn as_secs(self) -> u64 {
        self.0 / 1000
    }

    /// This instant plus `ms` milliseconds (saturating).
    #[must_use]
    pub const fn add_millis(self, ms: u64) -> Self {
        Self(self.0.saturating_add(ms))
    }
}

/// Identifies one published message for [`complete`](super::FlowControl::complete),
/// [`requeue`](super::FlowControl::requeue) and [`cancel`](super::FlowControl::cancel).
///
/// An id is never reused by an engine (nor by one restored from its snapshot). It is printed
/// and parsed as `<sequence>-<slot>`, and serialized as that string.
///
/// # Examples
/// ```
/// use flowvec::flow::MessageId;
/// let id: MessageId = "42-7".parse()?;
/// assert_eq!(id.to_string(), "42-7");
/// assert_eq!(id.sequence(), 42);
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId {
    seq: u64,
    slot: u32,
}

impl MessageId {
    pub(super) const fn new(seq: u64, slot: u32) -> Self {
        Self { seq, slot }
    }

    /// The publication sequence number: ids of one engine increase in publication order.
    #[must_use]
    pub const fn sequence(self) -> u64 {
        self.seq
    }

    pub(super) const fn slot(self) -> u32 {
        self.slot
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.seq, self.slot)
    }
}

impl FromStr for MessageId {
    type Err = FlowError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || FlowError::InvalidMessageId { id: s.to_owned() };
        let (seq, slot) = s.split_once('-').ok_or_else(bad)?;
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(seq) || !digits(slot) {
            return Err(bad());
        }
        Ok(Self {
            seq: seq.parse().map_err(|_| bad())?,
            slot: slot.parse().map_err(|_| bad())?,
        })
    }
}

impl Serialize for MessageId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MessageId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_id_round_trips_through_text_and_json() {
        let id = MessageId::new(u64::MAX, u32::MAX);
        assert_eq!(id.to_string().parse::<MessageId>().unwrap(), id);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{}-{}\"", u64::MAX, u32::MAX));
        assert_eq!(serde_json::from_str::<MessageId>(&json).unwrap(), id);
    }

    #[test]
    fn malformed_message_ids_are_rejected_with_the_input_quoted() {
        for bad in [
            "",
            "1",
            "1-",
            "-1",
            "a-1",
            "1-b",
            "1-2-3",
            "+1-2",
            "1-99999999999",
        ] {
            let err = bad.parse::<MessageId>().unwrap_err();
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn timestamp_arithmetic_saturates() {
        assert_eq!(
            Timestamp::from_millis(u64::MAX).add_millis(1).as_millis(),
            u64::MAX
        );
        assert_eq!(Timestamp::from_secs(u64::MAX).as_millis(), u64::MAX);
        assert_eq!(Timestamp::from_secs(3).as_millis(), 3000);
    }
}
