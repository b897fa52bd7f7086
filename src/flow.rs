//! Flow control: when may each message be delivered (DESIGN §1).
//!
//! [`FlowControl`] is a sans-I/O state machine in the style of quinn-proto: the host passes
//! `now` in, publishes messages, delivers what [`FlowControl::poll_dispatch`] hands out, reports
//! each call's end with [`FlowControl::complete`] / [`FlowControl::requeue`], and sleeps until
//! [`FlowControl::poll_timeout`]. Per-key limits come from the header value [`Limits`]
//! (`parallelism=5,rate=10,period=1m`); keys can be paused, pinned and have their rate reset;
//! a global cap bounds all active calls. [`SharedFlowControl`] wraps the engine for threads.
//!
//! # Layout (one concept per file)
//! - `time.rs` [`Timestamp`], [`MessageId`]; `limits.rs` [`Limits`], [`Rate`], [`Period`]
//!   (header value parse/Display); `config.rs` [`FlowConfig`], [`Pin`], [`Unpin`];
//!   `info.rs` [`Dispatch`], [`KeyInfo`], [`GlobalInfo`]; `error.rs` [`FlowError`].
//! - `key.rs` per-key state (88 bytes: name, config, counters, flags, waitlist ends) and its
//!   status; `key_name.rs` [`KeyName`] (short names inline); `window.rs` the fixed rate window;
//!   `keys.rs` the key slab (names interned to `u32` slots, slot 0 = unkeyed messages);
//!   `key_index.rs` the name index (hash to slot, one cache line per lookup).
//! - `waitlist.rs` the message slab with intrusive doubly-linked FIFO waitlists;
//!   `timers.rs` a min-heap of `(deadline, key slot)` with lazy invalidation.
//! - `engine.rs` [`FlowControl`]; `snapshot.rs` [`FlowSnapshot`]; `shared.rs` [`SharedFlowControl`].
//!
//! # How it stays fast
//! Ready keys sit in a `VecDeque<u32>` ring served round-robin; a key enters it when it becomes
//! dispatchable and is re-checked when popped (stale entries are dropped lazily). A key held
//! back by its rate window has a timer at the window's end; an idle key has one at its
//! reclamation deadline (`max(window end, idle since + idle_key_ttl)`), so memory follows live
//! keys without any scan. Every operation is O(1) amortised plus O(log n) per timer.
//!
//! # Decisions where DESIGN §1 is silent
//! - `resume` and `reset_rate` on a key the engine does not hold are
//!   [`FlowError::UnknownKey`] (a host maps it to 404); `pause`, `pin`, `unpin` create the key.
//! - [`FlowControl::cancel`] removes *waiting* messages only (`None` for an active call, which
//!   ends with `complete`). `complete` returns the message.
//! - `poll_dispatch` hands out a clone of the message (`M: Clone`): the engine keeps its copy
//!   until `complete`, for snapshots. Put large payloads behind an `Arc`.
//! - `pin` with only `rate` keeps the key's period (1 s if it had no rate); with only `period`
//!   the key must already have a rate ([`FlowError::PeriodWithoutRate`]). A message without a
//!   rate resets the period to 1 s. A window's count survives configuration changes.
//! - `ratePeriodStart` reports the last window's start even after it has passed (0 if never).
//! - Time never runs backwards inside the engine: an earlier `now` counts as the latest seen.
//! - Messages without a key form one FIFO pseudo-key that takes its turn in the round-robin.
//! - [`FlowControl::poll_timeout`] takes `&mut self`: it drops stale timer entries so the
//!   instant it returns is exact.
//!
//! # Examples
//! The seed's combined example: rate 10 per minute with parallelism 20.
//! ```
//! use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
//!
//! let mut fc = FlowControl::new(FlowConfig::default());
//! let limits = "rate=10,period=1m,parallelism=20".parse()?;
//! let t0 = Timestamp::from_secs(1_700_000_000);
//! for i in 0..25 {
//!     fc.publish(Some("api"), Some(limits), i, t0)?;
//! }
//! let first_minute = std::iter::from_fn(|| fc.poll_dispatch(t0)).count();
//! assert_eq!(first_minute, 10);
//! assert_eq!(fc.poll_timeout(), Some(t0.add_millis(60_000)));
//! let t1 = t0.add_millis(60_000);
//! assert_eq!(std::iter::from_fn(|| fc.poll_dispatch(t1)).count(), 10);
//! // 20 calls are active: parallelism, not rate, holds the rest from now on.
//! assert_eq!(std::iter::from_fn(|| fc.poll_dispatch(t1.add_millis(60_000))).count(), 0);
//! # Ok::<(), flowvec::flow::FlowError>(())
//! ```

mod config;
mod delays;
mod engine;
mod error;
mod info;
mod key;
mod key_index;
mod key_name;
mod keys;
mod limits;
mod lookup;
mod shared;
mod snapshot;
mod time;
mod timers;
mod waitlist;
mod window;

pub use config::{FlowConfig, Pin, Unpin};
pub use engine::FlowControl;
pub use error::FlowError;
pub use info::{Dispatch, GlobalInfo, KeyInfo};
pub(crate) use key::validate_key;
pub use key_name::KeyName;
pub use limits::{Limits, Period, Rate};
pub use lookup::{MessageState, MessageView};
pub use shared::SharedFlowControl;
pub use snapshot::FlowSnapshot;
pub use time::{MessageId, Timestamp};
