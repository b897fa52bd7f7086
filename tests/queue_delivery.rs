//! The queue's delivery commands on the state machine: retries while a message has them, then
//! the dead letter queue and the failure callback; the success callback; delays; cancellation;
//! retrying a dead letter. Scenarios, then a proptest over random attempts and outcomes: every
//! message ends delivered, dead-lettered after exactly `retries + 1` attempts, or cancelled,
//! and none is attempted more often.

use std::collections::HashMap;

use flowvec::flow::{FlowConfig, MessageId, MessageState, Timestamp};
use flowvec::state::{Applied, ApplyError, Command, StateMachine};
use flowvec::vector::{IndexConfig, Metric};
use flowvec::wire::{DeliveryResponse, Message};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use serde_json::Value;

const T0: u64 = 1_700_000_000_000;

fn machine() -> StateMachine {
    StateMachine::new(IndexConfig::dense(2, Metric::Cosine), FlowConfig::default()).unwrap()
}

fn at(ms: u64) -> Timestamp {
    Timestamp::from_millis(T0 + ms)
}

fn message(body: &str, retries: u32) -> Message {
    Message {
        destination: "http://127.0.0.1:9/hook".into(),
        method: "POST".into(),
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: body.as_bytes().to_vec(),
        retries,
        ..Message::default()
    }
}

fn publish(m: &StateMachine, key: Option<&str>, message: Message, now: Timestamp) -> MessageId {
    match m.apply(
        Command::Publish {
            key: key.map(str::to_owned),
            limits: key.map(|_| "parallelism=10".parse().unwrap()),
            message: Box::new(message),
        },
        now,
    ) {
        Ok(Applied::Published(id)) => id,
        other => panic!("publish: {other:?}"),
    }
}

fn dispatch(m: &StateMachine, now: Timestamp) -> Vec<(MessageId, Message)> {
    match m.apply(Command::Dispatch { max: 100 }, now) {
        Ok(Applied::Dispatched(calls)) => calls.into_iter().map(|c| (c.id, c.message)).collect(),
        other => panic!("dispatch: {other:?}"),
    }
}

fn response(status: u16, body: &str) -> DeliveryResponse {
    DeliveryResponse {
        status,
        headers: vec![("X-Reason".into(), "test".into())],
        body: body.as_bytes().to_vec(),
    }
}

fn fail(m: &StateMachine, id: MessageId, retry_at: Timestamp, now: Timestamp) -> Applied {
    m.apply(
        Command::Fail {
            id,
            response: response(500, "boom"),
            retry_at,
        },
        now,
    )
    .expect("an active call fails")
}

fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn a_failing_message_is_retried_exactly_its_count_then_dead_lettered_with_its_failure_callback() {
    let m = machine();
    let mut msg = message("payload", 2);
    msg.failure_callback = Some("http://127.0.0.1:9/failed".into());
    msg.failure_callback_headers = vec![("X-Cb".into(), "yes".into())];
    let id = publish(&m, Some("k"), msg, at(0));

    let mut now = 0;
    for attempt in 0..3u32 {
        let calls = dispatch(&m, at(now));
        assert_eq!(calls.len(), 1, "attempt {attempt}");
        assert_eq!(calls[0].0, id, "the same id on every attempt");
        assert_eq!(calls[0].1.retried, attempt, "Upstash-Retried");
        let outcome = fail(&m, id, at(now + 100), at(now));
        if attempt < 2 {
            assert_eq!(outcome, Applied::Retrying(at(now + 100)));
            let view = m
                .flow()
                .lock()
                .message(id)
                .map(|v| (v.state, v.message.retried));
            assert_eq!(
                view,
                Some((
                    MessageState::Delayed {
                        until: at(now + 100)
                    },
                    attempt + 1
                ))
            );
            assert!(
                dispatch(&m, at(now + 99)).is_empty(),
                "not before its backoff"
            );
            now += 100;
        } else {
            let Applied::DeadLettered(dlq_id) = outcome else {
                panic!("out of retries: {outcome:?}");
            };
            assert!(m.flow().lock().message(id).is_none());
            let dlq = m.dead_letters();
            let entry = dlq.get(&dlq_id).expect("in the dead letter queue");
            assert_eq!(entry.message_id, id);
            assert_eq!(entry.message.retried, 2);
            assert_eq!(entry.response.status, 500);
            drop(dlq);
            // The failure callback: unkeyed, JSON, with its headers.
            let calls = dispatch(&m, at(now));
            assert_eq!(calls.len(), 1, "the failure callback");
            let (_, cb) = &calls[0];
            assert_eq!(cb.destination, "http://127.0.0.1:9/failed");
            assert!(cb.headers.contains(&("X-Cb".into(), "yes".into())));
            let body: Value = serde_json::from_slice(&cb.body).unwrap();
            assert_eq!(body["status"], 500);
            assert_eq!(body["retried"], 2);
            assert_eq!(body["maxRetries"], 2);
            assert_eq!(body["dlqId"], dlq_id.as_str());
            assert_eq!(body["sourceMessageId"], id.to_string());
            assert_eq!(body["body"], b64("boom"));
            assert_eq!(body["sourceBody"], b64("payload"));
            assert_eq!(body["header"]["X-Reason"][0], "test");
            assert_eq!(body["createdAt"], T0);
        }
    }
}

#[test]
fn a_backoff_does_not_block_the_keys_other_messages() {
    let m = machine();
    let limits = Some("parallelism=1".parse().unwrap());
    let mut ids = Vec::new();
    for body in ["a", "b"] {
        match m.apply(
            Command::Publish {
                key: Some("k".into()),
                limits,
                message: Box::new(message(body, 1)),
            },
            at(0),
        ) {
            Ok(Applied::Published(id)) => ids.push(id),
            other => panic!("{other:?}"),
        }
    }
    let calls = dispatch(&m, at(0));
    assert_eq!(calls.len(), 1, "parallelism 1");
    fail(&m, ids[0], at(1_000), at(0));
    let calls = dispatch(&m, at(1));
    assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), vec![ids[1]]);
    // The retry waits for its time and for the key's slot.
    assert!(dispatch(&m, at(1_000)).is_empty(), "b holds the only slot");
    m.apply(
        Command::Complete {
            id: ids[1],
            response: None,
        },
        at(1_001),
    )
    .unwrap();
    let calls = dispatch(&m, at(1_001));
    assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), vec![ids[0]]);
}

#[test]
fn a_success_publishes_the_callback_with_the_response() {
    let m = machine();
    let mut msg = message("hello", 3);
    msg.callback = Some("http://127.0.0.1:9/ok".into());
    let id = publish(&m, None, msg, at(0));
    dispatch(&m, at(0));
    m.apply(
        Command::Complete {
            id,
            response: Some(response(202, "accepted")),
        },
        at(5),
    )
    .unwrap();
    let calls = dispatch(&m, at(5));
    assert_eq!(calls.len(), 1);
    let body: Value = serde_json::from_slice(&calls[0].1.body).unwrap();
    assert_eq!(body["status"], 202);
    assert_eq!(body["body"], b64("accepted"));
    assert_eq!(body["retried"], 0);
    assert!(body.get("dlqId").is_none());
    // Without the response (the host does not send it), no callback.
    let id = publish(&m, None, message("x", 0), at(6));
    dispatch(&m, at(6));
    m.apply(Command::Complete { id, response: None }, at(7))
        .unwrap();
    assert!(dispatch(&m, at(7)).iter().all(|c| c.0 != id));
}

#[test]
fn a_delay_counts_from_the_publish_commands_time() {
    let m = machine();
    let mut msg = message("later", 0);
    msg.delay_ms = 1_500;
    let id = publish(&m, Some("k"), msg, at(10));
    let view = m
        .flow()
        .lock()
        .message(id)
        .map(|v| (v.state, v.message.not_before, v.message.created_at));
    assert_eq!(
        view,
        Some((
            MessageState::Delayed { until: at(1_510) },
            T0 + 1_510,
            T0 + 10
        ))
    );
    assert!(dispatch(&m, at(1_509)).is_empty());
    assert_eq!(dispatch(&m, at(1_510)).len(), 1);

    // A not-before in the past is a plain publish.
    let mut msg = message("now", 0);
    msg.not_before = T0;
    publish(&m, None, msg, at(2_000));
    assert_eq!(dispatch(&m, at(2_000)).len(), 1);
}

#[test]
fn cancellation_by_key_by_list_and_all() {
    let m = machine();
    let a = publish(&m, Some("a"), message("1", 0), at(0));
    let mut delayed = message("2", 0);
    delayed.delay_ms = 10_000;
    let b = publish(&m, Some("a"), delayed, at(0));
    let c = publish(&m, Some("b"), message("3", 0), at(0));
    let d = publish(&m, None, message("4", 0), at(0));
    let active = dispatch(&m, at(0));
    assert_eq!(active.len(), 3, "a, c, d go; b is delayed");
    let e = publish(&m, Some("a"), message("5", 0), at(1));
    assert_eq!(
        m.apply(
            Command::CancelPending {
                key: Some("a".into())
            },
            at(2)
        )
        .unwrap(),
        Applied::CancelledMany(2),
        "b (delayed) and e (waiting); a is active"
    );
    assert!(m.flow().lock().message(b).is_none() && m.flow().lock().message(e).is_none());
    let f = publish(&m, Some("b"), message("6", 0), at(3));
    assert_eq!(
        m.apply(Command::CancelMany { ids: vec![a, f, f] }, at(4))
            .unwrap(),
        Applied::CancelledMany(1),
        "a is active; f once"
    );
    let g = publish(&m, None, message("7", 0), at(5));
    assert_eq!(
        m.apply(Command::CancelPending { key: None }, at(6))
            .unwrap(),
        Applied::CancelledMany(1)
    );
    assert!(m.flow().lock().message(g).is_none());
    for id in [a, c, d] {
        assert_eq!(
            m.flow().lock().message(id).map(|v| v.state),
            Some(MessageState::Active)
        );
    }
}

#[test]
fn a_dead_letter_is_retried_as_a_new_message_and_leaves_the_queue() {
    let m = machine();
    let id = publish(&m, Some("k"), message("again", 0), at(0));
    dispatch(&m, at(0));
    let Applied::DeadLettered(dlq_id) = fail(&m, id, at(10), at(1)) else {
        panic!("no retries: dead-lettered at once");
    };
    let outcome = m
        .apply(
            Command::RetryDeadLetter {
                dlq_id: dlq_id.clone(),
                retries: Some(5),
            },
            at(2),
        )
        .unwrap();
    let Applied::Published(new_id) = outcome else {
        panic!("{outcome:?}");
    };
    assert_ne!(new_id, id);
    assert!(m.dead_letters().get(&dlq_id).is_none());
    let engine = m.flow().lock();
    let view = engine.message(new_id).expect("published");
    assert_eq!(view.key, Some("k"));
    assert_eq!((view.message.retries, view.message.retried), (5, 0));
    assert_eq!(view.message.body, b"again");
    drop(engine);
    assert!(matches!(
        m.apply(
            Command::RetryDeadLetter {
                dlq_id,
                retries: None
            },
            at(3)
        ),
        Err(ApplyError::UnknownDeadLetter { .. })
    ));
    // Fail on a message that is not active is refused and changes nothing.
    assert!(
        m.apply(
            Command::Fail {
                id: new_id,
                response: response(500, ""),
                retry_at: at(9),
            },
            at(4)
        )
        .is_err()
    );
    assert_eq!(
        m.flow().lock().message(new_id).map(|v| v.state),
        Some(MessageState::Waiting)
    );
}

// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Publish {
        retries: u32,
        key: Option<u8>,
    },
    Dispatch,
    /// The `n`-th active call (mod count) succeeds or fails.
    Outcome {
        n: usize,
        ok: bool,
        backoff: u64,
    },
    Cancel(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..4, prop::option::of(0u8..3)).prop_map(|(retries, key)| Op::Publish { retries, key }),
        4 => Just(Op::Dispatch),
        6 => (any::<usize>(), prop::bool::weighted(0.4), 0u64..300)
            .prop_map(|(n, ok, backoff)| Op::Outcome { n, ok, backoff }),
        1 => any::<usize>().prop_map(Op::Cancel),
        2 => (1u64..400).prop_map(Op::Advance),
    ]
}

#[derive(Debug, Default)]
struct Track {
    retries: u32,
    attempts: u32,
    end: Option<&'static str>,
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let m = machine();
    let mut now = 0u64;
    let mut tracks: HashMap<MessageId, Track> = HashMap::new();
    let mut active: Vec<MessageId> = Vec::new();
    let mut published: Vec<MessageId> = Vec::new();
    let limits = Some("parallelism=2".parse().unwrap());
    let step = |m: &StateMachine,
                op: &Op,
                now: &mut u64,
                tracks: &mut HashMap<MessageId, Track>,
                active: &mut Vec<MessageId>,
                published: &mut Vec<MessageId>|
     -> Result<(), TestCaseError> {
        match op {
            Op::Publish { retries, key } => {
                let key = key.map(|k| format!("k{k}"));
                let out = m.apply(
                    Command::Publish {
                        limits: key.as_ref().and(limits),
                        key,
                        message: Box::new(message("m", *retries)),
                    },
                    at(*now),
                );
                let Ok(Applied::Published(id)) = out else {
                    return Err(TestCaseError::fail(format!("publish: {out:?}")));
                };
                tracks.insert(
                    id,
                    Track {
                        retries: *retries,
                        ..Track::default()
                    },
                );
                published.push(id);
            }
            Op::Dispatch => {
                for (id, msg) in dispatch(m, at(*now)) {
                    let t = tracks.get_mut(&id).expect("only published messages");
                    prop_assert!(t.end.is_none(), "{id} dispatched after it ended");
                    prop_assert_eq!(msg.retried, t.attempts, "Upstash-Retried of {}", id);
                    t.attempts += 1;
                    prop_assert!(t.attempts <= t.retries + 1, "{id} attempted too often");
                    prop_assert!(!active.contains(&id), "{id} dispatched twice at once");
                    active.push(id);
                }
            }
            Op::Outcome { n, ok, backoff } if !active.is_empty() => {
                let id = active.remove(n % active.len());
                let t = tracks.get_mut(&id).expect("tracked");
                if *ok {
                    m.apply(Command::Complete { id, response: None }, at(*now))
                        .expect("active");
                    t.end = Some("delivered");
                } else {
                    match fail(m, id, at(*now + backoff), at(*now)) {
                        Applied::Retrying(_) => {
                            prop_assert!(t.attempts <= t.retries, "{id} retried past its count")
                        }
                        Applied::DeadLettered(dlq_id) => {
                            prop_assert_eq!(
                                t.attempts,
                                t.retries + 1,
                                "{} dead-lettered early",
                                id
                            );
                            let dlq = m.dead_letters();
                            let entry = dlq.get(&dlq_id).expect("in the queue");
                            prop_assert_eq!(entry.message_id, id);
                            t.end = Some("dead");
                        }
                        other => return Err(TestCaseError::fail(format!("{other:?}"))),
                    }
                }
            }
            Op::Outcome { .. } => {}
            Op::Cancel(n) if !published.is_empty() => {
                let id = published[n % published.len()];
                let state = m.flow().lock().message(id).map(|v| v.state);
                let out = m.apply(Command::Cancel { id }, at(*now)).expect("cancel");
                let expect = matches!(
                    state,
                    Some(MessageState::Waiting | MessageState::Delayed { .. })
                );
                prop_assert_eq!(out, Applied::Cancelled(expect));
                if expect {
                    tracks.get_mut(&id).expect("tracked").end = Some("cancelled");
                }
            }
            Op::Cancel(_) => {}
            Op::Advance(ms) => *now += ms,
        }
        Ok(())
    };
    for op in ops {
        step(&m, op, &mut now, &mut tracks, &mut active, &mut published)?;
    }
    // Drain: everything not ended is delivered or dead-lettered in bounded time, each
    // attempt failing (the worst case).
    for _ in 0..200 {
        now += 1_000;
        step(
            &m,
            &Op::Dispatch,
            &mut now,
            &mut tracks,
            &mut active,
            &mut published,
        )?;
        while !active.is_empty() {
            step(
                &m,
                &Op::Outcome {
                    n: 0,
                    ok: false,
                    backoff: 10,
                },
                &mut now,
                &mut tracks,
                &mut active,
                &mut published,
            )?;
        }
        if tracks.values().all(|t| t.end.is_some()) {
            break;
        }
    }
    for (id, t) in &tracks {
        prop_assert!(t.end.is_some(), "{id} never ended: {t:?}");
        prop_assert!(m.flow().lock().message(*id).is_none(), "{id} still held");
    }
    let dead = tracks.values().filter(|t| t.end == Some("dead")).count();
    prop_assert_eq!(m.dead_letters().len(), dead);
    Ok(())
}

proptest! {
    #![proptest_config(Config {
        cases: 128,
        rng_seed: RngSeed::Fixed(0x000D_1E5E),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    })]
    #[test]
    fn every_message_ends_delivered_dead_lettered_after_its_retries_or_cancelled(
        ops in prop::collection::vec(op(), 1..120)
    ) {
        run(&ops)?;
    }
}
