//! Round-robin fairness across keys under a global cap (DESIGN §1.3 "Fairness").

use std::collections::HashMap;
use std::num::NonZeroU32;

use flowvec::flow::{FlowConfig, FlowControl, Limits, Timestamp};

fn t(ms: u64) -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000 + ms)
}

fn limits() -> Limits {
    "parallelism=100".parse().unwrap()
}

#[test]
fn a_busy_key_cannot_starve_others_under_the_global_cap() {
    let mut fc = FlowControl::new(FlowConfig {
        global_parallelism: NonZeroU32::new(1),
        ..FlowConfig::default()
    });
    for i in 0..1_000 {
        fc.publish(Some("hot"), Some(limits()), i, t(0)).unwrap();
    }
    for k in 0..9 {
        for i in 0..10 {
            fc.publish(Some(&format!("cold-{k}")), Some(limits()), i, t(0))
                .unwrap();
        }
    }
    let mut order = Vec::new();
    while order.len() < 100 {
        let d = fc.poll_dispatch(t(0)).expect("a slot is free");
        assert!(fc.poll_dispatch(t(0)).is_none(), "global cap 1");
        fc.complete(d.id, t(0)).unwrap();
        order.push(d.key.expect("keyed").to_string());
    }
    // Strict rotation: every 10 consecutive dispatches serve 10 different keys.
    for (i, round) in order.chunks(10).enumerate() {
        let mut distinct: Vec<&String> = round.iter().collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            10,
            "round {i} is not one per key: {round:?}"
        );
    }
    // All cold keys are finished after 100 dispatches; the hot key got its fair tenth.
    assert_eq!(order.iter().filter(|k| *k == "hot").count(), 10);
    assert_eq!(fc.waiting_count(), 990);
    for k in 0..9 {
        assert_eq!(
            fc.key_info(&format!("cold-{k}"), t(0))
                .unwrap()
                .wait_list_size,
            0
        );
    }
}

#[test]
fn round_robin_holds_when_completions_arrive_out_of_order() {
    let mut fc = FlowControl::new(FlowConfig {
        global_parallelism: NonZeroU32::new(3),
        ..FlowConfig::default()
    });
    let keys = ["a", "b", "c", "d", "e"];
    for k in keys {
        for i in 0..200 {
            fc.publish(Some(k), Some(limits()), i, t(0)).unwrap();
        }
    }
    let mut active = Vec::new();
    let mut served: HashMap<String, u32> = HashMap::new();
    for step in 0..500u64 {
        while let Some(d) = fc.poll_dispatch(t(step)) {
            *served
                .entry(d.key.clone().unwrap().to_string())
                .or_default() += 1;
            active.push(d.id);
        }
        assert_eq!(active.len(), 3);
        // Complete the middle one: completions in a different order than dispatches.
        let id = active.remove(1);
        fc.complete(id, t(step)).unwrap();
    }
    let counts: Vec<u32> = keys.iter().map(|k| served[*k]).collect();
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(max - min <= 1, "each key got the same share: {counts:?}");
}

#[test]
fn a_key_that_becomes_ready_joins_the_rotation_at_the_back() {
    let mut fc = FlowControl::new(FlowConfig {
        global_parallelism: NonZeroU32::new(1),
        ..FlowConfig::default()
    });
    for k in ["a", "b"] {
        for i in 0..10 {
            fc.publish(Some(k), Some(limits()), i, t(0)).unwrap();
        }
    }
    let next = |fc: &mut FlowControl<u32>| {
        let d = fc.poll_dispatch(t(0)).unwrap();
        fc.complete(d.id, t(0)).unwrap();
        d.key.unwrap().to_string()
    };
    assert_eq!(next(&mut fc), "a");
    fc.publish(Some("late"), Some(limits()), 0, t(0)).unwrap();
    let order: Vec<String> = (0..4).map(|_| next(&mut fc)).collect();
    assert_eq!(order, ["b", "a", "late", "b"]);
}

#[test]
fn rate_limited_keys_do_not_block_the_rotation() {
    let mut fc = FlowControl::new(FlowConfig::default());
    for i in 0..5 {
        fc.publish(
            Some("slow"),
            Some("rate=1,period=1m".parse().unwrap()),
            i,
            t(0),
        )
        .unwrap();
        fc.publish(Some("fast"), Some(limits()), i, t(0)).unwrap();
    }
    let keys: Vec<String> = std::iter::from_fn(|| fc.poll_dispatch(t(0)))
        .map(|d| d.key.unwrap().to_string())
        .collect();
    assert_eq!(keys.iter().filter(|k| *k == "slow").count(), 1);
    assert_eq!(keys.iter().filter(|k| *k == "fast").count(), 5);
}
