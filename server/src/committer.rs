//! The committer: the one thread that changes state. It takes the commands of concurrent
//! requests in batches, stamps them with the time, writes each batch to the log in one commit
//! (group commit: one fsync for many writes), then applies them in log order and answers.
//!
//! Delivery is driven from here too: after a batch that may have made a message deliverable
//! (or when a flow-control timer is due) it appends a `Dispatch` command to the same batch, and
//! hands the calls it yields to the dispatcher. So every change of the flow engine, rate
//! windows and active calls included, is in the log, and a restart (or, later, a new leader)
//! rebuilds exactly the state the old process had.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use flowvec::flow::{Dispatch, Timestamp};
use flowvec::state::{Applied, ApplyError, Command, LogEntry};
use flowvec::wire::{Message, Service};
use tokio::sync::{mpsc, oneshot};

use crate::log::CommandLog;
use crate::snapshot::{self, Covered};

/// Most commands in one commit.
const MAX_BATCH: usize = 4096;
/// Most encoded bytes in one commit (a batch stops growing past this).
const MAX_BATCH_BYTES: usize = 64 << 20;
/// Most calls one `Dispatch` entry hands out.
const DISPATCH_MAX: u32 = 256;
/// A snapshot is also due once the log has grown by this many bytes since the last one.
const SNAPSHOT_LOG_BYTES: u64 = 1 << 30;

/// A command's fate: applied (and the engines' answer), or not made durable.
pub(crate) type Outcome = Result<Result<Applied, ApplyError>, Unavailable>;

/// The write was not made durable, so it was not applied.
#[derive(Debug, Clone)]
pub(crate) struct Unavailable(pub(crate) String);

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
            return Err(Unavailable("the server is shutting down".to_owned()));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(Unavailable("the server is shutting down".to_owned())))
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

/// When to write a snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SnapshotPolicy {
    pub(crate) every_entries: u64,
    pub(crate) interval: Duration,
}

/// Everything the committer thread owns.
pub(crate) struct Worker {
    pub(crate) service: Arc<Service>,
    pub(crate) log: CommandLog,
    pub(crate) next_index: u64,
    pub(crate) last_now: Timestamp,
    pub(crate) data_dir: PathBuf,
    pub(crate) policy: SnapshotPolicy,
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

struct Pending {
    index: u64,
    command: Command,
    reply: Option<oneshot::Sender<Outcome>>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Msg>) {
        let mut dispatching = true;
        // Whether a `Dispatch` is due (checked after every batch; at start, requeued messages
        // may be ready at once).
        let mut dispatch_due = true;
        let mut since_snapshot = 0u64;
        let mut bytes_since_snapshot = 0u64;
        let mut last_snapshot = Instant::now();
        let mut shutdown: Option<oneshot::Sender<()>> = None;
        loop {
            let mut batch: Vec<(Command, Option<oneshot::Sender<Outcome>>)> = Vec::new();
            let mut bytes = 0usize;
            let timer = self.service.flow().lock().peek_timeout();
            // After a log failure nothing can be written: no dispatching (it would spin).
            let can_write = self.log.failed().is_none();
            let wait = if dispatching && can_write && dispatch_due {
                Duration::ZERO
            } else {
                match timer.filter(|_| dispatching && can_write) {
                    Some(at) => Duration::from_millis(
                        at.as_millis()
                            .saturating_sub(wall_clock().as_millis())
                            .max(1),
                    ),
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
            let now = self.last_now.max(wall_clock());
            // A Dispatch rides at the end of the next commit: it is logged only when
            // the engine says a message may go (read-only check), so a publish to a paused or
            // saturated key adds no entry.
            if dispatching
                && can_write
                && (dispatch_due || self.service.flow().lock().may_dispatch(now))
            {
                batch.push((Command::Dispatch { max: DISPATCH_MAX }, None));
            }
            dispatch_due = false;
            if !batch.is_empty() {
                since_snapshot += batch.len() as u64;
                let (more, written) = self.commit(batch, now);
                bytes_since_snapshot += written;
                dispatch_due = more || self.service.flow().lock().may_dispatch(now);
            }
            let due = since_snapshot >= self.policy.every_entries
                || bytes_since_snapshot >= SNAPSHOT_LOG_BYTES
                || (since_snapshot > 0 && last_snapshot.elapsed() >= self.policy.interval);
            if (due || (shutdown.is_some() && since_snapshot > 0)) && self.log.failed().is_none() {
                if self.snapshot() {
                    since_snapshot = 0;
                    bytes_since_snapshot = 0;
                }
                last_snapshot = Instant::now();
            }
            if let Some(done) = shutdown.take() {
                if let Err(why) = self.log.compact() {
                    eprintln!("committer: {why}");
                }
                let _ = done.send(());
                return;
            }
        }
    }

    /// Logs and applies one batch; whether a `Dispatch` in it handed out its maximum (more
    /// may be ready), and the bytes written to the log.
    fn commit(
        &mut self,
        batch: Vec<(Command, Option<oneshot::Sender<Outcome>>)>,
        now: Timestamp,
    ) -> (bool, u64) {
        let mut encoded = Vec::with_capacity(batch.len());
        let mut pending = Vec::with_capacity(batch.len());
        for (offset, (command, reply)) in batch.into_iter().enumerate() {
            let index = self.next_index + offset as u64;
            let entry = LogEntry { now, command };
            encoded.push((index, entry.encode()));
            pending.push(Pending {
                index,
                command: entry.command,
                reply,
            });
        }
        if let Err(why) = self.log.append(&encoded) {
            eprintln!("committer: {why}");
            for p in pending {
                if let Some(reply) = p.reply {
                    let _ = reply.send(Err(Unavailable(format!(
                        "{why}; this write's outcome is unknown (it may have reached the disk and reappear after a restart)"
                    ))));
                }
            }
            return (false, 0);
        }
        let written = encoded.iter().map(|(_, bytes)| bytes.len() as u64).sum();
        drop(encoded);
        self.next_index += pending.len() as u64;
        self.last_now = now;
        let mut more = false;
        let machine = self.service.machine();
        for p in pending {
            let outcome = machine.apply(p.command, now);
            if let Ok(Applied::Dispatched(calls)) = &outcome {
                more |= calls.len() >= DISPATCH_MAX as usize;
                if !calls.is_empty() {
                    let _ = self.deliveries.send(calls.clone());
                }
            }
            match p.reply {
                Some(reply) => {
                    let _ = reply.send(Ok(outcome));
                }
                None => {
                    if let Err(err) = outcome {
                        eprintln!("committer: entry {} refused: {err}", p.index);
                    }
                }
            }
        }
        (more, written)
    }

    /// Writes a snapshot of everything applied so far and drops the log it covers.
    fn snapshot(&mut self) -> bool {
        let covered = Covered {
            log_index: self.next_index - 1,
            now_ms: self.last_now.as_millis(),
        };
        if covered.log_index == 0 {
            return true;
        }
        let started = Instant::now();
        match snapshot::write(&self.data_dir, self.service.machine(), covered) {
            Ok((path, size)) => {
                if let Err(why) = self.log.truncate_through(covered.log_index) {
                    eprintln!("committer: snapshot written, but the log was not truncated: {why}");
                }
                eprintln!(
                    "snapshot {} ({:.1} MiB) in {:.2} s",
                    path.display(),
                    size as f64 / (1 << 20) as f64,
                    started.elapsed().as_secs_f64()
                );
                true
            }
            Err(why) => {
                eprintln!("committer: {why}");
                false
            }
        }
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
