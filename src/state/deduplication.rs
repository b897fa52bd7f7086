//! [`Deduplication`]: the publish deduplication window (`Upstash-Deduplication-Id`,
//! `Upstash-Content-Based-Deduplication`).
//!
//! A publish that carries a deduplication id ([`Message::deduplication_id`]) within
//! [`DEDUPLICATION_WINDOW_MS`] of an accepted publish with the same id is accepted but not
//! queued: [`StateMachine::apply`](super::StateMachine::apply) answers
//! [`Applied::Deduplicated`](super::Applied::Deduplicated) with the first message's id, as the
//! reference does. The table is state like any other: the command's `now` decides what has
//! expired, and the image keeps it, so a publish retried after a crash or on a new leader is
//! still recognised.
//!
//! [`Message::deduplication_id`]: crate::wire::Message::deduplication_id

use std::collections::{HashMap, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::flow::MessageId;

/// How long a deduplication id is remembered after its publish: 10 minutes, the reference's
/// window.
pub const DEDUPLICATION_WINDOW_MS: u64 = 10 * 60 * 1000;

/// One remembered publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Seen {
    id: String,
    message_id: MessageId,
    /// Publication time, Unix ms.
    at: u64,
}

/// The deduplication ids published in the last [`DEDUPLICATION_WINDOW_MS`], with the message
/// each one queued.
///
/// Memory: one entry per accepted publish that carried an id, for 10 minutes (the id's text
/// twice, a message id and two times: about 100 bytes plus twice the id). Expired entries go
/// when a later publish with an id is applied.
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, Timestamp};
/// use flowvec::state::{Applied, Command, StateMachine, DEDUPLICATION_WINDOW_MS};
/// use flowvec::vector::{IndexConfig, Metric};
/// use flowvec::wire::Message;
///
/// let machine = StateMachine::new(IndexConfig::dense(2, Metric::Cosine), FlowConfig::default())?;
/// let publish = || Command::Publish {
///     key: None,
///     limits: None,
///     message: Box::new(Message {
///         destination: "http://127.0.0.1:9/hook".into(),
///         method: "POST".into(),
///         deduplication_id: Some("order-17".into()),
///         ..Message::default()
///     }),
/// };
/// let t0 = Timestamp::from_secs(1_700_000_000);
/// let Applied::Published(first) = machine.apply(publish(), t0)? else { unreachable!() };
/// // Retried a minute later (the first answer was lost): accepted, not queued again.
/// let again = machine.apply(publish(), t0.add_millis(60_000))?;
/// assert_eq!(again, Applied::Deduplicated(first));
/// assert_eq!(machine.flow().lock().waiting_count(), 1);
/// // Once the window has passed, the same id queues a new message.
/// let later = machine.apply(publish(), t0.add_millis(DEDUPLICATION_WINDOW_MS))?;
/// assert!(matches!(later, Applied::Published(id) if id != first));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(from = "Vec<Seen>", into = "Vec<Seen>")]
pub struct Deduplication {
    /// Id → (message, publication time) of its latest accepted publish.
    ids: HashMap<String, (MessageId, u64)>,
    /// Every accepted publish with an id, oldest first (an id published again after it
    /// expired is here twice; the older entry no longer matches `ids` and is dropped as such).
    order: VecDeque<(u64, String)>,
}

impl Deduplication {
    /// The message published under `id` less than the window before `now_ms`, if any.
    #[must_use]
    pub fn get(&self, id: &str, now_ms: u64) -> Option<MessageId> {
        self.ids
            .get(id)
            .filter(|(_, at)| live(*at, now_ms))
            .map(|(message, _)| *message)
    }

    /// The remembered ids, oldest first: `(id, message, publication time in Unix ms)`
    /// (expired ones included until they are dropped).
    pub fn entries(&self) -> impl Iterator<Item = (&str, MessageId, u64)> {
        self.order.iter().filter_map(|(at, id)| {
            let (message, latest) = self.ids.get(id)?;
            (latest == at).then_some((id.as_str(), *message, *at))
        })
    }

    /// How many ids are remembered (expired ones included until they are dropped).
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no id is remembered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Drops every id whose window ended at or before `now_ms`.
    pub(crate) fn expire(&mut self, now_ms: u64) {
        while self.order.front().is_some_and(|(at, _)| !live(*at, now_ms)) {
            let Some((at, id)) = self.order.pop_front() else {
                break;
            };
            if self.ids.get(&id).is_some_and(|(_, latest)| *latest == at) {
                self.ids.remove(&id);
            }
        }
    }

    /// Remembers that `id` queued `message` at `now_ms` (times never go backwards).
    pub(crate) fn insert(&mut self, id: String, message: MessageId, now_ms: u64) {
        self.order.push_back((now_ms, id.clone()));
        self.ids.insert(id, (message, now_ms));
    }
}

/// Whether a publish at `at` still deduplicates at `now_ms`.
fn live(at: u64, now_ms: u64) -> bool {
    now_ms < at.saturating_add(DEDUPLICATION_WINDOW_MS)
}

impl From<Vec<Seen>> for Deduplication {
    fn from(seen: Vec<Seen>) -> Self {
        let mut table = Self::default();
        for Seen { id, message_id, at } in seen {
            table.insert(id, message_id, at);
        }
        table
    }
}

impl From<Deduplication> for Vec<Seen> {
    fn from(table: Deduplication) -> Self {
        // Loading these back rebuilds a table that answers the same.
        table
            .entries()
            .map(|(id, message_id, at)| Seen {
                id: id.to_owned(),
                message_id,
                at,
            })
            .collect()
    }
}

/// Equal when the same ids are remembered for the same messages and times (a superseded
/// entry waiting to be dropped does not count).
impl PartialEq for Deduplication {
    fn eq(&self, other: &Self) -> bool {
        self.entries().eq(other.entries())
    }
}

impl Eq for Deduplication {}

impl fmt::Debug for Deduplication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> MessageId {
        format!("{n}-0").parse().expect("a well-formed id")
    }

    #[test]
    fn an_id_deduplicates_for_exactly_the_window() {
        let mut table = Deduplication::default();
        table.insert("a".into(), id(1), 1_000);
        assert_eq!(table.get("a", 1_000), Some(id(1)));
        assert_eq!(
            table.get("a", 1_000 + DEDUPLICATION_WINDOW_MS - 1),
            Some(id(1))
        );
        assert_eq!(table.get("a", 1_000 + DEDUPLICATION_WINDOW_MS), None);
        assert_eq!(table.get("b", 1_000), None);
    }

    #[test]
    fn expiry_drops_old_ids_but_not_an_id_published_again() {
        let mut table = Deduplication::default();
        table.insert("a".into(), id(1), 0);
        table.insert("b".into(), id(2), 10);
        // "a" expires and is published again.
        table.insert("a".into(), id(3), DEDUPLICATION_WINDOW_MS);
        table.expire(DEDUPLICATION_WINDOW_MS + 5);
        assert_eq!(table.len(), 2, "the old entry of a went, b is still live");
        assert_eq!(table.get("a", DEDUPLICATION_WINDOW_MS + 5), Some(id(3)));
        table.expire(DEDUPLICATION_WINDOW_MS + 10);
        assert_eq!(table.get("b", DEDUPLICATION_WINDOW_MS + 10), None);
        assert_eq!(table.len(), 1);
        table.expire(2 * DEDUPLICATION_WINDOW_MS);
        assert!(table.is_empty());
        assert!(table.order.is_empty());
    }

    #[test]
    fn serde_keeps_the_current_entries_in_order() {
        let mut table = Deduplication::default();
        table.insert("a".into(), id(1), 0);
        table.insert("b".into(), id(2), 5);
        table.insert("a".into(), id(3), DEDUPLICATION_WINDOW_MS);
        let json = serde_json::to_string(&table).expect("plain data");
        assert_eq!(
            json.matches("\"id\"").count(),
            2,
            "the superseded entry is not saved"
        );
        let back: Deduplication = serde_json::from_str(&json).expect("our own output");
        for now in [6, DEDUPLICATION_WINDOW_MS + 1, 2 * DEDUPLICATION_WINDOW_MS] {
            for key in ["a", "b"] {
                assert_eq!(back.get(key, now), table.get(key, now), "{key} at {now}");
            }
        }
        assert_eq!(back, table);
        assert_eq!(format!("{back:?}"), format!("{table:?}"));
        let (mut x, mut y) = (back, table);
        x.expire(DEDUPLICATION_WINDOW_MS + 6);
        y.expire(DEDUPLICATION_WINDOW_MS + 6);
        assert_eq!(x, y);
        assert_eq!(x.len(), 1);
    }
}
