//! Start-up, clean stop and injected faults: bad data directories refuse to start with a clear
//! message and are left as found; SIGTERM loses nothing and redelivers nothing completed; a
//! failing log write or fsync answers 503, applies nothing, and reads go on.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Receiver, Server, TempDir, client, files, post};

const DENSE4: [&str; 2] = ["--dimension", "4"];

fn upsert(url: &str, id: &str, v: [f32; 4]) -> Result<(u16, serde_json::Value), String> {
    post(
        &client(),
        url,
        "/upsert",
        &json!([{"id": id, "vector": v}]).to_string(),
        &[],
    )
}

fn fetch(url: &str, ids: &[&str]) -> Vec<serde_json::Value> {
    let (status, body) = post(
        &client(),
        url,
        "/fetch",
        &json!({"ids": ids}).to_string(),
        &[],
    )
    .expect("fetch answers");
    assert_eq!(status, 200, "{body}");
    body["result"].as_array().expect("a list").clone()
}

fn refused(dir: &std::path::Path, args: &[&str]) -> String {
    match Server::start_with_env(dir, args, &[]) {
        Ok(server) => panic!("started on a bad data directory:\n{}", server.output()),
        Err(failure) => {
            assert_eq!(failure.code, Some(1), "{}", failure.output);
            assert!(failure.output.contains("error: "), "{}", failure.output);
            failure.output
        }
    }
}

#[test]
fn a_second_server_on_the_same_directory_refuses() {
    let dir = TempDir::new("lock");
    let data = dir.join("data");
    let first = Server::start(&data, &DENSE4);
    let message = refused(&data, &DENSE4);
    assert!(
        message.contains("in use") && message.contains("LOCK"),
        "{message}"
    );
    assert_eq!(
        upsert(&first.url, "a", [1.0, 0.0, 0.0, 0.0])
            .expect("served")
            .0,
        200
    );
}

#[test]
fn another_index_configuration_refuses_and_names_the_setting() {
    let dir = TempDir::new("config");
    let data = dir.join("data");
    Server::start(&data, &DENSE4).terminate();
    let message = refused(&data, &["--dimension", "3"]);
    assert!(
        message.contains("--dimension 4") && message.contains("--dimension 3"),
        "{message}"
    );
    let message = refused(&data, &["--dimension", "4", "--metric", "EUCLIDEAN"]);
    assert!(
        message.contains("--metric COSINE") && message.contains("EUCLIDEAN"),
        "{message}"
    );
    let message = refused(&data, &["--kind", "SPARSE"]);
    assert!(message.contains("--kind DENSE"), "{message}");
}

#[test]
fn an_unusable_directory_refuses() {
    let dir = TempDir::new("unusable");
    std::fs::write(dir.join("file"), b"a regular file").expect("write");
    let message = refused(&dir.join("file").join("data"), &DENSE4);
    assert!(
        message.contains("cannot create the data directory"),
        "{message}"
    );
}

#[test]
fn a_directory_holding_garbage_is_refused_and_left_as_found() {
    let dir = TempDir::new("garbage");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("foo"), [0x8fu8, 0, 1, 2, 250, 13]).expect("write");
    let before = files(&data);
    let message = refused(&data, &DENSE4);
    assert!(
        message.contains("not a flowvec data directory") && message.contains("foo"),
        "{message}"
    );
    assert_eq!(files(&data), before);
    assert!(
        !data.join("LOCK").exists(),
        "a foreign directory got a lock file"
    );
}

#[test]
fn a_garbage_log_is_refused_and_left_as_found() {
    let dir = TempDir::new("badlog");
    let data = dir.join("data");
    Server::start(&data, &DENSE4).terminate();
    let garbage: Vec<u8> = (0..9000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    std::fs::write(data.join("log.redb"), &garbage).expect("write");
    let before = files(&data);
    let message = refused(&data, &DENSE4);
    assert!(message.contains("log.redb"), "{message}");
    assert_eq!(files(&data), before);
}

#[test]
fn a_truncated_snapshot_is_refused_with_its_offset_and_left_as_found() {
    let dir = TempDir::new("snapshot");
    let data = dir.join("data");
    let server = Server::start(&data, &["--dimension", "4", "--snapshot-every", "5"]);
    for i in 0..12 {
        assert_eq!(
            upsert(&server.url, &format!("s{i}"), [1.0, i as f32, 0.0, 0.0])
                .expect("up")
                .0,
            200
        );
    }
    server.terminate();
    let snapshot = std::fs::read_dir(&data)
        .expect("read_dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "fvs"))
        .max()
        .expect("a snapshot was written");
    let bytes = std::fs::read(&snapshot).expect("read");
    std::fs::write(&snapshot, &bytes[..bytes.len() / 2]).expect("truncate");
    let before = files(&data);
    let message = refused(&data, &DENSE4);
    let name = snapshot
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        message.contains(&name) && message.contains("byte"),
        "{message}"
    );
    assert_eq!(files(&data), before);
}

#[test]
fn a_flipped_byte_in_a_log_entry_is_refused_and_left_as_found() {
    let dir = TempDir::new("flip");
    let data = dir.join("data");
    let server = Server::start(&data, &DENSE4);
    let marker = "zzzz-marker-1234";
    assert_eq!(
        upsert(&server.url, "before", [1.0, 0.0, 0.0, 0.0])
            .expect("up")
            .0,
        200
    );
    assert_eq!(
        upsert(&server.url, marker, [0.0, 1.0, 0.0, 0.0])
            .expect("up")
            .0,
        200
    );
    assert_eq!(
        upsert(&server.url, "after", [0.0, 0.0, 1.0, 0.0])
            .expect("up")
            .0,
        200
    );
    server.kill(); // no final snapshot: the entries stay in the log
    let path = data.join("log.redb");
    let mut log = std::fs::read(&path).expect("read");
    // The copy-on-write store keeps stale copies of rewritten pages: damage every copy.
    let places: Vec<usize> = log
        .windows(marker.len())
        .enumerate()
        .filter(|(_, w)| *w == marker.as_bytes())
        .map(|(at, _)| at)
        .collect();
    assert!(!places.is_empty(), "the marker is in the log");
    for at in places {
        log[at + 5] ^= 0x20;
    }
    std::fs::write(&path, &log).expect("write");
    let before = files(&data);
    let message = refused(&data, &DENSE4);
    assert!(
        message.contains("log.redb") && (message.contains("entry") || message.contains("damaged")),
        "{message}"
    );
    assert_eq!(files(&data), before);
}

#[test]
fn sigterm_loses_nothing_and_redelivers_nothing_completed() {
    let dir = TempDir::new("sigterm");
    let data = dir.join("data");
    let receiver = Receiver::start();
    let server = Server::start(&data, &DENSE4);
    let client = client();
    let mut ids = Vec::new();
    for i in 0..40 {
        assert_eq!(
            upsert(&server.url, &format!("t{i}"), [1.0, i as f32, 0.5, 0.0])
                .expect("up")
                .0,
            200
        );
        let (status, body) = post(
            &client,
            &server.url,
            &format!("/v2/publish/http://127.0.0.1:{}/hook", receiver.port),
            &format!("m{i}"),
            &[
                ("Upstash-Flow-Control-Key", "k"),
                ("Upstash-Flow-Control-Value", "parallelism=3"),
            ],
        )
        .expect("publish");
        assert_eq!(status, 201, "{body}");
        ids.push(body["messageId"].as_str().expect("id").to_owned());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while ids.iter().any(|id| !receiver.counts().contains_key(id)) {
        assert!(
            Instant::now() < deadline,
            "not all 40 messages were delivered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Completions are logged when the receiver's answer arrives: give them a moment.
    std::thread::sleep(Duration::from_millis(300));
    let output = server.terminate();
    assert!(output.contains("stopped"), "{output}");
    let delivered_before = receiver.counts();

    let server = Server::start(&data, &DENSE4);
    std::thread::sleep(Duration::from_secs(2));
    let records = fetch(
        &server.url,
        &ids.iter()
            .enumerate()
            .map(|(i, _)| format!("t{i}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        records.iter().all(|r| !r.is_null()),
        "a record is missing after SIGTERM"
    );
    assert_eq!(
        receiver.counts(),
        delivered_before,
        "a completed message was delivered again"
    );
    assert!(
        ids.iter().all(|id| delivered_before[id] == 1),
        "duplicates before the stop"
    );
}

/// Starts with a failpoint, writes until one answers 503 (at most 40 writes), checks that
/// reads go on and show exactly the acknowledged writes, then restarts without it.
fn fault_case(failpoint: &str) {
    let dir = TempDir::new("fault");
    let data = dir.join("data");
    let server = Server::start_with_env(&data, &DENSE4, &[("FLOWVEC_FAILPOINTS", failpoint)])
        .unwrap_or_else(|f| panic!("{}", f.output));
    let mut acked = Vec::new();
    let mut failed = None;
    for i in 0..40 {
        let id = format!("f{i}");
        let (status, body) = upsert(&server.url, &id, [1.0, i as f32, 0.0, 0.0]).expect("answered");
        match status {
            200 => acked.push(id),
            503 => {
                assert_eq!(body["status"], 503, "{body}");
                assert!(
                    body["error"]
                        .as_str()
                        .is_some_and(|e| e.contains("injected")),
                    "{body}"
                );
                failed = Some(id);
                break;
            }
            other => panic!("{failpoint}: write answered {other}: {body}"),
        }
    }
    let failed = failed.unwrap_or_else(|| panic!("{failpoint} never fired in 40 writes"));
    // Later writes are refused too; reads go on and show only what was acknowledged.
    let (status, _) = upsert(&server.url, "later", [0.0, 0.0, 0.0, 1.0]).expect("answered");
    assert_eq!(status, 503, "{failpoint}: a write after the failure");
    let mut ids: Vec<&str> = acked.iter().map(String::as_str).collect();
    ids.push(&failed);
    ids.push("later");
    let records = fetch(&server.url, &ids);
    assert!(
        records[..acked.len()].iter().all(|r| !r.is_null()),
        "{failpoint}: an acknowledged record is missing"
    );
    assert!(
        records[acked.len()..]
            .iter()
            .all(serde_json::Value::is_null),
        "{failpoint}: a refused write was applied"
    );
    let (status, info) = post(&client(), &server.url, "/info", "", &[]).expect("info");
    assert_eq!(
        (status, info["result"]["vectorCount"].as_u64()),
        (200, Some(acked.len() as u64))
    );
    server.kill();

    let server = Server::start(&data, &DENSE4);
    let records = fetch(
        &server.url,
        &acked.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(
        records.iter().all(|r| !r.is_null()),
        "{failpoint}: acknowledged records lost after restart"
    );
    assert!(
        fetch(&server.url, &["later"])[0].is_null(),
        "{failpoint}: a write answered 503 after the failure came back"
    );
}

#[test]
fn a_failing_fsync_answers_503_and_applies_nothing() {
    fault_case("log-fsync-fail-at=4");
}

#[test]
fn a_short_log_write_answers_503_and_applies_nothing() {
    fault_case("log-write-short-at=30000");
}

#[test]
fn a_failing_log_write_answers_503_and_applies_nothing() {
    fault_case("log-write-fail-at=30000");
}
