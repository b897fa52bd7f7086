//! State: every change of the engines as one serializable [`Command`], applied by one function
//! that takes `now`.
//!
//! The vector [`Index`](crate::vector::Index), the flow-control engine and the management
//! [`Registry`](crate::management::Registry) / [`Accounts`](crate::management::Accounts) are
//! deterministic given their inputs: no clock, no randomness inside (secrets are drawn by the
//! host *before* the command is made, see [`DatabaseSecrets`](crate::management::DatabaseSecrets)).
//! So a [`StateMachine`] rebuilt from an image ([`StateMachine::save`]) plus the commands
//! applied after it answers every read (fetch, range, query, key info, global info, password
//! verification) exactly as the one that never stopped (`tests/state_replay.rs` proves it over
//! random command sequences). Two limits: `info().indexSize` counts allocated capacity, which
//! a load does not reproduce; and the graph of a namespace above the exact-scan threshold is
//! saved without its tombstones, so approximate answers after a load can differ from the
//! live graph's while deletions are pending compaction (exact answers never differ). That is what a host needs for a
//! command log (write the command durably, then [`apply`](StateMachine::apply) it, then
//! answer) and, unchanged, for replication (ship [`LogEntry`] values, apply them in log order
//! on every replica).
//!
//! Nothing here opens a file or reads a clock: the host stamps each command with `now` (never
//! going backwards), decides where entries and images go, and delivers the messages that
//! [`Command::Dispatch`] hands out.
//!
//! # Examples
//! ```
//! use flowvec::flow::{FlowConfig, Timestamp};
//! use flowvec::state::{Applied, Command, LogEntry, StateMachine};
//! use flowvec::vector::{Fetch, IndexConfig, Metric, Vector};
//!
//! let machine = StateMachine::new(IndexConfig::dense(2, Metric::Cosine), FlowConfig::default())?;
//! let entry = LogEntry {
//!     now: Timestamp::from_secs(1_700_000_000),
//!     command: Command::Upsert {
//!         namespace: String::new(),
//!         vectors: vec![Vector::dense("a", vec![1.0, 0.0])],
//!     },
//! };
//! let bytes = entry.encode(); // what a host writes to its log
//! let entry = LogEntry::decode(&bytes)?;
//! assert_eq!(machine.apply(entry.command, entry.now)?, Applied::Done);
//!
//! // An image plus nothing after it: the same answers.
//! let mut image = Vec::new();
//! machine.save(&mut image, b"log position 1")?;
//! let (restored, meta) = StateMachine::load(image.as_slice())?;
//! assert_eq!(meta, b"log position 1");
//! let fetch: Fetch = serde_json::from_str(r#"{"ids":["a"],"includeVectors":true}"#).unwrap();
//! assert_eq!(restored.index().fetch("", fetch.clone())?, machine.index().fetch("", fetch)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layout
//! `command.rs` [`Command`] and its outcome [`Applied`]; `machine.rs` [`StateMachine`] and
//! `apply`; `delivery.rs` the queue's commands (delays, retries, callbacks, cancellation);
//! `dead_letters.rs` the dead letter queue [`DeadLetters`]; `deduplication.rs` the publish
//! deduplication window [`Deduplication`]; `entry.rs` [`LogEntry`] bytes (MessagePack with a CRC-32); `image.rs` the framed
//! image of all engines; `error.rs` [`StateError`].

mod command;
mod dead_letters;
mod deduplication;
mod delivery;
mod entry;
mod error;
mod image;
mod machine;

pub use command::{Applied, Command};
pub use dead_letters::{DeadLetter, DeadLetters};
pub use deduplication::{DEDUPLICATION_WINDOW_MS, Deduplication};
pub(crate) use delivery::header_map;
pub use entry::LogEntry;
pub use error::{ApplyError, StateError};
pub use machine::StateMachine;
