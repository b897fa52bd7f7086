//! Looking messages up by id and listing the ones still pending: what a message API (get,
//! cancel one, cancel by key, cancel all) needs from the engine.

use super::engine::FlowControl;
use super::keys::UNKEYED;
use super::waitlist::SlotState;
use super::{MessageId, Timestamp};

/// Where a message stands in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// In its key's waitlist.
    Waiting,
    /// Handed out by [`FlowControl::poll_dispatch`]; its call is under way.
    Active,
    /// Held until a not-before time or a retry's backoff ends.
    Delayed {
        /// When it joins its key's waitlist.
        until: Timestamp,
    },
}

/// A message the engine holds, as [`FlowControl::message`] shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageView<'a, M> {
    /// Where it stands.
    pub state: MessageState,
    /// Its flow-control key (`None` for a message published without one).
    pub key: Option<&'a str>,
    /// The message.
    pub message: &'a M,
}

impl<M> FlowControl<M> {
    /// The message `id`, while the engine holds it (waiting, delayed or active); `None` once
    /// it is completed or cancelled, or for an id this engine never issued.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, MessageState, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let t0 = Timestamp::from_millis(0);
    /// let id = fc.publish(Some("k"), Some("rate=5".parse()?), "m", t0)?;
    /// let view = fc.message(id).expect("held");
    /// assert_eq!((view.state, view.key, *view.message), (MessageState::Waiting, Some("k"), "m"));
    /// fc.poll_dispatch(t0);
    /// assert_eq!(fc.message(id).map(|v| v.state), Some(MessageState::Active));
    /// fc.complete(id, t0)?;
    /// assert!(fc.message(id).is_none());
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    #[must_use]
    pub fn message(&self, id: MessageId) -> Option<MessageView<'_, M>> {
        let e = self.messages.get(id.slot())?;
        if e.seq != id.sequence() {
            return None;
        }
        let state = match e.state {
            SlotState::Vacant => return None,
            SlotState::Waiting => MessageState::Waiting,
            SlotState::Active => MessageState::Active,
            SlotState::Delayed => MessageState::Delayed {
                until: Timestamp::from_millis(self.held_until(id.slot())?),
            },
        };
        let key = (e.key != UNKEYED)
            .then(|| self.keys.get(e.key).name.as_deref())
            .flatten();
        Some(MessageView {
            state,
            key,
            message: e.message.as_ref()?,
        })
    }

    /// The message `id` to change in place (the host's bookkeeping, such as a retry count);
    /// `None` as for [`message`](Self::message). Where it stands does not change.
    pub fn message_mut(&mut self, id: MessageId) -> Option<&mut M> {
        let e = self.messages.entries.get_mut(id.slot() as usize)?;
        if e.seq != id.sequence() || e.state == SlotState::Vacant {
            return None;
        }
        e.message.as_mut()
    }

    /// The ids of the messages that may still be cancelled (waiting or delayed), of `key`
    /// only if given (`Some("")` is no key), in publication order. O(messages held).
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let t0 = Timestamp::from_millis(0);
    /// let l = Some("parallelism=1".parse()?);
    /// let a = fc.publish(Some("a"), l, 1, t0)?;
    /// let b = fc.publish_at(Some("b"), l, 2, t0.add_millis(10), t0)?;
    /// assert_eq!(fc.pending(None), vec![a, b]);
    /// assert_eq!(fc.pending(Some("b")), vec![b]);
    /// assert!(fc.pending(Some("c")).is_empty());
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    #[must_use]
    pub fn pending(&self, key: Option<&str>) -> Vec<MessageId> {
        let slot = match key {
            None => None,
            Some("") => Some(UNKEYED),
            Some(name) => match self.keys.find(name) {
                Some(slot) => Some(slot),
                None => return Vec::new(),
            },
        };
        let mut ids: Vec<MessageId> = self
            .messages
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.state, SlotState::Waiting | SlotState::Delayed))
            .filter(|(_, e)| slot.is_none_or(|s| s == e.key))
            .map(|(i, e)| MessageId::new(e.seq, i as u32))
            .collect();
        ids.sort_unstable_by_key(|id| id.sequence());
        ids
    }
}
