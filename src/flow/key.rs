//! Per-key state (DESIGN §1.3): configuration, counters, flags and the waitlist ends.
//!
//! Kept at 88 bytes, name included (inline up to 23 bytes): the flags share a word with the
//! period, "unlimited" is 0, and the waitlist itself lives in the message slab (only
//! head/tail/length here).

use super::KeyName;

use super::FlowError;
use super::window::RateWindow;

/// "No slot": end of a list.
pub(super) const NIL: u32 = u32::MAX;
/// "No pending timer entry".
pub(super) const NO_TIMER: u64 = u64::MAX;
/// Longest key, in bytes.
pub(super) const MAX_KEY_LEN: usize = 512;

const PERIOD_MASK: u32 = (1 << 20) - 1;
/// Delivery is paused.
pub(super) const PAUSED: u32 = 1 << 31;
/// `parallelismMax` is pinned.
pub(super) const PIN_PARALLELISM: u32 = 1 << 30;
/// `rateMax` and the period are pinned.
pub(super) const PIN_RATE: u32 = 1 << 29;
/// The key's slot is in the ready ring.
pub(super) const IN_READY: u32 = 1 << 28;
/// The key was seen idle at `idle_since` and has not been busy since.
pub(super) const IDLE: u32 = 1 << 27;
/// Messages of this key are held until a not-before time or a retry backoff (`delays.rs`).
pub(super) const DELAYED: u32 = 1 << 26;

/// What a key could do at some instant, ignoring the global cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyStatus {
    /// Nothing waiting, nothing active.
    Idle,
    /// Nothing waiting, some calls active.
    Busy,
    /// Messages wait but the key is paused.
    Paused,
    /// Messages wait but `parallelismCount == parallelismMax`.
    Full,
    /// Messages wait but the rate window is full until the given instant (ms).
    RateLimited(u64),
    /// The head of the waitlist may be dispatched.
    Ready,
}

/// One key's slot in the key slab. A vacant slot has `name == None` and links the free list
/// through `head`.
#[derive(Debug, Clone)]
pub(super) struct KeyState {
    pub(super) name: Option<KeyName>,
    pub(super) window_start: u64,
    /// Deadline of this key's pending timer entry, or [`NO_TIMER`].
    pub(super) timer_at: u64,
    /// When the key was last seen becoming idle (valid while [`IDLE`] is set).
    pub(super) idle_since: u64,
    pub(super) head: u32,
    pub(super) tail: u32,
    pub(super) waiting: u32,
    pub(super) active: u32,
    /// 0 = unlimited.
    pub(super) parallelism_max: u32,
    /// 0 = unlimited.
    pub(super) rate_max: u32,
    pub(super) rate_count: u32,
    /// Period in seconds (low 20 bits) and the flag bits above.
    period_flags: u32,
}

impl KeyState {
    /// A fresh live key: unlimited, period 1 s, nothing waiting.
    pub(super) fn new(name: KeyName) -> Self {
        Self {
            name: Some(name),
            window_start: 0,
            timer_at: NO_TIMER,
            idle_since: 0,
            head: NIL,
            tail: NIL,
            waiting: 0,
            active: 0,
            parallelism_max: 0,
            rate_max: 0,
            rate_count: 0,
            period_flags: 1,
        }
    }

    /// A vacant slot whose free-list successor is `next_free`.
    pub(super) fn vacant(next_free: u32) -> Self {
        Self {
            name: None,
            head: next_free,
            ..Self::new(KeyName::from(""))
        }
    }

    pub(super) fn is_live(&self) -> bool {
        self.name.is_some()
    }

    pub(super) fn period_secs(&self) -> u32 {
        self.period_flags & PERIOD_MASK
    }

    pub(super) fn set_period_secs(&mut self, secs: u32) {
        debug_assert!((1..=PERIOD_MASK).contains(&secs), "periods are 1 s ..= 7 d");
        self.period_flags = (self.period_flags & !PERIOD_MASK) | (secs & PERIOD_MASK);
    }

    pub(super) fn has(&self, flag: u32) -> bool {
        self.period_flags & flag != 0
    }

    pub(super) fn set(&mut self, flag: u32, on: bool) {
        if on {
            self.period_flags |= flag;
        } else {
            self.period_flags &= !flag;
        }
    }

    pub(super) fn window(&self) -> RateWindow {
        RateWindow {
            start: self.window_start,
            count: self.rate_count,
            period_ms: u64::from(self.period_secs()) * 1000,
        }
    }

    pub(super) fn set_window(&mut self, w: RateWindow) {
        self.window_start = w.start;
        self.rate_count = w.count;
    }

    /// Whether nothing keeps the key alive but its rate window (nothing waiting or active, not
    /// paused, not pinned).
    pub(super) fn is_reclaimable(&self) -> bool {
        self.waiting == 0
            && self.active == 0
            && self.period_flags & (PAUSED | PIN_PARALLELISM | PIN_RATE | DELAYED) == 0
    }

    /// What the key could do at `now`, ignoring the global cap.
    pub(super) fn status(&self, now: u64) -> KeyStatus {
        if self.waiting == 0 {
            return if self.active == 0 {
                KeyStatus::Idle
            } else {
                KeyStatus::Busy
            };
        }
        if self.has(PAUSED) {
            return KeyStatus::Paused;
        }
        if self.parallelism_max != 0 && self.active >= self.parallelism_max {
            return KeyStatus::Full;
        }
        if self.rate_max != 0 {
            let w = self.window();
            if !w.has_room(now, self.rate_max) {
                return KeyStatus::RateLimited(w.end());
            }
        }
        KeyStatus::Ready
    }
}

/// Checks DESIGN §1.3's key rules: non-empty, at most 512 bytes, no ASCII control characters.
#[inline]
pub(crate) fn validate_key(key: &str) -> Result<(), FlowError> {
    if !key.is_empty() && key.len() <= MAX_KEY_LEN && !has_ascii_control(key.as_bytes()) {
        Ok(())
    } else {
        Err(invalid_key(key))
    }
}

#[cold]
#[inline(never)]
fn invalid_key(key: &str) -> FlowError {
    let reason = if key.is_empty() {
        "it is empty"
    } else if key.len() > MAX_KEY_LEN {
        "it is longer than 512 bytes"
    } else {
        "it contains an ASCII control character"
    };
    FlowError::InvalidKey {
        key: key.chars().take(64).collect(),
        reason,
    }
}

/// Whether `bytes` holds an ASCII control character (`< 0x20` or `0x7f`), eight bytes at a
/// time: this runs on every publish.
#[inline]
fn has_ascii_control(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Per byte b < 0x80: (b - 0x20) borrows into the high bit iff b < 0x20; (b ^ 0x7f) - 1
    // does iff b == 0x7f. Bytes >= 0x80 are masked out by `!x`.
    let bad = |x: u64| {
        let below = x.wrapping_sub(ONES * 0x20);
        let del = (x ^ (ONES * 0x7f)).wrapping_sub(ONES);
        (below | del) & !x & HIGHS != 0
    };
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        if bad(u64::from_le_bytes(c.try_into().expect("chunks of 8"))) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| b < 0x20 || b == 0x7f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_state_stays_small() {
        assert_eq!(std::mem::size_of::<KeyState>(), 88);
    }

    #[test]
    fn flags_and_period_share_a_word_without_clobbering() {
        let mut k = KeyState::new(KeyName::from("k"));
        k.set(PAUSED, true);
        k.set(IN_READY, true);
        k.set_period_secs(604_800);
        assert!(k.has(PAUSED) && k.has(IN_READY) && !k.has(PIN_RATE));
        assert_eq!(k.period_secs(), 604_800);
        k.set(PAUSED, false);
        assert!(!k.has(PAUSED) && k.has(IN_READY));
        assert_eq!(k.period_secs(), 604_800);
    }

    #[test]
    fn control_detection_matches_the_bytewise_rule() {
        for len in 0..20 {
            for pos in 0..len {
                for b in 0..=255u8 {
                    let mut v = vec![b'a'; len];
                    v[pos] = b;
                    let want = v.iter().any(|&b| b < 0x20 || b == 0x7f);
                    assert_eq!(has_ascii_control(&v), want, "byte {b:#x} at {pos} of {len}");
                }
            }
        }
    }

    #[test]
    fn control_detection_matches_on_random_bytes() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            // Mostly printable bytes near the boundaries, so both outcomes occur.
            let v: Vec<u8> = (0..len)
                .map(|i| {
                    [0x20, 0x21, 0x7e, 0x7f, 0x80, 0xff, 0x1f, 0x00, b'k']
                        [((x >> (i * 2)) % 9) as usize]
                })
                .map(|b| {
                    if x.is_multiple_of(3) {
                        b
                    } else if b < 0x20 || b == 0x7f {
                        b'z'
                    } else {
                        b
                    }
                })
                .collect();
            let want = v.iter().any(|&b| b < 0x20 || b == 0x7f);
            assert_eq!(has_ascii_control(&v), want, "{v:?}");
        }
    }

    #[test]
    fn key_rules() {
        assert!(validate_key("a").is_ok());
        assert!(validate_key(&"x".repeat(512)).is_ok());
        assert!(validate_key("ünïcode key").is_ok());
        for (bad, reason) in [
            (String::new(), "empty"),
            ("x".repeat(513), "longer than 512"),
            ("a\nb".to_owned(), "control"),
            ("tab\t".to_owned(), "control"),
            ("del\x7f".to_owned(), "control"),
        ] {
            let err = validate_key(&bad).unwrap_err().to_string();
            assert!(err.contains(reason), "{err}");
        }
    }
}
