//! The durability proof: the real server, under a mixed load of upserts, deletes and
//! flow-controlled publishes, is SIGKILLed at random moments and restarted on the same data
//! directory (snapshots and log truncation happen during the run: `--snapshot-every 200`).
//! After the last round it is started once more, and:
//!
//! - every upsert answered 2xx is fetchable with exactly its vector (bit for bit);
//! - every delete answered 2xx stayed deleted (ids are never reused);
//! - a write whose request got no answer (the kill) may or may not be there, but never torn:
//!   absent or exactly its vector;
//! - every publish answered 201 is delivered at least once within 30 s, with its body, and
//!   sending it again with its deduplication id is answered 202 with the same message id;
//!   deliveries of one message id always carry the same body, and every delivered body is one
//!   that was published. Duplicates (at-least-once) are counted and printed, not refused.
//!
//! Every round ends with a SIGKILL under load; one in five gets a SIGTERM shortly before it (so
//! the clean stop, with its final snapshot and log compaction, is killed part-way or finishes),
//! and one start in four is itself SIGKILLed during recovery or just after. The receiver runs
//! for the whole test, across the restarts.
//!
//! CI: 20 rounds, well under a minute. By hand, longer or with another seed:
//! `FLOWVEC_CRASH_ROUNDS=200 FLOWVEC_CRASH_SEED=7 cargo test -p flowvec-server --test crash -- --nocapture`

mod harness;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::{Api, Receiver, Rng, Server, TempDir, same_bits};

const ARGS: [&str; 4] = ["--dimension", "4", "--snapshot-every", "200"];
const DIMENSION: usize = 4;
const WORKERS: u64 = 3;
const FLOW_KEYS: u64 = 8;
/// Publishes per second and client at most: well under what the keys let through
/// (`FLOW_KEYS` × 50/s), so the backlog at the end is small and the wait for it bounded.
const PUBLISH_RATE: f64 = 40.0;
const FLOW_VALUE: &str = "parallelism=2, rate=50";
/// How long the publishes answered 201 may take to arrive after the last restart.
const DELIVERY_LIMIT: Duration = Duration::from_secs(30);

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the clients sent and what the server answered.
#[derive(Default)]
struct Ledger {
    /// Upserts answered 200: id → vector.
    upserted: HashMap<String, Vec<f32>>,
    /// Upserts without an answer: id → vector (absent or exactly this).
    upsert_unknown: HashMap<String, Vec<f32>>,
    /// Acknowledged ids no delete was tried on yet (the only delete candidates).
    deletable: Vec<String>,
    /// Deletes answered 200.
    deleted: HashSet<String>,
    /// Deletes without an answer (the id is absent or still has its vector).
    delete_unknown: HashSet<String>,
    /// Publishes answered 201: message id → body, and when it was sent (its deduplication
    /// id lasts 10 minutes).
    published: HashMap<String, (Vec<u8>, Instant)>,
    /// Every publish body sent, answered or not.
    sent_bodies: HashSet<Vec<u8>>,
    /// Requests answered / without an answer.
    answered: u64,
    unknown: u64,
    /// Answers the contract does not allow (checked at the end, so the loop goes on).
    violations: Vec<String>,
}

struct Load {
    ledger: Mutex<Ledger>,
    /// The next id / body number: never reused.
    next: AtomicU64,
    receiver_port: u16,
}

impl Load {
    /// One client thread until `stop`: 45% upserts of 1-5 new records, 20% deletes of 1-3
    /// acknowledged records, 35% publishes (an upsert instead once `PUBLISH_RATE` is reached).
    fn run(&self, url: &str, seed: u64, stop: &AtomicBool) {
        let api = Api::new(url);
        let mut rng = Rng::new(seed);
        let started = Instant::now();
        let mut publishes = 0u32;
        while !stop.load(Ordering::SeqCst) {
            let roll = rng.range(0, 100);
            let may_publish =
                f64::from(publishes) < 2.0 + started.elapsed().as_secs_f64() * PUBLISH_RATE;
            let answered = if roll < 45 || (roll >= 65 && !may_publish) {
                self.upsert(&api, &mut rng)
            } else if roll < 65 {
                self.delete(&api, &mut rng)
            } else {
                publishes += 1;
                self.publish(&api, &mut rng)
            };
            if !answered {
                // The server is gone or stopping: do not pile up unknown outcomes.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn upsert(&self, api: &Api, rng: &mut Rng) -> bool {
        let count = rng.range(1, 6);
        let records: Vec<(String, Vec<f32>)> = (0..count)
            .map(|_| {
                let n = self.next.fetch_add(1, Ordering::SeqCst);
                (format!("rec-{n}"), rng.vector(DIMENSION))
            })
            .collect();
        let reply = api.upsert(&records);
        let answered = reply.is_ok();
        let mut ledger = self.ledger.lock().expect("ledger");
        match reply {
            Ok(reply) if reply.status == 200 => {
                ledger.answered += 1;
                for (id, vector) in records {
                    ledger.deletable.push(id.clone());
                    ledger.upserted.insert(id, vector);
                }
            }
            Ok(reply) => {
                ledger.answered += 1;
                ledger
                    .violations
                    .push(format!("upsert answered {}: {}", reply.status, reply.text));
                ledger.upsert_unknown.extend(records);
            }
            Err(_) => {
                ledger.unknown += 1;
                ledger.upsert_unknown.extend(records);
            }
        }
        answered
    }

    fn delete(&self, api: &Api, rng: &mut Rng) -> bool {
        let ids: Vec<String> = {
            let mut ledger = self.ledger.lock().expect("ledger");
            let count = rng.range(1, 4);
            (0..count)
                .filter_map(|_| {
                    if ledger.deletable.is_empty() {
                        return None;
                    }
                    let at = rng.range(0, ledger.deletable.len() as u64) as usize;
                    Some(ledger.deletable.swap_remove(at))
                })
                .collect()
        };
        if ids.is_empty() {
            return true;
        }
        let reply = api.delete(&ids);
        let answered = reply.is_ok();
        let mut ledger = self.ledger.lock().expect("ledger");
        match reply {
            Ok(reply) if reply.status == 200 => {
                ledger.answered += 1;
                // Every id was acknowledged and never deleted before: all of them go.
                let deleted = reply.json["result"]["deleted"].as_u64();
                if deleted != Some(ids.len() as u64) {
                    ledger.violations.push(format!(
                        "delete of {} live ids answered {}",
                        ids.len(),
                        reply.text
                    ));
                }
                ledger.deleted.extend(ids);
            }
            Ok(reply) => {
                ledger.answered += 1;
                ledger
                    .violations
                    .push(format!("delete answered {}: {}", reply.status, reply.text));
                ledger.delete_unknown.extend(ids);
            }
            Err(_) => {
                ledger.unknown += 1;
                ledger.delete_unknown.extend(ids);
            }
        }
        answered
    }

    fn publish(&self, api: &Api, rng: &mut Rng) -> bool {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let body = format!("crash-message-{n}").into_bytes();
        let sent = Instant::now();
        let key = format!("key-{}", rng.range(0, FLOW_KEYS));
        let destination = format!("http://127.0.0.1:{}/hook/{key}", self.receiver_port);
        self.ledger
            .lock()
            .expect("ledger")
            .sent_bodies
            .insert(body.clone());
        let reply = api.post(
            &format!("/v2/publish/{destination}"),
            body.clone(),
            &[
                ("Upstash-Flow-Control-Key", &key),
                ("Upstash-Flow-Control-Value", FLOW_VALUE),
                ("Upstash-Deduplication-Id", &dedup_id(&body)),
            ],
        );
        let answered = reply.is_ok();
        let mut ledger = self.ledger.lock().expect("ledger");
        match reply {
            Ok(reply) if reply.status == 201 => {
                ledger.answered += 1;
                match reply.json["messageId"].as_str() {
                    Some(id) => {
                        if let Some((earlier, _)) =
                            ledger.published.insert(id.to_owned(), (body, sent))
                        {
                            ledger.violations.push(format!(
                                "message id {id} answered twice (first for {:?})",
                                String::from_utf8_lossy(&earlier)
                            ));
                        }
                    }
                    None => ledger
                        .violations
                        .push(format!("publish 201 without a messageId: {}", reply.text)),
                }
            }
            Ok(reply) => {
                ledger.answered += 1;
                ledger
                    .violations
                    .push(format!("publish answered {}: {}", reply.status, reply.text));
            }
            Err(_) => ledger.unknown += 1,
        }
        answered
    }
}

/// Every publish carries its body as its deduplication id.
fn dedup_id(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// How the rounds ended.
#[derive(Debug, Default)]
struct Tally {
    /// SIGKILL under load.
    killed_serving: u64,
    /// SIGKILL during the clean stop a SIGTERM began.
    killed_stopping: u64,
    /// The clean stop finished before the SIGKILL.
    stopped: u64,
    /// SIGKILL during a start (before or just after the banner).
    killed_starting: u64,
}

#[test]
fn acknowledged_work_survives_sigkill_under_a_mixed_load() {
    let rounds = env_u64("FLOWVEC_CRASH_ROUNDS", 20).max(1);
    let seed = env_u64("FLOWVEC_CRASH_SEED", 0x5EED_C4A5);
    // Bounded in time as well as in count: a round is at most 1.5 s of load plus a restart.
    let time_limit = Duration::from_secs(30 + rounds * 5);
    let started = Instant::now();
    println!("crash test: {rounds} rounds, seed {seed:#x}");

    let dir = TempDir::new("crash");
    let data = dir.join("data");
    let receiver = Receiver::start();
    let load = Arc::new(Load {
        ledger: Mutex::new(Ledger::default()),
        next: AtomicU64::new(0),
        receiver_port: receiver.port,
    });
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    let mut recoveries = Vec::new();
    for round in 0..rounds {
        assert!(
            started.elapsed() < time_limit,
            "only {round} of {rounds} rounds in {time_limit:?}"
        );
        // Now and then a start is killed too, during recovery or just after (never the very
        // first start: the directory must exist first).
        if round > 0 && rng.range(0, 4) == 0 {
            let delay = Duration::from_millis(rng.range(0, 150));
            let exit = Server::start_and_kill_after(&data, &ARGS, delay);
            assert_eq!(
                exit.code,
                None,
                "a start killed after {delay:?} had already exited:\n{}",
                exit.output()
            );
            tally.killed_starting += 1;
        }
        let restart = Instant::now();
        let server = Server::start(&data, &ARGS);
        recoveries.push(restart.elapsed());
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (load, stop, url) = (Arc::clone(&load), Arc::clone(&stop), server.url.clone());
                let worker_seed = seed ^ (round << 8 | w).wrapping_mul(0x9E37_79B9);
                std::thread::spawn(move || load.run(&url, worker_seed, &stop))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.range(300, 1500)));
        // The round ends with SIGKILL, with requests in flight; one round in five has a SIGTERM
        // shortly before it, so the clean stop (drain, final snapshot, log compaction) is
        // killed part-way too, or has finished.
        let stopping = rng.range(0, 5) == 0;
        if stopping {
            server.send_sigterm();
            std::thread::sleep(Duration::from_millis(rng.range(0, 300)));
        }
        let exit = server.kill();
        match (stopping, exit.code) {
            (false, None) => tally.killed_serving += 1,
            (true, None) => tally.killed_stopping += 1,
            (true, Some(0)) => tally.stopped += 1,
            _ => panic!("the server ended by itself:\n{}", exit.output()),
        }
        stop.store(true, Ordering::SeqCst);
        for worker in workers {
            worker.join().expect("a load thread panicked");
        }
    }
    let load_time = started.elapsed();

    // The last restart: everything acknowledged is there.
    let server = Server::start(&data, &ARGS);
    let api = server.api();
    let ledger = load.ledger.lock().expect("ledger");
    assert!(
        ledger.violations.is_empty(),
        "{} answers broke the contract, e.g.:\n{}",
        ledger.violations.len(),
        ledger.violations[..ledger.violations.len().min(10)].join("\n")
    );

    let mut ids: Vec<String> = ledger.upserted.keys().cloned().collect();
    ids.extend(ledger.upsert_unknown.keys().cloned());
    ids.sort();
    let fetched = api.fetch_vectors(&ids);
    let (mut present, mut must_be_present, mut may_be_present) = (0u64, 0u64, 0u64);
    let mut problems = Vec::new();
    for (id, got) in ids.iter().zip(&fetched) {
        let (expected, acknowledged) = match ledger.upserted.get(id) {
            Some(vector) => (vector, true),
            None => (&ledger.upsert_unknown[id], false),
        };
        present += u64::from(got.is_some());
        let must_exist =
            acknowledged && !ledger.deleted.contains(id) && !ledger.delete_unknown.contains(id);
        let must_not_exist = ledger.deleted.contains(id);
        if must_exist {
            must_be_present += 1;
        } else if !must_not_exist {
            may_be_present += 1;
        }
        match got {
            Some(vector) if !same_bits(vector, expected) => {
                problems.push(format!("{id}: fetched {vector:?}, upserted {expected:?}"))
            }
            Some(_) if must_not_exist => {
                problems.push(format!("{id} was deleted (answered 200) but is back"));
            }
            None if must_exist => {
                problems.push(format!("{id} was upserted (answered 200) but is missing"));
            }
            _ => {}
        }
    }
    assert!(
        problems.is_empty(),
        "{} records are wrong after {tally:?}, e.g.:\n{}",
        problems.len(),
        problems[..problems.len().min(20)].join("\n")
    );
    let count = api.vector_count();
    assert!(
        (must_be_present..=must_be_present + may_be_present).contains(&count) && count == present,
        "info says {count} vectors; fetch found {present}; {must_be_present} must exist, {may_be_present} may"
    );

    // Every publish answered 201 arrives (the restarted server delivers what was not).
    let waited = Instant::now();
    let missing = receiver.wait_for(ledger.published.keys(), DELIVERY_LIMIT);
    let delivery_wait = waited.elapsed();
    assert!(
        missing.is_empty(),
        "{} of {} publishes answered 201 were never delivered within {DELIVERY_LIMIT:?}, e.g. {:?}\n--- server stderr\n{}",
        missing.len(),
        ledger.published.len(),
        &missing[..missing.len().min(10)],
        server.stderr()
    );
    let deliveries = receiver.deliveries();
    let mut body_of: HashMap<&str, &[u8]> = HashMap::new();
    for delivery in &deliveries {
        assert!(
            ledger.sent_bodies.contains(&delivery.body),
            "a delivery nobody published: id {:?}, body {:?}",
            delivery.id,
            String::from_utf8_lossy(&delivery.body)
        );
        if let Some((body, _)) = ledger.published.get(&delivery.id) {
            assert_eq!(
                body, &delivery.body,
                "message {} was delivered with another body",
                delivery.id
            );
        }
        let first = *body_of.entry(&delivery.id).or_insert(&delivery.body);
        assert_eq!(
            first,
            delivery.body.as_slice(),
            "message id {} was delivered with two bodies",
            delivery.id
        );
    }
    let duplicates = deliveries.len() - body_of.len();

    // The deduplication ids survived every kill: publishing each acknowledged message again,
    // within its 10 minutes, is answered 202 with the id it got the first time.
    let mut not_deduplicated = Vec::new();
    let recent: Vec<_> = ledger
        .published
        .iter()
        .filter(|(_, (_, sent))| sent.elapsed() < Duration::from_secs(540))
        .collect();
    for &(id, (body, _)) in &recent {
        let reply = api
            .post(
                "/v2/publish/http://127.0.0.1:9/never",
                body.clone(),
                &[("Upstash-Deduplication-Id", &dedup_id(body))],
            )
            .expect("the server answers");
        if reply.status != 202 || reply.json["messageId"].as_str() != Some(id.as_str()) {
            not_deduplicated.push(format!("{id}: {} {}", reply.status, reply.text));
        }
    }
    assert!(
        not_deduplicated.is_empty(),
        "{} of {} acknowledged publishes were not recognised when sent again, e.g.:\n{}",
        not_deduplicated.len(),
        recent.len(),
        not_deduplicated[..not_deduplicated.len().min(10)].join("\n")
    );

    let exit = server.terminate();
    assert_eq!(exit.code, Some(0), "{}", exit.output());

    let slowest = recoveries.iter().max().copied().unwrap_or_default();
    println!(
        "{rounds} rounds in {:.1} s: {tally:?} (restarts: slowest {:.2} s); {} answered, {} unknown outcomes; \
         {} upserts acknowledged ({} unknown), {} deletes acknowledged ({} unknown), {} vectors at the end; \
         {} publishes acknowledged, {} deliveries of {} messages, {duplicates} duplicates, all delivered {:.1} s after the last restart; \
         {:.1} s in all",
        load_time.as_secs_f64(),
        slowest.as_secs_f64(),
        ledger.answered,
        ledger.unknown,
        ledger.upserted.len(),
        ledger.upsert_unknown.len(),
        ledger.deleted.len(),
        ledger.delete_unknown.len(),
        count,
        ledger.published.len(),
        deliveries.len(),
        body_of.len(),
        delivery_wait.as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );
    assert!(
        tally.killed_serving + tally.killed_stopping >= rounds * 3 / 4,
        "too few rounds ended in a SIGKILL: {tally:?}"
    );
    assert!(
        ledger.upserted.len() >= 100 && ledger.deleted.len() >= 10 && ledger.published.len() >= 50,
        "the load acknowledged too little to prove anything"
    );
}
