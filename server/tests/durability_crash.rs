//! The durability proof: the real server under a mixed load (upserts, deletes, flow-controlled
//! publishes to a local receiver) is SIGKILLed at random moments and restarted on the same data
//! directory; afterwards every write answered 2xx is there, every delete answered 2xx stayed
//! deleted, and every publish answered 201 is delivered at least once.
//!
//! CI runs 20 kills (about a minute). A longer run by hand:
//! `FLOWVEC_CRASH_ROUNDS=200 cargo test -p flowvec-server --test durability_crash -- --nocapture`.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Receiver, Rng, Server, TempDir, client, post};

/// What the server acknowledged, and what it may or may not have done.
#[derive(Default)]
struct Ledger {
    /// id → vector, answered 2xx.
    upserted: HashMap<String, Vec<f32>>,
    /// Deleted with a 2xx answer.
    deleted: HashSet<String>,
    /// Ids whose upsert or delete got no answer (the kill): not checked.
    uncertain: HashSet<String>,
    /// Message ids of publishes answered 201.
    published: HashSet<String>,
    answers: u64,
    unknown: u64,
}

fn vector(n: u64) -> Vec<f32> {
    // Exactly representable values: the fetched vector must be bit-identical.
    (0..4)
        .map(|i| ((n * 7 + i * 3) % 64) as f32 / 8.0 + 0.125)
        .collect()
}

fn load(
    url: &str,
    receiver_port: u16,
    ledger: &Mutex<Ledger>,
    next: &AtomicU64,
    seed: u64,
    stop: &AtomicBool,
) {
    let client = client();
    let mut rng = Rng::new(seed);
    while !stop.load(Ordering::SeqCst) {
        let roll = rng.range(0, 100);
        if roll < 45 {
            let count = rng.range(1, 6);
            let records: Vec<(String, Vec<f32>)> = (0..count)
                .map(|_| {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    (format!("r{n}"), vector(n))
                })
                .collect();
            let body = json!(
                records
                    .iter()
                    .map(|(id, v)| json!({"id": id, "vector": v}))
                    .collect::<Vec<_>>()
            )
            .to_string();
            let answer = post(&client, url, "/upsert", &body, &[]);
            let mut l = ledger.lock().expect("ledger");
            match answer {
                Ok((200, _)) => {
                    l.answers += 1;
                    l.upserted.extend(records);
                }
                Ok((status, body)) => panic!("upsert answered {status}: {body}"),
                Err(_) => {
                    l.unknown += 1;
                    l.uncertain.extend(records.into_iter().map(|(id, _)| id));
                }
            }
        } else if roll < 65 {
            let victim = {
                let l = ledger.lock().expect("ledger");
                let candidates: Vec<&String> = l
                    .upserted
                    .keys()
                    .filter(|id| !l.deleted.contains(*id) && !l.uncertain.contains(*id))
                    .collect();
                if candidates.is_empty() {
                    continue;
                }
                candidates[rng.range(0, candidates.len() as u64) as usize].clone()
            };
            let answer = post(
                &client,
                url,
                "/delete",
                &json!({"ids": [victim]}).to_string(),
                &[],
            );
            let mut l = ledger.lock().expect("ledger");
            match answer {
                Ok((200, _)) => {
                    l.answers += 1;
                    l.deleted.insert(victim);
                }
                Ok((status, body)) => panic!("delete answered {status}: {body}"),
                Err(_) => {
                    l.unknown += 1;
                    l.uncertain.insert(victim);
                }
            }
        } else {
            let key = format!("k{}", rng.range(0, 4));
            let n = next.fetch_add(1, Ordering::SeqCst);
            let answer = post(
                &client,
                url,
                &format!("/v2/publish/http://127.0.0.1:{receiver_port}/hook"),
                &format!("message {n}"),
                &[
                    ("Upstash-Flow-Control-Key", key.as_str()),
                    ("Upstash-Flow-Control-Value", "parallelism=2, rate=50"),
                ],
            );
            let mut l = ledger.lock().expect("ledger");
            match answer {
                Ok((201, body)) => {
                    l.answers += 1;
                    let id = body["messageId"].as_str().expect("messageId").to_owned();
                    l.published.insert(id);
                }
                Ok((status, body)) => panic!("publish answered {status}: {body}"),
                Err(_) => l.unknown += 1,
            }
        }
    }
}

#[test]
fn acknowledged_writes_survive_sigkill_under_load() {
    let rounds: u64 = std::env::var("FLOWVEC_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let time_limit = Duration::from_secs(30 + rounds * 6);
    let started = Instant::now();
    let dir = TempDir::new("crash");
    let data = dir.join("data");
    let args = [
        "--dimension",
        "4",
        "--metric",
        "EUCLIDEAN",
        "--snapshot-every",
        "200",
    ];
    let receiver = Receiver::start();
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let next = Arc::new(AtomicU64::new(0));
    let mut rng = Rng::new(0xC0FF_EE15);
    let mut kills = 0;
    for round in 0..rounds {
        if started.elapsed() > time_limit {
            break;
        }
        let server = Server::start(&data, &args);
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let (url, ledger, next, stop) = (
                    server.url.clone(),
                    Arc::clone(&ledger),
                    Arc::clone(&next),
                    Arc::clone(&stop),
                );
                let port = receiver.port;
                let seed = round * 16 + w + 1;
                std::thread::spawn(move || load(&url, port, &ledger, &next, seed, &stop))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.range(300, 1500)));
        server.kill(); // SIGKILL, with requests in flight
        kills += 1;
        stop.store(true, Ordering::SeqCst);
        for w in workers {
            w.join()
                .expect("a load thread panicked (an unexpected answer)");
        }
    }

    // Recovery: everything acknowledged is there.
    let server = Server::start(&data, &args);
    let client = client();
    let l = ledger.lock().expect("ledger");
    let mut checked = 0;
    let ids: Vec<&String> = l
        .upserted
        .keys()
        .filter(|id| !l.uncertain.contains(*id))
        .collect();
    for chunk in ids.chunks(200) {
        let body = json!({"ids": chunk, "includeVectors": true}).to_string();
        let (status, answer) = post(&client, &server.url, "/fetch", &body, &[]).expect("fetch");
        assert_eq!(status, 200, "{answer}");
        for (id, record) in chunk
            .iter()
            .zip(answer["result"].as_array().expect("a list"))
        {
            if l.deleted.contains(*id) {
                assert!(
                    record.is_null(),
                    "{id} was deleted (2xx) but came back: {record}"
                );
            } else {
                assert!(!record.is_null(), "{id} was upserted (2xx) but is missing");
                let got: Vec<f32> =
                    serde_json::from_value(record["vector"].clone()).expect("vector");
                assert_eq!(got, l.upserted[*id], "{id}: vector differs");
            }
            checked += 1;
        }
    }
    // Every publish answered 201 arrives (the restarted server redelivers what was lost).
    let deadline = Instant::now() + Duration::from_secs(60);
    let missing = loop {
        let counts = receiver.counts();
        let missing: Vec<&String> = l
            .published
            .iter()
            .filter(|id| !counts.contains_key(*id))
            .collect();
        if missing.is_empty() || Instant::now() > deadline {
            break missing.len();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let counts = receiver.counts();
    let duplicates: usize = counts.values().map(|c| c - 1).sum();
    println!(
        "{kills} SIGKILLs in {:.1} s: {} answers, {} unknown outcomes; {checked} records checked \
         ({} deleted), {} publishes: {missing} missing, {duplicates} duplicate deliveries",
        started.elapsed().as_secs_f64(),
        l.answers,
        l.unknown,
        l.deleted.len(),
        l.published.len(),
    );
    assert!(
        kills >= rounds.min(20),
        "only {kills} kills in the time limit"
    );
    assert!(
        checked > 100,
        "the load acknowledged too little to prove anything: {checked}"
    );
    assert!(!l.published.is_empty(), "no publish was acknowledged");
    assert_eq!(
        missing,
        0,
        "publishes answered 201 were never delivered\n{}",
        server.output()
    );
    let output = server.terminate();
    assert!(output.contains("stopped"), "{output}");
}
