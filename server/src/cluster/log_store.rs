//! openraft's log storage over the command log: entries by index in redb's `log` table (one
//! commit, fsynced, per append: the group commit of the single node), the vote (durable) and
//! the commit index (not: it only spares replay work after a restart) in its `meta` table.

use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, OptionalSend, RaftLogReader, Vote};
use parking_lot::RwLock;

use super::types::{Entry, LogId, NodeId, StorageError, TypeConfig, decode_entry, encode_entry};
use crate::log::CommandLog;

const VOTE: &str = "vote";
const COMMITTED: &str = "committed";
const PURGED: &str = "purged";

/// The log storage; clones share the one log (a clone is openraft's log reader).
#[derive(Clone)]
pub(crate) struct LogStore {
    log: Arc<RwLock<CommandLog>>,
}

impl LogStore {
    pub(crate) fn new(log: CommandLog) -> Self {
        Self {
            log: Arc::new(RwLock::new(log)),
        }
    }

    fn meta<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        let bytes = blocking(|| self.log.read().get_meta(key)).map_err(|why| {
            super::types::storage_error(ErrorSubject::Store, ErrorVerb::Read, why)
        })?;
        bytes
            .map(|b| serde_json::from_slice(&b))
            .transpose()
            .map_err(|why| super::types::storage_error(ErrorSubject::Store, ErrorVerb::Read, why))
    }

    fn put_meta<T: serde::Serialize>(
        &self,
        key: &str,
        value: &T,
        durable: bool,
        subject: ErrorSubject<NodeId>,
    ) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec(value).expect("plain data encodes as JSON");
        blocking(|| self.log.write().put_meta(key, &bytes, durable))
            .map_err(|why| super::types::storage_error(subject, ErrorVerb::Write, why))
    }
}

/// Runs storage work that blocks (fsync) without stalling the runtime's other tasks.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// The commit index the log recorded (for recovery's replay).
pub(crate) fn read_committed(log: &CommandLog) -> Result<Option<LogId>, String> {
    match log.get_meta(COMMITTED)? {
        Some(bytes) => serde_json::from_slice::<Option<LogId>>(&bytes)
            .map_err(|err| format!("the commit index in the log does not decode: {err}")),
        None => Ok(None),
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let raw = blocking(|| self.log.read().read_range(range))
            .map_err(|why| super::types::storage_error(ErrorSubject::Logs, ErrorVerb::Read, why))?;
        raw.into_iter()
            .map(|(index, bytes)| {
                decode_entry(&bytes).map_err(|why| {
                    super::types::storage_error(
                        ErrorSubject::Logs,
                        ErrorVerb::Read,
                        format!("entry {index}: {why}"),
                    )
                })
            })
            .collect()
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last = blocking(|| self.log.read().last())
            .map_err(|why| super::types::storage_error(ErrorSubject::Logs, ErrorVerb::Read, why))?;
        let last_log_id = match last {
            Some((index, bytes)) => Some(
                decode_entry(&bytes)
                    .map_err(|why| {
                        super::types::storage_error(
                            ErrorSubject::Logs,
                            ErrorVerb::Read,
                            format!("entry {index}: {why}"),
                        )
                    })?
                    .log_id,
            ),
            None => None,
        };
        let last_purged_log_id: Option<LogId> = self.meta(PURGED)?;
        Ok(LogState {
            last_purged_log_id,
            last_log_id: last_log_id.or(last_purged_log_id),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        self.put_meta(VOTE, vote, true, ErrorSubject::Vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        self.meta(VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        self.put_meta(COMMITTED, &committed, false, ErrorSubject::Store)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.meta::<Option<LogId>>(COMMITTED)?.flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let encoded: Vec<(u64, Vec<u8>)> = entries
            .into_iter()
            .map(|entry| (entry.log_id.index, encode_entry(&entry)))
            .collect();
        let result = blocking(|| self.log.write().append(&encoded));
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(why) => {
                eprintln!("raft log: {why}");
                callback.log_io_completed(Err(std::io::Error::other(why.clone())));
                Err(super::types::storage_error(
                    ErrorSubject::Logs,
                    ErrorVerb::Write,
                    why,
                ))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        blocking(|| self.log.write().truncate_from(log_id.index))
            .map_err(|why| super::types::storage_error(ErrorSubject::Logs, ErrorVerb::Delete, why))
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.put_meta(PURGED, &Some(log_id), true, ErrorSubject::Logs)?;
        blocking(|| self.log.write().truncate_through(log_id.index))
            .map_err(|why| super::types::storage_error(ErrorSubject::Logs, ErrorVerb::Delete, why))
    }
}

impl LogStore {
    /// Compacts the file at a clean stop (redb keeps freed pages otherwise).
    pub(crate) fn compact(&self) {
        if let Err(why) = self.log.write().compact() {
            eprintln!("raft log: {why}");
        }
    }
}
