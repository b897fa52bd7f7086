//! Fault injection below the command log, for tests: the log's writer failing or writing
//! short on a chosen byte, and fsync failing. Named points, as etcd's and TiKV's failpoints.
//!
//! Set `FLOWVEC_FAILPOINTS` to a comma-separated list (read once at start, armed after
//! recovery, so only the writes of serving count):
//! - `log-write-short-at=N`: the write that would pass byte N (counted from arming) writes the
//!   bytes before it, then fails;
//! - `log-write-fail-at=N`: the same, without writing the partial bytes;
//! - `log-fsync-fail-at=N`: the N-th fsync after arming fails (1 = the first).
//!
//! A point fires once; the log then refuses every later write (see `log.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The faults to inject, from `FLOWVEC_FAILPOINTS`.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    short_write_at: Option<u64>,
    fail_write_at: Option<u64>,
    fail_fsync_at: Option<u64>,
    armed: AtomicBool,
    fired: AtomicBool,
    written: AtomicU64,
    fsyncs: AtomicU64,
}

/// What a write should do.
pub(crate) enum WriteFault {
    /// Write it all.
    None,
    /// Write this many bytes of it, then fail.
    Short(usize),
}

impl Faults {
    /// Parses `FLOWVEC_FAILPOINTS` (empty or unset: no faults).
    pub(crate) fn from_env() -> Result<Self, String> {
        let spec = std::env::var("FLOWVEC_FAILPOINTS").unwrap_or_default();
        let mut faults = Self::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("FLOWVEC_FAILPOINTS: {part:?} is not name=N"))?;
            let n: u64 = value
                .parse()
                .map_err(|_| format!("FLOWVEC_FAILPOINTS: {part:?}: N must be an integer"))?;
            match name {
                "log-write-short-at" => faults.short_write_at = Some(n),
                "log-write-fail-at" => faults.fail_write_at = Some(n),
                "log-fsync-fail-at" => faults.fail_fsync_at = Some(n.max(1)),
                other => {
                    return Err(format!(
                        "FLOWVEC_FAILPOINTS: unknown point {other:?}; expected log-write-short-at, log-write-fail-at or log-fsync-fail-at"
                    ));
                }
            }
        }
        Ok(faults)
    }

    /// Whether any point is set.
    pub(crate) fn any(&self) -> bool {
        self.short_write_at.is_some()
            || self.fail_write_at.is_some()
            || self.fail_fsync_at.is_some()
    }

    /// Starts counting (after recovery).
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Called before writing `len` bytes.
    pub(crate) fn on_write(&self, len: usize) -> WriteFault {
        if !self.armed.load(Ordering::SeqCst) || self.fired.load(Ordering::SeqCst) {
            return WriteFault::None;
        }
        let before = self.written.fetch_add(len as u64, Ordering::SeqCst);
        let after = before + len as u64;
        for (at, partial) in [(self.short_write_at, true), (self.fail_write_at, false)] {
            if let Some(at) = at.filter(|&at| at < after) {
                self.fired.store(true, Ordering::SeqCst);
                let keep = if partial {
                    at.saturating_sub(before) as usize
                } else {
                    0
                };
                return WriteFault::Short(keep.min(len));
            }
        }
        WriteFault::None
    }

    /// Called before an fsync; `true` when it must fail.
    pub(crate) fn on_fsync(&self) -> bool {
        if !self.armed.load(Ordering::SeqCst) || self.fired.load(Ordering::SeqCst) {
            return false;
        }
        let n = self.fsyncs.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_fsync_at == Some(n) {
            self.fired.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }
}
