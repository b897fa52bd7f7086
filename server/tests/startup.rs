//! Start-up, clean stop and injected log faults, each against the real binary:
//!
//! - data directories the server must not use (held by another server, made with another
//!   index configuration, not creatable, foreign, with a damaged log or snapshot) are refused
//!   with exit code 1 and an `error: ` line naming the problem, and are left exactly as found;
//! - a crash leaves nothing the next start cannot recover by itself;
//! - SIGTERM loses no acknowledged write and delivers no completed message again;
//! - a failing log write or fsync answers 503 (`{"error", "status"}`) to that write and every
//!   later one, reads go on showing exactly the acknowledged writes, and a restart has them all.

mod harness;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::{
    Api, Exit, Receiver, Rng, Server, TempDir, assert_error_body, assert_files_unchanged, copy_dir,
    dir_files, find_all, same_bits,
};

const DENSE4: [&str; 2] = ["--dimension", "4"];

/// Upserts `records` one by one; each must answer 200.
fn write_all(api: &Api, records: &[(String, Vec<f32>)]) {
    for record in records {
        let reply = api
            .upsert(std::slice::from_ref(record))
            .expect("upsert answers");
        assert_eq!(reply.status, 200, "upsert {}: {}", record.0, reply.text);
    }
}

/// `count` records `<prefix>-<i>` with random vectors.
fn records(rng: &mut Rng, prefix: &str, count: usize) -> Vec<(String, Vec<f32>)> {
    (0..count)
        .map(|i| (format!("{prefix}-{i}"), rng.vector(4)))
        .collect()
}

/// Every record is fetchable with exactly its vector.
fn assert_present(api: &Api, records: &[(String, Vec<f32>)], context: &str) {
    let ids: Vec<String> = records.iter().map(|(id, _)| id.clone()).collect();
    for ((id, vector), got) in records.iter().zip(api.fetch_vectors(&ids)) {
        match got {
            Some(got) => assert!(
                same_bits(&got, vector),
                "{context}: {id} is {got:?}, was written as {vector:?}"
            ),
            None => panic!("{context}: {id} was acknowledged but is missing"),
        }
    }
}

/// Every id is absent.
fn assert_absent(api: &Api, ids: &[String], context: &str) {
    for (id, got) in ids.iter().zip(api.fetch_vectors(ids)) {
        assert!(got.is_none(), "{context}: {id} is there: {got:?}");
    }
}

/// A refusal: exit code 1, no banner, and an `error: ` line on stderr holding every needle.
/// Returns that line.
fn assert_refused(exit: &Exit, needles: &[&str]) -> String {
    assert_eq!(exit.code, Some(1), "{}", exit.output());
    assert!(
        !exit.stdout.contains("listening on"),
        "it served before refusing:\n{}",
        exit.output()
    );
    let line = exit
        .stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no `error: ` line:\n{}", exit.output()))
        .to_owned();
    for needle in needles {
        assert!(
            line.contains(needle),
            "the error does not mention {needle:?}: {line}"
        );
    }
    line
}

/// A data directory made by a real run: `records` written, then stopped by SIGKILL (the log
/// keeps its entries) or SIGTERM (final snapshot, log emptied).
fn seeded(data: &Path, args: &[&str], records: &[(String, Vec<f32>)], sigterm: bool) {
    let server = Server::start(data, args);
    write_all(&server.api(), records);
    if sigterm {
        let exit = server.terminate();
        assert_eq!(exit.code, Some(0), "{}", exit.output());
        assert!(exit.stdout.contains("stopped"), "{}", exit.output());
    } else {
        server.kill();
    }
}

#[test]
fn a_second_server_on_the_same_directory_refuses_while_the_first_runs() {
    let dir = TempDir::new("lock");
    let data = dir.join("data");
    let mut rng = Rng::new(1);
    let first = Server::start(&data, &DENSE4);
    let before = records(&mut rng, "lock-a", 3);
    write_all(&first.api(), &before);

    let files = dir_files(&data, &[]);
    let exit = Server::refused(&data, &DENSE4);
    assert_refused(&exit, &["in use", "LOCK"]);
    // The refused start touched nothing, and the first server goes on.
    assert_files_unchanged(&data, &files, &[]);
    let after = records(&mut rng, "lock-b", 3);
    write_all(&first.api(), &after);
    assert_present(&first.api(), &before, "the first server");

    // The lock dies with its process: after a SIGKILL the directory starts again.
    first.kill();
    let server = Server::start(&data, &DENSE4);
    assert_present(
        &server.api(),
        &[before, after].concat(),
        "after the SIGKILL",
    );
}

#[test]
fn another_index_configuration_refuses_and_names_the_setting_and_both_values() {
    let dir = TempDir::new("config");
    let data = dir.join("data");
    let mut rng = Rng::new(2);
    let written = records(&mut rng, "cfg", 4);
    seeded(&data, &DENSE4, &written, true);
    let files = dir_files(&data, &["LOCK"]);
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["--dimension", "3"],
            &["dimension", "--dimension 4", "--dimension 3"],
        ),
        (
            &["--dimension", "4", "--metric", "EUCLIDEAN"],
            &["metric", "COSINE", "EUCLIDEAN"],
        ),
        (&["--kind", "SPARSE"], &["kind", "DENSE", "SPARSE"]),
    ];
    for (args, needles) in cases {
        let exit = Server::refused(&data, args);
        assert_refused(&exit, needles);
        assert_files_unchanged(&data, &files, &["LOCK"]);
    }
    let server = Server::start(&data, &DENSE4);
    assert_present(&server.api(), &written, "with the original configuration");
}

#[test]
fn a_data_directory_that_cannot_be_created_refuses() {
    let dir = TempDir::new("unusable");
    let file = dir.join("regular-file");
    std::fs::write(&file, b"not a directory").expect("write");
    // Its parent is a regular file (root ignores permission bits, not this).
    let under = file.join("data");
    let exit = Server::refused(&under, &DENSE4);
    assert_refused(
        &exit,
        &[
            "cannot create the data directory",
            &under.display().to_string(),
        ],
    );
    // The data directory itself is a regular file.
    let exit = Server::refused(&file, &DENSE4);
    assert_refused(&exit, &[&file.display().to_string()]);
    assert_files_unchanged(
        dir.path(),
        &[("regular-file".to_owned(), b"not a directory".to_vec())].into(),
        &[],
    );
}

#[test]
fn a_directory_holding_garbage_is_refused_and_left_as_found() {
    let dir = TempDir::new("garbage");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("foo"), Rng::new(3).bytes(5000)).expect("write");
    let files = dir_files(&data, &[]);
    let exit = Server::refused(&data, &DENSE4);
    assert_refused(&exit, &["not a flowvec data directory", "foo"]);
    assert!(
        !data.join("LOCK").exists(),
        "a foreign directory got a lock file"
    );
    assert_files_unchanged(&data, &files, &[]);
}

#[test]
fn a_damaged_log_is_refused_naming_it_and_left_as_found() {
    let dir = TempDir::new("badlog");
    let seed = dir.join("seed");
    let mut rng = Rng::new(4);
    seeded(&seed, &DENSE4, &records(&mut rng, "log", 20), false);
    let log = std::fs::read(seed.join("log.redb")).expect("read the log");
    assert!(log.len() > 8192, "a real log is several pages");

    let mut header = log.clone();
    for byte in &mut header[9..512] {
        *byte = rng.next_u64() as u8; // the magic stays, the header after it is garbage
    }
    let variants: [(&str, Vec<u8>); 5] = [
        ("random bytes", rng.bytes(9000)),
        ("random 64 KiB", rng.bytes(64 << 10)),
        ("header garbage", header),
        ("first page only", log[..4096].to_vec()),
        ("cut in half", log[..log.len() / 2].to_vec()),
    ];
    for (i, (what, bytes)) in variants.into_iter().enumerate() {
        // A data directory with a valid config.json from the real run, and this log.
        let data = dir.join(&format!("data-{i}"));
        std::fs::create_dir_all(&data).expect("mkdir");
        std::fs::copy(seed.join("config.json"), data.join("config.json")).expect("copy");
        std::fs::write(data.join("log.redb"), &bytes).expect("write");
        let files = dir_files(&data, &[]);
        let exit = Server::refused(&data, &DENSE4);
        let line = assert_refused(&exit, &["log.redb"]);
        assert!(
            line.contains("damaged") || line.contains("corrupt") || line.contains("does not open"),
            "{what}: {line}"
        );
        assert_files_unchanged(&data, &files, &["LOCK"]);
    }
}

/// The offset in "... at byte N ...", if the message names one.
fn byte_offset(message: &str) -> Option<u64> {
    let rest = &message[message.find("byte ")? + 5..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn a_damaged_snapshot_is_refused_naming_it_and_a_byte_offset_and_left_as_found() {
    let dir = TempDir::new("snapshot");
    let seed = dir.join("seed");
    let mut rng = Rng::new(5);
    let args = ["--dimension", "4", "--snapshot-every", "5"];
    seeded(&seed, &args, &records(&mut rng, "snap", 12), true);
    let newest = std::fs::read_dir(&seed)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("snapshot-") && name.ends_with(".fvs"))
        .max()
        .expect("a snapshot was written");
    let image = std::fs::read(seed.join(&newest)).expect("read");
    let half = image.len() / 2;

    let mut flipped = image.clone();
    flipped[half] ^= 0x10;
    for (i, (what, bytes)) in [("truncated", image[..half].to_vec()), ("flipped", flipped)]
        .into_iter()
        .enumerate()
    {
        let data = dir.join(&format!("data-{i}"));
        copy_dir(&seed, &data);
        std::fs::write(data.join(&newest), &bytes).expect("write");
        let files = dir_files(&data, &["LOCK"]);
        let exit = Server::refused(&data, &args);
        let line = assert_refused(&exit, &[&newest]);
        let offset = byte_offset(&line).unwrap_or_else(|| panic!("{what}: no byte offset: {line}"));
        assert!(
            offset <= image.len() as u64,
            "{what}: offset {offset} is past the file: {line}"
        );
        assert_files_unchanged(&data, &files, &["LOCK"]);
    }
}

/// A log whose entries hold a distinctive id: three acknowledged upserts, then SIGKILL (no
/// final snapshot, so the entries stay in the log). Returns the records and where the marker
/// is in log.redb (the copy-on-write store keeps older copies of a rewritten page).
fn log_with_marker(data: &Path) -> (Vec<(String, Vec<f32>)>, Vec<usize>) {
    let mut rng = Rng::new(6);
    let written = vec![
        ("aaaa-before-0001".to_owned(), rng.vector(4)),
        ("zzzz-marker-1234".to_owned(), rng.vector(4)),
        ("yyyy-after-5678".to_owned(), rng.vector(4)),
    ];
    seeded(data, &DENSE4, &written, false);
    let log = std::fs::read(data.join("log.redb")).expect("read");
    let places = find_all(&log, b"zzzz-marker-1234");
    assert!(!places.is_empty(), "the marker is in log.redb");
    (written, places)
}

fn flip(path: &Path, at: &[usize]) {
    let mut bytes = std::fs::read(path).expect("read");
    for &at in at {
        bytes[at] ^= 0x20;
    }
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn a_flipped_byte_in_every_copy_of_a_log_entry_is_refused_and_left_as_found() {
    let dir = TempDir::new("flip-all");
    let data = dir.join("data");
    let (_, places) = log_with_marker(&data);
    let inside: Vec<usize> = places.iter().map(|at| at + 5).collect();
    flip(&data.join("log.redb"), &inside);
    let files = dir_files(&data, &["LOCK"]);
    let exit = Server::refused(&data, &DENSE4);
    let line = assert_refused(&exit, &["log.redb"]);
    assert!(line.contains("entry") || line.contains("damaged"), "{line}");
    assert_files_unchanged(&data, &files, &["LOCK"]);
}

/// One flipped byte in one copy of an entry: a stale copy is harmless, the live one must be
/// refused. Either way no acknowledged write may silently disappear.
#[test]
fn a_flipped_byte_in_any_one_copy_of_a_log_entry_never_loses_an_acknowledged_write() {
    let dir = TempDir::new("flip-one");
    let seed = dir.join("seed");
    let (written, places) = log_with_marker(&seed);
    let mut outcomes = Vec::new();
    for (i, at) in places.iter().enumerate() {
        let data = dir.join(&format!("data-{i}"));
        copy_dir(&seed, &data);
        flip(&data.join("log.redb"), &[at + 5]);
        let files = dir_files(&data, &["LOCK"]);
        match Server::try_start(&data, &DENSE4, &[]) {
            Err(exit) => {
                let line = assert_refused(&exit, &["log.redb"]);
                assert_files_unchanged(&data, &files, &["LOCK"]);
                outcomes.push(format!("copy at {at}: refused ({line})"));
            }
            Ok(server) => {
                let ids: Vec<String> = written.iter().map(|(id, _)| id.clone()).collect();
                let got = server.api().fetch_vectors(&ids);
                let lost: Vec<&String> = ids
                    .iter()
                    .zip(&got)
                    .filter(|(_, got)| got.is_none())
                    .map(|(id, _)| id)
                    .collect();
                assert!(
                    lost.is_empty(),
                    "a flipped byte in the copy of the marker entry at offset {at} of log.redb \
                     (copies at {places:?}) was not refused, and the acknowledged {lost:?} are \
                     gone; the server said:\n{}",
                    server.stdout()
                );
                assert_present(&server.api(), &written, "a stale copy damaged");
                outcomes.push(format!("copy at {at}: started, nothing lost"));
            }
        }
    }
    println!("{}", outcomes.join("\n"));
}

#[test]
fn a_crash_during_the_first_start_does_not_stop_the_next() {
    // Killed right after taking the lock: only LOCK is there.
    let dir = TempDir::new("first-start");
    let data = dir.join("lock-only");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("LOCK"), b"").expect("write");
    let server = Server::start(&data, &DENSE4);
    let written = records(&mut Rng::new(7), "first", 2);
    write_all(&server.api(), &written);
    drop(server);

    // Killed while writing config.json (it goes to config.json.tmp, then is renamed):
    // nothing was acknowledged yet, the directory is the server's own.
    let data = dir.join("config-tmp");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("LOCK"), b"").expect("write");
    std::fs::write(data.join("config.json.tmp"), b"{\n  \"kind\": \"DE").expect("write");
    let server = Server::try_start(&data, &DENSE4, &[]).unwrap_or_else(|exit| {
        panic!(
            "a directory left by a start killed while writing config.json is refused:\n{}",
            exit.output()
        )
    });
    write_all(&server.api(), &written);
    drop(server);

    // Killed after creating the log, before config.json: the log holds no entry yet.
    let data = dir.join("log-only");
    std::fs::create_dir_all(&data).expect("mkdir");
    let empty = redb::Database::create(data.join("log.redb")).expect("create a redb file");
    let tx = empty.begin_write().expect("begin");
    let table: redb::TableDefinition<'_, u64, &[u8]> = redb::TableDefinition::new("log");
    tx.open_table(table).expect("table");
    tx.commit().expect("commit");
    drop(empty);
    let server = Server::try_start(&data, &DENSE4, &[]).unwrap_or_else(|exit| {
        panic!(
            "a directory left by a start killed after creating its log is refused:\n{}",
            exit.output()
        )
    });
    write_all(&server.api(), &written);
    assert_present(&server.api(), &written, "after a first start killed early");
}

/// config.json says the directory was in use; a log that is gone or emptied would mean
/// starting over on an empty history, losing every write since the last snapshot.
#[test]
fn a_missing_or_emptied_log_is_refused_and_left_as_found() {
    let dir = TempDir::new("no-log");
    for (case, sigterm) in [
        ("removed", false),
        ("emptied", false),
        ("emptied-after-stop", true),
    ] {
        let data = dir.join(case);
        let written = records(&mut Rng::new(11), case, 3);
        seeded(&data, &DENSE4, &written, sigterm);
        let log = data.join("log.redb");
        if case == "removed" {
            std::fs::remove_file(&log).expect("remove");
        } else {
            std::fs::write(&log, b"").expect("truncate");
        }
        let files = dir_files(&data, &["LOCK"]);
        let exit = Server::refused(&data, &DENSE4);
        assert_refused(&exit, &["log.redb", "config.json"]);
        assert_files_unchanged(&data, &files, &["LOCK"]);
    }
}

/// A log holding entries without config.json beside it is not a first start's leftover.
#[test]
fn a_log_with_entries_but_no_configuration_is_refused_and_left_as_found() {
    let dir = TempDir::new("no-config");
    let data = dir.join("data");
    seeded(&data, &DENSE4, &records(&mut Rng::new(12), "x", 2), false);
    std::fs::remove_file(data.join("config.json")).expect("remove");
    let files = dir_files(&data, &["LOCK"]);
    let exit = Server::refused(&data, &DENSE4);
    assert_refused(&exit, &["log.redb", "entries", "config.json"]);
    assert_files_unchanged(&data, &files, &["LOCK"]);
}

#[test]
fn sigterm_loses_nothing_and_redelivers_nothing_completed() {
    let dir = TempDir::new("sigterm");
    let data = dir.join("data");
    let receiver = Receiver::start();
    let mut rng = Rng::new(8);
    let server = Server::start(&data, &DENSE4);
    let api = server.api();
    let kept = records(&mut rng, "term-kept", 20);
    let gone = records(&mut rng, "term-gone", 6);
    write_all(&api, &kept);
    write_all(&api, &gone);
    let gone_ids: Vec<String> = gone.iter().map(|(id, _)| id.clone()).collect();
    let reply = api.delete(&gone_ids).expect("delete answers");
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json["result"]["deleted"], 6, "{}", reply.text);

    let mut published: HashMap<String, Vec<u8>> = HashMap::new();
    for i in 0..30 {
        let body = format!("term-message-{i}").into_bytes();
        let key = format!("term-key-{}", i % 3);
        let reply = api
            .publish(&receiver.url("term"), &body, &key, "parallelism=2, rate=50")
            .expect("publish answers");
        assert_eq!(reply.status, 201, "{}", reply.text);
        let id = reply.json["messageId"].as_str().expect("a messageId");
        assert!(
            published.insert(id.to_owned(), body).is_none(),
            "message id {id} twice"
        );
    }
    let missing = receiver.wait_for(published.keys(), Duration::from_secs(30));
    assert!(missing.is_empty(), "not delivered: {missing:?}");
    // No pause here: the clean stop itself must finish the calls it made (log Complete).
    let exit = server.terminate();
    assert_eq!(exit.code, Some(0), "{}", exit.output());
    assert!(exit.stdout.contains("stopped"), "{}", exit.output());
    let before = receiver.counts();
    for (id, count) in &before {
        assert_eq!(
            *count, 1,
            "message {id} was delivered {count} times without a crash"
        );
    }
    for delivery in receiver.deliveries() {
        assert_eq!(published[&delivery.id], delivery.body, "{}", delivery.id);
    }

    let server = Server::start(&data, &DENSE4);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        receiver.counts(),
        before,
        "the restarted server delivered completed messages again"
    );
    let api = server.api();
    assert_present(&api, &kept, "after SIGTERM");
    assert_absent(&api, &gone_ids, "deleted before SIGTERM");
    assert_eq!(api.vector_count(), kept.len() as u64);

    // Still a working queue, and message ids are not handed out again.
    let reply = api
        .publish(
            &receiver.url("term"),
            b"after-restart",
            "term-key-0",
            "parallelism=2, rate=50",
        )
        .expect("publish answers");
    assert_eq!(reply.status, 201, "{}", reply.text);
    let id = reply.json["messageId"]
        .as_str()
        .expect("a messageId")
        .to_owned();
    assert!(!published.contains_key(&id), "message id {id} was reused");
    let missing = receiver.wait_for(std::iter::once(&id), Duration::from_secs(10));
    assert!(
        missing.is_empty(),
        "the publish after the restart was not delivered"
    );
    let exit = server.terminate();
    assert_eq!(exit.code, Some(0), "{}", exit.output());
}

/// What one failpoint run saw.
struct FaultRun {
    acked: usize,
    /// The write answered 503 was there after the restart (allowed: its outcome is unknown).
    failed_came_back: bool,
}

/// Starts with `FLOWVEC_FAILPOINTS=failpoint`, upserts one record at a time until one answers
/// 503 (at most 20), checks that every later write answers 503 and that reads show exactly
/// the acknowledged records, then SIGKILLs (or SIGTERMs) and restarts without failpoints:
/// every acknowledged record is there, nothing written after the failure is, and the log
/// takes writes again.
fn fault_case(failpoint: &str, sigterm: bool, extra_checks: bool) -> FaultRun {
    let dir = TempDir::new("fault");
    let data = dir.join("data");
    let mut rng = Rng::new(9);
    let server = Server::try_start(&data, &DENSE4, &[("FLOWVEC_FAILPOINTS", failpoint)])
        .unwrap_or_else(|exit| panic!("{failpoint}: did not start:\n{}", exit.output()));
    assert!(
        server.stdout().contains("failpoints armed"),
        "{failpoint}: {}",
        server.stdout()
    );
    let api = server.api();
    let mut acked = Vec::new();
    let mut failed = None;
    for i in 0..20 {
        let record = (format!("fault-{i}"), rng.vector(4));
        let reply = api
            .upsert(std::slice::from_ref(&record))
            .unwrap_or_else(|err| panic!("{failpoint}: upsert {i} got no answer: {err}"));
        match reply.status {
            200 => acked.push(record),
            503 => {
                assert_error_body(&reply, 503);
                failed = Some(record);
                break;
            }
            other => panic!("{failpoint}: upsert {i} answered {other}: {}", reply.text),
        }
    }
    let failed = failed.unwrap_or_else(|| panic!("{failpoint}: no 503 in 20 writes"));
    assert!(
        !acked.is_empty(),
        "{failpoint} fired at the first write: choose a later point"
    );

    // Every later write is refused the same way; nothing of it is applied.
    let later = records(&mut rng, "later", 3);
    for record in &later {
        let reply = api.upsert(std::slice::from_ref(record)).expect("answers");
        assert_error_body(&reply, 503);
    }
    if extra_checks {
        let reply = api.delete(&[acked[0].0.clone()]).expect("answers");
        assert_error_body(&reply, 503);
        let reply = api
            .publish(
                "http://127.0.0.1:9/nowhere",
                b"x",
                "fault-key",
                "parallelism=1",
            )
            .expect("answers");
        assert_error_body(&reply, 503);
    }
    // Reads go on and show exactly what was acknowledged.
    assert_present(&api, &acked, failpoint);
    let mut refused_ids: Vec<String> = later.iter().map(|(id, _)| id.clone()).collect();
    refused_ids.push(failed.0.clone());
    assert_absent(&api, &refused_ids, failpoint);
    assert_eq!(api.vector_count(), acked.len() as u64, "{failpoint}: info");
    if sigterm {
        let exit = server.terminate();
        assert_eq!(exit.code, Some(0), "{failpoint}: {}", exit.output());
    } else {
        server.kill();
    }

    let server = Server::start(&data, &DENSE4);
    let api = server.api();
    assert_present(&api, &acked, &format!("{failpoint}, after the restart"));
    let later_ids: Vec<String> = later.iter().map(|(id, _)| id.clone()).collect();
    assert_absent(&api, &later_ids, &format!("{failpoint}, after the restart"));
    let failed_now = api.fetch_vectors(std::slice::from_ref(&failed.0)).remove(0);
    if let Some(vector) = &failed_now {
        assert!(same_bits(vector, &failed.1), "{failpoint}: torn write");
    }
    let failed_came_back = failed_now.is_some();
    assert_eq!(
        api.vector_count(),
        acked.len() as u64 + u64::from(failed_came_back)
    );
    if extra_checks {
        // The log takes writes again, durably.
        let again = records(&mut rng, "again", 2);
        write_all(&api, &again);
        server.kill();
        let server = Server::start(&data, &DENSE4);
        assert_present(&server.api(), &[acked.clone(), again].concat(), failpoint);
    }
    FaultRun {
        acked: acked.len(),
        failed_came_back,
    }
}

fn report(failpoint: &str, run: &FaultRun) {
    println!(
        "{failpoint}: {} writes acknowledged; the write answered 503 was {} after the restart",
        run.acked,
        if run.failed_came_back {
            "there (its outcome was unknown)"
        } else {
            "absent"
        }
    );
}

#[test]
fn a_failing_fsync_answers_503_and_reads_go_on() {
    let failpoint = "log-fsync-fail-at=3";
    report(failpoint, &fault_case(failpoint, false, true));
}

#[test]
fn a_short_log_write_answers_503_and_reads_go_on() {
    let failpoint = "log-write-short-at=60000";
    report(failpoint, &fault_case(failpoint, false, true));
}

#[test]
fn a_failing_log_write_answers_503_and_reads_go_on() {
    // Stopped with SIGTERM: a clean stop after a log failure must still exit and restart.
    let failpoint = "log-write-fail-at=60000";
    report(failpoint, &fault_case(failpoint, true, true));
}

/// Short and failed writes at many byte positions (every 500 bytes over a few commits: data
/// pages and the commit's header write), so commits are torn in many of the places a crash
/// could tear them: the restart must always succeed with every acknowledged write and nothing
/// written after the failure.
#[test]
fn log_writes_failing_anywhere_in_a_commit_lose_nothing_acknowledged() {
    let started = Instant::now();
    let mut cases = 0;
    let mut came_back = Vec::new();
    for at in (40_000..70_000).step_by(500) {
        if started.elapsed() > Duration::from_secs(25) {
            break;
        }
        let kind = if at % 1000 == 0 { "short" } else { "fail" };
        let failpoint = format!("log-write-{kind}-at={at}");
        if fault_case(&failpoint, false, false).failed_came_back {
            came_back.push(failpoint);
        }
        cases += 1;
    }
    println!(
        "{cases} failpoints in {:.1} s; the write answered 503 was there after the restart with {came_back:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(cases >= 30, "only {cases} cases in the time limit");
}

#[test]
fn a_model_directory_that_is_missing_or_does_not_fit_the_index_refuses() {
    let dir = TempDir::new("model-dir");
    let empty = dir.join("no-model");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let data = dir.join("data");
    let empty_arg = empty.display().to_string();
    let exit = Server::refused(&data, &["--dimension", "4", "--model-dir", &empty_arg]);
    assert_refused(
        &exit,
        &[
            "--model-dir",
            "config.json",
            "is missing",
            "scripts/fetch-minilm",
        ],
    );

    // A real model (fetched into the cache by the script, as the README says) for an index of
    // another dimension, then for a sparse index: refused, naming both sides.
    let fetched = std::process::Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fetch-minilm"))
        .env_remove("FLOWVEC_MODEL_DIR")
        .output()
        .expect("run scripts/fetch-minilm");
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    let model = String::from_utf8_lossy(&fetched.stdout).trim().to_owned();
    let exit = Server::refused(&data, &["--dimension", "4", "--model-dir", &model]);
    assert_refused(&exit, &["dense text model", "dimension 384", "dimension 4"]);
    let exit = Server::refused(
        &dir.join("sparse"),
        &["--kind", "SPARSE", "--model-dir", &model],
    );
    assert_refused(
        &exit,
        &["dense text model", "SPARSE index has no dense part"],
    );
}
