//! Delays and retries in the flow engine, over random operation sequences: limits hold at
//! every step (parallelism, rate count), no message is dispatched before its not-before time
//! or its retry's backoff, none is lost or duplicated by the engine (every message is in exactly
//! one place: waiting, held, active, or done), snapshots restore exactly, and in the end every
//! message not cancelled is delivered.

use std::collections::HashMap;

use flowvec::flow::{FlowConfig, FlowControl, Limits, MessageId, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

const LIMITS: [&str; 3] = [
    "parallelism=2",
    "rate=3,period=2s",
    "parallelism=1,rate=5,period=1s",
];

#[derive(Debug, Clone)]
enum Op {
    Publish {
        key: Option<usize>,
        delay: Option<u64>,
    },
    Dispatch,
    Complete(usize),
    Retry(usize, u64),
    Requeue(usize),
    Cancel(usize),
    Advance(u64),
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop::option::weighted(0.8, 0..3usize), prop::option::of(0..3000u64))
            .prop_map(|(key, delay)| Op::Publish { key, delay }),
        4 => Just(Op::Dispatch),
        3 => any::<usize>().prop_map(Op::Complete),
        3 => (any::<usize>(), 0..2500u64).prop_map(|(i, b)| Op::Retry(i, b)),
        1 => any::<usize>().prop_map(Op::Requeue),
        1 => any::<usize>().prop_map(Op::Cancel),
        3 => (0..1500u64).prop_map(Op::Advance),
        1 => Just(Op::Snapshot),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    /// In the waitlist or held: may not go before this time (ms).
    Queued {
        not_before: u64,
    },
    Active,
    Done,
}

struct Tracked {
    key: Option<usize>,
    at: Where,
    dispatches: u32,
}

fn limits(key: usize) -> Limits {
    LIMITS[key].parse().expect("valid limits")
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut fc: FlowControl<u64> = FlowControl::new(FlowConfig::default());
    let mut now = 1_000_000u64;
    let mut msgs: HashMap<MessageId, Tracked> = HashMap::new();
    let mut order: Vec<MessageId> = Vec::new();
    let mut n = 0u64;
    for op in ops {
        let t = Timestamp::from_millis(now);
        match op {
            Op::Publish { key, delay } => {
                let (name, l) = match key {
                    Some(k) => (Some(format!("k{k}")), Some(limits(k))),
                    None => (None, None),
                };
                n += 1;
                let id = match delay {
                    Some(d) => {
                        fc.publish_at(name.as_deref(), l, n, Timestamp::from_millis(now + d), t)
                    }
                    None => fc.publish(name.as_deref(), l, n, t),
                }
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let not_before = now + delay.unwrap_or(0);
                msgs.insert(
                    id,
                    Tracked {
                        key,
                        at: Where::Queued { not_before },
                        dispatches: 0,
                    },
                );
                order.push(id);
            }
            Op::Dispatch => {
                while let Some(d) = fc.poll_dispatch(t) {
                    let m = msgs
                        .get_mut(&d.id)
                        .ok_or_else(|| TestCaseError::fail("unknown id dispatched"))?;
                    match m.at {
                        Where::Queued { not_before } => prop_assert!(
                            not_before <= now,
                            "{} dispatched at {now}, before {not_before}",
                            d.id
                        ),
                        other => prop_assert!(false, "{} dispatched while {other:?}", d.id),
                    }
                    m.at = Where::Active;
                    m.dispatches += 1;
                }
            }
            Op::Complete(i) | Op::Retry(i, _) | Op::Requeue(i) => {
                let active: Vec<MessageId> = order
                    .iter()
                    .copied()
                    .filter(|id| msgs[id].at == Where::Active)
                    .collect();
                if active.is_empty() {
                    continue;
                }
                let id = active[i % active.len()];
                let m = msgs.get_mut(&id).expect("tracked");
                match op {
                    Op::Complete(_) => {
                        prop_assert_eq!(fc.complete(id, t).ok(), Some(fc_value(&order, id)));
                        m.at = Where::Done;
                    }
                    Op::Retry(_, backoff) => {
                        fc.retry(id, Timestamp::from_millis(now + backoff), t)
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                        m.at = Where::Queued {
                            not_before: now + backoff,
                        };
                    }
                    _ => {
                        fc.requeue(id, t)
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                        m.at = Where::Queued { not_before: now };
                    }
                }
            }
            Op::Cancel(i) => {
                if order.is_empty() {
                    continue;
                }
                let id = order[i % order.len()];
                let m = msgs.get_mut(&id).expect("tracked");
                let cancelled = fc.cancel(id);
                match m.at {
                    Where::Queued { .. } => {
                        prop_assert_eq!(cancelled, Some(fc_value(&order, id)));
                        m.at = Where::Done;
                    }
                    _ => prop_assert_eq!(cancelled, None),
                }
            }
            Op::Advance(ms) => now += ms,
            Op::Snapshot => {
                let snap = fc.snapshot();
                let json = serde_json::to_string(&snap).expect("plain data");
                let back =
                    FlowControl::restore_exact(serde_json::from_str(&json).expect("own output"))
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(back.snapshot(), snap);
                fc = back;
            }
        }
        check(&fc, &msgs, now)?;
    }
    // Liveness: everything not cancelled or done is delivered, exactly once more each.
    for _ in 0..2000 {
        now += 1000;
        let t = Timestamp::from_millis(now);
        while let Some(d) = fc.poll_dispatch(t) {
            let m = msgs.get_mut(&d.id).expect("tracked");
            let ready = matches!(m.at, Where::Queued { not_before } if not_before <= now);
            prop_assert!(ready, "{} dispatched early or twice", d.id);
            m.at = Where::Done;
            prop_assert_eq!(fc.complete(d.id, t).ok(), Some(fc_value(&order, d.id)));
        }
        let active: Vec<MessageId> = order
            .iter()
            .copied()
            .filter(|id| msgs[id].at == Where::Active)
            .collect();
        for id in active {
            fc.complete(id, t)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            msgs.get_mut(&id).expect("tracked").at = Where::Done;
        }
        if msgs.values().all(|m| m.at == Where::Done) {
            break;
        }
    }
    prop_assert!(
        msgs.values().all(|m| m.at == Where::Done),
        "messages never delivered"
    );
    prop_assert_eq!(
        (fc.waiting_count(), fc.delayed_count(), fc.active_count()),
        (0, 0, 0)
    );
    Ok(())
}

/// The payload of `id`: publish order, from 1.
fn fc_value(order: &[MessageId], id: MessageId) -> u64 {
    order.iter().position(|&o| o == id).expect("published") as u64 + 1
}

fn check(
    fc: &FlowControl<u64>,
    msgs: &HashMap<MessageId, Tracked>,
    now: u64,
) -> Result<(), TestCaseError> {
    let t = Timestamp::from_millis(now);
    let count = |f: &dyn Fn(&Tracked) -> bool| msgs.values().filter(|m| f(m)).count();
    let queued = count(&|m| matches!(m.at, Where::Queued { .. }));
    let active = count(&|m| m.at == Where::Active);
    prop_assert_eq!(fc.active_count(), active);
    prop_assert_eq!(
        fc.waiting_count() + fc.delayed_count(),
        queued,
        "a message is lost or doubled"
    );
    for k in 0..LIMITS.len() {
        let l = limits(k);
        let mine = count(&|m| m.key == Some(k) && m.at == Where::Active);
        if let Some(info) = fc.key_info(&format!("k{k}"), t) {
            prop_assert_eq!(info.parallelism_count as usize, mine);
            if let Some(p) = l.parallelism {
                prop_assert!(
                    info.parallelism_count <= p.get(),
                    "k{k}: parallelism exceeded"
                );
            }
            if let Some(r) = l.rate {
                prop_assert!(info.rate_count <= r.max.get(), "k{}: rate exceeded", k);
            }
        } else {
            prop_assert_eq!(mine, 0, "k{} reclaimed while active", k);
            let held = count(&|m| m.key == Some(k) && matches!(m.at, Where::Queued { .. }));
            prop_assert_eq!(held, 0, "k{} reclaimed while messages wait or are held", k);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config {
        cases: 256,
        rng_seed: RngSeed::Fixed(0xDE1A_7E57),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..Config::default()
    })]

    #[test]
    fn delays_and_retries_keep_limits_and_lose_nothing(ops in prop::collection::vec(op(), 1..150)) {
        run(ops)?;
    }
}
