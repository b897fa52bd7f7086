//! The command log: [`LogEntry`](flowvec::state::LogEntry) bytes by index in a redb table.
//!
//! redb gives what a write-ahead log needs without a home-made file format: a commit is atomic
//! (copy-on-write B-tree pages, then a checksummed header), is on disk when `commit` returns
//! (one `fdatasync`), and a crash mid-commit leaves the previous commit (redb repairs the file
//! on the next open, verifying page checksums). Each value is an entry with its own CRC-32, so
//! damage inside a value is caught when it is replayed. Indices are consecutive from 1; a
//! snapshot drops the prefix it covers. The same table serves a Raft log storage unchanged
//! (index → entry), which is why the log is a store of entries and not a stream.
//!
//! Every write goes through [`LogBackend`], which adds `--fsync off` (no fsync: the OS flushes
//! later) and the test failpoints of `faults.rs`.

use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redb::backends::FileBackend;
use redb::{Builder, Database, Durability, ReadableTable, StorageBackend, TableDefinition};

use crate::config::Fsync;
use crate::faults::{Faults, WriteFault};

const LOG: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("log");
/// Raft's small records beside the entries: the vote, the commit index, the last purged id.
const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");

/// The durable log of commands, owned by the committer thread.
pub(crate) struct CommandLog {
    db: Database,
    path: PathBuf,
    /// Set when a write failed: redb's state after a failed commit is unknown, so every later
    /// write is refused until a restart recovers the file.
    failed: Option<String>,
}

/// Where the log stands after opening it.
pub(crate) struct Opened {
    pub(crate) log: CommandLog,
    /// The file was not closed cleanly (crash, SIGKILL, power loss) and redb rolled it back to
    /// its last complete commit, dropping a torn one.
    pub(crate) repaired: bool,
}

impl CommandLog {
    /// Opens (or creates) the log file at `path`.
    pub(crate) fn open(path: &Path, fsync: Fsync, faults: Arc<Faults>) -> Result<Opened, String> {
        let name = path.display().to_string();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|err| format!("cannot open the command log {name}: {err}"))?;
        let inner = FileBackend::new(file)
            .map_err(|err| format!("cannot open the command log {name}: {err}"))?;
        let backend = LogBackend {
            inner,
            fsync: fsync == Fsync::Always,
            faults,
        };
        Self::open_with(path, backend)
    }

    /// Opens the existing log at `path` without changing it: every write (redb's crash repair,
    /// the table check) goes to memory. Recovery replays from this view first, so a log that
    /// cannot be repaired or replayed is refused and left exactly as found.
    pub(crate) fn open_untouched(path: &Path) -> Result<Opened, String> {
        let name = path.display().to_string();
        let file =
            File::open(path).map_err(|err| format!("cannot open the command log {name}: {err}"))?;
        Self::open_with(path, Overlay::new(file))
    }

    fn open_with(path: &Path, backend: impl StorageBackend) -> Result<Opened, String> {
        let name = path.display().to_string();
        let repaired = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&repaired);
        let db = guarded(&name, || {
            Builder::new()
                .set_repair_callback(move |_| flag.store(true, Ordering::SeqCst))
                .create_with_backend(backend)
                .map_err(|err| format!("the command log {name} does not open (damaged, or not a flowvec log): {err}"))
        })?;
        let log = Self {
            db,
            path: path.to_owned(),
            failed: None,
        };
        // Make sure the table exists, so readers never see "no such table".
        let tx = log.write_tx()?;
        tx.open_table(LOG).map_err(|err| log.err(err))?;
        tx.open_table(META).map_err(|err| log.err(err))?;
        tx.commit().map_err(|err| log.err(err))?;
        Ok(Opened {
            log,
            repaired: repaired.load(Ordering::SeqCst),
        })
    }

    fn err(&self, err: impl std::fmt::Display) -> String {
        format!("command log {}: {err}", self.path.display())
    }

    fn write_tx(&self) -> Result<redb::WriteTransaction, String> {
        let mut tx = self.db.begin_write().map_err(|err| self.err(err))?;
        tx.set_durability(Durability::Immediate);
        // Two-phase commit: the new root becomes the primary only after the data it points to
        // is on disk. With redb's default one-phase commit a crash-repair decides by checksum
        // whether the newest commit is torn, so one flipped byte in it made the repair roll an
        // acknowledged commit back in silence (found by a test flipping each copy of an entry).
        // It costs a second fsync per commit; see ARCHITECTURE.md for the measured price.
        tx.set_two_phase_commit(true);
        Ok(tx)
    }

    /// Why writes are refused, if a write failed.
    /// Appends `entries` (index, bytes) in one commit: all on disk when this returns `Ok`
    /// (with `--fsync always`), none visible after a crash otherwise.
    pub(crate) fn append(&mut self, entries: &[(u64, Vec<u8>)]) -> Result<(), String> {
        if let Some(why) = &self.failed {
            return Err(why.clone());
        }
        let result = guarded(&self.path.display().to_string(), || {
            let tx = self.write_tx()?;
            {
                let mut table = tx.open_table(LOG).map_err(|err| self.err(err))?;
                for (index, bytes) in entries {
                    table
                        .insert(*index, bytes.as_slice())
                        .map_err(|err| self.err(err))?;
                }
            }
            tx.commit().map_err(|err| self.err(err))
        });
        if let Err(why) = &result {
            self.failed = Some(format!(
                "{why} (writes are refused until the server restarts and recovers the log)"
            ));
        }
        result
    }

    /// The first and last index in the log, if it holds any entry.
    pub(crate) fn bounds(&self) -> Result<Option<(u64, u64)>, String> {
        guarded(&self.path.display().to_string(), || {
            let tx = self.db.begin_read().map_err(|err| self.err(err))?;
            let table = tx.open_table(LOG).map_err(|err| self.err(err))?;
            let first = table.first().map_err(|err| self.err(err))?;
            let last = table.last().map_err(|err| self.err(err))?;
            Ok(first
                .zip(last)
                .map(|((first, _), (last, _))| (first.value(), last.value())))
        })
    }

    /// Calls `f` with every entry from index `from` on, in order.
    pub(crate) fn read_from(
        &self,
        from: u64,
        mut f: impl FnMut(u64, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        guarded(&self.path.display().to_string(), || {
            let tx = self.db.begin_read().map_err(|err| self.err(err))?;
            let table = tx.open_table(LOG).map_err(|err| self.err(err))?;
            for item in table.range(from..).map_err(|err| self.err(err))? {
                let (index, bytes) = item.map_err(|err| self.err(err))?;
                f(index.value(), bytes.value())?;
            }
            Ok(())
        })
    }

    /// Drops every entry up to and including `index` (a snapshot covers them).
    pub(crate) fn truncate_through(&mut self, index: u64) -> Result<(), String> {
        self.remove(..=index)
    }

    /// Drops the entries in `range` in one commit; a failure refuses every later write.
    fn remove(&mut self, range: impl std::ops::RangeBounds<u64>) -> Result<(), String> {
        if let Some(why) = &self.failed {
            return Err(why.clone());
        }
        let result = guarded(&self.path.display().to_string(), || {
            let tx = self.write_tx()?;
            {
                let mut table = tx.open_table(LOG).map_err(|err| self.err(err))?;
                table
                    .retain_in(range, |_, _| false)
                    .map_err(|err| self.err(err))?;
            }
            tx.commit().map_err(|err| self.err(err))
        });
        if let Err(why) = &result {
            self.failed = Some(why.clone());
        }
        result
    }
}

impl CommandLog {
    /// The entries with index in `range`, in order.
    pub(crate) fn read_range(
        &self,
        range: impl std::ops::RangeBounds<u64>,
    ) -> Result<Vec<(u64, Vec<u8>)>, String> {
        guarded(&self.path.display().to_string(), || {
            let tx = self.db.begin_read().map_err(|err| self.err(err))?;
            let table = tx.open_table(LOG).map_err(|err| self.err(err))?;
            let mut out = Vec::new();
            for item in table.range(range).map_err(|err| self.err(err))? {
                let (index, bytes) = item.map_err(|err| self.err(err))?;
                out.push((index.value(), bytes.value().to_vec()));
            }
            Ok(out)
        })
    }

    /// The last entry, if any.
    pub(crate) fn last(&self) -> Result<Option<(u64, Vec<u8>)>, String> {
        guarded(&self.path.display().to_string(), || {
            let tx = self.db.begin_read().map_err(|err| self.err(err))?;
            let table = tx.open_table(LOG).map_err(|err| self.err(err))?;
            let last = table.last().map_err(|err| self.err(err))?;
            Ok(last.map(|(index, bytes)| (index.value(), bytes.value().to_vec())))
        })
    }

    /// Drops the entries from `index` on (a new leader replaced them).
    pub(crate) fn truncate_from(&mut self, index: u64) -> Result<(), String> {
        self.remove(index..)
    }

    /// A small record of the `meta` table.
    pub(crate) fn get_meta(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        guarded(&self.path.display().to_string(), || {
            let tx = self.db.begin_read().map_err(|err| self.err(err))?;
            let table = match tx.open_table(META) {
                Ok(table) => table,
                // A log from a first start that was killed before the table existed.
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(err) => return Err(self.err(err)),
            };
            let value = table.get(key).map_err(|err| self.err(err))?;
            Ok(value.map(|v| v.value().to_vec()))
        })
    }

    /// Writes a small record of the `meta` table; `durable` waits for the disk (the vote
    /// must; the commit index need not: it only spares replay work, and the next durable
    /// commit carries it anyway).
    pub(crate) fn put_meta(
        &mut self,
        key: &str,
        value: &[u8],
        durable: bool,
    ) -> Result<(), String> {
        if let Some(why) = &self.failed {
            return Err(why.clone());
        }
        let result = guarded(&self.path.display().to_string(), || {
            let mut tx = self.write_tx()?;
            if !durable {
                tx.set_durability(Durability::None);
            }
            {
                let mut table = tx.open_table(META).map_err(|err| self.err(err))?;
                table.insert(key, value).map_err(|err| self.err(err))?;
            }
            tx.commit().map_err(|err| self.err(err))
        });
        if let Err(why) = &result {
            self.failed = Some(format!(
                "{why} (writes are refused until the server restarts and recovers the log)"
            ));
        }
        result
    }
}

impl CommandLog {
    /// Gives the pages freed by truncation back to the file system (a clean stop calls it:
    /// while serving, redb reuses freed pages, so the file does not grow without bound).
    pub(crate) fn compact(&mut self) -> Result<(), String> {
        if self.failed.is_some() {
            return Ok(());
        }
        let path = self.path.display().to_string();
        guarded(&path, || {
            self.db
                .compact()
                .map(drop)
                .map_err(|err| format!("command log {path}: compaction: {err}"))
        })
    }
}

/// Runs `f`, turning a panic inside redb (a damaged file it did not expect) into an error.
fn guarded<T>(name: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(format!(
            "the command log {name} is damaged (the storage engine failed: {what})"
        ))
    })
}

/// redb's file backend plus `--fsync off` and the failpoints.
#[derive(Debug)]
struct LogBackend {
    inner: FileBackend,
    fsync: bool,
    faults: Arc<Faults>,
}

impl StorageBackend for LogBackend {
    fn len(&self) -> Result<u64, io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>, io::Error> {
        self.inner.read(offset, len)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.inner.set_len(len)
    }

    fn sync_data(&self, eventual: bool) -> Result<(), io::Error> {
        if self.faults.on_fsync() {
            return Err(io::Error::other("injected fault: fsync failed"));
        }
        if self.fsync {
            self.inner.sync_data(eventual)
        } else {
            Ok(())
        }
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        match self.faults.on_write(data.len()) {
            WriteFault::None => self.inner.write(offset, data),
            WriteFault::Short(keep) => {
                if keep > 0 {
                    self.inner.write(offset, &data[..keep])?;
                }
                Err(io::Error::other(format!(
                    "injected fault: short write ({keep} of {} bytes)",
                    data.len()
                )))
            }
        }
    }
}

/// A read-only view of a file with an in-memory layer for writes (see
/// [`CommandLog::open_untouched`]): reads see the file as modified by the writes so far, and
/// the file itself is never written.
#[derive(Debug)]
struct Overlay {
    file: File,
    state: Mutex<OverlayState>,
}

#[derive(Debug)]
struct OverlayState {
    len: u64,
    /// Writes in order; a read applies every one that overlaps it.
    writes: Vec<(u64, Vec<u8>)>,
}

impl Overlay {
    fn new(file: File) -> Self {
        let len = file.metadata().map_or(0, |m| m.len());
        Self {
            file,
            state: Mutex::new(OverlayState {
                len,
                writes: Vec::new(),
            }),
        }
    }
}

impl StorageBackend for Overlay {
    fn len(&self) -> Result<u64, io::Error> {
        Ok(self.state.lock().len)
    }

    fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>, io::Error> {
        let state = self.state.lock();
        let mut out = vec![0u8; len];
        let on_disk = self.file.metadata()?.len();
        if offset < on_disk {
            let n = ((on_disk - offset) as usize).min(len);
            self.file.read_exact_at(&mut out[..n], offset)?;
        }
        let end = offset + len as u64;
        for (at, bytes) in &state.writes {
            let (w_start, w_end) = (*at, *at + bytes.len() as u64);
            if w_end <= offset || w_start >= end {
                continue;
            }
            let from = w_start.max(offset);
            let to = w_end.min(end);
            out[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&bytes[(from - w_start) as usize..(to - w_start) as usize]);
        }
        if end > state.len {
            let keep = state.len.saturating_sub(offset) as usize;
            out[keep.min(len)..].fill(0);
        }
        Ok(out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.state.lock().len = len;
        Ok(())
    }

    fn sync_data(&self, _eventual: bool) -> Result<(), io::Error> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        let mut state = self.state.lock();
        state.len = state.len.max(offset + data.len() as u64);
        state.writes.push((offset, data.to_vec()));
        Ok(())
    }
}
