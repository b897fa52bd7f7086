//! Replay gives the same state (the acceptance test of the state layer): random command
//! sequences over all three engines (vector records and namespaces; flow-control publish, key
//! operations, dispatch, complete, requeue, cancel; management accounts, databases and password
//! resets) are applied to a machine that never stops, and to a second machine that is saved
//! and loaded at random cut points and gets every later command through `LogEntry` bytes.
//! Every outcome and every read afterwards must be equal (proptest, fixed seed); damaged images
//! and log entries are refused with an error that says where. The index is hybrid with the
//! built-in BM25 embedder, so text upserts (`UpsertData`, whose BM25 weights depend on the
//! namespace's records when applied) must replay to the same weights.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use flowvec::flow::{FlowConfig, Limits, MessageId, Period, Pin, Timestamp, Unpin};
use flowvec::management::{ApiKey, ApiKeyHash, Database, DatabaseSecrets, Region};
use flowvec::state::{Applied, Command, LogEntry, StateError, StateMachine};
use flowvec::vector::text::Bm25Params;
use flowvec::vector::{
    Delete, Fetch, IndexConfig, IndexInfo, MetadataUpdateMode, Metric, Query, QueryMode, Range,
    SparseVector, Update, Vector, WeightingStrategy,
};
use flowvec::wire::{DeliveryResponse, Message, SigningKeys, new_key};
use proptest::prelude::*;
use proptest::sample::Index as Cut;
use proptest::test_runner::{FileFailurePersistence, RngSeed, TestCaseError};
use serde_json::{Value, json};

const T0: u64 = 1_700_000_000_000;
const DIM: usize = 4;
const NAMESPACES: [&str; 3] = ["", "n1", "n2"];
const IDS: [&str; 6] = ["v0", "v1", "v2", "v3", "v4", "v5"];
const KEYS: [&str; 3] = ["k0", "k1", "k2"];
const LIMITS: [&str; 5] = [
    "parallelism=2,rate=3,period=2s",
    "parallelism=1",
    "rate=2,period=1s",
    "rate=1,period=3s",
    "parallelism=3,rate=5,period=1s",
];
/// Delete filters: matching, never matching, blank (refused) and malformed (refused).
const DELETE_FILTERS: [&str; 6] = ["g = 1", "g >= 2", "g < 1", "h = 1", "", "g >="];
const QUERY_FILTERS: [&str; 3] = ["", "g >= 1", "g = 2"];
const EMAILS: [&str; 3] = ["ann@example.com", "bob@example.com", "cy@example.com"];
const DATABASES: [&str; 3] = ["db-0", "db-1", "db-2"];
/// Short, so keys are reclaimed within a sequence.
const TTL_MS: u64 = 4_000;
/// Texts of text upserts: repeated terms, stopwords, Unicode, and one without terms (refused).
const TEXTS: [&str; 6] = [
    "apple pear apple",
    "The pear and the plum",
    "plum, fig; kiwi and apple: a long one with many words and fig again",
    "Über fig",
    "kiwi",
    "to be or not to be",
];
/// Text queries: plain, IDF-weighted and hybrid (with a dense vector).
const TEXT_QUERIES: [&str; 4] = ["apple", "pear plum", "fig über kiwi", "the of"];

fn index_config() -> IndexConfig {
    IndexConfig::hybrid(DIM, Metric::Cosine).with_bm25(Bm25Params::default())
}

fn flow_config(global: Option<u8>) -> FlowConfig {
    FlowConfig {
        global_parallelism: global.and_then(|g| NonZeroU32::new(u32::from(g))),
        idle_key_ttl: Duration::from_millis(TTL_MS),
    }
}

// ---------------------------------------------------------------------------------------------
// Operations, as generated (indexes into the pools above); made into commands against the
// machine that never stops, since message ids come from its earlier outcomes.

#[derive(Debug, Clone)]
struct Rec {
    id: u8,
    v: [i8; DIM],
    g: Option<u8>,
    data: bool,
}

/// A record of a text upsert: its dense part (the host's model's, made before logging), its
/// text, and rarely a sparse part too (refused: the index makes it).
#[derive(Debug, Clone)]
struct TextRec {
    id: u8,
    v: [i8; DIM],
    g: Option<u8>,
    text: u8,
    with_sparse: bool,
}

#[derive(Debug, Clone)]
enum Change {
    Vector([i8; DIM]),
    /// `{"g": n}`, or `{"g": null, "h": 1}` for `None`.
    Metadata {
        g: Option<u8>,
        patch: bool,
    },
    Data(u8),
    /// Nothing to change: refused.
    Nothing,
}

/// Which message id a complete, requeue or cancel names.
#[derive(Debug, Clone)]
enum Pick {
    /// One handed out by an earlier dispatch (it may have ended since).
    Dispatched(usize),
    /// One of the last four handed out (more likely still active).
    Recent(usize),
    /// One returned by an earlier publish (waiting, active or gone).
    Published(usize),
    /// One never issued.
    Bogus(u16),
}

#[derive(Debug, Clone)]
enum Op {
    Upsert {
        ns: u8,
        records: Vec<Rec>,
    },
    UpsertData {
        ns: u8,
        records: Vec<TextRec>,
    },
    Update {
        ns: u8,
        id: u8,
        change: Change,
    },
    DeleteIds {
        ns: u8,
        ids: Vec<u8>,
    },
    DeletePrefix {
        ns: u8,
        id: u8,
    },
    DeleteFilter {
        ns: u8,
        filter: u8,
    },
    Reset {
        ns: u8,
    },
    ResetAll,
    DeleteNamespace {
        ns: u8,
    },
    Publish {
        key: Option<u8>,
        limits: Option<u8>,
        body: u8,
    },
    /// A publish with delivery options: retries 0..=2, a delay (ms), callbacks, and one of
    /// three deduplication ids.
    PublishWith {
        key: Option<u8>,
        body: u8,
        retries: u8,
        delay_ms: u16,
        callbacks: bool,
        dedup: Option<u8>,
    },
    /// A failed attempt of a picked message, to be retried after `backoff_ms`.
    Fail {
        pick: Pick,
        status: u16,
        backoff_ms: u16,
    },
    /// A successful attempt reported with its response (a callback may be published).
    CompleteWithResponse(Pick),
    CancelPending(Option<u8>),
    CancelMany(Vec<Pick>),
    /// Delete dead letters by position in the queue (or a bogus id).
    DeleteDeadLetters(Vec<u8>),
    RetryDeadLetter {
        at: u8,
        retries: Option<u8>,
    },
    Pause(u8),
    Resume(u8),
    Pin {
        key: u8,
        parallelism: Option<u8>,
        rate: Option<u8>,
        period: Option<u8>,
    },
    Unpin {
        key: u8,
        parallelism: bool,
        rate: bool,
    },
    ResetRate(u8),
    SetGlobalParallelism(Option<u8>),
    Dispatch(u8),
    Complete(Pick),
    Requeue(Pick),
    RequeueAllActive,
    Cancel(Pick),
    CreateAccount {
        email: u8,
    },
    CreateDatabase {
        id: u8,
        owner: u8,
    },
    ResetPassword {
        id: u8,
        /// `None`: the database's owner (if it exists).
        account: Option<u8>,
    },
    SetSigningKeys,
    RotateSigningKeys,
}

fn ns() -> impl Strategy<Value = u8> {
    0..NAMESPACES.len() as u8
}

fn id() -> impl Strategy<Value = u8> {
    0..IDS.len() as u8
}

fn key() -> impl Strategy<Value = u8> {
    0..KEYS.len() as u8
}

fn components() -> impl Strategy<Value = [i8; DIM]> {
    prop::array::uniform4(-3i8..=3)
}

fn rec() -> impl Strategy<Value = Rec> {
    (id(), components(), prop::option::of(0u8..4), any::<bool>()).prop_map(|(id, v, g, data)| Rec {
        id,
        v,
        g,
        data,
    })
}

fn text_rec() -> impl Strategy<Value = TextRec> {
    (
        id(),
        components(),
        prop::option::of(0u8..4),
        0..TEXTS.len() as u8,
        prop::bool::weighted(0.05),
    )
        .prop_map(|(id, v, g, text, with_sparse)| TextRec {
            id,
            v,
            g,
            text,
            with_sparse,
        })
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => components().prop_map(Change::Vector),
        4 => (prop::option::weighted(0.8, 0u8..4), any::<bool>())
            .prop_map(|(g, patch)| Change::Metadata { g, patch }),
        2 => any::<u8>().prop_map(Change::Data),
        1 => Just(Change::Nothing),
    ]
}

fn pick(published: bool) -> impl Strategy<Value = Pick> {
    let issued = if published {
        any::<usize>().prop_map(Pick::Published).boxed()
    } else {
        prop_oneof![
            1 => any::<usize>().prop_map(Pick::Dispatched),
            2 => any::<usize>().prop_map(Pick::Recent),
        ]
        .boxed()
    };
    prop_oneof![8 => issued, 1 => any::<u16>().prop_map(Pick::Bogus)]
}

fn publish() -> impl Strategy<Value = Op> {
    let limits = 0..LIMITS.len() as u8;
    prop_oneof![
        // Keyed with limits, unkeyed without: accepted.
        8 => (key(), limits.clone(), any::<u8>())
            .prop_map(|(k, l, body)| Op::Publish { key: Some(k), limits: Some(l), body }),
        4 => any::<u8>().prop_map(|body| Op::Publish { key: None, limits: None, body }),
        // A key without limits, limits without a key: refused.
        1 => (key(), any::<u8>()).prop_map(|(k, body)| Op::Publish { key: Some(k), limits: None, body }),
        1 => (limits, any::<u8>()).prop_map(|(l, body)| Op::Publish { key: None, limits: Some(l), body }),
        4 => (prop::option::of(key()), any::<u8>(), 0u8..3, prop_oneof![2 => Just(0u16), 1 => 1u16..3000], any::<bool>(), prop::option::of(0u8..3))
            .prop_map(|(key, body, retries, delay_ms, callbacks, dedup)| Op::PublishWith { key, body, retries, delay_ms, callbacks, dedup }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let small = || prop::option::of(1u8..4);
    prop_oneof![
        // Vector index.
        10 => (ns(), prop::collection::vec(rec(), 1..4))
            .prop_map(|(ns, records)| Op::Upsert { ns, records }),
        6 => (ns(), prop::collection::vec(text_rec(), 1..4))
            .prop_map(|(ns, records)| Op::UpsertData { ns, records }),
        4 => (ns(), id(), change()).prop_map(|(ns, id, change)| Op::Update { ns, id, change }),
        2 => (ns(), prop::collection::vec(id(), 0..3)).prop_map(|(ns, ids)| Op::DeleteIds { ns, ids }),
        1 => (ns(), id()).prop_map(|(ns, id)| Op::DeletePrefix { ns, id }),
        2 => (ns(), 0..DELETE_FILTERS.len() as u8)
            .prop_map(|(ns, filter)| Op::DeleteFilter { ns, filter }),
        1 => ns().prop_map(|ns| Op::Reset { ns }),
        1 => Just(Op::ResetAll),
        1 => ns().prop_map(|ns| Op::DeleteNamespace { ns }),
        // Flow control.
        12 => publish(),
        1 => key().prop_map(Op::Pause),
        2 => key().prop_map(Op::Resume),
        1 => (key(), small(), small(), small()).prop_map(|(key, parallelism, rate, period)| {
            Op::Pin { key, parallelism, rate, period }
        }),
        1 => (key(), any::<bool>(), any::<bool>())
            .prop_map(|(key, parallelism, rate)| Op::Unpin { key, parallelism, rate }),
        1 => key().prop_map(Op::ResetRate),
        1 => small().prop_map(Op::SetGlobalParallelism),
        10 => (0u8..5).prop_map(Op::Dispatch),
        6 => pick(false).prop_map(Op::Complete),
        3 => pick(false).prop_map(Op::Requeue),
        1 => Just(Op::RequeueAllActive),
        2 => pick(true).prop_map(Op::Cancel),
        5 => (pick(false), prop_oneof![Just(0u16), Just(500u16), Just(404u16)], 0u16..2500)
            .prop_map(|(pick, status, backoff_ms)| Op::Fail { pick, status, backoff_ms }),
        2 => pick(false).prop_map(Op::CompleteWithResponse),
        1 => prop::option::of(key()).prop_map(Op::CancelPending),
        1 => prop::collection::vec(pick(true), 0..4).prop_map(Op::CancelMany),
        1 => prop::collection::vec(any::<u8>(), 0..3).prop_map(Op::DeleteDeadLetters),
        2 => (any::<u8>(), prop::option::of(0u8..3)).prop_map(|(at, retries)| Op::RetryDeadLetter { at, retries }),
        // Management.
        2 => (0..EMAILS.len() as u8).prop_map(|email| Op::CreateAccount { email }),
        2 => (0..DATABASES.len() as u8, 0..EMAILS.len() as u8)
            .prop_map(|(id, owner)| Op::CreateDatabase { id, owner }),
        3 => (0..DATABASES.len() as u8, prop::option::weighted(0.3, 0..EMAILS.len() as u8))
            .prop_map(|(id, account)| Op::ResetPassword { id, account }),
        // Queue settings.
        1 => Just(Op::SetSigningKeys),
        2 => Just(Op::RotateSigningKeys),
    ]
}

fn dense(v: [i8; DIM]) -> Vec<f32> {
    v.iter().map(|&x| f32::from(x)).collect()
}

/// The sparse part of a vector upsert: its non-zero components, and always index 9.
fn sparse(v: [i8; DIM]) -> SparseVector {
    let (mut indices, mut values): (Vec<i32>, Vec<f32>) = (0..DIM as i32)
        .zip(v.iter().map(|&x| f32::from(x)))
        .filter(|(_, x)| *x != 0.0)
        .unzip();
    indices.push(9);
    values.push(1.0);
    SparseVector::new(indices, values)
}

fn message(body: u8) -> Message {
    Message {
        destination: format!("http://127.0.0.1:9/hook/{body}"),
        method: "POST".into(),
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: vec![body; usize::from(body % 5)],
        ..Message::default()
    }
}

fn response(status: u16, body: u8) -> DeliveryResponse {
    DeliveryResponse {
        status,
        headers: vec![("X-Status".into(), status.to_string())],
        body: vec![body; 3],
    }
}

/// A dlq id issued earlier (by position), or a bogus one.
fn dead_letter_id(issued: &Issued, at: u8) -> String {
    if issued.dead_letters.is_empty() || at >= 200 {
        return format!("{}-{at}", T0);
    }
    issued.dead_letters[usize::from(at) % issued.dead_letters.len()].clone()
}

fn bogus(n: u16) -> MessageId {
    format!("{}-{}", 1_000_000 + u64::from(n), n % 4)
        .parse()
        .expect("a well-formed id")
}

/// What the command-making side knows: ids handed out so far and every secret it drew.
#[derive(Debug, Default)]
struct Issued {
    /// dlq ids handed out by failures (some deleted or retried since).
    dead_letters: Vec<String>,
    dispatched: Vec<MessageId>,
    published: Vec<MessageId>,
    /// `(email, key)` of every key whose hash went into a command.
    api_keys: Vec<(String, String)>,
    /// email → the key its account was created with.
    accounts: BTreeMap<String, String>,
    /// `(database id, password)` of every password whose hash went into a command.
    passwords: Vec<(String, String)>,
    /// database id → (owner, current password).
    current: BTreeMap<String, (String, String)>,
}

/// The secret a command carries, to credit once its outcome is known.
enum Pending {
    Nothing,
    Account {
        email: String,
        key: String,
    },
    Database {
        id: String,
        owner: String,
        password: String,
    },
    Reset {
        id: String,
        password: String,
    },
}

fn pick_id(pick: &Pick, issued: &Issued) -> MessageId {
    let from = |list: &[MessageId], i: usize| list.get(i % list.len().max(1)).copied();
    match pick {
        Pick::Dispatched(i) => from(&issued.dispatched, *i),
        Pick::Recent(i) => {
            let n = issued.dispatched.len();
            let back = i % n.clamp(1, 4);
            n.checked_sub(1 + back).map(|at| issued.dispatched[at])
        }
        Pick::Published(i) => from(&issued.published, *i),
        Pick::Bogus(n) => Some(bogus(*n)),
    }
    .unwrap_or_else(|| bogus(0))
}

fn make(op: &Op, now: Timestamp, issued: &mut Issued) -> (Command, Pending) {
    let ns = |n: &u8| NAMESPACES[usize::from(*n)].to_owned();
    let key = |k: &u8| KEYS[usize::from(*k)].to_owned();
    let command = match op {
        Op::Upsert { ns: n, records } => Command::Upsert {
            namespace: ns(n),
            vectors: records
                .iter()
                .map(|r| {
                    let mut v = Vector::dense(IDS[usize::from(r.id)], dense(r.v));
                    v.sparse_vector = Some(sparse(r.v));
                    if let Some(g) = r.g {
                        v = v.with_metadata(json!({ "g": g }));
                    }
                    if r.data {
                        v = v.with_data(format!("data of {} ({:?})", IDS[usize::from(r.id)], r.v));
                    }
                    v
                })
                .collect(),
        },
        Op::UpsertData { ns: n, records } => Command::UpsertData {
            namespace: ns(n),
            vectors: records
                .iter()
                .map(|r| {
                    let mut v = Vector::dense(IDS[usize::from(r.id)], dense(r.v))
                        .with_data(TEXTS[usize::from(r.text)]);
                    if let Some(g) = r.g {
                        v = v.with_metadata(json!({ "g": g }));
                    }
                    if r.with_sparse {
                        v.sparse_vector = Some(sparse(r.v));
                    }
                    v
                })
                .collect(),
        },
        Op::Update { ns: n, id, change } => {
            let mut update = Update {
                id: IDS[usize::from(*id)].to_owned(),
                ..Update::default()
            };
            match change {
                Change::Vector(v) => update.vector = Some(dense(*v)),
                Change::Metadata { g, patch } => {
                    update.metadata = Some(match g {
                        Some(g) => json!({ "g": g }),
                        None => json!({ "g": Value::Null, "h": 1 }),
                    });
                    if *patch {
                        update.metadata_update_mode = MetadataUpdateMode::Patch;
                    }
                }
                Change::Data(d) => update.data = Some(format!("updated {d}")),
                Change::Nothing => {}
            }
            Command::Update {
                namespace: ns(n),
                update,
            }
        }
        Op::DeleteIds { ns: n, ids } => Command::Delete {
            namespace: ns(n),
            delete: Delete::ids(ids.iter().map(|i| IDS[usize::from(*i)])),
        },
        Op::DeletePrefix { ns: n, id } => Command::Delete {
            namespace: ns(n),
            delete: Delete::prefix(IDS[usize::from(*id)]),
        },
        Op::DeleteFilter { ns: n, filter } => Command::Delete {
            namespace: ns(n),
            delete: Delete::filter(DELETE_FILTERS[usize::from(*filter)]),
        },
        Op::Reset { ns: n } => Command::Reset { namespace: ns(n) },
        Op::ResetAll => Command::ResetAll,
        Op::DeleteNamespace { ns: n } => Command::DeleteNamespace { namespace: ns(n) },
        Op::Publish {
            key: k,
            limits,
            body,
        } => Command::Publish {
            key: k.as_ref().map(key),
            limits: limits.map(|l| {
                LIMITS[usize::from(l)]
                    .parse::<Limits>()
                    .expect("valid limits")
            }),
            message: Box::new(message(*body)),
        },
        Op::Pause(k) => Command::Pause { key: key(k) },
        Op::Resume(k) => Command::Resume { key: key(k) },
        Op::Pin {
            key: k,
            parallelism,
            rate,
            period,
        } => Command::Pin {
            key: key(k),
            pin: Pin {
                parallelism: parallelism.and_then(|p| NonZeroU32::new(u32::from(p))),
                rate: rate.and_then(|r| NonZeroU32::new(u32::from(r))),
                period: period.and_then(|p| Period::from_secs(u32::from(p))),
            },
        },
        Op::Unpin {
            key: k,
            parallelism,
            rate,
        } => Command::Unpin {
            key: key(k),
            unpin: Unpin {
                parallelism: *parallelism,
                rate: *rate,
            },
        },
        Op::ResetRate(k) => Command::ResetRate { key: key(k) },
        Op::SetGlobalParallelism(max) => Command::SetGlobalParallelism {
            max: max.and_then(|m| NonZeroU32::new(u32::from(m))),
        },
        Op::Dispatch(max) => Command::Dispatch {
            max: u32::from(*max),
        },
        Op::Complete(p) => Command::Complete {
            id: pick_id(p, issued),
            response: None,
        },
        Op::CompleteWithResponse(p) => Command::Complete {
            id: pick_id(p, issued),
            response: Some(response(200, 7)),
        },
        Op::PublishWith {
            key: k,
            body,
            retries,
            delay_ms,
            callbacks,
            dedup,
        } => {
            let mut message = message(*body);
            message.deduplication_id = dedup.map(|d| format!("dedup-{d}"));
            message.retries = u32::from(*retries);
            message.delay_ms = u64::from(*delay_ms);
            if *callbacks {
                message.callback = Some("http://127.0.0.1:9/ok".into());
                message.callback_headers = vec![("X-Cb".into(), "1".into())];
                message.failure_callback = Some("http://127.0.0.1:9/failed".into());
            }
            Command::Publish {
                key: k.map(|k| key(&k)),
                limits: None,
                message: Box::new(message),
            }
        }
        Op::Fail {
            pick,
            status,
            backoff_ms,
        } => Command::Fail {
            id: pick_id(pick, issued),
            response: response(*status, 1),
            retry_at: now.add_millis(u64::from(*backoff_ms)),
        },
        Op::CancelPending(k) => Command::CancelPending {
            key: k.map(|k| key(&k)),
        },
        Op::CancelMany(picks) => Command::CancelMany {
            ids: picks.iter().map(|p| pick_id(p, issued)).collect(),
        },
        Op::DeleteDeadLetters(at) => Command::DeleteDeadLetters {
            dlq_ids: at.iter().map(|a| dead_letter_id(issued, *a)).collect(),
        },
        Op::RetryDeadLetter { at, retries } => Command::RetryDeadLetter {
            dlq_id: dead_letter_id(issued, *at),
            retries: retries.map(u32::from),
        },
        Op::Requeue(p) => Command::Requeue {
            id: pick_id(p, issued),
        },
        Op::RequeueAllActive => Command::RequeueAllActive,
        Op::Cancel(p) => Command::Cancel {
            id: pick_id(p, issued),
        },
        Op::SetSigningKeys => Command::SetSigningKeys {
            keys: SigningKeys::generate().expect("OS RNG"),
        },
        Op::RotateSigningKeys => Command::RotateSigningKeys {
            next: new_key().expect("OS RNG"),
        },
        Op::CreateAccount { email } => {
            let email = EMAILS[usize::from(*email)].to_owned();
            let api_key = ApiKey::generate().expect("OS RNG");
            let key_hash = ApiKeyHash::of(&api_key).expect("a generated key is valid");
            let key = api_key.expose().to_owned();
            issued.api_keys.push((email.clone(), key.clone()));
            return (
                Command::CreateAccount {
                    email: email.clone(),
                    key_hash,
                },
                Pending::Account { email, key },
            );
        }
        Op::CreateDatabase { id, owner } => {
            let id = DATABASES[usize::from(*id)].to_owned();
            let owner = EMAILS[usize::from(*owner)].to_owned();
            let (secrets, password) = DatabaseSecrets::generate().expect("OS RNG");
            let password = password.expose().to_owned();
            issued.passwords.push((id.clone(), password.clone()));
            let creation = i64::try_from(now.as_secs()).expect("a recent time");
            let record = Database::new(
                id.clone(),
                "cache",
                owner.clone(),
                Region::UsEast1,
                creation,
            );
            return (
                Command::CreateDatabase {
                    record: Box::new(record),
                    secrets,
                },
                Pending::Database {
                    id,
                    owner,
                    password,
                },
            );
        }
        Op::ResetPassword { id, account } => {
            let id = DATABASES[usize::from(*id)].to_owned();
            let account = match account {
                Some(a) => EMAILS[usize::from(*a)].to_owned(),
                None => issued
                    .current
                    .get(&id)
                    .map_or_else(|| EMAILS[0].to_owned(), |(owner, _)| owner.clone()),
            };
            let (secrets, password) = DatabaseSecrets::generate().expect("OS RNG");
            let password = password.expose().to_owned();
            issued.passwords.push((id.clone(), password.clone()));
            return (
                Command::ResetPassword {
                    account,
                    id: id.clone(),
                    secrets,
                },
                Pending::Reset { id, password },
            );
        }
    };
    (command, Pending::Nothing)
}

/// Credits what an applied command issued (on the machine that never stops).
fn credit(pending: Pending, outcome: &Outcome, issued: &mut Issued) {
    match outcome {
        Ok(Applied::Published(id)) => issued.published.push(*id),
        Ok(Applied::Dispatched(calls)) => issued.dispatched.extend(calls.iter().map(|c| c.id)),
        Ok(Applied::DeadLettered(dlq_id)) => issued.dead_letters.push(dlq_id.clone()),
        _ => {}
    }
    if outcome.is_err() {
        return;
    }
    match pending {
        Pending::Nothing => {}
        Pending::Account { email, key } => {
            issued.accounts.insert(email, key);
        }
        Pending::Database {
            id,
            owner,
            password,
        } => {
            issued.current.insert(id, (owner, password));
        }
        Pending::Reset { id, password } => {
            issued
                .current
                .get_mut(&id)
                .expect("a reset succeeds only for an existing database")
                .1 = password;
        }
    }
}

/// What applying a command gave: the outcome itself (compared with `==`, so a database
/// record's tokens count), or the error's debug text.
type Outcome = Result<Applied, String>;

fn apply(machine: &StateMachine, command: Command, now: Timestamp) -> Outcome {
    machine.apply(command, now).map_err(|e| format!("{e:?}"))
}

// ---------------------------------------------------------------------------------------------
// Reads: everything a client could ask, labelled for the failure message.

fn all_pages(machine: &StateMachine, ns: &str) -> String {
    let mut pages = Vec::new();
    let mut cursor = String::new();
    for _ in 0..20 {
        let page = machine.index().range(
            ns,
            Range {
                cursor: cursor.clone(),
                limit: 2,
                prefix: None,
                include_metadata: true,
                include_vectors: true,
                include_data: true,
            },
        );
        let next = page.as_ref().map(|p| p.next_cursor.clone()).ok();
        pages.push(format!("{page:?}"));
        match next {
            Some(c) if !c.is_empty() => cursor = c,
            _ => break,
        }
    }
    pages.join("\n")
}

fn queries() -> Vec<Query> {
    let vectors = [
        [1.0, 0.0, 0.0, 0.0],
        [0.5, -1.0, 2.0, 0.0],
        [-1.0, -1.0, 1.0, 1.0],
    ];
    let mut out = Vec::new();
    for v in vectors {
        for filter in QUERY_FILTERS {
            out.push(Query {
                include_metadata: true,
                include_vectors: true,
                include_data: true,
                filter: filter.to_owned(),
                ..Query::dense(v.to_vec(), 5)
            });
        }
    }
    out
}

/// Info without `index_size`: a load compacts freed slots, so the approximate memory figure
/// may differ (as in `tests/persist_roundtrip.rs`); everything else must be equal.
fn info_without_size(machine: &StateMachine) -> IndexInfo {
    IndexInfo {
        index_size: 0,
        ..machine.index().info()
    }
}

fn observe_index(machine: &StateMachine) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let index = machine.index();
    for ns in NAMESPACES {
        let fetch = index.fetch(ns, Fetch::ids(IDS).include_all());
        out.push((format!("fetch ids {ns:?}"), format!("{fetch:?}")));
        let fetch = index.fetch(ns, Fetch::prefix("v").include_all());
        out.push((format!("fetch prefix {ns:?}"), format!("{fetch:?}")));
        out.push((format!("range {ns:?}"), all_pages(machine, ns)));
        for (i, q) in queries().iter().enumerate() {
            out.push((
                format!("query {i} {ns:?} filter {:?}", q.filter),
                format!("{:?}", index.query(ns, q)),
            ));
        }
        // Text queries: BM25 term presence, plain, IDF-weighted and fused with a dense part.
        for text in TEXT_QUERIES {
            for (label, weighting, dense) in [
                ("plain", None, None),
                ("IDF", Some(WeightingStrategy::Idf), None),
                ("hybrid", None, Some(vec![1.0, 0.0, -1.0, 0.5])),
            ] {
                let query = Query {
                    top_k: 5,
                    include_vectors: true,
                    include_data: true,
                    weighting_strategy: weighting,
                    query_mode: QueryMode::Hybrid,
                    ..Query::default()
                };
                let answer = index
                    .text_query(query, text, dense)
                    .and_then(|q| q.map_or(Ok(Vec::new()), |q| index.query(ns, &q)));
                out.push((
                    format!("text query {text:?} {label} {ns:?}"),
                    format!("{answer:?}"),
                ));
            }
        }
    }
    out.push(("info".into(), format!("{:?}", info_without_size(machine))));
    out.push((
        "list_namespaces".into(),
        format!("{:?}", index.list_namespaces()),
    ));
    out
}

fn observe_flow(machine: &StateMachine, now: Timestamp) -> Vec<(String, String)> {
    let flow = machine.flow();
    let mut out = vec![
        (format!("keys at {now:?}"), format!("{:?}", flow.keys(now))),
        ("global_info".into(), format!("{:?}", flow.global_info())),
    ];
    for key in KEYS {
        out.push((
            format!("key_info {key} at {now:?}"),
            format!("{:?}", flow.key_info(key, now)),
        ));
    }
    {
        let engine = flow.lock();
        out.push((
            "waiting/active/keys".into(),
            format!(
                "{}/{}/{}",
                engine.waiting_count(),
                engine.active_count(),
                engine.key_count()
            ),
        ));
    }
    out.push((
        "flow snapshot".into(),
        serde_json::to_string(&flow.snapshot()).expect("plain data"),
    ));
    {
        let engine = flow.lock();
        let pending = engine.pending(None);
        out.push(("pending".into(), format!("{pending:?}")));
        for id in pending {
            out.push((format!("message {id}"), format!("{:?}", engine.message(id))));
        }
    }
    out.push((
        "dead letters".into(),
        format!("{:?}", *machine.dead_letters()),
    ));
    out.push((
        "deduplication ids".into(),
        format!("{:?}", *machine.deduplication()),
    ));
    out
}

fn observe_management(machine: &StateMachine, issued: &Issued) -> Vec<(String, String)> {
    let registry = machine.registry();
    let accounts = machine.accounts();
    let mut out = vec![(
        "signing keys".to_owned(),
        format!("{:?}", machine.signing_keys().map(|k| (k.current, k.next))),
    )];
    for email in EMAILS {
        out.push((
            format!("list {email}"),
            format!("{:?}", registry.list(email)),
        ));
        for db in DATABASES {
            out.push((
                format!("get {email} {db}"),
                format!("{:?}", registry.get(email, db)),
            ));
        }
    }
    for (db, password) in &issued.passwords {
        for email in EMAILS {
            out.push((
                format!("verify_password {email} {db} (a password issued for it)"),
                registry.verify_password(email, db, password).to_string(),
            ));
        }
    }
    for (email, key) in &issued.api_keys {
        for other in EMAILS {
            out.push((
                format!("accounts verify {other} (a key issued for {email})"),
                accounts.verify(other, key).to_string(),
            ));
        }
    }
    out.push((
        "registry snapshot".into(),
        serde_json::to_string(&registry.snapshot()).expect("plain data"),
    ));
    out.push((
        "accounts snapshot".into(),
        serde_json::to_string(&accounts.snapshot()).expect("plain data"),
    ));
    out
}

/// What the never-stopping machine must answer anyway: only current credentials verify.
fn check_credentials(machine: &StateMachine, issued: &Issued) -> Result<(), String> {
    for (db, password) in &issued.passwords {
        for email in EMAILS {
            let expected = issued
                .current
                .get(db)
                .is_some_and(|(owner, current)| owner == email && current == password);
            let got = machine.registry().verify_password(email, db, password);
            if got != expected {
                return Err(format!(
                    "verify_password({email}, {db}, a password issued for it) = {got}, expected {expected}"
                ));
            }
        }
    }
    for (email, key) in &issued.api_keys {
        let expected = issued.accounts.get(email) == Some(key);
        if machine.accounts().verify(email, key) != expected {
            return Err(format!(
                "accounts.verify({email}, a key issued for it) != {expected}"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The property.

fn save_load(machine: &StateMachine, meta: &[u8]) -> Result<StateMachine, String> {
    let mut image = Vec::new();
    machine
        .save(&mut image, meta)
        .map_err(|e| format!("save: {e}"))?;
    let (loaded, back) = StateMachine::load(image.as_slice()).map_err(|e| format!("load: {e}"))?;
    if back != meta {
        return Err(format!("meta came back as {back:?}, saved {meta:?}"));
    }
    Ok(loaded)
}

fn fail(what: String, log: &[LogEntry], cuts: &[usize]) -> TestCaseError {
    let mut text = format!("{what}\nimage saved and loaded before step(s) {cuts:?}; log:\n");
    for (i, entry) in log.iter().enumerate() {
        let ms = entry.now.as_millis() - T0;
        text.push_str(&format!("  {i:3} t0+{ms:6}ms {:?}\n", entry.command));
    }
    TestCaseError::fail(text)
}

fn compare(what: &str, a: Vec<(String, String)>, b: Vec<(String, String)>) -> Result<(), String> {
    for ((label, va), (_, vb)) in a.iter().zip(&b) {
        if va != vb {
            return Err(format!(
                "{what}: `{label}` differs\n  never stopped: {va}\n  replayed:      {vb}"
            ));
        }
    }
    assert_eq!(a.len(), b.len(), "the same reads on both");
    Ok(())
}

fn run(global: Option<u8>, ops: &[(Op, u16)], cuts: &[Cut]) -> Result<(), TestCaseError> {
    // A: never stops. The commands are made here, from A's outcomes.
    let a = StateMachine::new(index_config(), flow_config(global)).expect("valid config");
    let mut issued = Issued::default();
    let mut now = Timestamp::from_millis(T0);
    let mut log = Vec::with_capacity(ops.len());
    let mut outcomes = Vec::with_capacity(ops.len());
    for (op, step) in ops {
        now = now.add_millis(u64::from(*step));
        let (command, pending) = make(op, now, &mut issued);
        let outcome = apply(&a, command.clone(), now);
        credit(pending, &outcome, &mut issued);
        log.push(LogEntry { now, command });
        outcomes.push(outcome);
    }
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(log.len() + 1)).collect();
    cuts.sort_unstable();

    // B: the prefix applied directly, an image saved and loaded at each cut, every command
    // after the first cut through its log bytes.
    let mut b = StateMachine::new(index_config(), flow_config(global)).expect("valid config");
    let mut restarts = 0;
    for (i, entry) in log.iter().enumerate() {
        while restarts < cuts.len() && cuts[restarts] == i {
            let meta = format!("log position {i}").into_bytes();
            b = save_load(&b, &meta).map_err(|e| fail(e, &log, &cuts))?;
            restarts += 1;
        }
        let entry = if restarts == 0 {
            entry.clone()
        } else {
            let bytes = entry.encode();
            let decoded = LogEntry::decode(&bytes)
                .map_err(|e| fail(format!("step {i}: decode: {e}"), &log, &cuts))?;
            if decoded != *entry {
                return Err(fail(
                    format!("step {i}: decoded as {decoded:?}"),
                    &log,
                    &cuts,
                ));
            }
            decoded
        };
        let outcome = apply(&b, entry.command, entry.now);
        if outcome != outcomes[i] {
            return Err(fail(
                format!(
                    "step {i}: outcomes differ\n  never stopped: {:?}\n  replayed:      {outcome:?}",
                    outcomes[i]
                ),
                &log,
                &cuts,
            ));
        }
    }
    while restarts < cuts.len() {
        let meta = format!("log position {}", log.len()).into_bytes();
        b = save_load(&b, &meta).map_err(|e| fail(e, &log, &cuts))?;
        restarts += 1;
    }

    // Every read equal.
    let check = |r: Result<(), String>| r.map_err(|e| fail(e, &log, &cuts));
    check(compare("index", observe_index(&a), observe_index(&b)))?;
    check(compare(
        "flow",
        observe_flow(&a, now),
        observe_flow(&b, now),
    ))?;
    check(compare(
        "management",
        observe_management(&a, &issued),
        observe_management(&b, &issued),
    ))?;
    check(check_credentials(&a, &issued))?;

    // Then the same future: a later dispatch of everything deliverable hands out the same
    // calls in the same order, and leaves the same state.
    let later = now.add_millis(3_000);
    let drain = Command::Dispatch { max: 1000 };
    let (da, db) = (apply(&a, drain.clone(), later), apply(&b, drain, later));
    if da != db {
        return Err(fail(
            format!("final dispatch differs\n  never stopped: {da:?}\n  replayed:      {db:?}"),
            &log,
            &cuts,
        ));
    }
    check(compare(
        "flow after the final dispatch",
        observe_flow(&a, later),
        observe_flow(&b, later),
    ))?;
    // The host's wake-up time (fixes stale timer entries: read last).
    let (ta, tb) = (
        a.flow().lock().poll_timeout(),
        b.flow().lock().poll_timeout(),
    );
    if ta != tb {
        return Err(fail(
            format!("poll_timeout differs: never stopped {ta:?}, replayed {tb:?}"),
            &log,
            &cuts,
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: RngSeed::Fixed(0x5eed_57a7),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn replay_from_an_image_and_log_entries_answers_like_the_machine_that_never_stopped(
        global in prop::option::weighted(0.3, 1u8..4),
        ops in prop::collection::vec((op(), 0u16..1500), 20..120),
        cuts in prop::collection::vec(any::<Cut>(), 1..3),
    ) {
        run(global, &ops, &cuts)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Damaged bytes.

/// A machine with something in every engine: records with metadata and data in two
/// namespaces, waiting and active messages under keys, an account and a database.
fn populated() -> StateMachine {
    let machine = StateMachine::new(index_config(), flow_config(Some(3))).expect("valid config");
    let mut now = Timestamp::from_millis(T0);
    let mut issued = Issued::default();
    let ops = [
        Op::Upsert {
            ns: 0,
            records: vec![
                Rec {
                    id: 0,
                    v: [1, 0, 0, 1],
                    g: Some(1),
                    data: true,
                },
                Rec {
                    id: 1,
                    v: [0, 2, -1, 0],
                    g: None,
                    data: false,
                },
            ],
        },
        Op::Upsert {
            ns: 1,
            records: vec![Rec {
                id: 2,
                v: [-1, -1, 3, 0],
                g: Some(2),
                data: true,
            }],
        },
        Op::UpsertData {
            ns: 1,
            records: vec![TextRec {
                id: 3,
                v: [0, 1, 1, 0],
                g: Some(1),
                text: 2,
                with_sparse: false,
            }],
        },
        Op::Publish {
            key: Some(0),
            limits: Some(0),
            body: 7,
        },
        Op::Publish {
            key: Some(1),
            limits: Some(1),
            body: 8,
        },
        Op::Publish {
            key: None,
            limits: None,
            body: 9,
        },
        Op::Publish {
            key: Some(1),
            limits: Some(1),
            body: 10,
        },
        Op::Dispatch(2),
        Op::Pause(2),
        Op::CreateAccount { email: 0 },
        Op::CreateDatabase { id: 0, owner: 0 },
    ];
    for op in &ops {
        now = now.add_millis(250);
        let (command, pending) = make(op, now, &mut issued);
        let outcome = apply(&machine, command, now);
        assert!(outcome.is_ok(), "{op:?}: {outcome:?}");
        credit(pending, &outcome, &mut issued);
    }
    assert_eq!(machine.flow().lock().active_count(), 2);
    machine
}

/// `load` of damaged bytes: an error (a panic is caught and reported as a failure) that says
/// where: a byte offset in `lo..=hi`.
fn assert_refused(bytes: &[u8], lo: usize, hi: usize, what: &str) {
    let result = catch_unwind(AssertUnwindSafe(|| StateMachine::load(bytes)));
    let err = match result {
        Err(_) => panic!("{what}: load panicked"),
        Ok(Ok(_)) => panic!("{what}: a damaged image loaded"),
        Ok(Err(err)) => err,
    };
    let text = err.to_string();
    assert!(
        text.contains("byte") || text.contains("section"),
        "{what}: the error says neither a byte offset nor a section: {text}"
    );
    match err {
        StateError::BadImage { offset, .. } => assert!(
            (lo..=hi).contains(&(offset as usize)),
            "{what}: the error points at byte {offset}, not within {lo}..={hi}: {text}"
        ),
        other => panic!("{what}: refused by a part, not by the framing: {other}"),
    }
}

/// `(header start, payload start, end)` of each section of an intact image (the layout of
/// `src/state/image.rs`: magic, then tag u8 | length u64 LE | CRC-32 u32 LE | payload).
fn sections(image: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut at = 8;
    while at < image.len() {
        let len = u64::from_le_bytes(image[at + 1..at + 9].try_into().unwrap()) as usize;
        out.push((at, at + 13, at + 13 + len));
        at += 13 + len;
    }
    assert_eq!(at, image.len());
    assert_eq!(
        out.len(),
        7,
        "META, INDEX, FLOW, REGISTRY, ACCOUNTS, QUEUE, END"
    );
    out
}

#[test]
fn a_damaged_image_is_refused_with_where() {
    let machine = populated();
    let mut image = Vec::new();
    machine.save(&mut image, b"log position 10").unwrap();
    let (loaded, meta) = StateMachine::load(image.as_slice()).expect("the intact image loads");
    assert_eq!(meta, b"log position 10");
    assert_eq!(
        observe_index(&loaded),
        observe_index(&machine),
        "the intact image answers like the original"
    );
    assert_eq!(
        observe_flow(&loaded, Timestamp::from_millis(T0)),
        observe_flow(&machine, Timestamp::from_millis(T0)),
    );
    let sections = sections(&image);

    // Cut short anywhere: the error is at or before the cut.
    for len in 0..image.len() {
        let what = format!("truncated to {len} of {} bytes", image.len());
        assert_refused(&image[..len], 0, len, &what);
    }
    // Any byte changed: the error is in the damaged section, at or before the damage (a
    // damaged length or checksum in a section header shows as a checksum failure of its
    // payload: the header itself has no checksum).
    for at in 0..image.len() {
        let (lo, hi) = match sections.iter().find(|s| (s.0..s.2.max(s.1)).contains(&at)) {
            Some(&(header, payload, _)) => (header, at.max(payload)),
            None => (0, at), // the magic
        };
        for mask in [0x01u8, 0x80, 0xff] {
            let mut damaged = image.clone();
            damaged[at] ^= mask;
            let what = format!("byte {at} of {} xor {mask:#04x}", image.len());
            assert_refused(&damaged, lo, hi, &what);
        }
    }
    // Something after END.
    let mut longer = image.clone();
    longer.push(0);
    assert_refused(&longer, image.len(), image.len(), "one byte after END");
    // Not an image at all.
    assert_refused(b"", 0, 0, "empty");
    assert_refused(b"FVSTATE2", 0, 0, "wrong magic");
}

#[test]
fn a_damaged_log_entry_is_refused() {
    let entry = LogEntry {
        now: Timestamp::from_millis(T0 + 42),
        command: Command::Upsert {
            namespace: "n1".into(),
            vectors: vec![
                Vector::dense("v0", vec![0.1, -2.5, 3.0, f32::from_bits(1)])
                    .with_metadata(json!({"g": 1, "tags": ["a", "b"]}))
                    .with_data("some data"),
                Vector::dense("v1", vec![1.0, 0.0, 0.0, 0.0]),
            ],
        },
    };
    let bytes = entry.encode();
    assert_eq!(entry.encode(), bytes, "encoding is deterministic");
    let back = LogEntry::decode(&bytes).expect("intact bytes decode");
    assert_eq!(back, entry);
    let Command::Upsert { vectors, .. } = &back.command else {
        unreachable!()
    };
    assert_eq!(
        vectors[0].vector.as_deref().map(|v| v[3].to_bits()),
        Some(1),
        "f32 bits survive"
    );

    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x10, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= mask;
            match catch_unwind(|| LogEntry::decode(&damaged)) {
                Err(_) => panic!("byte {at} xor {mask:#04x}: decode panicked"),
                Ok(Ok(e)) => panic!("byte {at} xor {mask:#04x}: decoded as {e:?}"),
                Ok(Err(StateError::BadEntry { .. })) => {}
                Ok(Err(other)) => panic!("byte {at} xor {mask:#04x}: unexpected error {other}"),
            }
        }
    }
    for len in 0..bytes.len() {
        assert!(
            matches!(
                LogEntry::decode(&bytes[..len]),
                Err(StateError::BadEntry { .. })
            ),
            "truncated to {len} of {} bytes",
            bytes.len()
        );
    }
}
