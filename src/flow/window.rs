//! The fixed rate window (DESIGN §1.3 "Rate window"), as a small value type.
//!
//! The first dispatch when no window is open starts one at `now`; within `[start, start +
//! period)` at most `rateMax` dispatches happen; once the window has passed its count reads 0
//! and the next dispatch opens a new window. Counts are computed lazily from `now`.

/// A key's rate window: start, dispatches counted in it, and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RateWindow {
    /// Start of the window (ms since the epoch); meaningful only when `count > 0`.
    pub(super) start: u64,
    /// Dispatches counted in the window; 0 means no window is open.
    pub(super) count: u32,
    /// Window length in ms.
    pub(super) period_ms: u64,
}

impl RateWindow {
    /// The instant the window ends (exclusive).
    pub(super) fn end(&self) -> u64 {
        self.start.saturating_add(self.period_ms)
    }

    /// Whether a window is open at `now`.
    pub(super) fn is_open(&self, now: u64) -> bool {
        self.count > 0 && now < self.end()
    }

    /// Dispatches counted in the window open at `now` (0 if none is open).
    pub(super) fn count_at(&self, now: u64) -> u32 {
        if self.is_open(now) { self.count } else { 0 }
    }

    /// Whether one more dispatch fits under `max` at `now`.
    pub(super) fn has_room(&self, now: u64, max: u32) -> bool {
        self.count_at(now) < max
    }

    /// Counts one dispatch at `now`, opening a new window if none is open.
    pub(super) fn record(&mut self, now: u64) {
        if !self.is_open(now) {
            self.start = now;
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_opens_on_first_dispatch_and_closes_after_period() {
        let mut w = RateWindow {
            start: 0,
            count: 0,
            period_ms: 1000,
        };
        assert!(!w.is_open(5000));
        w.record(5000);
        w.record(5999);
        assert_eq!((w.start, w.count_at(5999)), (5000, 2));
        assert!(!w.has_room(5999, 2));
        assert!(w.has_room(5999, 3));
        assert_eq!(w.count_at(6000), 0, "the window is [start, start + period)");
        assert!(w.has_room(6000, 2));
        w.record(6500);
        assert_eq!(
            (w.start, w.count),
            (6500, 1),
            "a new window opens at the dispatch"
        );
    }

    #[test]
    fn end_saturates() {
        let w = RateWindow {
            start: u64::MAX - 1,
            count: 1,
            period_ms: 1000,
        };
        assert_eq!(w.end(), u64::MAX);
        assert!(w.is_open(u64::MAX - 1));
    }
}
