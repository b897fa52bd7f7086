//! openraft's state machine over the engines. Applying an entry applies its [`Batch`](super::types::Batch)'s
//! commands at the batch's `now`; the outcomes go back to the proposer in memory.
//!
//! A snapshot is the snapshot file of `snapshot.rs` (every engine's image, with the Raft
//! position and membership in its META section). It is written while openraft asks for the
//! builder, on the state-machine task, so no entry is applied meanwhile (one consistent cut;
//! writes wait, ~1 s for the 43k index). A follower that installs one writes the file,
//! loads it, and swaps the whole service ([`Current::replace`]).

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use flowvec::state::StateMachine;
use flowvec::wire::Service;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, OptionalSend, RaftSnapshotBuilder, StoredMembership,
};

use super::types::{
    Entry, LogId, Membership, Outcomes, SnapshotMeta, StorageError, TypeConfig, storage_error,
};
use crate::current::Current;
use crate::snapshot::{self, Covered};

/// Makes the service around a loaded state machine (tokens, policies, the text model), or
/// refuses it (an index configuration other than this node's flags).
pub(crate) type MakeService = Arc<dyn Fn(StateMachine) -> Result<Service, String> + Send + Sync>;

/// Where recovery left the engines.
pub(crate) struct Applied {
    pub(crate) log_id: Option<LogId>,
    pub(crate) membership: Membership,
    /// The snapshot file recovery loaded, and its Raft meta.
    pub(crate) snapshot: Option<(SnapshotMeta, PathBuf)>,
}

pub(crate) struct Store {
    current: Arc<Current>,
    make_service: MakeService,
    applied: Option<LogId>,
    membership: Membership,
    snapshot: Option<(SnapshotMeta, PathBuf)>,
    data_dir: PathBuf,
    /// The latest `now` applied, in ms (the leader stamps no earlier than this).
    last_now: Arc<AtomicU64>,
    snapshots_made: u64,
}

impl Store {
    pub(crate) fn new(
        current: Arc<Current>,
        make_service: MakeService,
        applied: Applied,
        data_dir: PathBuf,
        last_now: Arc<AtomicU64>,
    ) -> Self {
        Self {
            current,
            make_service,
            applied: applied.log_id,
            membership: applied.membership,
            snapshot: applied.snapshot,
            data_dir,
            last_now,
            snapshots_made: 0,
        }
    }

    fn write_snapshot(&mut self) -> Result<SnapshotMeta, StorageError> {
        self.snapshots_made += 1;
        let meta = SnapshotMeta {
            last_log_id: self.applied,
            last_membership: self.membership.clone(),
            snapshot_id: format!(
                "{}-{}",
                self.applied.map_or(0, |id| id.index),
                self.snapshots_made
            ),
        };
        let covered = Covered {
            log_index: self.applied.map_or(0, |id| id.index),
            now_ms: self.last_now.load(Ordering::SeqCst),
            raft: Some(meta.clone()),
        };
        let started = Instant::now();
        let service = self.current.get();
        let (path, size) = tokio::task::block_in_place(|| {
            snapshot::write(&self.data_dir, service.machine(), &covered)
        })
        .map_err(|why| {
            eprintln!("snapshot: {why}");
            storage_error(ErrorSubject::Snapshot(None), ErrorVerb::Write, why)
        })?;
        eprintln!(
            "snapshot {} ({:.1} MiB) in {:.2} s",
            path.display(),
            size as f64 / (1 << 20) as f64,
            started.elapsed().as_secs_f64()
        );
        self.snapshot = Some((meta.clone(), path));
        Ok(meta)
    }
}

/// The snapshot openraft asked for, already written (see the module docs).
pub(crate) struct Built(Result<SnapshotMeta, StorageError>);

impl RaftSnapshotBuilder<TypeConfig> for Built {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let meta = self.0.clone()?;
        // openraft 0.9 keeps only the meta of a built snapshot; the data is read from the
        // file when a follower needs it (`get_current_snapshot`).
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(Vec::new())),
        })
    }
}

impl RaftStateMachine<TypeConfig> for Store {
    type SnapshotBuilder = Built;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), StorageError> {
        Ok((self.applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Outcomes>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let service = self.current.get();
        tokio::task::block_in_place(|| {
            let mut out = Vec::new();
            for entry in entries {
                self.applied = Some(entry.log_id);
                let mut outcomes = Outcomes::default();
                match entry.payload {
                    EntryPayload::Blank => {}
                    EntryPayload::Normal(batch) => {
                        self.last_now
                            .fetch_max(batch.now.as_millis(), Ordering::SeqCst);
                        let machine = service.machine();
                        outcomes.results = batch
                            .commands
                            .into_iter()
                            .map(|command| machine.apply(command, batch.now))
                            .collect();
                    }
                    EntryPayload::Membership(membership) => {
                        self.membership = StoredMembership::new(Some(entry.log_id), membership);
                    }
                }
                out.push(outcomes);
            }
            Ok(out)
        })
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        Built(self.write_snapshot())
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let started = Instant::now();
        let bytes = snapshot.into_inner();
        let index = meta.last_log_id.map_or(0, |id| id.index);
        let fail = |why: String| {
            eprintln!("install snapshot: {why}");
            storage_error(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
                why,
            )
        };
        let (path, machine, covered) = tokio::task::block_in_place(|| {
            let (path, _) = snapshot::write_bytes(&self.data_dir, index, &bytes)?;
            let (machine, covered) = snapshot::read(&path)?;
            Ok::<_, String>((path, machine, covered))
        })
        .map_err(fail)?;
        let service = (self.make_service)(machine).map_err(fail)?;
        self.current.replace(service);
        self.applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.last_now.fetch_max(covered.now_ms, Ordering::SeqCst);
        self.snapshot = Some((meta.clone(), path));
        eprintln!(
            "installed snapshot {} ({:.1} MiB) from the leader in {:.2} s",
            meta.snapshot_id,
            bytes.len() as f64 / (1 << 20) as f64,
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let Some((meta, path)) = self.snapshot.clone() else {
            return Ok(None);
        };
        let bytes = tokio::task::block_in_place(|| std::fs::read(&path)).map_err(|err| {
            storage_error(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Read,
                format!("{}: {err}", path.display()),
            )
        })?;
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        }))
    }
}
