//! What the engine reports: [`Dispatch`], [`KeyInfo`] and [`GlobalInfo`] (DESIGN §1.4 wire shape).

use super::KeyName;

use serde::{Deserialize, Serialize};

use super::MessageId;

/// A message the host may deliver now, from [`poll_dispatch`](super::FlowControl::poll_dispatch).
///
/// The call is *active* until the host calls `complete` or `requeue` with `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a dispatched message is an active call until completed or requeued"]
pub struct Dispatch<M> {
    /// The message's id.
    pub id: MessageId,
    /// The message's flow-control key (`None` for a message published without one).
    pub key: Option<KeyName>,
    /// A clone of the message (the engine keeps its own copy until `complete`).
    pub message: M,
}

/// The state of one key, serialized in the camelCase wire shape of DESIGN §1.4.
///
/// Absent maxima are omitted from the JSON; `ratePeriod` is in seconds and `ratePeriodStart`
/// in Unix seconds (0 before the key's first rate window).
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, FlowControl, Timestamp};
/// let mut fc = FlowControl::new(FlowConfig::default());
/// let now = Timestamp::from_secs(1_700_000_000);
/// fc.publish(Some("k"), Some("rate=10,period=1m".parse()?), "hello", now)?;
/// let info = fc.key_info("k", now).expect("the key has a waiting message");
/// let json = serde_json::to_value(&info).expect("plain data serializes");
/// assert_eq!(json["flowControlKey"], "k");
/// assert_eq!(json["waitListSize"], 1);
/// assert_eq!(json["rateMax"], 10);
/// assert_eq!(json["ratePeriod"], 60);
/// assert!(json.get("parallelismMax").is_none());
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo {
    /// The key.
    pub flow_control_key: String,
    /// Messages waiting (not active).
    pub wait_list_size: u64,
    /// Maximum active calls, if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism_max: Option<u32>,
    /// Active calls now.
    pub parallelism_count: u32,
    /// Dispatches allowed per window, if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_max: Option<u32>,
    /// Dispatches in the current window (0 once the window has passed).
    pub rate_count: u32,
    /// Window length in seconds.
    pub rate_period: u32,
    /// Start of the current (or last) window, Unix seconds; 0 if none has been opened.
    pub rate_period_start: u64,
    /// Whether delivery is paused.
    pub is_paused: bool,
    /// Whether the parallelism part is pinned.
    pub is_pinned_parallelism: bool,
    /// Whether the rate part is pinned.
    pub is_pinned_rate: bool,
}

/// The engine-wide parallelism state (camelCase on the wire, absent maximum omitted).
///
/// # Examples
/// ```
/// use flowvec::flow::{FlowConfig, FlowControl};
/// let fc = FlowControl::<()>::new(FlowConfig::default());
/// let json = serde_json::to_string(&fc.global_info()).expect("plain data serializes");
/// assert_eq!(json, r#"{"parallelismCount":0}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GlobalInfo {
    /// The global cap on active calls, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism_max: Option<u32>,
    /// Active calls over all keys.
    pub parallelism_count: u32,
}
