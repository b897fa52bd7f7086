//! The committer: the one thread that proposes state changes. It takes the commands of
//! concurrent requests in batches, stamps them with the time (on the leader: every replica
//! applies a batch at the `now` it carries), and proposes each batch as one Raft entry
//! (group commit: one log commit, one fsync, one replication round for many writes); openraft
//! commits it on a majority and applies it, and the outcomes answer the requests.
//!
//! Delivery is driven from here too: after a batch that may have made a message deliverable
//! (or when a flow-control timer is due) it appends a `Dispatch` command to the same batch, and
//! hands the calls it yields to the dispatcher. So every change of the flow engine, rate
//! windows and active calls included, is in the log, and a restart (or, later, a new leader)
//! rebuilds exactly the state the old process had.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use flowvec::flow::{Dispatch, Timestamp};
use flowvec::state::{Applied, ApplyError, Command};
use flowvec::wire::Message;
use openraft::error::{ClientWriteError, RaftError};
use tokio::sync::{mpsc, oneshot};

use crate::cluster::node::SharedNode;
use crate::cluster::types::Batch;
use crate::current::Current;

/// Most commands in one commit.
const MAX_BATCH: usize = 4096;
/// Most encoded bytes in one commit (a batch stops growing past this).
const MAX_BATCH_BYTES: usize = 64 << 20;
/// Most calls one `Dispatch` entry hands out.
const DISPATCH_MAX: u32 = 256;
/// A snapshot is also due once the log has grown by this many bytes since the last one.
const SNAPSHOT_LOG_BYTES: u64 = 1 << 30;

/// How long a batch may wait to be committed before its writes answer 503 (outcome
/// unknown: a leader cut off from its quorum cannot commit, and may learn so only later).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// A command's fate: applied (and the engines' answer), or not acknowledged.
pub(crate) type Outcome = Result<Result<Applied, ApplyError>, Unavailable>;

/// The write was not acknowledged: not committed, or its outcome is unknown.
#[derive(Debug, Clone)]
pub(crate) struct Unavailable {
    pub(crate) problem: String,
    /// This node does not lead: the write was not proposed (the leader can take it).
    pub(crate) not_leader: bool,
}

impl Unavailable {
    fn new(problem: impl Into<String>) -> Self {
        Self {
            problem: problem.into(),
            not_leader: false,
        }
    }
}

enum Msg {
    Propose {
        command: Command,
        reply: Option<oneshot::Sender<Outcome>>,
    },
    /// Stop handing out deliveries (shutdown has begun).
    StopDispatching,
    /// Write a final snapshot, then stop.
    Shutdown(oneshot::Sender<()>),
}

/// The handle requests and the dispatcher use.
#[derive(Clone)]
pub(crate) struct Committer {
    tx: Sender<Msg>,
}

impl Committer {
    /// Proposes a command and waits until it is durable and applied.
    pub(crate) async fn propose(&self, command: Command) -> Outcome {
        let (reply, answer) = oneshot::channel();
        let sent = self.tx.send(Msg::Propose {
            command,
            reply: Some(reply),
        });
        if sent.is_err() {
            return Err(Unavailable::new("the server is shutting down"));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(Unavailable::new("the server is shutting down")))
    }

    pub(crate) fn stop_dispatching(&self) {
        let _ = self.tx.send(Msg::StopDispatching);
    }

    /// Asks the committer to finish its queue, write a snapshot and stop; waits for it.
    pub(crate) async fn shutdown(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Shutdown(done)).is_ok() {
            let _ = wait.await;
        }
    }
}

/// Everything the committer thread owns.
pub(crate) struct Worker {
    pub(crate) current: Arc<Current>,
    pub(crate) node: SharedNode,
    pub(crate) runtime: tokio::runtime::Handle,
    /// The latest `now` applied (ms), kept by the state machine.
    pub(crate) applied_now: Arc<AtomicU64>,
    /// A snapshot is also due after this long with new entries (`--snapshot-interval-secs`).
    pub(crate) snapshot_interval: Duration,
    pub(crate) deliveries: mpsc::UnboundedSender<Vec<Dispatch<Message>>>,
}

/// Starts the committer thread.
pub(crate) fn start(worker: Worker) -> Committer {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("committer".to_owned())
        .spawn(move || worker.run(rx))
        .expect("the OS can start a thread");
    Committer { tx }
}

/// The wall clock, for stamps.
pub(crate) fn wall_clock() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Timestamp::from_millis(ms)
}

impl Worker {
    fn leads(&self) -> bool {
        self.node.is_leader()
    }

    fn run(self, rx: Receiver<Msg>) {
        let mut dispatching = true;
        // Whether a `Dispatch` is due (checked after every batch; at start, requeued messages
        // may be ready at once).
        let mut dispatch_due = true;
        let mut since_snapshot = 0u64;
        let mut bytes_since_snapshot = 0u64;
        let mut last_snapshot = Instant::now();
        let mut last_stamp = Timestamp::from_millis(0);
        let mut shutdown: Option<oneshot::Sender<()>> = None;
        loop {
            let mut batch: Vec<(Command, Option<oneshot::Sender<Outcome>>)> = Vec::new();
            let mut bytes = 0usize;
            let service = self.current.get();
            let timer = service.flow().lock().peek_timeout();
            // Only the leader delivers; a node whose log failed cannot write (it would spin).
            let can_dispatch = dispatching && self.leads();
            let wait = if can_dispatch && dispatch_due {
                Duration::ZERO
            } else {
                match timer.filter(|_| can_dispatch) {
                    Some(at) => Duration::from_millis(
                        at.as_millis()
                            .saturating_sub(wall_clock().as_millis())
                            .max(1),
                    ),
                    // Not leading: look again soon (leadership may come without a message).
                    None if dispatching && !can_dispatch => Duration::from_millis(200),
                    None => Duration::from_secs(3600),
                }
            };
            let take = |msg: Msg,
                        batch: &mut Vec<_>,
                        bytes: &mut usize,
                        dispatching: &mut bool,
                        shutdown: &mut Option<_>| match msg {
                Msg::Propose { command, reply } => {
                    *bytes += approx_size(&command);
                    batch.push((command, reply));
                }
                Msg::StopDispatching => *dispatching = false,
                Msg::Shutdown(done) => {
                    *dispatching = false;
                    *shutdown = Some(done);
                }
            };
            match rx.recv_timeout(wait) {
                Ok(msg) => take(msg, &mut batch, &mut bytes, &mut dispatching, &mut shutdown),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            while batch.len() < MAX_BATCH && bytes < MAX_BATCH_BYTES && shutdown.is_none() {
                match rx.try_recv() {
                    Ok(msg) => take(msg, &mut batch, &mut bytes, &mut dispatching, &mut shutdown),
                    Err(_) => break,
                }
            }
            let applied_now = Timestamp::from_millis(self.applied_now.load(Ordering::SeqCst));
            let now = last_stamp.max(applied_now).max(wall_clock());
            let leads = self.leads();
            // A Dispatch rides at the end of the next commit: it is logged only when
            // the engine says a message may go (read-only check), so a publish to a paused or
            // saturated key adds no entry.
            if dispatching && leads && (dispatch_due || service.flow().lock().may_dispatch(now)) {
                batch.push((Command::Dispatch { max: DISPATCH_MAX }, None));
            }
            dispatch_due = false;
            if !batch.is_empty() {
                since_snapshot += batch.len() as u64;
                bytes_since_snapshot += bytes as u64;
                last_stamp = now;
                let more = self.commit(batch, now);
                dispatch_due = more || self.current.get().flow().lock().may_dispatch(now);
            }
            // openraft itself snapshots after `--snapshot-every` entries, on every node.
            let due = bytes_since_snapshot >= SNAPSHOT_LOG_BYTES
                || (since_snapshot > 0 && last_snapshot.elapsed() >= self.snapshot_interval);
            if due || (shutdown.is_some() && since_snapshot > 0) {
                if self.snapshot(shutdown.is_some()) {
                    since_snapshot = 0;
                    bytes_since_snapshot = 0;
                }
                last_snapshot = Instant::now();
            }
            if let Some(done) = shutdown.take() {
                let _ = done.send(());
                return;
            }
        }
    }

    /// Proposes one batch as one Raft entry and answers its writes; whether a `Dispatch` in
    /// it handed out its maximum (more may be ready).
    fn commit(
        &self,
        batch: Vec<(Command, Option<oneshot::Sender<Outcome>>)>,
        now: Timestamp,
    ) -> bool {
        let (commands, replies): (Vec<Command>, Vec<Option<oneshot::Sender<Outcome>>>) =
            batch.into_iter().unzip();
        let raft = self.node.raft.clone();
        let written = self.runtime.block_on(async move {
            tokio::time::timeout(WRITE_TIMEOUT, raft.client_write(Batch { now, commands })).await
        });
        let failed = |replies: Vec<Option<oneshot::Sender<Outcome>>>, unavailable: Unavailable| {
            for reply in replies.into_iter().flatten() {
                let _ = reply.send(Err(unavailable.clone()));
            }
            false
        };
        let results = match written {
            Ok(Ok(response)) => response.data.results,
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_)))) => {
                return failed(
                    replies,
                    Unavailable {
                        problem: "this node does not lead".to_owned(),
                        not_leader: true,
                    },
                );
            }
            Ok(Err(err)) => {
                eprintln!("committer: {err}");
                return failed(
                    replies,
                    Unavailable::new(format!(
                        "the write was not committed: {err}; its outcome is unknown (it may have reached the log and reappear)"
                    )),
                );
            }
            Err(_) => {
                return failed(
                    replies,
                    Unavailable::new(format!(
                        "the write was not committed within {} s (no quorum reachable?); its outcome is unknown (it may still commit)",
                        WRITE_TIMEOUT.as_secs()
                    )),
                );
            }
        };
        let mut more = false;
        for (outcome, reply) in results.into_iter().zip(replies) {
            if let Ok(Applied::Dispatched(calls)) = &outcome {
                more |= calls.len() >= DISPATCH_MAX as usize;
                if !calls.is_empty() {
                    let _ = self.deliveries.send(calls.clone());
                }
            }
            match reply {
                Some(reply) => {
                    let _ = reply.send(Ok(outcome));
                }
                None => {
                    if let Err(err) = outcome {
                        eprintln!("committer: a command of the server refused: {err}");
                    }
                }
            }
        }
        more
    }

    /// Asks openraft for a snapshot (written on its state-machine task, which then drops the
    /// log it covers); at shutdown, waits (bounded) until it is written.
    fn snapshot(&self, wait: bool) -> bool {
        let raft = self.node.raft.clone();
        self.runtime.block_on(async move {
            let target = raft.metrics().borrow().last_applied;
            if target.is_none() || raft.metrics().borrow().snapshot == target {
                return true;
            }
            if let Err(err) = raft.trigger().snapshot().await {
                eprintln!("committer: snapshot: {err}");
                return false;
            }
            if !wait {
                return true;
            }
            raft.wait(Some(Duration::from_secs(60)))
                .metrics(|m| m.snapshot >= target, "the final snapshot")
                .await
                .is_ok()
        })
    }
}

/// A cheap size estimate, to bound a batch's bytes before encoding.
fn approx_size(command: &Command) -> usize {
    match command {
        Command::Upsert { vectors, .. } | Command::UpsertData { vectors, .. } => vectors
            .iter()
            .map(|v| {
                64 + v.vector.as_ref().map_or(0, |d| d.len() * 5)
                    + v.sparse_vector.as_ref().map_or(0, |s| s.indices.len() * 10)
                    + v.data.as_ref().map_or(0, String::len)
            })
            .sum(),
        Command::Publish { message, .. } => 128 + message.body.len(),
        _ => 128,
    }
}
