//! Delayed messages: published with a not-before time, or retried after a backoff. They wait
//! here, outside their key's waitlist, so a key's other messages are not blocked behind them;
//! when their time comes they join the tail of the waitlist and are governed by the key's
//! limits like any other message (a retry counts against rate and parallelism again).
//!
//! A min-heap of `(release time, sequence, slot)`; entries of messages cancelled (or released
//! and delayed again) are stale and skipped when popped: an entry is live while its slot holds
//! that sequence in the `Delayed` state with that release time (kept in the slot's unused
//! list links). A key with delayed messages is flagged [`DELAYED`] and never reclaimed; the
//! count per key lives in a side map, so keys without delayed messages pay nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::engine::FlowControl;
use super::key::DELAYED;
use super::waitlist::SlotState;
use super::{FlowError, Limits, MessageId, Timestamp};

#[derive(Debug, Clone, Default)]
pub(super) struct Delays {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    per_key: HashMap<u32, u32>,
    pub(super) total: u32,
}

impl Delays {
    /// The earliest release time, possibly of a stale entry (early, never late).
    pub(super) fn peek(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }
}

/// The release time kept in a delayed slot's (unused) list links.
fn pack(at: u64) -> (u32, u32) {
    ((at >> 32) as u32, at as u32)
}

fn unpack(prev: u32, next: u32) -> u64 {
    (u64::from(prev) << 32) | u64::from(next)
}

impl<M> FlowControl<M> {
    /// [`publish`](Self::publish), but the message may not be delivered before `not_before`
    /// (`Upstash-Delay`, `Upstash-Not-Before`). Until then it waits outside the key's waitlist
    /// (so it blocks nothing); then it joins the waitlist's tail. The key's configuration is
    /// updated at publish time, as for any publish. A `not_before` at or before `now` is a
    /// plain publish.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let t0 = Timestamp::from_millis(1_000);
    /// let l = "parallelism=1".parse()?;
    /// let later = fc.publish_at(Some("k"), Some(l), "later", t0.add_millis(500), t0)?;
    /// let first = fc.publish(Some("k"), Some(l), "now", t0)?;
    /// assert_eq!(fc.poll_dispatch(t0).map(|d| d.id), Some(first), "not blocked by the delay");
    /// fc.complete(first, t0)?;
    /// assert_eq!(fc.poll_timeout(), Some(t0.add_millis(500)));
    /// assert!(fc.poll_dispatch(t0.add_millis(499)).is_none());
    /// assert_eq!(fc.poll_dispatch(t0.add_millis(500)).map(|d| d.id), Some(later));
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// As [`publish`](Self::publish).
    pub fn publish_at(
        &mut self,
        key: Option<&str>,
        limits: Option<Limits>,
        message: M,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<MessageId, FlowError> {
        let id = self.publish_held(key, limits, message, now)?;
        let slot = id.slot();
        let at = not_before.as_millis();
        if at <= self.now {
            self.release(slot);
        } else {
            self.hold(slot, id.sequence(), at);
            let key = self.messages.entry_mut(slot).key;
            self.refresh(key); // its limits may have changed
        }
        Ok(id)
    }

    /// An active call failed and will be retried at `at` (after a backoff): frees its slot at
    /// once, and the message waits outside its key's waitlist until `at`, then joins the
    /// waitlist's tail; it counts against the key's rate and parallelism again when
    /// dispatched. The host decides *whether* to retry; the engine decides *when*.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let t0 = Timestamp::from_millis(0);
    /// let l = "parallelism=1".parse()?;
    /// let a = fc.publish(Some("k"), Some(l), "a", t0)?;
    /// let b = fc.publish(Some("k"), Some(l), "b", t0)?;
    /// let d = fc.poll_dispatch(t0).expect("a");
    /// fc.retry(d.id, t0.add_millis(1_000), t0)?;
    /// assert_eq!(fc.poll_dispatch(t0).map(|d| d.id), Some(b), "b is not blocked by a's backoff");
    /// fc.complete(b, t0)?;
    /// assert!(fc.poll_dispatch(t0.add_millis(999)).is_none());
    /// assert_eq!(fc.poll_dispatch(t0.add_millis(1_000)).map(|d| d.id), Some(a));
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotActive`] if `id` is not an active call; nothing changes.
    pub fn retry(&mut self, id: MessageId, at: Timestamp, now: Timestamp) -> Result<(), FlowError> {
        self.check(id, SlotState::Active)?;
        self.tick(now);
        let slot = id.slot();
        let key = self.messages.entry_mut(slot).key;
        let k = self.keys.get_mut(key);
        k.active -= 1;
        self.active_total -= 1;
        if at.as_millis() <= self.now {
            self.release(slot);
        } else {
            self.hold(slot, id.sequence(), at.as_millis());
        }
        self.refresh(key);
        Ok(())
    }

    /// Messages waiting for their not-before time or retry backoff (O(1)).
    #[must_use]
    pub fn delayed_count(&self) -> usize {
        self.delays.total as usize
    }

    /// Puts the (unlinked) message in `slot` on hold until `at`.
    fn hold(&mut self, slot: u32, seq: u64, at: u64) {
        let e = self.messages.entry_mut(slot);
        e.state = SlotState::Delayed;
        (e.prev, e.next) = pack(at);
        let key = e.key;
        self.delays.heap.push(Reverse((at, seq, slot)));
        self.delays.total += 1;
        *self.delays.per_key.entry(key).or_insert(0) += 1;
        self.keys.get_mut(key).set(DELAYED, true);
    }

    /// Takes a delayed message off hold without releasing it (cancel); returns its key.
    pub(super) fn unhold(&mut self, slot: u32) -> u32 {
        let key = self.messages.entry_mut(slot).key;
        self.delays.total -= 1;
        let count = self
            .delays
            .per_key
            .get_mut(&key)
            .expect("a held message is counted");
        *count -= 1;
        if *count == 0 {
            self.delays.per_key.remove(&key);
            self.keys.get_mut(key).set(DELAYED, false);
        }
        key
    }

    /// Appends the message in `slot` (held or fresh, unlinked) to its key's waitlist.
    fn release(&mut self, slot: u32) {
        let e = self.messages.entry_mut(slot);
        let key = e.key;
        e.state = SlotState::Waiting;
        (e.prev, e.next) = (super::key::NIL, super::key::NIL);
        let k = self.edit_waitlist(key, |list, ends| list.push_back(ends, slot));
        k.waiting += 1;
        self.refresh(key);
    }

    /// Releases every held message whose time has come (called by `tick`).
    #[inline]
    pub(super) fn release_due(&mut self) {
        while let Some(&Reverse((at, seq, slot))) = self.delays.heap.peek() {
            if at > self.now {
                break;
            }
            self.delays.heap.pop();
            if self.is_held(slot, seq, at) {
                self.unhold(slot);
                self.release(slot);
            }
        }
    }

    fn is_held(&self, slot: u32, seq: u64, at: u64) -> bool {
        self.messages.get(slot).is_some_and(|e| {
            e.state == SlotState::Delayed && e.seq == seq && unpack(e.prev, e.next) == at
        })
    }

    /// The earliest live release time, dropping stale entries on top.
    pub(super) fn next_release(&mut self) -> Option<u64> {
        while let Some(&Reverse((at, seq, slot))) = self.delays.heap.peek() {
            if self.is_held(slot, seq, at) {
                return Some(at);
            }
            self.delays.heap.pop();
        }
        None
    }

    /// When the message in `slot` is released, if it is held (snapshots).
    pub(super) fn held_until(&self, slot: u32) -> Option<u64> {
        self.messages
            .get(slot)
            .filter(|e| e.state == SlotState::Delayed)
            .map(|e| unpack(e.prev, e.next))
    }

    /// Restores a held message (snapshot restore): `slot` holds it, unlinked.
    pub(super) fn restore_held(&mut self, slot: u32, at: u64) {
        let seq = self.messages.entry_mut(slot).seq;
        self.hold(slot, seq, at);
    }
}
