//! The replication proof: real `flowvec-server` processes on 127.0.0.1 form a Raft cluster, and
//! under process kills, a partition and membership changes the clients still see one server
//! that never loses or invents an acknowledged write.
//!
//! - `a_three_node_cluster_survives_killing_the_leader_then_a_follower`: three clients send a
//!   mixed load (upserts of new ids, overwrites, deletes, publishes to a local receiver) to
//!   random nodes while the leader is SIGKILLed (the time to the first acknowledged write after
//!   the kill is printed), then the new leader's follower (the leader is left alone: nothing
//!   that starts and ends in that window may be acknowledged), then both restart. Every node
//!   ends with the same state, consistent with the history; every publish answered 201 is
//!   delivered with its body; no body is delivered that no client sent, or under two ids. Then
//!   all three are SIGKILLed and restarted with `--read-consistency local`, so each answers from
//!   its own applied state: once they have applied the same log, each holds exactly that state.
//! - `a_minority_leader_cannot_acknowledge_and_nothing_acknowledged_is_lost_after_healing`:
//!   every Raft link runs through a proxy the test controls; the leader is cut off. Writes (and a
//!   delete) sent to it are never answered 2xx, a linearizable read on it never misses what the
//!   majority acknowledged, the other two elect a leader and acknowledge writes; after healing
//!   the three nodes agree and hold every acknowledged write.
//! - `membership_changes_add_a_fourth_node_and_remove_one_while_serving`: under a light load a
//!   fourth node joins as a learner, becomes a voter and serves every acknowledged record; then a
//!   voter (not the leader) is removed and stopped and writes go on being acknowledged.
//!
//! The history check. Every write is recorded with its start and end (client clocks, which
//! contain the server's interval) and its outcome: acknowledged (2xx) or unknown (no answer, or
//! 503, the server's "may still commit"). Per id, upserts and deletes are blind writes of a
//! register, so once the cluster is quiet its value must be what some write W leaves that may
//! be linearized last: W is unknown (pending forever, it may take effect any time after its
//! start), or W was acknowledged and no acknowledged write of the id started after W ended;
//! "absent" from the start qualifies when no write of the id was acknowledged. So an upsert
//! acknowledged and followed by nothing is there with exactly its vector (bit for bit); a delete
//! acknowledged after every upsert of the id ended stays deleted; a write never acknowledged may
//! or may not be there; an id no client sent never appears (each node's full `/range` scan is
//! checked, besides a linearizable `/fetch` of every id), and all nodes hold the same records.
//! A client sends nothing more for an id once one of its writes is unknown (the id is retired),
//! and ids belong to one client, so writes of one id never overlap.
//!
//! The tests take turns (a lock), each with its own processes, ports and temp directory (kept,
//! with the nodes' output, when a test fails). CI runs one failover round, well under a minute
//! on 2 cores. By hand, more rounds or another seed:
//! `FLOWVEC_CLUSTER_ROUNDS=10 FLOWVEC_CLUSTER_SEED=7 cargo test -p flowvec-server --test cluster -- --nocapture`

mod cluster_support;
mod harness;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cluster_support::{Client, Cluster, DIMENSION, Reply, START_LIMIT, vector_for};
use harness::{Receiver, Rng, same_bits};

/// Snapshots (and log compaction) happen during the runs, so a restarted node may need one.
const ARGS: [&str; 2] = ["--snapshot-every", "300"];
const ALL: [u64; 3] = [1, 2, 3];
/// Clients of the failover test.
const CLIENTS: u64 = 3;
/// Longer than the server's ~10 s bound on a write that finds no leader or no quorum.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(12);
const ELECTION_LIMIT: Duration = Duration::from_secs(20);
const CONVERGE_LIMIT: Duration = Duration::from_secs(30);
const DELIVERY_LIMIT: Duration = Duration::from_secs(30);
/// Publishes per second and client at most, so the backlog at the end stays small.
const PUBLISH_RATE: f64 = 20.0;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_flowvec-server"))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One test at a time: each runs three or four servers on a small machine.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// The history

#[derive(Debug, Clone)]
enum Effect {
    Put(Vec<f32>),
    Gone,
}

#[derive(Debug, Clone)]
enum Outcome {
    Pending,
    /// Answered 2xx at this time.
    Acked(Duration),
    /// No answer, or an answer that is not a success (why).
    Unknown(String),
}

/// The write of one id (an upsert or delete of several ids is one op per id).
#[derive(Debug, Clone)]
struct Op {
    key: String,
    effect: Effect,
    client: u64,
    node: u64,
    start: Duration,
    outcome: Outcome,
}

impl Op {
    fn acked_at(&self) -> Option<Duration> {
        match self.outcome {
            Outcome::Acked(end) => Some(end),
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.effect {
            Effect::Put(v) => format!("upsert {v:?}"),
            Effect::Gone => "delete".to_owned(),
        };
        let outcome = match &self.outcome {
            Outcome::Pending => "pending".to_owned(),
            Outcome::Acked(end) => format!("acknowledged at {end:.3?}"),
            Outcome::Unknown(why) => format!("unknown ({why})"),
        };
        write!(
            f,
            "{what} by client {} via node {} at {:.3?}: {outcome}",
            self.client, self.node, self.start
        )
    }
}

#[derive(Debug, Clone)]
struct Publish {
    /// Unique per publish.
    body: String,
    client: u64,
    node: u64,
    start: Duration,
    outcome: Outcome,
    /// From the 201 answer.
    message_id: Option<String>,
}

#[derive(Default)]
struct History {
    ops: Vec<Op>,
    publishes: Vec<Publish>,
    /// Answers the contract does not allow (asserted at the end, so the load goes on).
    violations: Vec<String>,
}

impl History {
    /// (start, end) of every acknowledged write and publish.
    fn acks(&self) -> impl Iterator<Item = (Duration, Duration)> + '_ {
        let writes = self
            .ops
            .iter()
            .filter_map(|o| Some((o.start, o.acked_at()?)));
        let publishes = self.publishes.iter().filter_map(|p| match p.outcome {
            Outcome::Acked(end) => Some((p.start, end)),
            _ => None,
        });
        writes.chain(publishes)
    }

    /// How long after `t` the first write that started at or after `t` was acknowledged.
    fn first_ack_after(&self, t: Duration) -> Option<Duration> {
        self.acks()
            .filter(|&(start, _)| start >= t)
            .map(|(_, end)| end - t)
            .min()
    }

    fn acks_after(&self, t: Duration) -> usize {
        self.acks().filter(|&(start, _)| start >= t).count()
    }

    /// Acknowledged writes that started at or after `from` and ended by `until`.
    fn acked_within(&self, from: Duration, until: Duration) -> Vec<String> {
        let writes = self
            .ops
            .iter()
            .filter(|o| o.start >= from && o.acked_at().is_some_and(|end| end <= until))
            .map(|o| format!("{}: {o}", o.key));
        let publishes = self
            .publishes
            .iter()
            .filter(|p| p.start >= from && matches!(p.outcome, Outcome::Acked(end) if end <= until))
            .map(|p| {
                format!(
                    "publish {:?} via node {} at {:.3?}",
                    p.body, p.node, p.start
                )
            });
        writes.chain(publishes).collect()
    }

    fn assert_no_violations(&self) {
        assert!(
            self.violations.is_empty(),
            "{} answers broke the contract, e.g.:\n{}",
            self.violations.len(),
            self.violations[..self.violations.len().min(10)].join("\n")
        );
    }

    /// (acknowledged, unknown) writes of ids, and how many acknowledged ones were deletes.
    fn tally(&self) -> (usize, usize, usize) {
        let acked = self.ops.iter().filter(|o| o.acked_at().is_some()).count();
        let deletes = self
            .ops
            .iter()
            .filter(|o| o.acked_at().is_some() && matches!(o.effect, Effect::Gone))
            .count();
        (acked, self.ops.len() - acked, deletes)
    }
}

// ---------------------------------------------------------------------------------------------
// The load

/// Clients and what they were answered.
struct Load {
    epoch: Instant,
    history: Mutex<History>,
    /// The nodes (id, HTTP URL) the clients pick from.
    targets: Mutex<Vec<(u64, String)>>,
    /// The receiver's URL; no publishes without one.
    destination: Option<String>,
    stop: AtomicBool,
    /// Pause after every request (a light load).
    pace: Duration,
    deadline: Instant,
}

impl Load {
    fn new(
        targets: Vec<(u64, String)>,
        destination: Option<String>,
        pace: Duration,
        limit: Duration,
    ) -> Arc<Self> {
        let epoch = Instant::now();
        Arc::new(Self {
            epoch,
            history: Mutex::new(History::default()),
            targets: Mutex::new(targets),
            destination,
            stop: AtomicBool::new(false),
            pace,
            deadline: epoch + limit,
        })
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn history(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_targets(&self, targets: Vec<(u64, String)>) {
        *self.targets.lock().expect("targets") = targets;
    }

    /// `clients` threads running [`run`](Self::run), with seeds derived from `seed`.
    fn spawn(self: &Arc<Self>, clients: u64, seed: u64) -> Vec<JoinHandle<()>> {
        (0..clients)
            .map(|c| {
                let load = Arc::clone(self);
                let seed = seed ^ (c + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                std::thread::spawn(move || load.run(c, seed))
            })
            .collect()
    }

    /// Stops the clients and waits for them (each ends after its current request).
    fn finish(&self, workers: Vec<JoinHandle<()>>) {
        self.stop.store(true, Ordering::SeqCst);
        for worker in workers {
            worker.join().expect("a client thread panicked");
        }
    }

    /// One client until stopped: 40% upserts of 1-3 new ids, 15% overwrites of an id of its
    /// own, 20% deletes of 1-2 of them, 25% publishes (an upsert instead above
    /// `PUBLISH_RATE`), each to a random target. Only ids whose writes were all acknowledged
    /// are written again.
    fn run(&self, client_no: u64, seed: u64) {
        let client = Client::new(CLIENT_TIMEOUT);
        let mut rng = Rng::new(seed);
        let mut live: Vec<String> = Vec::new();
        let (mut n, mut publishes) = (0u64, 0u64);
        let started = Instant::now();
        while !self.stop.load(Ordering::SeqCst) && Instant::now() < self.deadline {
            let target = {
                let targets = self.targets.lock().expect("targets");
                targets[rng.range(0, targets.len() as u64) as usize].clone()
            };
            let roll = rng.range(0, 100);
            let may_publish = self.destination.is_some()
                && (publishes as f64) < 2.0 + started.elapsed().as_secs_f64() * PUBLISH_RATE;
            let acked = if roll >= 75 && may_publish {
                publishes += 1;
                n += 1;
                self.publish(
                    &client,
                    client_no,
                    &target,
                    format!("cluster-c{client_no}-m{n}"),
                )
            } else if (40..55).contains(&roll) && !live.is_empty() {
                let key = live.swap_remove(rng.range(0, live.len() as u64) as usize);
                let change = (key.clone(), Effect::Put(rng.vector(DIMENSION)));
                let acked = is_acked(&self.write(&client, client_no, &target, vec![change]));
                if acked {
                    live.push(key);
                }
                acked
            } else if (55..75).contains(&roll) && !live.is_empty() {
                let count = rng.range(1, 3).min(live.len() as u64);
                let changes = (0..count)
                    .map(|_| {
                        let at = rng.range(0, live.len() as u64) as usize;
                        (live.swap_remove(at), Effect::Gone)
                    })
                    .collect();
                is_acked(&self.write(&client, client_no, &target, changes))
            } else {
                let changes: Vec<(String, Effect)> = (0..rng.range(1, 4))
                    .map(|_| {
                        n += 1;
                        (
                            format!("c{client_no}-{n}"),
                            Effect::Put(rng.vector(DIMENSION)),
                        )
                    })
                    .collect();
                let keys: Vec<String> = changes.iter().map(|(k, _)| k.clone()).collect();
                let acked = is_acked(&self.write(&client, client_no, &target, changes));
                if acked {
                    live.extend(keys);
                }
                acked
            };
            if !acked {
                // No leader, no quorum or a dead node: do not pile up unknown outcomes.
                std::thread::sleep(ms(20));
            }
            std::thread::sleep(self.pace);
        }
    }

    /// Records `changes` (all upserts or all deletes) as pending, sends them to `node`, and
    /// records the outcome.
    fn write(
        &self,
        client: &Client,
        client_no: u64,
        (node, url): &(u64, String),
        changes: Vec<(String, Effect)>,
    ) -> Result<Reply, String> {
        let deleting = matches!(changes[0].1, Effect::Gone);
        let start = self.now();
        let first = {
            let mut history = self.history();
            let first = history.ops.len();
            history.ops.extend(changes.iter().map(|(key, effect)| Op {
                key: key.clone(),
                effect: effect.clone(),
                client: client_no,
                node: *node,
                start,
                outcome: Outcome::Pending,
            }));
            first
        };
        let reply = if deleting {
            let ids: Vec<String> = changes.iter().map(|(k, _)| k.clone()).collect();
            client.delete(url, &ids)
        } else {
            let records: Vec<(String, Vec<f32>)> = changes
                .iter()
                .map(|(k, e)| match e {
                    Effect::Put(v) => (k.clone(), v.clone()),
                    Effect::Gone => unreachable!("a request is all upserts or all deletes"),
                })
                .collect();
            client.upsert(url, &records)
        };
        let end = self.now();
        let outcome = match &reply {
            Ok(r) if r.is_2xx() => Outcome::Acked(end),
            Ok(r) => Outcome::Unknown(r.brief()),
            Err(err) => Outcome::Unknown(err.clone()),
        };
        let mut history = self.history();
        for op in &mut history.ops[first..first + changes.len()] {
            op.outcome = outcome.clone();
        }
        let what = if deleting { "delete" } else { "upsert" };
        match &reply {
            // The ids of a delete were all live (acknowledged, nothing unknown since).
            Ok(r) if r.is_2xx()
                && deleting
                && r.json["result"]["deleted"].as_u64() != Some(changes.len() as u64) =>
            {
                history.violations.push(format!(
                    "client {client_no}: delete of {} live ids via node {node} at {start:.3?} answered {}",
                    changes.len(),
                    r.brief()
                ));
            }
            Ok(r) if !r.is_2xx() && r.status != 503 => history.violations.push(format!(
                "client {client_no}: {what} via node {node} at {start:.3?} answered {} (2xx or 503 only)",
                r.brief()
            )),
            _ => {}
        }
        reply
    }

    /// Publishes `body` through `node` to the destination and records the outcome.
    fn publish(
        &self,
        client: &Client,
        client_no: u64,
        (node, url): &(u64, String),
        body: String,
    ) -> bool {
        let destination = self.destination.as_deref().expect("a destination");
        let start = self.now();
        let at = {
            let mut history = self.history();
            history.publishes.push(Publish {
                body: body.clone(),
                client: client_no,
                node: *node,
                start,
                outcome: Outcome::Pending,
                message_id: None,
            });
            history.publishes.len() - 1
        };
        let reply = client.publish(url, destination, body.as_bytes());
        let end = self.now();
        let mut history = self.history();
        let (outcome, message_id) = match &reply {
            Ok(r) if r.status == 201 && r.json["messageId"].is_string() => (
                Outcome::Acked(end),
                r.json["messageId"].as_str().map(str::to_owned),
            ),
            Ok(r) => {
                if r.status != 503 {
                    history.violations.push(format!(
                        "client {client_no}: publish via node {node} at {start:.3?} answered {} (201 with a messageId or 503 only)",
                        r.brief()
                    ));
                }
                (Outcome::Unknown(r.brief()), None)
            }
            Err(err) => (Outcome::Unknown(err.clone()), None),
        };
        let acked = message_id.is_some();
        history.publishes[at].outcome = outcome;
        history.publishes[at].message_id = message_id;
        acked
    }

    /// Upserts `key` (always with the same vector, so retries are harmless) through `node` until
    /// a 2xx; panics after `limit`. The time it took.
    fn upsert_until_acked(
        &self,
        client: &Client,
        client_no: u64,
        target: &(u64, String),
        key: &str,
        vector: Vec<f32>,
        limit: Duration,
    ) -> Duration {
        let started = Instant::now();
        loop {
            let change = (key.to_owned(), Effect::Put(vector.clone()));
            let reply = self.write(client, client_no, target, vec![change]);
            if is_acked(&reply) {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < limit,
                "{key} was not acknowledged through node {} within {limit:?}; last answer: {reply:?}",
                target.0
            );
            std::thread::sleep(ms(100));
        }
    }

    /// Waits (at most `limit`) for a write that starts at or after `t` to be acknowledged; how
    /// long after `t` it was.
    fn wait_first_ack(&self, t: Duration, limit: Duration) -> Option<Duration> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(after) = self.history().first_ack_after(t) {
                return Some(after);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(ms(10));
        }
    }
}

fn is_acked(reply: &Result<Reply, String>) -> bool {
    reply.as_ref().is_ok_and(Reply::is_2xx)
}

fn targets(cluster: &Cluster, ids: &[u64]) -> Vec<(u64, String)> {
    ids.iter().map(|&id| (id, cluster.node(id).url())).collect()
}

fn expect_leader(cluster: &mut Cluster, among: &[u64]) -> (u64, u64) {
    match cluster.wait_leader(among, ELECTION_LIMIT) {
        Ok(found) => found,
        Err(err) => panic!("no leader among {among:?}: {err}\n{}", cluster.describe()),
    }
}

fn expect_converged(cluster: &mut Cluster, among: &[u64]) -> (u64, u64) {
    match cluster.wait_converged(among, CONVERGE_LIMIT) {
        Ok(found) => found,
        Err(err) => panic!(
            "nodes {among:?} did not converge (one leader, same applied index and voters): {err}\n{}",
            cluster.describe()
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// The checks

fn show(value: Option<&[f32]>) -> String {
    value.map_or_else(|| "absent".to_owned(), |v| format!("{v:?}"))
}

fn same_value(a: Option<&[f32]>, b: Option<&[f32]>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => same_bits(a, b),
        _ => false,
    }
}

/// Whether an id's final value `got` is one its writes `ops` allow (see the module doc).
fn allowed(ops: &[&Op], got: Option<&[f32]>) -> Result<(), String> {
    let acked_starts: Vec<Duration> = ops
        .iter()
        .filter(|o| o.acked_at().is_some())
        .map(|o| o.start)
        .collect();
    let may_be_last = |op: &Op| {
        op.acked_at()
            .is_none_or(|end| !acked_starts.iter().any(|&start| start > end))
    };
    let leaves_got = |op: &Op| match (&op.effect, got) {
        (Effect::Gone, None) => true,
        (Effect::Put(v), Some(g)) => same_bits(v, g),
        _ => false,
    };
    if (got.is_none() && acked_starts.is_empty())
        || ops.iter().any(|op| may_be_last(op) && leaves_got(op))
    {
        return Ok(());
    }
    let writes: Vec<String> = ops.iter().map(|o| o.to_string()).collect();
    Err(format!(
        "is {}, which no write that may be the last one leaves; its writes:\n    {}",
        show(got),
        writes.join("\n    ")
    ))
}

/// On every node of `nodes`: a `/fetch` of every id the clients sent, checked against the
/// history; the whole contents by `/range` (no id nobody sent, the same as fetch, `/info`'s
/// count); and the contents identical on every node. Returns them; `reads` names the read
/// consistency, for messages.
fn check_state(
    cluster: &Cluster,
    nodes: &[u64],
    history: &History,
    reads: &str,
) -> BTreeMap<String, Vec<f32>> {
    let client = Client::new(Duration::from_secs(30));
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        by_key.entry(op.key.as_str()).or_default().push(op);
    }
    let keys: Vec<String> = by_key.keys().map(|k| (*k).to_owned()).collect();
    let mut problems = Vec::new();
    let mut states = Vec::new();
    for &id in nodes {
        let url = cluster.node(id).url();
        let fetched = client
            .fetch(&url, &keys)
            .unwrap_or_else(|err| panic!("fetch of {} ids on node {id}: {err}", keys.len()));
        let state = client
            .dump(&url)
            .unwrap_or_else(|err| panic!("range scan on node {id}: {err}"));
        let count = client
            .count(&url)
            .unwrap_or_else(|err| panic!("info on node {id}: {err}"));
        for (key, got) in keys.iter().zip(&fetched) {
            if let Err(why) = allowed(&by_key[key.as_str()], got.as_deref()) {
                problems.push(format!("node {id}: {key} {why}"));
            }
            let listed = state.get(key).map(Vec::as_slice);
            if !same_value(listed, got.as_deref()) {
                problems.push(format!(
                    "node {id}: fetch of {key} gives {} but range lists {}",
                    show(got.as_deref()),
                    show(listed)
                ));
            }
        }
        for key in state.keys() {
            if !by_key.contains_key(key.as_str()) {
                problems.push(format!("node {id} holds {key}, which no client sent"));
            }
        }
        if count != state.len() as u64 {
            problems.push(format!(
                "node {id}: info counts {count} vectors, range lists {}",
                state.len()
            ));
        }
        states.push((id, state));
    }
    let (first, reference) = states[0].clone();
    for (id, state) in &states[1..] {
        problems.extend(
            differences(&reference, state)
                .into_iter()
                .map(|diff| format!("nodes {first} and {id} differ on {diff}")),
        );
    }
    assert!(
        problems.is_empty(),
        "{} problems with the state of nodes {nodes:?} ({reads} reads), e.g.:\n{}",
        problems.len(),
        problems[..problems.len().min(20)].join("\n")
    );
    reference
}

/// The ids on which two states differ, with both values.
fn differences(a: &BTreeMap<String, Vec<f32>>, b: &BTreeMap<String, Vec<f32>>) -> Vec<String> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter_map(|key| {
            let (x, y) = (a.get(key).map(Vec::as_slice), b.get(key).map(Vec::as_slice));
            (!same_value(x, y)).then(|| format!("{key}: {} vs {}", show(x), show(y)))
        })
        .collect()
}

/// Every publish answered 201 is delivered (waits at most [`DELIVERY_LIMIT`]) with its body;
/// every delivered body was published by a client, under one message id, and one id always
/// carries one body. Returns a summary.
fn check_deliveries(receiver: &Receiver, history: &History) -> String {
    let acked: HashMap<&str, &Publish> = history
        .publishes
        .iter()
        .filter_map(|p| Some((p.message_id.as_deref()?, p)))
        .collect();
    let ids: Vec<String> = acked.keys().map(|id| (*id).to_owned()).collect();
    let waited = Instant::now();
    let missing = receiver.wait_for(ids.iter(), DELIVERY_LIMIT);
    let wait = waited.elapsed();
    let examples: Vec<String> = missing
        .iter()
        .take(10)
        .map(|id| {
            let p = acked[id.as_str()];
            format!(
                "{id} ({:?} from client {} via node {} at {:.3?})",
                p.body, p.client, p.node, p.start
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} publishes answered 201 were not delivered within {DELIVERY_LIMIT:?}, e.g.:\n{}",
        missing.len(),
        acked.len(),
        examples.join("\n")
    );
    let sent: HashMap<&str, &Publish> = history
        .publishes
        .iter()
        .map(|p| (p.body.as_str(), p))
        .collect();
    let deliveries = receiver.deliveries();
    let mut body_of: HashMap<&str, &[u8]> = HashMap::new();
    let mut id_of: HashMap<&[u8], &str> = HashMap::new();
    for delivery in &deliveries {
        let body = String::from_utf8_lossy(&delivery.body);
        let publish = sent.get(body.as_ref()).unwrap_or_else(|| {
            panic!(
                "delivered {body:?} (message {:?}), which no client published",
                delivery.id
            )
        });
        if let Some(id) = &publish.message_id {
            assert_eq!(
                id, &delivery.id,
                "{body:?} was acknowledged as message {id} but delivered as {:?}",
                delivery.id
            );
        }
        let first_body = *body_of
            .entry(delivery.id.as_str())
            .or_insert(delivery.body.as_slice());
        assert_eq!(
            first_body,
            delivery.body.as_slice(),
            "message {} was delivered with two bodies",
            delivery.id
        );
        let first_id = *id_of
            .entry(delivery.body.as_slice())
            .or_insert(delivery.id.as_str());
        assert_eq!(
            first_id, delivery.id,
            "{body:?}, published once, was delivered as two messages (committed twice?)"
        );
    }
    format!(
        "{} publishes acknowledged ({} unknown), {} deliveries of {} messages ({} duplicates), all acknowledged ones delivered {:.1} s after the load",
        acked.len(),
        history.publishes.len() - acked.len(),
        deliveries.len(),
        body_of.len(),
        deliveries.len() - body_of.len(),
        wait.as_secs_f64()
    )
}

// ---------------------------------------------------------------------------------------------
// The tests

#[test]
fn a_three_node_cluster_survives_killing_the_leader_then_a_follower() {
    let _serial = serial();
    let rounds = env_u64("FLOWVEC_CLUSTER_ROUNDS", 1).max(1);
    let seed = env_u64("FLOWVEC_CLUSTER_SEED", 0xC1A5_7E12);
    // Bounded in time as well as in count: a round is a few seconds of load, two elections and
    // two restarts.
    let time_limit = Duration::from_secs(30 + rounds * 60);
    let started = Instant::now();
    println!("cluster failover test: {rounds} rounds, seed {seed:#x}");

    let mut rng = Rng::new(seed);
    let mut cluster = Cluster::new(&bin(), "failover", 3, 0, false, &ARGS);
    cluster.start_voters();
    expect_leader(&mut cluster, &ALL);
    let receiver = Receiver::start();
    let load = Load::new(
        targets(&cluster, &ALL),
        Some(receiver.url("hook")),
        Duration::ZERO,
        time_limit,
    );
    let workers = load.spawn(CLIENTS, seed);
    std::thread::sleep(ms(1500));

    let mut failovers = Vec::new();
    for round in 0..rounds {
        assert!(
            started.elapsed() < time_limit,
            "only {round} of {rounds} rounds in {time_limit:?}"
        );
        let (leader, term) = expect_leader(&mut cluster, &ALL);
        cluster.node_mut(leader).kill();
        let killed = load.now();
        let failover = load
            .wait_first_ack(killed, ELECTION_LIMIT)
            .unwrap_or_else(|| {
                panic!(
                    "round {round}: no write acknowledged within {ELECTION_LIMIT:?} of SIGKILLing leader {leader} (term {term}) at {killed:.3?}\n{}",
                    cluster.describe()
                )
            });
        let survivors: Vec<u64> = ALL.into_iter().filter(|&id| id != leader).collect();
        let (new_leader, new_term) = expect_leader(&mut cluster, &survivors);
        println!(
            "round {round}: SIGKILLed leader {leader} (term {term}) at {killed:.3?}; node {new_leader} leads in term {new_term}; first write acknowledged {failover:.0?} after the kill"
        );
        failovers.push(failover);
        std::thread::sleep(ms(rng.range(200, 800)));

        // The new leader's follower goes too: the leader is alone, nothing can commit.
        let follower = survivors
            .iter()
            .copied()
            .find(|&id| id != new_leader)
            .expect("two survivors");
        cluster.node_mut(follower).kill();
        let alone_from = load.now();
        std::thread::sleep(ms(rng.range(300, 1000)));
        let alone_until = load.now();
        cluster.node_mut(leader).spawn();
        cluster.node_mut(follower).spawn();
        cluster.node_mut(leader).wait_serving();
        cluster.node_mut(follower).wait_serving();
        let lone = load.history().acked_within(alone_from, alone_until);
        assert!(
            lone.is_empty(),
            "round {round}: only node {new_leader} ran from {alone_from:.3?} to {alone_until:.3?}, yet {} writes that started and ended in between were acknowledged, e.g.:\n{}",
            lone.len(),
            lone[..lone.len().min(10)].join("\n")
        );
        let limit = ELECTION_LIMIT + START_LIMIT;
        let recovery = load.wait_first_ack(alone_until, limit).unwrap_or_else(|| {
            panic!(
                "round {round}: no write acknowledged within {limit:?} of restarting nodes {leader} and {follower}\n{}",
                cluster.describe()
            )
        });
        println!(
            "round {round}: SIGKILLed follower {follower}; node {new_leader} alone for {:.0?}; restarted {leader} and {follower}; first write acknowledged {recovery:.0?} after the restarts began",
            alone_until - alone_from
        );
        std::thread::sleep(ms(rng.range(500, 1500)));
    }
    load.finish(workers);
    let load_time = started.elapsed();

    let history = load.history();
    history.assert_no_violations();
    let deliveries = check_deliveries(&receiver, &history);
    let (leader, applied) = expect_converged(&mut cluster, &ALL);
    let state = check_state(&cluster, &ALL, &history, "linearizable");

    // The raw states: all three SIGKILLed and restarted with local reads, which answer from
    // what each node has applied itself; once they have applied the same whole log, each must
    // hold exactly the state above.
    for id in ALL {
        cluster.node_mut(id).kill();
        cluster
            .node_mut(id)
            .add_args(&["--read-consistency", "local"]);
    }
    for id in ALL {
        cluster.node_mut(id).spawn();
    }
    for id in ALL {
        cluster.node_mut(id).wait_serving();
    }
    let (raw_leader, raw_applied) = expect_converged(&mut cluster, &ALL);
    let raw = check_state(&cluster, &ALL, &history, "local");
    let changed = differences(&state, &raw);
    assert!(
        changed.is_empty(),
        "a restart of all three changed {} records, e.g.:\n{}",
        changed.len(),
        changed[..changed.len().min(20)].join("\n")
    );
    let records = state.len();

    let (acked, unknown, deletes) = history.tally();
    failovers.sort();
    println!(
        "{rounds} rounds, load for {:.1} s: {acked} id writes acknowledged ({deletes} deletes), {unknown} unknown; {deliveries}; \
         converged on leader {leader} at index {applied} with {records} records on each node \
         (after a restart of all three: leader {raw_leader}, index {raw_applied}, the same records read locally); \
         leader kill -> first acknowledged write: median {:.0?}, max {:.0?}; {:.1} s in all",
        load_time.as_secs_f64(),
        failovers[failovers.len() / 2],
        failovers[failovers.len() - 1],
        started.elapsed().as_secs_f64()
    );
    let published = history
        .publishes
        .iter()
        .filter(|p| p.message_id.is_some())
        .count();
    assert!(
        acked >= 50 && deletes >= 5 && published >= 10,
        "the load acknowledged too little to prove anything: {acked} writes, {deletes} deletes, {published} publishes"
    );
}

#[test]
fn a_minority_leader_cannot_acknowledge_and_nothing_acknowledged_is_lost_after_healing() {
    let _serial = serial();
    let started = Instant::now();
    let mut cluster = Cluster::new(&bin(), "partition", 3, 0, true, &ARGS);
    cluster.start_voters();
    expect_leader(&mut cluster, &ALL);
    let load = Load::new(Vec::new(), None, Duration::ZERO, Duration::from_secs(300));
    let client = Client::new(CLIENT_TIMEOUT);
    let target = |cluster: &Cluster, id: u64| (id, cluster.node(id).url());
    for k in 0..20u64 {
        let through = target(&cluster, ALL[k as usize % 3]);
        load.upsert_until_acked(
            &client,
            0,
            &through,
            &format!("pre-{k}"),
            vector_for(k),
            ELECTION_LIMIT,
        );
    }

    let (old, term) = expect_leader(&mut cluster, &ALL);
    let majority: Vec<u64> = ALL.into_iter().filter(|&id| id != old).collect();
    cluster.isolate(old);
    let cut_at = load.now();
    println!("cut every link to and from leader {old} (term {term}) at {cut_at:.3?}");

    // Three clients write to the isolated leader (one deletes pre-0 first): no 2xx allowed.
    let majority_done = Arc::new(AtomicBool::new(false));
    let isolated: Vec<JoinHandle<()>> = (0..3u64)
        .map(|t| {
            let (load, done) = (Arc::clone(&load), Arc::clone(&majority_done));
            let through = target(&cluster, old);
            std::thread::spawn(move || {
                let client = Client::new(CLIENT_TIMEOUT);
                let client_no = 10 + t;
                if t == 0 {
                    let change = ("pre-0".to_owned(), Effect::Gone);
                    let _ = load.write(&client, client_no, &through, vec![change]);
                }
                for i in 0..2u64 {
                    if i > 0 && done.load(Ordering::SeqCst) {
                        break;
                    }
                    let change = (
                        format!("iso-{t}-{i}"),
                        Effect::Put(vector_for(1000 + 10 * t + i)),
                    );
                    let _ = load.write(&client, client_no, &through, vec![change]);
                }
            })
        })
        .collect();

    // The majority elects a leader and acknowledges writes (each retried until it does).
    for k in 0..10u64 {
        let through = target(&cluster, majority[k as usize % 2]);
        load.upsert_until_acked(
            &client,
            1,
            &through,
            &format!("maj-{k}"),
            vector_for(100 + k),
            Duration::from_secs(30),
        );
    }
    let failover = load
        .history()
        .first_ack_after(cut_at)
        .expect("the majority's writes were acknowledged");
    let (new_leader, new_term) = expect_leader(&mut cluster, &majority);
    assert!(
        new_leader != old && new_term > term,
        "the majority {majority:?} reports leader {new_leader} in term {new_term}; the isolated one was {old} in term {term}"
    );
    // A linearizable read on the isolated node must not miss a write the majority acknowledged.
    let read_at = load.now();
    let read = client.fetch(&cluster.node(old).url(), &["maj-0".to_owned()]);
    if let Ok(got) = &read {
        assert!(
            got[0].is_some(),
            "stale read: isolated node {old} answered a fetch of maj-0 at {read_at:.3?} with null, though the majority acknowledged maj-0 before"
        );
    }
    majority_done.store(true, Ordering::SeqCst);
    for handle in isolated {
        handle.join().expect("an isolated client panicked");
    }
    let (sent_to_isolated, acked_by_isolated): (Vec<String>, Vec<String>) = {
        let history = load.history();
        let sent = history.ops.iter().filter(|o| o.client >= 10);
        (
            sent.clone().map(|o| format!("{}: {o}", o.key)).collect(),
            sent.filter(|o| o.acked_at().is_some())
                .map(|o| format!("{}: {o}", o.key))
                .collect(),
        )
    };
    assert!(
        acked_by_isolated.is_empty(),
        "the isolated node {old} acknowledged writes without a quorum:\n{}",
        acked_by_isolated.join("\n")
    );

    cluster.heal_all();
    let healed_at = load.now();
    // The old leader is a member again: a write through it is acknowledged.
    let rejoin = load.upsert_until_acked(
        &client,
        2,
        &target(&cluster, old),
        "after-heal",
        vector_for(200),
        Duration::from_secs(30),
    );
    let (leader, applied) = expect_converged(&mut cluster, &ALL);
    let history = load.history();
    history.assert_no_violations();
    let records = check_state(&cluster, &ALL, &history, "linearizable").len();
    println!(
        "majority's first acknowledged write {failover:.0?} after the cut (node {new_leader} leads in term {new_term}); \
         read on the isolated node: {}; writes sent to it:\n  {}\n\
         healed at {healed_at:.3?}; a write through node {old} acknowledged after {rejoin:.0?}; \
         converged on leader {leader} at index {applied}, {records} records on each node; {:.1} s in all",
        match &read {
            Ok(got) => format!("answered {}", show(got[0].as_deref())),
            Err(err) => err.clone(),
        },
        sent_to_isolated.join("\n  "),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn membership_changes_add_a_fourth_node_and_remove_one_while_serving() {
    let _serial = serial();
    let started = Instant::now();
    let mut cluster = Cluster::new(&bin(), "membership", 3, 1, false, &ARGS);
    cluster.start_voters();
    expect_leader(&mut cluster, &ALL);
    let load = Load::new(
        targets(&cluster, &ALL),
        None,
        ms(20),
        Duration::from_secs(120),
    );
    let workers = load.spawn(2, 0x004E_3BE5);
    std::thread::sleep(ms(1000));

    // Node 4 starts with --join, becomes a learner, then a voter.
    cluster.node_mut(4).start();
    let (leader, _) = expect_leader(&mut cluster, &ALL);
    let answered_200 = |reply: Result<Reply, String>, what: &str, cluster: &Cluster| match reply {
        Ok(reply) if reply.status == 200 => reply,
        other => panic!("{what} answered {other:?}\n{}", cluster.describe()),
    };
    answered_200(
        cluster.add_learner(leader, 4),
        &format!("add-learner 4 on leader {leader}"),
        &cluster,
    );
    let reply = answered_200(
        cluster.change_membership(leader, &[1, 2, 3, 4]),
        &format!("change-membership to [1, 2, 3, 4] on leader {leader}"),
        &cluster,
    );
    println!("node 4 is a voter: {}", reply.text);
    let leader_applied = cluster
        .metrics(leader)
        .ok()
        .and_then(|m| m.last_applied)
        .unwrap_or_else(|| panic!("leader {leader} reports no applied index"));
    cluster
        .wait_until(&[1, 2, 3, 4], CONVERGE_LIMIT, |all| {
            let caught_up = all.iter().any(|m| m.id == 4 && m.last_applied >= Some(leader_applied));
            (caught_up && all.iter().all(|m| m.voters == [1, 2, 3, 4])).then_some(())
        })
        .unwrap_or_else(|err| {
            panic!(
                "node 4 did not apply up to {leader_applied} (the leader's index) with voters [1, 2, 3, 4] everywhere: {err}\n{}",
                cluster.describe()
            )
        });
    let served = check_acked_served(&cluster, 4, &load);
    load.set_targets(targets(&cluster, &[1, 2, 3, 4]));
    std::thread::sleep(ms(1000));

    // A voter that does not lead leaves, then stops; writes go on.
    let (leader, _) = expect_leader(&mut cluster, &[1, 2, 3, 4]);
    let removed = ALL
        .into_iter()
        .find(|&id| id != leader)
        .expect("a follower");
    let remaining: Vec<u64> = [1, 2, 3, 4]
        .into_iter()
        .filter(|&id| id != removed)
        .collect();
    load.set_targets(targets(&cluster, &remaining));
    answered_200(
        cluster.change_membership(leader, &remaining),
        &format!("change-membership to {remaining:?} on leader {leader}"),
        &cluster,
    );
    cluster.node_mut(removed).kill();
    let removed_at = load.now();
    let deadline = Instant::now() + ELECTION_LIMIT;
    while load.history().acks_after(removed_at) < 10 {
        assert!(
            Instant::now() < deadline,
            "fewer than 10 writes acknowledged within {ELECTION_LIMIT:?} of removing node {removed}\n{}",
            cluster.describe()
        );
        std::thread::sleep(ms(20));
    }
    load.finish(workers);

    let (leader, applied) = expect_converged(&mut cluster, &remaining);
    let voters = cluster.metrics(leader).map(|m| m.voters);
    assert_eq!(
        voters,
        Ok(remaining.clone()),
        "the voters after removing node {removed}"
    );
    let history = load.history();
    history.assert_no_violations();
    let records = check_state(&cluster, &remaining, &history, "linearizable").len();
    let (acked, unknown, _) = history.tally();
    println!(
        "node 4 served all {served} settled records once it caught up; removed node {removed}; \
         {acked} id writes acknowledged, {unknown} unknown; converged on leader {leader} at index {applied} \
         with voters {remaining:?} and {records} records on each; {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
}

/// Node `id` serves every settled record: each id whose writes all ended acknowledged before
/// this read began reads as its last write left it. The number of ids checked.
fn check_acked_served(cluster: &Cluster, id: u64, load: &Load) -> usize {
    let read_at = load.now();
    let ops = load.history().ops.clone();
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &ops {
        by_key.entry(op.key.as_str()).or_default().push(op);
    }
    let settled: Vec<(&str, &Op)> = by_key
        .iter()
        .filter(|(_, ops)| {
            ops.iter()
                .all(|o| o.acked_at().is_some_and(|end| end < read_at))
        })
        .map(|(key, ops)| (*key, *ops.iter().max_by_key(|o| o.start).expect("an op")))
        .collect();
    let keys: Vec<String> = settled.iter().map(|(k, _)| (*k).to_owned()).collect();
    let fetched = Client::new(Duration::from_secs(30))
        .fetch(&cluster.node(id).url(), &keys)
        .unwrap_or_else(|err| panic!("fetch of {} ids on node {id}: {err}", keys.len()));
    for ((key, last), got) in settled.iter().zip(&fetched) {
        let expected = match &last.effect {
            Effect::Put(v) => Some(v.as_slice()),
            Effect::Gone => None,
        };
        assert!(
            same_value(expected, got.as_deref()),
            "node {id} reads {key} as {} at {read_at:.3?}; its last write, {last}, left {}",
            show(got.as_deref()),
            show(expected)
        );
    }
    assert!(
        !settled.is_empty(),
        "no settled records to check on node {id}"
    );
    settled.len()
}

/// One write of several megabytes (a batch entry far over axum's 2 MB default body limit)
/// sent to a follower: forwarded to the leader, replicated in one append request, applied on
/// every node. Before the cluster port raised its limit, such appends were refused (413) and
/// the group split into leaders of different terms.
#[test]
fn a_write_of_several_megabytes_reaches_every_node() {
    let _serial = serial();
    let mut cluster = Cluster::new(&bin(), "big-batch", 3, 0, false, &ARGS);
    cluster.start_voters();
    let (leader, _) = expect_leader(&mut cluster, &ALL);
    let follower = ALL.into_iter().find(|id| *id != leader).expect("3 nodes");
    let records: Vec<(String, Vec<f32>)> = (0..60_000u64)
        .map(|n| (format!("big-{n}"), vector_for(n)))
        .collect();
    let client = Client::new(Duration::from_secs(60));
    let reply = client
        .upsert(&cluster.node(follower).url(), &records)
        .expect("the upsert is answered");
    assert!(
        reply.is_2xx(),
        "a 60,000-record upsert through follower {follower}: {}\n{}",
        reply.brief(),
        cluster.describe()
    );
    expect_converged(&mut cluster, &ALL);
    for id in ALL {
        let count = client
            .count(&cluster.node(id).url())
            .unwrap_or_else(|err| panic!("node {id}: {err}"));
        assert_eq!(count, 60_000, "node {id} holds {count} records");
    }
    let (leader_after, _) = expect_leader(&mut cluster, &ALL);
    assert_eq!(
        leader_after, leader,
        "the big append must not cost the leader its term"
    );
}

/// A receiver that holds every call for `hold` before answering 200, and records how many
/// calls it has open at once (the most, over its life) and every message id it got.
struct SlowReceiver {
    port: u16,
    open: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
    ids: Arc<Mutex<Vec<String>>>,
}

impl SlowReceiver {
    fn start(hold: Duration) -> Self {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        use std::sync::atomic::AtomicUsize;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let open = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let ids = Arc::new(Mutex::new(Vec::new()));
        let (o, m, i) = (Arc::clone(&open), Arc::clone(&most), Arc::clone(&ids));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (open, most, ids) = (Arc::clone(&o), Arc::clone(&m), Arc::clone(&i));
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
                    let Ok(mut writer) = stream.try_clone() else {
                        return;
                    };
                    let mut reader = BufReader::new(stream);
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let (mut length, mut id) = (0usize, String::new());
                        loop {
                            let mut header = String::new();
                            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                                return;
                            }
                            let header = header.trim_end();
                            if header.is_empty() {
                                break;
                            }
                            if let Some((name, value)) = header.split_once(':') {
                                let name = name.trim().to_ascii_lowercase();
                                if name == "content-length" {
                                    length = value.trim().parse().unwrap_or(0);
                                } else if name == "upstash-message-id" {
                                    id = value.trim().to_owned();
                                }
                            }
                        }
                        let mut body = vec![0u8; length];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let now_open = open.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now_open, Ordering::SeqCst);
                        ids.lock().unwrap_or_else(PoisonError::into_inner).push(id);
                        std::thread::sleep(hold);
                        open.fetch_sub(1, Ordering::SeqCst);
                        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if writer.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            port,
            open,
            most,
            ids,
        }
    }
}

/// How far a key's parallelism limit is exceeded when the leader dies with calls in flight:
/// the new leader gives the dead one's calls back and makes them again, while the receiver
/// still holds the old ones. The documented bound is twice the limit, for at most the old
/// calls' duration; this measures the most calls the receiver had open at once.
#[test]
fn a_fail_over_exceeds_a_parallelism_limit_by_at_most_the_old_leaders_calls() {
    let _serial = serial();
    const LIMIT: usize = 2;
    let hold = Duration::from_secs(3);
    let receiver = SlowReceiver::start(hold);
    let mut cluster = Cluster::new(&bin(), "parallelism", 3, 0, false, &ARGS);
    cluster.start_voters();
    let (leader, _) = expect_leader(&mut cluster, &ALL);
    let follower = ALL.into_iter().find(|id| *id != leader).expect("3 nodes");
    let client = Client::new(CLIENT_TIMEOUT);
    let destination = format!("http://127.0.0.1:{}/slow", receiver.port);
    let mut published = Vec::new();
    for n in 0..8 {
        let reply = client
            .post(
                &cluster.node(follower).url(),
                &format!("/v2/publish/{destination}"),
                format!("message {n}").into_bytes(),
                &[
                    ("Upstash-Flow-Control-Key", "k"),
                    (
                        "Upstash-Flow-Control-Value",
                        &format!("parallelism={LIMIT}"),
                    ),
                ],
            )
            .expect("publish is answered");
        assert_eq!(reply.status, 201, "publish {n}: {}", reply.brief());
        published.push(
            reply.json["messageId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    // The leader's first calls are open at the receiver: kill it now.
    let deadline = Instant::now() + Duration::from_secs(10);
    while receiver.open.load(Ordering::SeqCst) < LIMIT && Instant::now() < deadline {
        std::thread::sleep(ms(10));
    }
    assert_eq!(
        receiver.open.load(Ordering::SeqCst),
        LIMIT,
        "the leader's calls are open"
    );
    let killed_at = Instant::now();
    cluster.node_mut(leader).kill();
    let survivors: Vec<u64> = ALL.into_iter().filter(|id| *id != leader).collect();
    let (new_leader, _) = expect_leader(&mut cluster, &survivors);
    let elected_after = killed_at.elapsed();
    // Every message is delivered (8 calls of 3 s at 2 at a time, plus the repeats).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = receiver
            .ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if published.iter().all(|id| got.contains(id)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every message was delivered after the fail-over: got {got:?} of {published:?}"
        );
        std::thread::sleep(ms(50));
    }
    let most = receiver.most.load(Ordering::SeqCst);
    let repeats = receiver
        .ids
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len()
        - published.len();
    println!(
        "parallelism={LIMIT}: at most {most} calls open at once across the fail-over \
         (leader {leader} killed, node {new_leader} leads {:.1} s later); {repeats} calls repeated",
        elected_after.as_secs_f64()
    );
    assert!(
        most <= 2 * LIMIT,
        "{most} calls were open at once: more than twice the limit {LIMIT}"
    );
}
