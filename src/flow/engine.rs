//! [`FlowControl`]: the sans-I/O flow-control state machine (DESIGN §1).

use std::collections::VecDeque;
use std::num::NonZeroU32;

use super::delays::Delays;
use super::key::{
    IDLE, IN_READY, KeyState, KeyStatus, NIL, NO_TIMER, PAUSED, PIN_PARALLELISM, PIN_RATE,
    validate_key,
};
use super::keys::{KeyTable, UNKEYED};
use super::timers::TimerQueue;
use super::waitlist::{Ends, MessageSlab, SlotState};
use super::{
    Dispatch, FlowConfig, FlowError, GlobalInfo, KeyInfo, Limits, MessageId, Pin, Timestamp, Unpin,
};

/// The flow-control engine: decides when each published message may be delivered.
///
/// A plain `&mut self` state machine: it never reads a clock (every time-dependent call takes
/// `now`), never sleeps and never does I/O. The host publishes messages, takes what
/// [`poll_dispatch`](Self::poll_dispatch) hands out, reports each call's end with
/// [`complete`](Self::complete) (or [`requeue`](Self::requeue) to retry), and sleeps until
/// [`poll_timeout`](Self::poll_timeout). Wrap it in [`SharedFlowControl`](super::SharedFlowControl)
/// to use it from many threads.
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
///
/// let mut fc = FlowControl::new(FlowConfig::default());
/// let t0 = Timestamp::from_secs(1_700_000_000);
/// let limits = "parallelism=1".parse()?;
/// let a = fc.publish(Some("user-1"), Some(limits), "first", t0)?;
/// fc.publish(Some("user-1"), Some(limits), "second", t0)?;
///
/// let d = fc.poll_dispatch(t0).expect("the first message may go");
/// assert_eq!((d.id, d.message), (a, "first"));
/// assert!(fc.poll_dispatch(t0).is_none(), "parallelism 1: the second waits");
///
/// fc.complete(a, t0)?;
/// assert_eq!(fc.poll_dispatch(t0).map(|d| d.message), Some("second"));
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FlowControl<M> {
    pub(super) config: FlowConfig,
    /// Global cap on active calls; 0 = none.
    pub(super) global_max: u32,
    pub(super) ttl_ms: u64,
    pub(super) keys: KeyTable,
    pub(super) messages: MessageSlab<M>,
    /// Keys that were ready when queued, served round-robin (entries are re-checked on pop).
    pub(super) ready: VecDeque<u32>,
    pub(super) timers: TimerQueue,
    pub(super) active_total: u32,
    pub(super) next_seq: u64,
    /// The latest `now` seen, ms.
    pub(super) now: u64,
    /// Messages held until a not-before time or a retry's backoff ends (`delays.rs`).
    pub(super) delays: Delays,
}

impl<M> FlowControl<M> {
    /// An empty engine.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl};
    /// let fc = FlowControl::<String>::new(FlowConfig::default());
    /// assert_eq!(fc.key_count(), 0);
    /// ```
    #[must_use]
    pub fn new(config: FlowConfig) -> Self {
        Self {
            global_max: config.global_parallelism.map_or(0, NonZeroU32::get),
            ttl_ms: config.idle_ttl_ms(),
            config,
            keys: KeyTable::new(),
            messages: MessageSlab::new(),
            ready: VecDeque::new(),
            timers: TimerQueue::default(),
            active_total: 0,
            next_seq: 0,
            now: 0,
            delays: Delays::default(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &FlowConfig {
        &self.config
    }

    /// Changes the global cap on active calls (`None` = no cap). Active calls above a lowered
    /// cap go on; no new call starts until the count is below it.
    ///
    /// # Examples
    /// ```
    /// use std::num::NonZeroU32;
    /// use flowvec::flow::{FlowConfig, FlowControl};
    /// let mut fc = FlowControl::<()>::new(FlowConfig::default());
    /// fc.set_global_parallelism(NonZeroU32::new(3));
    /// assert_eq!(fc.global_info().parallelism_max, Some(3));
    /// ```
    pub fn set_global_parallelism(&mut self, max: Option<NonZeroU32>) {
        self.config.global_parallelism = max;
        self.global_max = max.map_or(0, NonZeroU32::get);
    }

    /// Queues a message; returns its id.
    ///
    /// A message with a key must carry limits, and one without a key must not. The key's
    /// configuration becomes exactly `limits` (an omitted part becomes unlimited), except for
    /// pinned parts; messages already waiting are governed by the new configuration.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// fc.publish(None, None, 1, now)?; // unkeyed: only the global cap applies
    /// fc.publish(Some("k"), Some("rate=5".parse()?), 2, now)?;
    /// assert!(fc.publish(Some("k"), None, 3, now).is_err());
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::MissingLimits`], [`FlowError::LimitsWithoutKey`], [`FlowError::InvalidKey`],
    /// or [`FlowError::CapacityExceeded`]; nothing changes on error.
    pub fn publish(
        &mut self,
        key: Option<&str>,
        limits: Option<Limits>,
        message: M,
        now: Timestamp,
    ) -> Result<MessageId, FlowError> {
        self.publish_inner(key, limits, message, now, true)
    }

    /// [`publish`](Self::publish) without linking the message into its key's waitlist (the
    /// caller holds or releases it, `delays.rs`).
    pub(super) fn publish_held(
        &mut self,
        key: Option<&str>,
        limits: Option<Limits>,
        message: M,
        now: Timestamp,
    ) -> Result<MessageId, FlowError> {
        self.publish_inner(key, limits, message, now, false)
    }

    #[inline(always)]
    fn publish_inner(
        &mut self,
        key: Option<&str>,
        limits: Option<Limits>,
        message: M,
        now: Timestamp,
        link: bool,
    ) -> Result<MessageId, FlowError> {
        let keyed = match (key, limits) {
            (Some(k), None) => return Err(FlowError::MissingLimits { key: k.to_owned() }),
            (None, Some(l)) => {
                return Err(FlowError::LimitsWithoutKey {
                    limits: l.to_string(),
                });
            }
            (Some(k), Some(l)) => {
                validate_key(k)?;
                Some((k, l))
            }
            (None, None) => None,
        };
        if self.messages.len == NIL - 1 {
            return Err(FlowError::CapacityExceeded { what: "messages" });
        }
        // The clock first: its timers may reclaim keys. Then, as finding a key among many
        // costs a cache miss, request its line and store the message while it comes.
        self.tick(now);
        let lookup = keyed.map(|(k, _)| self.keys.start_lookup(k));
        let seq = self.next_seq;
        let msg = self.messages.alloc(seq, UNKEYED, message)?;
        let slot = match (keyed, lookup) {
            (Some((k, l)), Some(lookup)) => match self.keys.finish_lookup(k, lookup) {
                Ok(slot) => {
                    apply_limits(self.keys.get_mut(slot), l);
                    self.messages.entry_mut(msg).key = slot;
                    slot
                }
                Err(e) => {
                    self.messages.release(msg); // nothing changes on error
                    return Err(e);
                }
            },
            _ => UNKEYED,
        };
        self.next_seq += 1;
        if !link {
            return Ok(MessageId::new(seq, msg));
        }
        let k = self.edit_waitlist(slot, |list, ends| list.push_back(ends, msg));
        k.waiting += 1;
        self.refresh(slot);
        Ok(MessageId::new(seq, msg))
    }

    /// Hands out the next message that may be delivered now, or `None` if none may (being
    /// limited is not an error). The call is active until `complete` or `requeue`.
    ///
    /// Ready keys are served round-robin: a key that just dispatched goes to the back. Within a
    /// key, messages go in FIFO order. The message is cloned: the engine keeps its own copy
    /// until `complete` (for snapshots), so large payloads belong behind an `Arc`.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// fc.publish(None, None, "m", now)?;
    /// let d = fc.poll_dispatch(now).expect("nothing limits an unkeyed message");
    /// assert_eq!((d.key, d.message), (None, "m"));
    /// assert!(fc.poll_dispatch(now).is_none());
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    pub fn poll_dispatch(&mut self, now: Timestamp) -> Option<Dispatch<M>>
    where
        M: Clone,
    {
        let now = self.tick(now);
        if self.global_max != 0 && self.active_total >= self.global_max {
            return None;
        }
        while let Some(slot) = self.ready.pop_front() {
            let k = self.keys.get_mut(slot);
            k.set(IN_READY, false);
            if !k.is_live() {
                self.keys.release(slot); // reclaimed while queued: the slot may be reused now
                continue;
            }
            if k.status(now) != KeyStatus::Ready {
                self.refresh(slot);
                continue;
            }
            let msg = k.head;
            let k = self.edit_waitlist(slot, |list, ends| list.unlink(ends, msg));
            k.waiting -= 1;
            k.active += 1;
            if k.rate_max != 0 {
                let mut w = k.window();
                w.record(now);
                k.set_window(w);
            }
            self.active_total += 1;
            let e = self.messages.entry_mut(msg);
            e.state = SlotState::Active;
            let id = MessageId::new(e.seq, msg);
            let message = e.message.clone().expect("an active slot holds its message");
            if self.keys.get(slot).waiting != 0 {
                // (With nothing left waiting the key is busy: refresh would have nothing to do.)
                self.refresh(slot);
            }
            // The name is copied last, straight into the result: a copy made earlier and moved
            // here went through the stack in pieces (a store-forwarding stall, ~5 ns).
            let key = match slot {
                UNKEYED => None,
                _ => self.keys.get(slot).name.clone(),
            };
            return Some(Dispatch { id, key, message });
        }
        if self.ready.capacity() > 1024 {
            self.ready.shrink_to_fit(); // the ring is empty: give a burst's memory back
        }
        None
    }

    /// Ends an active call (whatever its outcome) and returns the message; its parallelism
    /// slot is free at once.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// let id = fc.publish(None, None, "m", now)?;
    /// assert!(fc.complete(id, now).is_err(), "not dispatched yet");
    /// let d = fc.poll_dispatch(now).expect("ready");
    /// assert_eq!(fc.complete(d.id, now)?, "m");
    /// assert!(fc.complete(d.id, now).is_err(), "a slot cannot be released twice");
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotActive`] if `id` is not an active call; nothing changes.
    pub fn complete(&mut self, id: MessageId, now: Timestamp) -> Result<M, FlowError> {
        self.check(id, SlotState::Active)?;
        self.tick(now);
        let slot = self.messages.entry_mut(id.slot()).key;
        let message = self
            .messages
            .release(id.slot())
            .expect("an active slot holds its message");
        self.keys.get_mut(slot).active -= 1;
        self.active_total -= 1;
        self.refresh(slot);
        Ok(message)
    }

    /// An active call failed and will be retried: frees its slot and puts the message back at
    /// the head of its key's waitlist. It counts against the rate again when re-dispatched.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// let id = fc.publish(None, None, "m", now)?;
    /// let d = fc.poll_dispatch(now).expect("ready");
    /// fc.requeue(d.id, now)?;
    /// assert_eq!(fc.poll_dispatch(now).map(|d| d.id), Some(id), "the same message again");
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotActive`] if `id` is not an active call; nothing changes.
    pub fn requeue(&mut self, id: MessageId, now: Timestamp) -> Result<(), FlowError> {
        self.check(id, SlotState::Active)?;
        self.tick(now);
        self.requeue_active(id.slot());
        Ok(())
    }

    /// Requeues every active call, as [`requeue`](Self::requeue) would each (earliest
    /// published first in line); returns how many there were. For a host that restarts, or a
    /// new leader that takes over delivery: the calls of the old process are lost, so their
    /// messages are delivered again (at-least-once).
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// let a = fc.publish(None, None, "a", now)?;
    /// let b = fc.publish(None, None, "b", now)?;
    /// let _ = (fc.poll_dispatch(now), fc.poll_dispatch(now));
    /// assert_eq!(fc.requeue_all_active(now), 2);
    /// assert_eq!(fc.poll_dispatch(now).map(|d| d.id), Some(a));
    /// assert_eq!(fc.poll_dispatch(now).map(|d| d.id), Some(b));
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    pub fn requeue_all_active(&mut self, now: Timestamp) -> usize {
        self.tick(now);
        let mut active: Vec<(u64, u32)> = self
            .messages
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.message.is_some() && e.state == SlotState::Active)
            .map(|(slot, e)| (e.seq, slot as u32))
            .collect();
        active.sort_unstable_by(|a, b| b.cmp(a));
        for &(_, slot) in &active {
            self.requeue_active(slot);
        }
        active.len()
    }

    /// Whether [`poll_dispatch`](Self::poll_dispatch) at `now` might hand out a message: false
    /// when it certainly would not (no key is queued as ready and no timer is due, or the
    /// global cap is reached). Read-only, so a host whose every change is a logged command can
    /// ask before it logs a dispatch.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// assert!(!fc.may_dispatch(now));
    /// fc.publish(None, None, "m", now)?;
    /// assert!(fc.may_dispatch(now));
    /// let _ = fc.poll_dispatch(now);
    /// assert!(!fc.may_dispatch(now));
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    #[must_use]
    pub fn may_dispatch(&self, now: Timestamp) -> bool {
        if self.global_max != 0 && self.active_total >= self.global_max {
            return false;
        }
        let due = |at: u64| at <= now.as_millis();
        !self.ready.is_empty()
            || self.timers.peek().is_some_and(|(at, _)| due(at))
            || self.delays.peek().is_some_and(due)
    }

    /// The earliest timer deadline without fixing stale entries (unlike
    /// [`poll_timeout`](Self::poll_timeout), which takes `&mut self`): possibly early, never
    /// late. For a host whose every state change goes through a command log, where only logged
    /// commands may touch the engine.
    #[must_use]
    pub fn peek_timeout(&self) -> Option<Timestamp> {
        let key_timer = self.timers.peek().map(|(at, _)| at);
        match (key_timer, self.delays.peek()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(Timestamp::from_millis)
    }

    /// Removes a *waiting* message and returns it; `None` if `id` is not waiting (unknown,
    /// active or finished).
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let id = fc.publish(None, None, "m", Timestamp::from_millis(0))?;
    /// assert_eq!(fc.cancel(id), Some("m"));
    /// assert_eq!(fc.cancel(id), None);
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    pub fn cancel(&mut self, id: MessageId) -> Option<M> {
        if self.check(id, SlotState::Delayed).is_ok() {
            let key = self.unhold(id.slot());
            let message = self.messages.release(id.slot());
            self.refresh(key);
            return message;
        }
        self.check(id, SlotState::Waiting).ok()?;
        let slot = self.messages.entry_mut(id.slot()).key;
        let k = self.edit_waitlist(slot, |list, ends| list.unlink(ends, id.slot()));
        k.waiting -= 1;
        let message = self.messages.release(id.slot());
        self.refresh(slot);
        message
    }

    /// The earliest instant at which a rate window holding back a waiting message ends or an
    /// idle key may be reclaimed; `None` when nothing waits on time. O(log n) amortised.
    ///
    /// The host sleeps until then (or the next event) and calls
    /// [`poll_dispatch`](Self::poll_dispatch) or [`handle_timeout`](Self::handle_timeout).
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let t0 = Timestamp::from_millis(1_000);
    /// let l = "rate=1,period=10s".parse()?;
    /// fc.publish(Some("k"), Some(l), (), t0)?;
    /// fc.publish(Some("k"), Some(l), (), t0)?;
    /// let d = fc.poll_dispatch(t0).expect("first of the window");
    /// assert!(fc.poll_dispatch(t0).is_none());
    /// assert_eq!(fc.poll_timeout(), Some(Timestamp::from_millis(11_000)));
    /// # let _ = d;
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    pub fn poll_timeout(&mut self) -> Option<Timestamp> {
        let release = self.next_release().map(Timestamp::from_millis);
        match (self.next_key_timer(), release) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn next_key_timer(&mut self) -> Option<Timestamp> {
        // Timer entries are only ever early (rescheduling later is lazy); fix the top entry
        // until it is exactly what its key needs, so the host never wakes for nothing.
        while let Some((deadline, slot)) = self.timers.peek() {
            if !self.timer_valid(deadline, slot) {
                self.timers.pop();
                continue;
            }
            match self.needed_deadline(slot) {
                Some(need) if need == deadline => return Some(Timestamp::from_millis(deadline)),
                need => {
                    self.timers.pop();
                    let need = need.unwrap_or(NO_TIMER);
                    self.keys.get_mut(slot).timer_at = need;
                    if need != NO_TIMER {
                        self.timers.push(need, slot);
                    }
                }
            }
        }
        None
    }

    /// Advances the engine to `now`: ends rate windows and reclaims idle keys that are due.
    /// Every call that takes `now` does this first; a host with nothing else to do calls it
    /// when [`poll_timeout`](Self::poll_timeout) passes.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        self.tick(now);
    }

    /// Pauses delivery for `key` (creating the key if unknown): waiting and new messages stay
    /// in the waitlist; active calls go on; the rate window keeps elapsing.
    ///
    /// # Examples
    /// ```
    /// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
    /// let mut fc = FlowControl::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// fc.pause("k", now)?;
    /// fc.publish(Some("k"), Some("rate=9".parse()?), (), now)?;
    /// assert!(fc.poll_dispatch(now).is_none());
    /// fc.resume("k", now)?;
    /// assert!(fc.poll_dispatch(now).is_some());
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InvalidKey`] or [`FlowError::CapacityExceeded`].
    pub fn pause(&mut self, key: &str, now: Timestamp) -> Result<(), FlowError> {
        validate_key(key)?;
        self.tick(now);
        let slot = self.keys.get_or_insert(key)?;
        self.keys.get_mut(slot).set(PAUSED, true);
        self.refresh(slot);
        Ok(())
    }

    /// Resumes delivery for a paused key (a no-op for a key that is not paused).
    ///
    /// # Errors
    /// [`FlowError::InvalidKey`], or [`FlowError::UnknownKey`] if the engine does not hold
    /// `key`.
    pub fn resume(&mut self, key: &str, now: Timestamp) -> Result<(), FlowError> {
        let slot = self.existing(key, now)?;
        self.keys.get_mut(slot).set(PAUSED, false);
        self.refresh(slot);
        Ok(())
    }

    /// Sets and pins parts of a key's configuration (creating the key if unknown); messages
    /// cannot change pinned parts. Pinning the rate resets the rate count and window.
    ///
    /// # Examples
    /// ```
    /// use std::num::NonZeroU32;
    /// use flowvec::flow::{FlowConfig, FlowControl, Pin, Timestamp};
    /// let mut fc = FlowControl::<()>::new(FlowConfig::default());
    /// let now = Timestamp::from_millis(0);
    /// fc.pin("k", Pin { parallelism: NonZeroU32::new(2), ..Pin::default() }, now)?;
    /// fc.publish(Some("k"), Some("parallelism=50".parse()?), (), now)?;
    /// let info = fc.key_info("k", now).expect("pinned keys are kept");
    /// assert_eq!((info.parallelism_max, info.is_pinned_parallelism), (Some(2), true));
    /// # Ok::<(), flowvec::flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InvalidKey`], [`FlowError::EmptyPin`] (no value given),
    /// [`FlowError::PeriodWithoutRate`] (a period for a key without a rate), or
    /// [`FlowError::CapacityExceeded`]; nothing changes on error.
    pub fn pin(&mut self, key: &str, pin: Pin, now: Timestamp) -> Result<(), FlowError> {
        validate_key(key)?;
        if pin == Pin::default() {
            return Err(FlowError::EmptyPin {
                key: key.to_owned(),
            });
        }
        if let (None, Some(period)) = (pin.rate, pin.period) {
            let has_rate = self
                .keys
                .find(key)
                .is_some_and(|s| self.keys.get(s).rate_max != 0);
            if !has_rate {
                return Err(FlowError::PeriodWithoutRate {
                    period: period.to_string(),
                });
            }
        }
        self.tick(now);
        let slot = self.keys.get_or_insert(key)?;
        let k = self.keys.get_mut(slot);
        if let Some(p) = pin.parallelism {
            k.parallelism_max = p.get();
            k.set(PIN_PARALLELISM, true);
        }
        if pin.rate.is_some() || pin.period.is_some() {
            if let Some(r) = pin.rate {
                if k.rate_max == 0 {
                    k.set_period_secs(1);
                }
                k.rate_max = r.get();
            }
            if let Some(p) = pin.period {
                k.set_period_secs(p.as_secs());
            }
            k.rate_count = 0;
            k.set(PIN_RATE, true);
        }
        self.refresh(slot);
        Ok(())
    }

    /// Unpins parts of a key (creating the key if unknown). The values stay in force until a
    /// message brings other limits.
    ///
    /// # Errors
    /// [`FlowError::InvalidKey`] or [`FlowError::CapacityExceeded`].
    pub fn unpin(&mut self, key: &str, unpin: Unpin, now: Timestamp) -> Result<(), FlowError> {
        validate_key(key)?;
        self.tick(now);
        let slot = self.keys.get_or_insert(key)?;
        let k = self.keys.get_mut(slot);
        if unpin.parallelism {
            k.set(PIN_PARALLELISM, false);
        }
        if unpin.rate {
            k.set(PIN_RATE, false);
        }
        self.refresh(slot);
        Ok(())
    }

    /// Ends the key's current rate window: `rateCount = 0`, and the next dispatch starts a
    /// fresh window.
    ///
    /// # Errors
    /// [`FlowError::InvalidKey`], or [`FlowError::UnknownKey`] if the engine does not hold
    /// `key`.
    pub fn reset_rate(&mut self, key: &str, now: Timestamp) -> Result<(), FlowError> {
        let slot = self.existing(key, now)?;
        self.keys.get_mut(slot).rate_count = 0;
        self.refresh(slot);
        Ok(())
    }

    /// The state of `key` at `now`, or `None` if the engine does not hold it.
    ///
    /// Reports lazily: a rate window that has passed by `now` shows `rateCount` 0.
    #[must_use]
    pub fn key_info(&self, key: &str, now: Timestamp) -> Option<KeyInfo> {
        let slot = self.keys.find(key)?;
        Some(self.info_of(self.keys.get(slot), now))
    }

    /// The state of every key the engine holds, sorted by key.
    #[must_use]
    pub fn keys(&self, now: Timestamp) -> Vec<KeyInfo> {
        let mut out: Vec<KeyInfo> = self
            .keys
            .live_slots()
            .map(|(_, k)| self.info_of(k, now))
            .collect();
        out.sort_unstable_by(|a, b| a.flow_control_key.cmp(&b.flow_control_key));
        out
    }

    /// The global parallelism cap and active-call count.
    #[must_use]
    pub fn global_info(&self) -> GlobalInfo {
        GlobalInfo {
            parallelism_max: self.config.global_parallelism.map(NonZeroU32::get),
            parallelism_count: self.active_total,
        }
    }

    /// Keys the engine holds (O(1)).
    #[must_use]
    pub fn key_count(&self) -> usize {
        self.keys.live as usize
    }

    /// Messages waiting over all keys (O(1)).
    #[must_use]
    pub fn waiting_count(&self) -> usize {
        (self.messages.len - self.active_total - self.delays.total) as usize
    }

    /// Active calls over all keys (O(1)).
    #[must_use]
    pub fn active_count(&self) -> usize {
        self.active_total as usize
    }

    fn info_of(&self, k: &KeyState, now: Timestamp) -> KeyInfo {
        let now = now.as_millis().max(self.now);
        let w = k.window();
        KeyInfo {
            flow_control_key: k.name.as_deref().unwrap_or_default().to_owned(),
            wait_list_size: u64::from(k.waiting),
            parallelism_max: (k.parallelism_max != 0).then_some(k.parallelism_max),
            parallelism_count: k.active,
            rate_max: (k.rate_max != 0).then_some(k.rate_max),
            rate_count: w.count_at(now),
            rate_period: k.period_secs(),
            rate_period_start: w.start / 1000,
            is_paused: k.has(PAUSED),
            is_pinned_parallelism: k.has(PIN_PARALLELISM),
            is_pinned_rate: k.has(PIN_RATE),
        }
    }

    /// The slot of an existing key, after advancing to `now`.
    fn existing(&mut self, key: &str, now: Timestamp) -> Result<u32, FlowError> {
        validate_key(key)?;
        self.tick(now);
        self.keys.find(key).ok_or_else(|| FlowError::UnknownKey {
            key: key.to_owned(),
        })
    }

    /// Checks that `id` names a message in `state`.
    pub(super) fn check(&self, id: MessageId, state: SlotState) -> Result<(), FlowError> {
        match self.messages.get(id.slot()) {
            Some(e) if e.seq == id.sequence() && e.state == state => Ok(()),
            _ => Err(FlowError::NotActive { id }),
        }
    }

    /// Moves the active message in `msg` back to the head of its key's waitlist.
    pub(super) fn requeue_active(&mut self, msg: u32) {
        let e = self.messages.entry_mut(msg);
        e.state = SlotState::Waiting;
        let slot = e.key;
        let k = self.edit_waitlist(slot, |list, ends| list.push_front(ends, msg));
        k.active -= 1;
        k.waiting += 1;
        self.active_total -= 1;
        self.refresh(slot);
    }

    /// Advances the clock (never backwards) and runs due timers; returns the engine's now (ms).
    #[inline]
    pub(super) fn tick(&mut self, now: Timestamp) -> u64 {
        self.now = self.now.max(now.as_millis());
        self.release_due();
        while let Some((deadline, slot)) = self.timers.peek() {
            if deadline > self.now {
                break;
            }
            self.timers.pop();
            if self.timer_valid(deadline, slot) {
                self.keys.get_mut(slot).timer_at = NO_TIMER;
                self.refresh(slot);
            }
        }
        self.now
    }

    fn timer_valid(&self, deadline: u64, slot: u32) -> bool {
        self.keys.is_live(slot) && self.keys.get(slot).timer_at == deadline
    }

    /// Runs `edit` on the waitlist of the key in `slot` (its ends are kept in the key, its links
    /// in the message slab), stores the new ends and returns the key for its counters.
    #[inline]
    pub(super) fn edit_waitlist(
        &mut self,
        slot: u32,
        edit: impl FnOnce(&mut MessageSlab<M>, &mut Ends),
    ) -> &mut KeyState {
        let k = self.keys.get_mut(slot);
        let mut ends = Ends {
            head: k.head,
            tail: k.tail,
        };
        edit(&mut self.messages, &mut ends);
        let k = self.keys.get_mut(slot);
        (k.head, k.tail) = (ends.head, ends.tail);
        k
    }

    /// Restores the engine's invariants for one key after anything about it changed: a ready
    /// key is in the ready ring, a rate-limited key has a timer at its window's end, and an
    /// idle key has a reclamation timer (or is reclaimed when due).
    pub(super) fn refresh(&mut self, slot: u32) {
        let now = self.now;
        let k = self.keys.get_mut(slot);
        match k.status(now) {
            KeyStatus::Ready => {
                k.set(IDLE, false);
                if !k.has(IN_READY) {
                    k.set(IN_READY, true);
                    self.ready.push_back(slot);
                }
            }
            KeyStatus::RateLimited(until) => {
                k.set(IDLE, false);
                self.schedule(slot, until);
            }
            KeyStatus::Idle if slot != UNKEYED && k.is_reclaimable() => {
                if !k.has(IDLE) {
                    k.set(IDLE, true);
                    k.idle_since = now;
                }
                let due = window_end_or_idle(k, self.ttl_ms);
                if due <= now {
                    k.timer_at = NO_TIMER;
                    self.keys.remove(slot);
                } else {
                    self.schedule(slot, due);
                }
            }
            _ => k.set(IDLE, false),
        }
    }

    /// The instant the key next needs attention from a timer, given its state now: the end of
    /// a window that holds back its head, or its reclamation deadline if it is idle.
    fn needed_deadline(&self, slot: u32) -> Option<u64> {
        let k = self.keys.get(slot);
        match k.status(self.now) {
            KeyStatus::RateLimited(until) => Some(until),
            KeyStatus::Idle if slot != UNKEYED && k.is_reclaimable() && k.has(IDLE) => {
                Some(window_end_or_idle(k, self.ttl_ms))
            }
            _ => None,
        }
    }

    /// Makes sure the key has a timer entry at or before `at`.
    fn schedule(&mut self, slot: u32, at: u64) {
        let k = self.keys.get_mut(slot);
        if at >= k.timer_at {
            return; // an earlier entry fires first and re-evaluates the key
        }
        k.timer_at = at;
        self.timers.push(at, slot);
        if self.timers.len() > 2 * (self.keys.live as usize + 1) + 64 {
            let keys = &self.keys;
            self.timers
                .retain(|d, s| keys.is_live(s) && keys.get(s).timer_at == d);
        }
    }
}

/// The key's configuration becomes exactly `l`, except for pinned parts.
fn apply_limits(k: &mut KeyState, l: Limits) {
    if !k.has(PIN_PARALLELISM) {
        k.parallelism_max = l.parallelism.map_or(0, NonZeroU32::get);
    }
    if !k.has(PIN_RATE) {
        match l.rate {
            Some(r) => {
                k.rate_max = r.max.get();
                k.set_period_secs(r.period.as_secs());
            }
            None => {
                k.rate_max = 0;
                k.set_period_secs(1);
            }
        }
    }
}

/// When an idle key may be reclaimed: its rate window has passed and it has been idle for
/// `ttl_ms`.
fn window_end_or_idle(k: &KeyState, ttl_ms: u64) -> u64 {
    let w = k.window();
    let window_end = if w.count > 0 { w.end() } else { 0 };
    window_end.max(k.idle_since.saturating_add(ttl_ms))
}
