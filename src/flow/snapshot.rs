//! Snapshot and restore (DESIGN §1.3 "Durability").
//!
//! A [`FlowSnapshot`] is a faithful serde image of the engine: configuration, keys with their
//! counters, flags and waitlists, every message (waiting or active), the round-robin ring and
//! the free lists (so ids and slot choices after a restore match the original). Restoring
//! validates everything (a snapshot is caller input) and then re-queues the active messages at
//! the head of their keys' waitlists, exactly as `requeue` would: their calls were lost with the
//! host, so delivery is at-least-once and nothing is lost.

use serde::{Deserialize, Serialize};

use super::engine::FlowControl;
use super::key::{
    IDLE, IN_READY, KeyState, NIL, NO_TIMER, PAUSED, PIN_PARALLELISM, PIN_RATE, validate_key,
};
use super::keys::{KeyTable, UNKEYED};
use super::waitlist::{Ends, Entry, MessageSlab, SlotState};
use super::{FlowConfig, FlowError, KeyName, MessageId, Period, Timestamp};

/// A serializable image of a [`FlowControl`], from [`FlowControl::snapshot`].
///
/// Its fields are private: treat it as an opaque document to store and give back to
/// [`FlowControl::restore`].
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, FlowControl, FlowSnapshot, Timestamp};
/// let now = Timestamp::from_millis(0);
/// let mut fc = FlowControl::new(FlowConfig::default());
/// let id = fc.publish(None, None, "m".to_owned(), now)?;
/// let d = fc.poll_dispatch(now).expect("ready");
///
/// let json = serde_json::to_string(&fc.snapshot()).expect("plain data serializes");
/// let snap: FlowSnapshot<String> = serde_json::from_str(&json).expect("our own output");
/// let mut restored = FlowControl::restore(snap, now)?;
/// // The active call was lost with the host: the message is delivered again.
/// assert_eq!(restored.poll_dispatch(now).map(|d| d.id), Some(id));
/// # let _ = d;
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowSnapshot<M> {
    config: FlowConfig,
    now: Timestamp,
    next_seq: u64,
    key_slots: u32,
    message_slots: u32,
    keys: Vec<KeySnapshot>,
    messages: Vec<MessageSnapshot<M>>,
    ready: Vec<u32>,
    free_keys: Vec<u32>,
    free_messages: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeySnapshot {
    slot: u32,
    /// `None` for the unkeyed pseudo-key in slot 0.
    key: Option<String>,
    parallelism_max: u32,
    rate_max: u32,
    period: u32,
    window_start: u64,
    rate_count: u32,
    paused: bool,
    pinned_parallelism: bool,
    pinned_rate: bool,
    idle_since: Option<u64>,
    timer_at: Option<u64>,
    waiting: Vec<MessageId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSnapshot<M> {
    id: MessageId,
    key_slot: u32,
    active: bool,
    /// Held until this time (ms): a not-before time or a retry backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delayed_until: Option<u64>,
    message: M,
}

fn invalid(reason: impl Into<String>) -> FlowError {
    FlowError::InvalidSnapshot {
        reason: reason.into(),
    }
}

impl<M: Clone> FlowControl<M> {
    /// A serializable image of the engine (messages are cloned).
    #[must_use]
    pub fn snapshot(&self) -> FlowSnapshot<M> {
        let keys = std::iter::once((UNKEYED, self.keys.get(UNKEYED)))
            .chain(self.keys.live_slots())
            .map(|(slot, k)| KeySnapshot {
                slot,
                key: (slot != UNKEYED).then(|| k.name.as_deref().unwrap_or_default().to_owned()),
                parallelism_max: k.parallelism_max,
                rate_max: k.rate_max,
                period: k.period_secs(),
                window_start: k.window_start,
                rate_count: k.rate_count,
                paused: k.has(PAUSED),
                pinned_parallelism: k.has(PIN_PARALLELISM),
                pinned_rate: k.has(PIN_RATE),
                idle_since: k.has(IDLE).then_some(k.idle_since),
                timer_at: (k.timer_at != NO_TIMER).then_some(k.timer_at),
                waiting: self
                    .messages
                    .list(k.head)
                    .into_iter()
                    .map(|m| MessageId::new(self.messages.entries[m as usize].seq, m))
                    .collect(),
            })
            .collect();
        let messages = self
            .messages
            .entries
            .iter()
            .enumerate()
            .filter_map(|(slot, e)| {
                let message = e.message.clone()?;
                Some(MessageSnapshot {
                    id: MessageId::new(e.seq, slot as u32),
                    key_slot: e.key,
                    active: e.state == SlotState::Active,
                    delayed_until: self.held_until(slot as u32),
                    message,
                })
            })
            .collect();
        FlowSnapshot {
            config: self.config,
            now: Timestamp::from_millis(self.now),
            next_seq: self.next_seq,
            key_slots: self.keys.slots.len() as u32,
            message_slots: self.messages.entries.len() as u32,
            keys,
            messages,
            ready: self.ready.iter().copied().collect(),
            free_keys: self.keys.free_list(),
            free_messages: self.messages.free_list(),
        }
    }
}

impl<M> FlowControl<M> {
    /// Rebuilds an engine from a snapshot and advances it to `now`; the active messages go back
    /// to the head of their keys' waitlists (latest-dispatched first in line after the earlier
    /// ones), exactly as if each had been [`requeue`](Self::requeue)d.
    ///
    /// # Errors
    /// [`FlowError::InvalidSnapshot`] if the snapshot is inconsistent (duplicate or dangling
    /// ids or slots, invalid keys or periods, broken free lists).
    pub fn restore(snapshot: FlowSnapshot<M>, now: Timestamp) -> Result<Self, FlowError> {
        let (mut fc, mut order) = Self::rebuild(snapshot)?;
        fc.tick(now);
        order.sort_unstable_by(|a, b| b.cmp(a));
        for (_, slot) in order {
            fc.requeue_active(slot);
        }
        Ok(fc)
    }

    /// Rebuilds the engine exactly as it was when the snapshot was taken: active calls stay
    /// active and the clock is not advanced. For a host that replays a command log on top of the
    /// snapshot (`crate::state`), where requeueing the calls lost with the old process is
    /// itself a logged command ([`requeue_all_active`](Self::requeue_all_active)), so that a
    /// replayed state equals the one that never stopped.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let now = Timestamp::from_millis(0);
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// fc.publish(None, None, "m".to_owned(), now)?;
    /// let d = fc.poll_dispatch(now).expect("ready");
    /// let mut restored = FlowControl::restore_exact(fc.snapshot())?;
    /// assert_eq!(restored.active_count(), 1);
    /// assert_eq!(restored.complete(d.id, now)?, "m");
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InvalidSnapshot`] as for [`restore`](Self::restore).
    pub fn restore_exact(snapshot: FlowSnapshot<M>) -> Result<Self, FlowError> {
        Self::rebuild(snapshot).map(|(fc, _)| fc)
    }

    /// The engine of `snapshot` with its active calls still active, and those calls
    /// (dispatch sequence, message slot) for `restore` to requeue.
    fn rebuild(snapshot: FlowSnapshot<M>) -> Result<(Self, Vec<(u64, u32)>), FlowError> {
        let s = snapshot;
        if s.key_slots as usize > s.keys.len() + s.free_keys.len() + s.ready.len() {
            return Err(invalid(
                "more key slots than live keys, free slots and ring entries",
            ));
        }
        if s.message_slots as usize != s.messages.len() + s.free_messages.len() {
            return Err(invalid(
                "message slots are not exactly the messages plus the free list",
            ));
        }
        let mut fc = Self::new(s.config);
        fc.next_seq = s.next_seq;
        fc.keys = restore_keys(&s.keys, &s.free_keys, s.key_slots)?;
        let mut free_keys = vec![false; s.key_slots as usize];
        for &slot in &s.free_keys {
            free_keys[slot as usize] = true; // in range: checked by restore_keys
        }
        let mut order = Vec::new();
        let mut held = Vec::new();
        fc.messages = restore_messages(
            s.messages,
            &s.free_messages,
            s.message_slots,
            s.next_seq,
            &fc.keys,
            &mut order,
            &mut held,
        )?;

        // Waitlists.
        let mut linked = vec![false; s.message_slots as usize];
        let mut linked_count = 0usize;
        for ks in &s.keys {
            let mut ends = Ends {
                head: NIL,
                tail: NIL,
            };
            let mut waiting = 0u32;
            for id in &ks.waiting {
                let ok = fc.messages.get(id.slot()).is_some_and(|e| {
                    e.seq == id.sequence() && e.key == ks.slot && e.state == SlotState::Waiting
                });
                if !ok || std::mem::replace(&mut linked[id.slot() as usize], true) {
                    return Err(invalid(format!(
                        "waitlist entry `{id}` is not a waiting message of its key, or is listed twice"
                    )));
                }
                fc.messages.push_back(&mut ends, id.slot());
                waiting += 1;
                linked_count += 1;
            }
            let k = fc.keys.get_mut(ks.slot);
            (k.head, k.tail, k.waiting) = (ends.head, ends.tail, waiting);
        }
        let mut active_total = 0u32;
        for &(_, slot) in &order {
            let key = fc.messages.entries[slot as usize].key;
            fc.keys.get_mut(key).active += 1;
            active_total += 1;
        }
        for &(slot, at) in &held {
            fc.restore_held(slot, at);
        }
        if linked_count + order.len() + held.len() != fc.messages.len as usize {
            return Err(invalid(
                "a waiting message is missing from its key's waitlist",
            ));
        }
        fc.active_total = active_total;

        // Ring entries: live keys, or reclaimed slots waiting for their entry to pop.
        let mut zombies = 0usize;
        for &slot in &s.ready {
            let free = free_keys.get(slot as usize).copied().unwrap_or(true);
            if free || fc.keys.get(slot).has(IN_READY) {
                return Err(invalid(format!(
                    "ready ring entry {slot} is free, out of range or repeated"
                )));
            }
            if !fc.keys.is_live(slot) {
                zombies += 1;
            }
            fc.keys.get_mut(slot).set(IN_READY, true);
            fc.ready.push_back(slot);
        }
        if s.key_slots as usize != s.keys.len() + s.free_keys.len() + zombies {
            return Err(invalid(
                "key slots are not exactly the live keys, the free list and reclaimed ring slots",
            ));
        }
        for (slot, k) in
            std::iter::once((UNKEYED, fc.keys.get(UNKEYED))).chain(fc.keys.live_slots())
        {
            if k.timer_at != NO_TIMER {
                fc.timers.push(k.timer_at, slot);
            }
        }

        fc.now = s.now.as_millis();
        Ok((fc, order))
    }
}

fn restore_keys(keys: &[KeySnapshot], free: &[u32], key_slots: u32) -> Result<KeyTable, FlowError> {
    let mut table = KeyTable::new();
    table.slots = (0..key_slots).map(|_| KeyState::vacant(NIL)).collect();
    let mut seen_unkeyed = false;
    for ks in keys {
        if ks.slot >= key_slots || table.get(ks.slot).is_live() {
            return Err(invalid(format!(
                "key slot {} is out of range or repeated",
                ks.slot
            )));
        }
        let name: KeyName = match (&ks.key, ks.slot) {
            (None, UNKEYED) => {
                seen_unkeyed = true;
                KeyName::from("")
            }
            (Some(name), slot) if slot != UNKEYED => {
                validate_key(name).map_err(|e| invalid(e.to_string()))?;
                if table.find(name).is_some() {
                    return Err(invalid(format!("key {name:?} is listed twice")));
                }
                KeyName::from(name.as_str())
            }
            _ => {
                return Err(invalid(format!(
                    "slot {} and its key name disagree (slot 0 is the unkeyed slot)",
                    ks.slot
                )));
            }
        };
        let period = Period::from_secs(ks.period)
            .ok_or_else(|| invalid(format!("key period {} s is outside 1 s ..= 7 d", ks.period)))?;
        let mut k = KeyState::new(name);
        k.parallelism_max = ks.parallelism_max;
        k.rate_max = ks.rate_max;
        k.set_period_secs(period.as_secs());
        k.window_start = ks.window_start;
        k.rate_count = ks.rate_count;
        k.set(PAUSED, ks.paused);
        k.set(PIN_PARALLELISM, ks.pinned_parallelism);
        k.set(PIN_RATE, ks.pinned_rate);
        k.set(IDLE, ks.idle_since.is_some());
        k.idle_since = ks.idle_since.unwrap_or(0);
        k.timer_at = ks.timer_at.unwrap_or(NO_TIMER);
        table.insert_at(ks.slot, k);
    }
    if !seen_unkeyed {
        return Err(invalid("the unkeyed slot 0 is missing"));
    }
    let mut listed = vec![false; key_slots as usize];
    for (i, &slot) in free.iter().enumerate() {
        if slot >= key_slots
            || slot == UNKEYED
            || table.get(slot).is_live()
            || std::mem::replace(&mut listed[slot as usize], true)
        {
            return Err(invalid(format!(
                "free key slot {slot} is out of range, live or repeated"
            )));
        }
        let k = table.get_mut(slot);
        k.head = free.get(i + 1).copied().unwrap_or(NIL);
        k.tail = if i == 0 { NIL } else { free[i - 1] };
    }
    table.free = free.first().copied().unwrap_or(NIL);
    Ok(table)
}

fn restore_messages<M>(
    messages: Vec<MessageSnapshot<M>>,
    free: &[u32],
    message_slots: u32,
    next_seq: u64,
    keys: &KeyTable,
    active: &mut Vec<(u64, u32)>,
    held: &mut Vec<(u32, u64)>,
) -> Result<MessageSlab<M>, FlowError> {
    let mut slab = MessageSlab::new();
    slab.entries = (0..message_slots)
        .map(|_| Entry {
            seq: 0,
            key: 0,
            prev: NIL,
            next: NIL,
            state: SlotState::Vacant,
            message: None,
        })
        .collect();
    for m in messages {
        let slot = m.id.slot();
        let ok = slot < message_slots
            && m.id.sequence() < next_seq
            && slab.entries[slot as usize].state == SlotState::Vacant
            && (m.key_slot == UNKEYED || keys.is_live(m.key_slot));
        if !ok {
            return Err(invalid(format!(
                "message `{}` has a bad or repeated slot, a future sequence or a dangling key",
                m.id
            )));
        }
        let state = match (m.active, m.delayed_until) {
            (true, None) => {
                active.push((m.id.sequence(), slot));
                SlotState::Active
            }
            (false, None) => SlotState::Waiting,
            (false, Some(at)) => {
                held.push((slot, at));
                SlotState::Delayed
            }
            (true, Some(_)) => {
                return Err(invalid(format!(
                    "message `{}` is both active and delayed",
                    m.id
                )));
            }
        };
        slab.entries[slot as usize] = Entry {
            seq: m.id.sequence(),
            key: m.key_slot,
            prev: NIL,
            next: NIL,
            state,
            message: Some(m.message),
        };
        slab.len += 1;
    }
    let mut listed = vec![false; message_slots as usize];
    for (i, &slot) in free.iter().enumerate() {
        if slot >= message_slots
            || slab.entries[slot as usize].state != SlotState::Vacant
            || std::mem::replace(&mut listed[slot as usize], true)
        {
            return Err(invalid(format!(
                "free message slot {slot} is out of range, occupied or repeated"
            )));
        }
        let e = &mut slab.entries[slot as usize];
        e.next = free.get(i + 1).copied().unwrap_or(NIL);
        e.prev = if i == 0 { NIL } else { free[i - 1] };
    }
    slab.free = free.first().copied().unwrap_or(NIL);
    Ok(slab)
}
