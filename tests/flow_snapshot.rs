//! Snapshot and restore (DESIGN §1.3 "Durability"): round trips, at-least-once delivery of
//! active calls, and corrupt snapshots rejected with an error, never a panic.

use std::num::NonZeroU32;

use flowvec::flow::{FlowConfig, FlowControl, FlowError, FlowSnapshot, Pin, Timestamp};
use proptest::prelude::*;
use serde_json::Value;

fn t(ms: u64) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000 + ms)
}

/// An engine with a bit of everything: keys with limits, pins, pauses, active calls, waiting
/// messages, unkeyed messages and free slots.
fn busy_engine() -> FlowControl<String> {
    let mut fc = FlowControl::new(FlowConfig {
        global_parallelism: NonZeroU32::new(10),
        ..FlowConfig::default()
    });
    for i in 0..6 {
        fc.publish(
            Some("a"),
            Some("parallelism=2,rate=3,period=1m".parse().unwrap()),
            format!("a{i}"),
            t(0),
        )
        .unwrap();
        fc.publish(
            Some("b"),
            Some("rate=1".parse().unwrap()),
            format!("b{i}"),
            t(0),
        )
        .unwrap();
        fc.publish(None, None, format!("u{i}"), t(0)).unwrap();
    }
    fc.pin(
        "c",
        Pin {
            parallelism: NonZeroU32::new(4),
            ..Pin::default()
        },
        t(0),
    )
    .unwrap();
    fc.pause("d", t(0)).unwrap();
    let first = fc.poll_dispatch(t(1)).unwrap();
    while fc.poll_dispatch(t(1)).is_some() {}
    fc.complete(first.id, t(2)).unwrap();
    fc
}

#[test]
fn restore_puts_active_calls_back_at_the_head_of_their_keys() {
    let fc = busy_engine();
    let snap = fc.snapshot();
    let json = serde_json::to_string(&snap).unwrap();
    let mut restored = FlowControl::restore(
        serde_json::from_str::<FlowSnapshot<String>>(&json).unwrap(),
        t(3),
    )
    .unwrap();
    assert_eq!(
        restored.active_count(),
        0,
        "active calls were lost with the host"
    );
    assert_eq!(
        restored.waiting_count(),
        fc.waiting_count() + fc.active_count()
    );
    let a = restored.key_info("a", t(3)).unwrap();
    assert_eq!(
        (a.parallelism_count, a.wait_list_size, a.rate_count),
        (0, 5, 2),
        "a1 was active and is waiting again; the window's count survives"
    );
    assert!(restored.key_info("c", t(3)).unwrap().is_pinned_parallelism);
    assert!(restored.key_info("d", t(3)).unwrap().is_paused);
    // a1 was active: it comes first again, then the rest in order, once the window allows.
    let later = t(60_001);
    let mut a_order = Vec::new();
    while let Some(d) = restored.poll_dispatch(later) {
        if d.key.as_deref() == Some("a") {
            a_order.push(d.message.clone());
        }
        restored.complete(d.id, later).unwrap();
    }
    assert_eq!(a_order, ["a1", "a2", "a3"]);
}

#[test]
fn snapshot_of_a_restored_engine_is_stable() {
    let fc = busy_engine();
    let r1 = FlowControl::restore(fc.snapshot(), t(3)).unwrap();
    let r2 = FlowControl::restore(r1.snapshot(), t(3)).unwrap();
    assert_eq!(r1.snapshot(), r2.snapshot());
}

/// A hand edit of a snapshot's JSON.
type Edit = Box<dyn FnOnce(&mut Value)>;

fn corrupt(edit: impl FnOnce(&mut Value)) -> FlowError {
    let mut json = serde_json::to_value(busy_engine().snapshot()).unwrap();
    edit(&mut json);
    let snap: FlowSnapshot<String> = serde_json::from_value(json).expect("still well-typed");
    FlowControl::restore(snap, t(3)).expect_err("corruption is detected")
}

#[test]
fn corrupt_snapshots_are_rejected() {
    let cases: Vec<(&str, Edit)> = vec![
        (
            "duplicate message",
            Box::new(|j| {
                let m = j["messages"][0].clone();
                j["messages"].as_array_mut().unwrap().push(m);
            }),
        ),
        (
            "dangling waitlist id",
            Box::new(|j| {
                j["keys"][1]["waiting"]
                    .as_array_mut()
                    .unwrap()
                    .push(Value::from("999-999"));
            }),
        ),
        (
            "message missing from its waitlist",
            Box::new(|j| {
                j["keys"][1]["waiting"].as_array_mut().unwrap().pop();
            }),
        ),
        (
            "bad key name",
            Box::new(|j| j["keys"][1]["key"] = Value::from("bad\nkey")),
        ),
        (
            "duplicate key name",
            Box::new(|j| {
                let name = j["keys"][1]["key"].clone();
                j["keys"][2]["key"] = name;
            }),
        ),
        (
            "period out of range",
            Box::new(|j| j["keys"][1]["period"] = Value::from(0)),
        ),
        (
            "key slot out of range",
            Box::new(|j| j["keys"][1]["slot"] = Value::from(4_000_000_000u64)),
        ),
        (
            "unkeyed slot missing",
            Box::new(|j| {
                j["keys"].as_array_mut().unwrap().remove(0);
            }),
        ),
        (
            "huge slot count",
            Box::new(|j| j["keySlots"] = Value::from(u32::MAX)),
        ),
        (
            "future sequence",
            Box::new(|j| j["nextSeq"] = Value::from(0)),
        ),
        (
            "ready ring repeats",
            Box::new(|j| {
                let r = j["ready"][0].clone();
                j["ready"].as_array_mut().unwrap().push(r);
            }),
        ),
        (
            "free list repeats",
            Box::new(|j| {
                let free = j["freeMessages"].as_array_mut().unwrap();
                free.push(Value::from(0));
            }),
        ),
    ];
    for (what, edit) in cases {
        let err = corrupt(edit);
        assert!(
            matches!(err, FlowError::InvalidSnapshot { .. }),
            "{what}: {err:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random numeric edits anywhere in a snapshot: restore returns Ok or an error, never
    /// panics, and what it accepts behaves (it can be drained).
    #[test]
    fn restore_never_panics_on_edited_snapshots(edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u64..40), 1..4)) {
        let mut json = serde_json::to_value(busy_engine().snapshot()).unwrap();
        let mut numbers = Vec::new();
        collect_number_paths(&json, String::new(), &mut numbers);
        for (i, v) in edits {
            let path = &numbers[i.index(numbers.len())];
            *json.pointer_mut(path).unwrap() = Value::from(v);
        }
        if let Ok(snap) = serde_json::from_value::<FlowSnapshot<String>>(json)
            && let Ok(mut fc) = FlowControl::restore(snap, t(3)) {
                let far = t(10_000_000);
                for k in fc.keys(far) {
                    let _ = fc.resume(&k.flow_control_key, far);
                }
                let mut n = 0;
                while let Some(d) = fc.poll_dispatch(far) {
                    fc.complete(d.id, far).unwrap();
                    n += 1;
                    prop_assert!(n < 10_000);
                }
            }
    }
}

fn collect_number_paths(v: &Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(path),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| collect_number_paths(x, format!("{path}/{i}"), out)),
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| collect_number_paths(x, format!("{path}/{k}"), out)),
        _ => {}
    }
}
