//! Engine configuration ([`FlowConfig`]) and the pin/unpin requests ([`Pin`], [`Unpin`]).

use std::num::NonZeroU32;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Period;

/// Engine-wide settings.
///
/// # Examples
/// ```
/// use std::num::NonZeroU32;
/// use std::time::Duration;
/// use flowvec::flow::FlowConfig;
/// let config = FlowConfig {
///     global_parallelism: NonZeroU32::new(100),
///     idle_key_ttl: Duration::from_secs(300),
/// };
/// assert_eq!(FlowConfig::default().global_parallelism, None);
/// # let _ = config;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowConfig {
    /// At most this many active calls over all keys (and unkeyed messages); `None` = no cap.
    pub global_parallelism: Option<NonZeroU32>,
    /// How long a key must be idle (nothing waiting or active, not paused, not pinned, rate
    /// window passed) before the engine forgets it. Default 60 s.
    pub idle_key_ttl: Duration,
}

impl Default for FlowConfig {
    fn default() -> Self {
        Self {
            global_parallelism: None,
            idle_key_ttl: Duration::from_secs(60),
        }
    }
}

impl FlowConfig {
    pub(super) fn idle_ttl_ms(&self) -> u64 {
        u64::try_from(self.idle_key_ttl.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Values to set and pin on a key: incoming messages cannot change a pinned part.
///
/// At least one field must be set. `rate` or `period` pins the rate part: a missing `rate`
/// keeps the key's current rate (it must have one), a missing `period` keeps the key's current
/// period (1 s if it has no rate).
///
/// # Examples
/// ```
/// use std::num::NonZeroU32;
/// use flowvec::flow::Pin;
/// let pin = Pin { parallelism: NonZeroU32::new(2), ..Pin::default() };
/// assert!(pin.rate.is_none());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Pin `parallelismMax` to this value.
    pub parallelism: Option<NonZeroU32>,
    /// Pin `rateMax` to this value.
    pub rate: Option<NonZeroU32>,
    /// Pin `ratePeriod` to this value.
    pub period: Option<Period>,
}

/// Which parts of a key to unpin. The last pinned values stay in force until a message brings
/// other limits.
///
/// # Examples
/// ```
/// use flowvec::flow::Unpin;
/// let both = Unpin { parallelism: true, rate: true };
/// # let _ = both;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpin {
    /// Unpin the parallelism part.
    pub parallelism: bool,
    /// Unpin the rate part (rate and period).
    pub rate: bool,
}
