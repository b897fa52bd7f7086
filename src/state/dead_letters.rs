//! [`DeadLetters`]: messages whose every delivery attempt failed, kept until deleted or
//! retried (the reference's dead letter queue).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::flow::MessageId;
use crate::wire::{DeliveryResponse, Message};

/// One message in the dead letter queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeadLetter {
    /// Its id in the queue: `<ms when it landed>-<sequence>`, unique and in landing order.
    pub dlq_id: String,
    /// The id the message had while it was delivered.
    pub message_id: MessageId,
    /// The message as it was on its last attempt (`retried` = its retry count).
    pub message: Message,
    /// What the last attempt got back.
    pub response: DeliveryResponse,
    /// When it landed, Unix ms.
    pub landed_at: u64,
}

/// The dead letter queue: entries in landing order.
///
/// # Examples
/// ```
/// use flowvec::state::DeadLetters;
/// let dlq = DeadLetters::default();
/// assert!(dlq.is_empty());
/// assert!(dlq.get("1700000000000-0").is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeadLetters {
    /// The sequence of the next entry.
    next: u64,
    /// Sequence → entry.
    entries: BTreeMap<u64, DeadLetter>,
}

impl DeadLetters {
    /// Adds `message` (its last attempt got `response`) at `landed_at` ms; returns its id.
    pub(crate) fn push(
        &mut self,
        message_id: MessageId,
        message: Message,
        response: DeliveryResponse,
        landed_at: u64,
    ) -> String {
        let seq = self.next;
        self.next += 1;
        let dlq_id = format!("{landed_at}-{seq}");
        self.entries.insert(
            seq,
            DeadLetter {
                dlq_id: dlq_id.clone(),
                message_id,
                message,
                response,
                landed_at,
            },
        );
        dlq_id
    }

    /// The entry `dlq_id`.
    #[must_use]
    pub fn get(&self, dlq_id: &str) -> Option<&DeadLetter> {
        self.entries
            .get(&sequence(dlq_id)?)
            .filter(|e| e.dlq_id == dlq_id)
    }

    /// Removes the entry `dlq_id`, returning it.
    pub(crate) fn remove(&mut self, dlq_id: &str) -> Option<DeadLetter> {
        let seq = sequence(dlq_id)?;
        if self.entries.get(&seq)?.dlq_id != dlq_id {
            return None;
        }
        self.entries.remove(&seq)
    }

    /// Entries from the one at or after `cursor` (a sequence, from [`DeadLetters::cursor_of`]),
    /// in landing order.
    pub fn from_cursor(&self, cursor: u64) -> impl Iterator<Item = &DeadLetter> {
        self.entries.range(cursor..).map(|(_, e)| e)
    }

    /// The paging cursor that starts at `entry`.
    #[must_use]
    pub fn cursor_of(entry: &DeadLetter) -> u64 {
        sequence(&entry.dlq_id).unwrap_or(u64::MAX)
    }

    /// How many entries there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The sequence part of a dlq id.
fn sequence(dlq_id: &str) -> Option<u64> {
    dlq_id.rsplit_once('-')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_lookups_exact() {
        let mut dlq = DeadLetters::default();
        let a = dlq.push(
            "1-0".parse().unwrap(),
            Message::default(),
            DeliveryResponse::default(),
            5,
        );
        let b = dlq.push(
            "2-0".parse().unwrap(),
            Message::default(),
            DeliveryResponse::default(),
            5,
        );
        assert_ne!(a, b);
        assert!(dlq.get(&a).is_some() && dlq.get(&b).is_some());
        assert!(dlq.get("9-0").is_none(), "same sequence, other time");
        assert!(dlq.get("nonsense").is_none());
        assert_eq!(dlq.remove(&a).map(|e| e.dlq_id), Some(a.clone()));
        assert!(dlq.remove(&a).is_none());
        assert_eq!(dlq.from_cursor(0).count(), 1);
        assert_eq!(dlq.len(), 1);
    }
}
