//! Snapshot files: the image of every engine ([`StateMachine::save`]) and the log position it
//! covers, written so that a crash at any moment leaves either the old or the new file whole.
//!
//! Writing: `snapshot-<index>.fvs.tmp`, fsync, rename to `snapshot-<index>.fvs`, fsync the
//! directory, then older snapshots are removed and the log prefix up to `<index>` is dropped
//! (by the caller). Reading takes the newest `.fvs`; a `.tmp` is an unfinished write and is
//! never read.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};

use flowvec::flow::Timestamp;
use flowvec::state::StateMachine;
use serde::{Deserialize, Serialize};

use crate::cluster::types::SnapshotMeta;

const PREFIX: &str = "snapshot-";
const SUFFIX: &str = ".fvs";

/// What a snapshot covers: the log up to and including `log_index`, applied at times up to
/// `now_ms`; `raft` is the Raft position and membership (openraft's snapshot meta).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Covered {
    pub(crate) log_index: u64,
    pub(crate) now_ms: u64,
    #[serde(default)]
    pub(crate) raft: Option<SnapshotMeta>,
}

impl Covered {
    pub(crate) fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.now_ms)
    }
}

/// The snapshots in `dir`, oldest first: (covered log index, path).
pub(crate) fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, String> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|err| format!("cannot list the data directory {}: {err}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(index) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_suffix(SUFFIX))
            .and_then(|digits| digits.parse::<u64>().ok())
        {
            found.push((index, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// Writes the snapshot of `machine` covering `covered`, durably, and removes older snapshots
/// and unfinished ones. Returns its path and size in bytes.
pub(crate) fn write(
    dir: &Path,
    machine: &StateMachine,
    covered: &Covered,
) -> Result<(PathBuf, u64), String> {
    let meta = serde_json::to_vec(covered).map_err(|err| err.to_string())?;
    write_with(dir, covered.log_index, |w| {
        machine.save(w, &meta).map_err(|err| err.to_string())
    })
}

/// Writes a snapshot received from the leader (a whole snapshot file's bytes) as the
/// snapshot covering `log_index`, durably, and removes older ones.
pub(crate) fn write_bytes(
    dir: &Path,
    log_index: u64,
    bytes: &[u8],
) -> Result<(PathBuf, u64), String> {
    write_with(dir, log_index, |w| {
        w.write_all(bytes).map_err(|err| err.to_string())
    })
}

fn write_with(
    dir: &Path,
    log_index: u64,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), String>,
) -> Result<(PathBuf, u64), String> {
    let name = format!("{PREFIX}{log_index:020}{SUFFIX}");
    let path = dir.join(&name);
    let tmp = dir.join(format!("{name}.tmp"));
    let write = || -> Result<u64, String> {
        let file = File::create(&tmp).map_err(|err| err.to_string())?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        fill(&mut w)?;
        w.flush().map_err(|err| err.to_string())?;
        let file = w.into_inner().map_err(|err| err.to_string())?;
        file.sync_all().map_err(|err| err.to_string())?;
        let size = file.metadata().map_err(|err| err.to_string())?.len();
        std::fs::rename(&tmp, &path).map_err(|err| err.to_string())?;
        sync_dir(dir)?;
        Ok(size)
    };
    let size = write().map_err(|err| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write snapshot {}: {err}", path.display())
    })?;
    for (index, old) in list(dir)? {
        if index < log_index {
            let _ = std::fs::remove_file(old);
        }
    }
    remove_unfinished(dir);
    Ok((path, size))
}

/// Removes `.fvs.tmp` files (snapshot writes a crash interrupted).
pub(crate) fn remove_unfinished(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name
                .to_str()
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(".fvs.tmp"))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Reads the snapshot at `path`.
pub(crate) fn read(path: &Path) -> Result<(StateMachine, Covered), String> {
    let file = File::open(path)
        .map_err(|err| format!("cannot open snapshot {}: {err}", path.display()))?;
    let (machine, meta) = StateMachine::load(BufReader::with_capacity(1 << 20, file))
        .map_err(|err| format!("snapshot {} is damaged: {err}", path.display()))?;
    let covered: Covered = serde_json::from_slice(&meta).map_err(|err| {
        format!(
            "snapshot {} is damaged: its META section: {err}",
            path.display()
        )
    })?;
    Ok((machine, covered))
}

/// fsync of a directory, so a rename or a new file in it survives a power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|err| format!("cannot fsync directory {}: {err}", dir.display()))
}
