//! Opening a data directory: the lock, the configuration check, the newest snapshot and the
//! log after it. Recovery refuses to start on anything it cannot read whole, names the file
//! and the place, and changes no file before it has succeeded.
//!
//! ```text
//! DATA_DIR/
//!   LOCK                 held (flock) by the running server
//!   config.json          the index configuration the directory was created with
//!   log.redb             the command log (log.rs)
//!   snapshot-<N>.fvs     the newest snapshot, covering the log up to entry N (snapshot.rs)
//! ```

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use flowvec::flow::{FlowConfig, Timestamp};
use flowvec::state::StateMachine;
use flowvec::vector::{IndexConfig, IndexKind, Metric};
use openraft::{EntryPayload, StoredMembership};
use serde::{Deserialize, Serialize};

use crate::cluster::log_store::read_committed;
use crate::cluster::state_machine::Applied;
use crate::cluster::types::{LogId, Membership, decode_entry};
use crate::config::Config;
use crate::faults::Faults;
use crate::log::CommandLog;
use crate::snapshot;

/// A data directory opened and replayed.
pub(crate) struct Recovered {
    pub(crate) machine: StateMachine,
    pub(crate) log: CommandLog,
    /// The Raft position the machine is at (snapshot + the committed entries replayed).
    pub(crate) applied: Applied,
    /// The stamp of the last entry applied (new stamps never go below it).
    pub(crate) last_now: Timestamp,
    /// Held for the server's lifetime: the directory's lock.
    pub(crate) lock: File,
    pub(crate) report: String,
}

/// The index settings a data directory is bound to (`config.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DirConfig {
    kind: IndexKind,
    dimension: usize,
    metric: Metric,
}

impl DirConfig {
    fn of(config: &Config) -> Self {
        let dense = config.kind != IndexKind::Sparse;
        Self {
            kind: config.kind,
            dimension: if dense { config.dimension } else { 0 },
            metric: if dense {
                config.metric
            } else {
                Metric::DotProduct
            },
        }
    }

    /// The first setting that differs, as a message naming both values.
    fn differs(&self, flags: &Self, dir: &Path) -> Option<String> {
        let name = |v: &dyn erased::Wire| v.wire();
        let (setting, stored, given) = if self.kind != flags.kind {
            ("kind", name(&self.kind), name(&flags.kind))
        } else if self.dimension != flags.dimension {
            (
                "dimension",
                self.dimension.to_string(),
                flags.dimension.to_string(),
            )
        } else if self.metric != flags.metric {
            ("metric", name(&self.metric), name(&flags.metric))
        } else {
            return None;
        };
        Some(format!(
            "data directory {} was created with --{setting} {stored}, but this start has --{setting} {given}; \
             start with --{setting} {stored}, or use another --data-dir",
            dir.display()
        ))
    }
}

/// Serde names of the enums, for messages.
mod erased {
    pub(super) trait Wire {
        fn wire(&self) -> String;
    }
    impl<T: serde::Serialize> Wire for T {
        fn wire(&self) -> String {
            serde_json::to_value(self)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        }
    }
}

const LOCK: &str = "LOCK";
const CONFIG: &str = "config.json";
pub(crate) const LOG_FILE: &str = "log.redb";

/// Opens `config.data_dir` (creating it if missing), takes its lock, checks its configuration,
/// loads the newest snapshot and replays the log after it.
pub(crate) fn recover(config: &Config, faults: Arc<Faults>) -> Result<Recovered, String> {
    let started = Instant::now();
    let dir = config.data_dir.as_path();
    std::fs::create_dir_all(dir)
        .map_err(|err| format!("cannot create the data directory {}: {err}", dir.display()))?;
    refuse_foreign(dir)?; // before the lock file is created: a foreign directory is left as found
    let lock = take_lock(dir)?;
    let flags = DirConfig::of(config);
    let log_path = dir.join(LOG_FILE);
    if dir.join(CONFIG).exists() {
        check_config(dir, &flags)?;
        require_log(&log_path)?;
    } else {
        // A new directory (or one left by a first start that was killed): the log is created
        // before config.json, so a directory with config.json always has its log, and a
        // missing or emptied log is refused instead of silently starting over.
        create_log(&log_path, config, &faults)?;
        write_config(dir, &flags)?;
    }

    let snapshots = snapshot::list(dir)?;
    let mut applied_id: Option<LogId> = None;
    let mut membership = Membership::default();
    let mut snapshot_file = None;
    let (machine, snapshot_index, mut last_now) = match snapshots.last() {
        Some((_, path)) => {
            let (machine, covered) = snapshot::read(path)?;
            let stored = index_dir_config(machine.index().config());
            if let Some(problem) = stored.differs(&flags, dir) {
                return Err(problem);
            }
            let Some(meta) = covered.raft.clone() else {
                return Err(format!(
                    "snapshot {} was written by a server from before replication (it has no Raft position); start that version on this directory once more, or use another --data-dir",
                    path.display()
                ));
            };
            applied_id = meta.last_log_id;
            membership = meta.last_membership.clone();
            snapshot_file = Some((meta, path.clone()));
            (machine, covered.log_index, covered.now())
        }
        None => {
            let flow = FlowConfig {
                global_parallelism: None,
                ..FlowConfig::default()
            };
            let machine = StateMachine::new(config.index_config(), flow)
                .map_err(|err| format!("index configuration: {err}"))?;
            (machine, 0, Timestamp::from_millis(0))
        }
    };
    let loaded = started.elapsed();

    // Replay from an untouched view of the log first (redb's crash repair happens in memory),
    // so a log that does not open or replay is refused and left as found; only then is the
    // file opened for writing (the repair, if any, done for real).
    let opened = CommandLog::open_untouched(&log_path)?;
    let log = opened.log;
    let mut notes = Vec::new();
    if opened.repaired {
        notes.push(format!(
            "{} was not closed cleanly (crash or kill): the storage engine verified it and dropped an unfinished commit, if any (never an acknowledged one)",
            log_path.display()
        ));
    }
    // Entries up to the commit index the log recorded are applied now; later ones (if any)
    // are applied by openraft once a leader has committed them (a new leader may replace
    // them). Every entry is checked whole either way.
    let committed = read_committed(&log)
        .map_err(|err| format!("command log {}: {err}", log_path.display()))?
        .map(|id| id.index);
    // Without a snapshot the log starts at entry 0 (the group's first membership).
    let mut next_index = if snapshot_file.is_some() {
        snapshot_index + 1
    } else {
        0
    };
    let mut replayed = 0u64;
    if let Some((first, last)) = log.bounds()? {
        if first > next_index {
            return Err(format!(
                "command log {} starts at entry {first}, but the snapshot covers entries up to {snapshot_index}: entries {next_index}..{} are missing",
                log_path.display(),
                first - 1
            ));
        }
        if last >= next_index {
            log.read_from(next_index, |index, bytes| {
                if index != next_index {
                    return Err(format!(
                        "command log {}: entry {next_index} is missing (the next one is {index})",
                        log_path.display()
                    ));
                }
                let entry = decode_entry(bytes).map_err(|err| {
                    format!(
                        "command log {}: entry {index} (of {first}..={last}): {err}",
                        log_path.display()
                    )
                })?;
                next_index += 1;
                if committed.is_none_or(|c| index > c) {
                    return Ok(());
                }
                applied_id = Some(entry.log_id);
                match entry.payload {
                    EntryPayload::Blank => {}
                    EntryPayload::Normal(batch) => {
                        last_now = last_now.max(batch.now);
                        for command in batch.commands {
                            // A refusal is part of the history: the live server refused it
                            // the same way.
                            let _ = machine.apply(command, batch.now);
                        }
                    }
                    EntryPayload::Membership(m) => {
                        membership = StoredMembership::new(Some(entry.log_id), m);
                    }
                }
                replayed += 1;
                Ok(())
            })?;
        }
    }
    let seen = log.bounds()?;
    drop(log);
    let log = CommandLog::open(&log_path, config.fsync, faults)?.log;
    if log.bounds()? != seen {
        return Err(format!(
            "command log {} changed while it was being opened",
            log_path.display()
        ));
    }
    let report = format!(
        "recovered {}: snapshot {} ({:.2} s), {replayed} log entries replayed, {:.2} s in all{}",
        dir.display(),
        if snapshot_index == 0 {
            "none".to_owned()
        } else {
            format!("up to entry {snapshot_index}")
        },
        loaded.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        notes
            .iter()
            .map(|n| format!("\n  note: {n}"))
            .collect::<String>(),
    );
    Ok(Recovered {
        machine,
        log,
        applied: Applied {
            log_id: applied_id,
            membership,
            snapshot: snapshot_file,
        },
        last_now,
        lock,
        report,
    })
}

/// Refuses a state machine (a snapshot from the leader) whose index is not the one this
/// node's flags describe.
pub(crate) fn check_machine(config: &Config, machine: &StateMachine) -> Result<(), String> {
    match index_dir_config(machine.index().config())
        .differs(&DirConfig::of(config), &config.data_dir)
    {
        Some(problem) => Err(format!("the leader's snapshot: {problem}")),
        None => Ok(()),
    }
}

fn index_dir_config(config: &IndexConfig) -> DirConfig {
    let kind = config.kind;
    let dense = kind != IndexKind::Sparse;
    DirConfig {
        kind,
        dimension: if dense { config.dimension } else { 0 },
        metric: if dense {
            config.metric
        } else {
            Metric::DotProduct
        },
    }
}

/// Takes the directory's lock, or explains who holds it.
fn take_lock(dir: &Path) -> Result<File, String> {
    let path = dir.join(LOCK);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|err| format!("cannot create the lock file {}: {err}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "data directory {} is in use by another flowvec-server (its lock file {} is held); stop that server or use another --data-dir",
            dir.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(err)) => {
            Err(format!("cannot lock {}: {err}", path.display()))
        }
    }
}

/// What a first start that was killed may leave before `config.json` exists.
const FIRST_START_FILES: [&str; 3] = [LOCK, LOG_FILE, "config.json.tmp"];

/// A directory with files but no `config.json` is not a data directory: refused, untouched.
/// The files a killed first start leaves (the lock, the log it creates first, a half-written
/// `config.json.tmp`) are the server's own; [`create_log`] checks that such a log is empty.
fn refuse_foreign(dir: &Path) -> Result<(), String> {
    if dir.join(CONFIG).exists() {
        return Ok(());
    }
    let mut foreign: Vec<String> = std::fs::read_dir(dir)
        .map_err(|err| format!("cannot list {}: {err}", dir.display()))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| !FIRST_START_FILES.contains(&name.as_str()))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    foreign.sort();
    foreign.truncate(5);
    Err(format!(
        "{} is not empty and is not a flowvec data directory (no {CONFIG}; it holds {}); use an empty or new --data-dir",
        dir.display(),
        foreign.join(", ")
    ))
}

/// Checks `config.json` against the flags.
fn check_config(dir: &Path, flags: &DirConfig) -> Result<(), String> {
    let path = dir.join(CONFIG);
    let bytes =
        std::fs::read(&path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let stored: DirConfig = serde_json::from_slice(&bytes).map_err(|err| {
        format!(
            "{} is not a flowvec data directory configuration: {err}",
            path.display()
        )
    })?;
    match stored.differs(flags, dir) {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// A directory with `config.json` must have its log: it was created first and is never
/// removed. Without it, or with it emptied, every write since the last snapshot would be
/// lost in silence.
fn require_log(log_path: &Path) -> Result<(), String> {
    match std::fs::metadata(log_path) {
        Ok(meta) if meta.len() > 0 => Ok(()),
        Ok(_) => Err(format!(
            "the command log {} is empty, but the data directory was in use (it has {CONFIG}): the writes it held would be lost; restore the file or start on a new --data-dir",
            log_path.display()
        )),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "the command log {} is missing, but the data directory was in use (it has {CONFIG}): the writes it held would be lost; restore the file or start on a new --data-dir",
            log_path.display()
        )),
        Err(err) => Err(format!("cannot read {}: {err}", log_path.display())),
    }
}

/// Creates the log of a new directory and makes its directory entry durable. A log left by a
/// killed first start is reused if it holds no entries (nothing was acknowledged before
/// `config.json` existed); one that holds entries is not ours to guess about: refused.
fn create_log(log_path: &Path, config: &Config, faults: &Arc<Faults>) -> Result<(), String> {
    if std::fs::metadata(log_path).is_ok_and(|meta| meta.len() > 0) {
        let opened = CommandLog::open_untouched(log_path)?;
        if let Some((first, last)) = opened.log.bounds()? {
            return Err(format!(
                "the command log {} holds entries {first}..={last}, but there is no {CONFIG} beside it; restore {CONFIG} or start on a new --data-dir",
                log_path.display()
            ));
        }
    }
    drop(CommandLog::open(
        log_path,
        config.fsync,
        Arc::clone(faults),
    )?);
    let dir = log_path.parent().unwrap_or(Path::new("."));
    snapshot::sync_dir(dir)
}

/// Writes `config.json` of a new directory: to a temporary file, fsync, rename, fsync the
/// directory.
fn write_config(dir: &Path, flags: &DirConfig) -> Result<(), String> {
    let path = dir.join(CONFIG);
    let json = serde_json::to_vec_pretty(flags).map_err(|err| err.to_string())?;
    let tmp: PathBuf = dir.join(format!("{CONFIG}.tmp"));
    std::fs::write(&tmp, json)
        .and_then(|()| File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    snapshot::sync_dir(dir)
}
