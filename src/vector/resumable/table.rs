//! [`ResumableQueries`]: the open resumable queries of one index, by id, with idle expiry.

use super::{ResumableError, ResumableQuery};
use crate::flow::Timestamp;
use crate::vector::QueryResult;
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bounds of a [`ResumableQueries`] table.
///
/// # Examples
/// ```
/// use flowvec::vector::ResumableLimits;
/// let limits = ResumableLimits { max_open: 10, ..ResumableLimits::default() };
/// assert_eq!(limits.max_idle_secs, 86_400);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumableLimits {
    /// The most queries open at once (default 100); a start beyond it is
    /// [`ResumableError::TooManyOpen`]. With 8 bytes per ranked record, 100 cursors over a
    /// 1M-record namespace hold 800 MB at most.
    pub max_open: usize,
    /// The largest `maxIdle` a start may ask for, in seconds (default 86,400: a day).
    pub max_idle_secs: u64,
}

impl Default for ResumableLimits {
    fn default() -> Self {
        ResumableLimits {
            max_open: 100,
            max_idle_secs: 86_400,
        }
    }
}

/// The open [`ResumableQuery`] cursors of one index, each under a random UUID, each expiring
/// once it has been idle for its `maxIdle`.
///
/// Sans-I/O: every call takes `now` and nothing reads a clock. A query's deadline is
/// `last use + maxIdle`, where a use is its start and each page; from the deadline on it is
/// gone ([`ResumableError::NotFound`]). Every call first expires what is due, so memory
/// follows use; a host that wants idle cursors freed without traffic calls
/// [`expire`](Self::expire) now and then (or at [`poll_timeout`](Self::poll_timeout)), which
/// costs one atomic load when nothing is due. Pages of different queries run in parallel
/// (the table's lock is held only to find a cursor); pages of one query take turns.
///
/// # Examples
/// ```
/// use flowvec::flow::Timestamp;
/// use flowvec::vector::{Index, IndexConfig, Metric, Query, ResumableError, ResumableQueries, Vector};
/// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
/// index.upsert("", (0..30).map(|i| Vector::dense(format!("r{i:02}"), vec![1.0, i as f32])).collect())?;
/// let table = ResumableQueries::default();
/// let t0 = Timestamp::from_secs(1_000);
///
/// table.check_open(60, t0)?; // before paying for the ranking
/// let (first, cursor) = index.resumable_query("", &Query::dense(vec![1.0, 0.0], 10))?;
/// let id = table.open(cursor, 60, t0)?;
/// assert_eq!(first.len(), 10);
/// assert_eq!(table.next(&id, 15, t0.add_millis(59_000))?.len(), 15);
/// assert_eq!(table.next(&id, 15, t0.add_millis(118_000))?.len(), 5); // idle 59 s: still open
/// // Idle for 60 s: expired.
/// assert!(matches!(table.next(&id, 1, t0.add_millis(178_000)), Err(ResumableError::NotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ResumableQueries {
    limits: ResumableLimits,
    table: Mutex<Table>,
    /// The earliest deadline in `table` (ms), `u64::MAX` when none: `expire`'s fast path.
    earliest: AtomicU64,
}

#[derive(Default)]
struct Table {
    open: HashMap<String, Open>,
    /// `(deadline ms, id)` of every open query.
    deadlines: BTreeSet<(u64, String)>,
}

struct Open {
    cursor: Arc<Mutex<ResumableQuery>>,
    max_idle_ms: u64,
    deadline: u64,
}

impl Default for ResumableQueries {
    fn default() -> Self {
        Self::new(ResumableLimits::default())
    }
}

impl ResumableQueries {
    /// An empty table with these limits.
    #[must_use]
    pub fn new(limits: ResumableLimits) -> Self {
        ResumableQueries {
            limits,
            table: Mutex::new(Table::default()),
            earliest: AtomicU64::new(u64::MAX),
        }
    }

    /// The limits.
    #[must_use]
    pub fn limits(&self) -> ResumableLimits {
        self.limits
    }

    /// The checks of [`open`](Self::open) (after expiring what is due at `now`), so a host
    /// refuses a start before it ranks the namespace. `open` checks again: another start may
    /// have taken the last place meanwhile.
    ///
    /// # Errors
    /// [`ResumableError::InvalidMaxIdle`] unless `max_idle_secs` is in
    /// `1..=`[`max_idle_secs`](ResumableLimits::max_idle_secs);
    /// [`ResumableError::TooManyOpen`] when [`max_open`](ResumableLimits::max_open) queries
    /// are open.
    pub fn check_open(&self, max_idle_secs: u64, now: Timestamp) -> Result<(), ResumableError> {
        self.check_max_idle(max_idle_secs)?;
        let mut table = self.table.lock();
        self.expire_locked(&mut table, now);
        self.check_room(&table)
    }

    /// Adds `cursor` under a new id, due to expire `max_idle_secs` after `now` unless used.
    ///
    /// # Errors
    /// As [`check_open`](Self::check_open); the cursor is dropped then.
    pub fn open(
        &self,
        cursor: ResumableQuery,
        max_idle_secs: u64,
        now: Timestamp,
    ) -> Result<String, ResumableError> {
        self.check_max_idle(max_idle_secs)?;
        let max_idle_ms = max_idle_secs.saturating_mul(1000);
        let mut table = self.table.lock();
        self.expire_locked(&mut table, now);
        self.check_room(&table)?;
        let id = loop {
            let id = new_id();
            if !table.open.contains_key(&id) {
                break id;
            }
        };
        let deadline = now.as_millis().saturating_add(max_idle_ms);
        table.deadlines.insert((deadline, id.clone()));
        table.open.insert(
            id.clone(),
            Open {
                cursor: Arc::new(Mutex::new(cursor)),
                max_idle_ms,
                deadline,
            },
        );
        self.publish_earliest(&table);
        Ok(id)
    }

    /// The next `k` results of query `id` (see [`ResumableQuery::next_page`]); the query's
    /// idle deadline moves to `now + maxIdle`.
    ///
    /// # Errors
    /// [`ResumableError::NotFound`] for an id that is not open at `now`;
    /// [`ResumableError::Vector`] for a bad `k`.
    pub fn next(
        &self,
        id: &str,
        k: usize,
        now: Timestamp,
    ) -> Result<Vec<QueryResult>, ResumableError> {
        let cursor = {
            let mut table = self.table.lock();
            self.expire_locked(&mut table, now);
            let table = &mut *table;
            let Some(open) = table.open.get_mut(id) else {
                return Err(not_found(id));
            };
            table.deadlines.remove(&(open.deadline, id.to_owned()));
            open.deadline = now.as_millis().saturating_add(open.max_idle_ms);
            table.deadlines.insert((open.deadline, id.to_owned()));
            let cursor = Arc::clone(&open.cursor);
            self.publish_earliest(table);
            cursor
        };
        let page = cursor.lock().next_page(k)?;
        Ok(page)
    }

    /// Ends query `id` and frees its memory.
    ///
    /// # Errors
    /// [`ResumableError::NotFound`] for an id that is not open at `now`.
    pub fn end(&self, id: &str, now: Timestamp) -> Result<(), ResumableError> {
        let mut table = self.table.lock();
        self.expire_locked(&mut table, now);
        let Some(open) = table.open.remove(id) else {
            return Err(not_found(id));
        };
        table.deadlines.remove(&(open.deadline, id.to_owned()));
        self.publish_earliest(&table);
        Ok(())
    }

    /// Ends every query whose deadline is at or before `now`; how many. One atomic load when
    /// none is due.
    pub fn expire(&self, now: Timestamp) -> usize {
        if now.as_millis() < self.earliest.load(Ordering::Acquire) {
            return 0;
        }
        let mut table = self.table.lock();
        self.expire_locked(&mut table, now)
    }

    /// The earliest time at which an open query expires, `None` when none is open.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match self.earliest.load(Ordering::Acquire) {
            u64::MAX => None,
            ms => Some(Timestamp::from_millis(ms)),
        }
    }

    /// How many queries are open (some may be due to expire at the next call).
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.lock().open.len()
    }

    /// Whether no query is open.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate heap bytes of the open cursors ([`ResumableQuery::memory_bytes`]); a
    /// cursor busy with a page is counted by its fixed size only.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let table = self.table.lock();
        table
            .open
            .iter()
            .map(|(id, open)| {
                let cursor = open
                    .cursor
                    .try_lock()
                    .map_or(std::mem::size_of::<ResumableQuery>(), |c| c.memory_bytes());
                cursor + 2 * id.len() + std::mem::size_of::<Open>() + 64
            })
            .sum()
    }

    fn check_max_idle(&self, max_idle_secs: u64) -> Result<(), ResumableError> {
        let max = self.limits.max_idle_secs;
        if max_idle_secs == 0 || max_idle_secs > max {
            return Err(ResumableError::InvalidMaxIdle {
                max_idle: max_idle_secs,
                max,
            });
        }
        Ok(())
    }

    fn check_room(&self, table: &Table) -> Result<(), ResumableError> {
        if table.open.len() >= self.limits.max_open {
            return Err(ResumableError::TooManyOpen {
                max: self.limits.max_open,
            });
        }
        Ok(())
    }

    fn expire_locked(&self, table: &mut Table, now: Timestamp) -> usize {
        let now = now.as_millis();
        let mut expired = 0;
        while let Some((deadline, _)) = table.deadlines.first() {
            if *deadline > now {
                break;
            }
            if let Some((_, id)) = table.deadlines.pop_first() {
                table.open.remove(&id);
                expired += 1;
            }
        }
        if expired > 0 {
            self.publish_earliest(table);
        }
        expired
    }

    fn publish_earliest(&self, table: &Table) {
        let earliest = table.deadlines.first().map_or(u64::MAX, |(d, _)| *d);
        self.earliest.store(earliest, Ordering::Release);
    }
}

impl std::fmt::Debug for ResumableQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumableQueries")
            .field("limits", &self.limits)
            .field("open", &self.len())
            .finish()
    }
}

fn not_found(id: &str) -> ResumableError {
    ResumableError::NotFound {
        id: id.chars().take(100).collect(),
    }
}

/// A random (version 4) UUID from the OS generator. Ids need not be secret (anyone who may
/// page a query may also run it), only unique, which [`ResumableQueries::open`] checks; should
/// the OS generator fail, a process-wide counter mixed by SplitMix64 stands in.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        bytes[..8].copy_from_slice(&splitmix64(n).to_le_bytes());
        bytes[8..].copy_from_slice(&splitmix64(n ^ 0x5851_f42d_4c95_7f2d).to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_uuids_and_differ() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.split('-').map(str::len).eq([8, 4, 4, 4, 12]));
    }
}
