//! DESIGN §1.3 row by row, driven by a manual clock: the seed's combined example, configuration
//! updates, every operation of the table, key rules, errors and the wire shape of §1.4.

use std::num::NonZeroU32;
use std::time::Duration;

use flowvec::flow::{
    Dispatch, FlowConfig, FlowControl, FlowError, KeyInfo, Limits, MessageId, Period, Pin,
    Timestamp, Unpin,
};

const T0: u64 = 1_700_000_000_000;
const MINUTE: u64 = 60_000;

fn at(ms: u64) -> Timestamp {
    Timestamp::from_millis(T0 + ms)
}

fn l(s: &str) -> Limits {
    s.parse().unwrap()
}

fn nz(n: u32) -> Option<NonZeroU32> {
    NonZeroU32::new(n)
}

fn engine() -> FlowControl<u32> {
    FlowControl::new(FlowConfig::default())
}

fn drain(fc: &mut FlowControl<u32>, now: Timestamp) -> Vec<Dispatch<u32>> {
    std::iter::from_fn(|| fc.poll_dispatch(now)).collect()
}

fn publish_n(
    fc: &mut FlowControl<u32>,
    key: &str,
    limits: &str,
    n: u32,
    now: Timestamp,
) -> Vec<MessageId> {
    (0..n)
        .map(|i| fc.publish(Some(key), Some(l(limits)), i, now).unwrap())
        .collect()
}

fn info(fc: &FlowControl<u32>, key: &str, now: Timestamp) -> KeyInfo {
    fc.key_info(key, now).expect("key is held")
}

#[test]
fn seed_combined_example_rate_10_per_minute_with_parallelism_20() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "rate=10,period=1m,parallelism=20", 30, at(0));

    let first = drain(&mut fc, at(0));
    assert_eq!(first.len(), 10, "10 calls in the first minute");
    assert_eq!(
        first.iter().map(|d| d.message).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(
        drain(&mut fc, at(MINUTE - 1)).is_empty(),
        "nothing more inside the first minute"
    );
    assert_eq!(fc.poll_timeout(), Some(at(MINUTE)));

    let second = drain(&mut fc, at(MINUTE));
    assert_eq!(second.len(), 10, "10 in the next minute");
    assert_eq!(second[0].message, 10);
    assert_eq!(info(&fc, "k", at(MINUTE)).parallelism_count, 20);

    for t in [2 * MINUTE, 3 * MINUTE, 10 * MINUTE] {
        assert!(
            drain(&mut fc, at(t)).is_empty(),
            "none after that while 20 calls are active"
        );
    }
    fc.complete(first[0].id, at(10 * MINUTE)).unwrap();
    let next = drain(&mut fc, at(10 * MINUTE));
    assert_eq!(
        next.iter().map(|d| d.message).collect::<Vec<_>>(),
        vec![20],
        "one completes, one goes"
    );
    assert!(drain(&mut fc, at(10 * MINUTE)).is_empty());
}

#[test]
fn key_configuration_becomes_exactly_the_latest_message_limits() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "parallelism=1,rate=5,period=1h", 3, at(0));
    let i = info(&fc, "k", at(0));
    assert_eq!(
        (i.parallelism_max, i.rate_max, i.rate_period),
        (Some(1), Some(5), 3600)
    );
    // A message without parallelism makes parallelism unlimited; its rate replaces the old one.
    publish_n(&mut fc, "k", "rate=2", 1, at(0));
    let i = info(&fc, "k", at(0));
    assert_eq!(
        (i.parallelism_max, i.rate_max, i.rate_period),
        (None, Some(2), 1)
    );
    // Waiting messages are governed by the new configuration: 2 go, not 1.
    assert_eq!(drain(&mut fc, at(0)).len(), 2);
    publish_n(&mut fc, "k", "parallelism=100", 1, at(0));
    assert_eq!(info(&fc, "k", at(0)).rate_max, None);
    assert_eq!(
        drain(&mut fc, at(0)).len(),
        3,
        "rate now unlimited: everything waiting goes"
    );
}

#[test]
fn dispatch_respects_parallelism_and_frees_on_complete() {
    let mut fc = engine();
    let ids = publish_n(&mut fc, "k", "parallelism=2", 5, at(0));
    let d = drain(&mut fc, at(0));
    assert_eq!(d.iter().map(|d| d.id).collect::<Vec<_>>(), ids[..2]);
    fc.complete(d[1].id, at(1)).unwrap();
    assert_eq!(
        drain(&mut fc, at(1))
            .iter()
            .map(|d| d.id)
            .collect::<Vec<_>>(),
        ids[2..3]
    );
    assert_eq!(
        fc.poll_timeout().filter(|t| *t <= at(1_000)),
        None,
        "parallelism waits on completions, not time"
    );
}

#[test]
fn complete_of_a_non_active_id_is_an_error_and_changes_nothing() {
    let mut fc = engine();
    let ids = publish_n(&mut fc, "k", "parallelism=1", 2, at(0));
    let before = fc.snapshot();
    assert_eq!(
        fc.complete(ids[0], at(0)),
        Err(FlowError::NotActive { id: ids[0] }),
        "waiting, not active"
    );
    assert_eq!(
        fc.requeue(ids[0], at(0)),
        Err(FlowError::NotActive { id: ids[0] })
    );
    let ghost: MessageId = "999-999".parse().unwrap();
    assert!(fc.complete(ghost, at(0)).is_err());
    assert_eq!(fc.snapshot(), before);

    let d = fc.poll_dispatch(at(0)).unwrap();
    assert_eq!(fc.complete(d.id, at(0)), Ok(0));
    let err = fc.complete(d.id, at(0)).unwrap_err();
    assert!(err.to_string().contains(&d.id.to_string()), "{err}");
    assert_eq!(
        info(&fc, "k", at(0)).parallelism_count,
        0,
        "no ghost slot released twice"
    );
    let second = fc.poll_dispatch(at(0)).unwrap();
    assert_eq!(second.id, ids[1]);
    assert!(fc.poll_dispatch(at(0)).is_none());
    assert_eq!(info(&fc, "k", at(0)).parallelism_count, 1);
}

#[test]
fn rate_window_is_fixed_and_reported_lazily() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "rate=3,period=10s", 10, at(0));
    assert_eq!(drain(&mut fc, at(500)).len(), 3);
    let i = info(&fc, "k", at(9_999));
    assert_eq!((i.rate_count, i.rate_period_start), (3, (T0 + 500) / 1000));
    assert_eq!(
        info(&fc, "k", at(10_500)).rate_count,
        0,
        "window passed: count reads 0"
    );
    assert!(
        drain(&mut fc, at(10_499)).is_empty(),
        "[start, start + period) is half-open"
    );
    // The next window opens at the next dispatch, not at the old window's end.
    assert_eq!(drain(&mut fc, at(12_000)).len(), 3);
    assert_eq!(
        info(&fc, "k", at(12_000)).rate_period_start,
        (T0 + 12_000) / 1000
    );
    assert_eq!(fc.poll_timeout(), Some(at(22_000)));
}

#[test]
fn pause_keeps_messages_waiting_lets_active_calls_finish_and_keeps_the_window() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "parallelism=2,rate=3,period=1m", 6, at(0));
    let active = drain(&mut fc, at(0));
    assert_eq!(active.len(), 2);
    fc.pause("k", at(1)).unwrap();
    publish_n(&mut fc, "k", "parallelism=2,rate=3,period=1m", 1, at(2));
    fc.complete(active[0].id, at(3)).unwrap();
    assert!(
        drain(&mut fc, at(3)).is_empty(),
        "paused: nothing dispatched, new or waiting"
    );
    let i = info(&fc, "k", at(3));
    assert!(i.is_paused);
    assert_eq!(
        (i.wait_list_size, i.parallelism_count, i.rate_count),
        (5, 1, 2),
        "completion freed a slot; count kept"
    );
    assert_eq!(
        info(&fc, "k", at(MINUTE)).rate_count,
        0,
        "the window keeps elapsing while paused"
    );
    fc.complete(active[1].id, at(MINUTE)).unwrap();
    assert!(drain(&mut fc, at(MINUTE)).is_empty());

    // resume: delivery continues under the limits.
    fc.resume("k", at(MINUTE)).unwrap();
    assert!(!info(&fc, "k", at(MINUTE)).is_paused);
    assert_eq!(drain(&mut fc, at(MINUTE)).len(), 2);
}

#[test]
fn pause_within_an_open_window_keeps_its_count() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "rate=3,period=1m", 6, at(0));
    assert_eq!(drain(&mut fc, at(0)).len(), 3);
    fc.pause("k", at(1_000)).unwrap();
    fc.resume("k", at(2_000)).unwrap();
    assert!(
        drain(&mut fc, at(2_000)).is_empty(),
        "count of the open window survived the pause"
    );
    assert_eq!(drain(&mut fc, at(MINUTE)).len(), 3);
}

#[test]
fn pin_sets_and_pins_parts_messages_cannot_change_them() {
    let mut fc = engine();
    assert_eq!(
        fc.pin("k", Pin::default(), at(0)),
        Err(FlowError::EmptyPin {
            key: "k".to_owned()
        })
    );
    assert!(
        fc.key_info("k", at(0)).is_none(),
        "a rejected pin creates nothing"
    );
    fc.pin(
        "k",
        Pin {
            parallelism: nz(1),
            ..Pin::default()
        },
        at(0),
    )
    .unwrap();
    publish_n(&mut fc, "k", "parallelism=10,rate=2,period=1m", 4, at(0));
    let i = info(&fc, "k", at(0));
    assert_eq!(
        (
            i.parallelism_max,
            i.rate_max,
            i.is_pinned_parallelism,
            i.is_pinned_rate
        ),
        (Some(1), Some(2), true, false)
    );
    assert_eq!(
        drain(&mut fc, at(0)).len(),
        1,
        "pinned parallelism 1 wins over the message's 10"
    );

    fc.pin(
        "k",
        Pin {
            rate: nz(1),
            period: Period::from_secs(3600),
            ..Pin::default()
        },
        at(0),
    )
    .unwrap();
    publish_n(&mut fc, "k", "rate=100,period=1s", 1, at(0));
    let i = info(&fc, "k", at(0));
    assert_eq!(
        (i.rate_max, i.rate_period, i.is_pinned_rate),
        (Some(1), 3600, true)
    );
}

#[test]
fn pinning_rate_resets_the_rate_count_and_window() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "rate=2,period=1h", 5, at(0));
    assert_eq!(drain(&mut fc, at(0)).len(), 2);
    assert_eq!(info(&fc, "k", at(1)).rate_count, 2);
    fc.pin(
        "k",
        Pin {
            rate: nz(2),
            ..Pin::default()
        },
        at(1),
    )
    .unwrap();
    let i = info(&fc, "k", at(1));
    assert_eq!(
        (i.rate_count, i.rate_period),
        (0, 3600),
        "rate-only pin keeps the period"
    );
    assert_eq!(drain(&mut fc, at(1)).len(), 2, "a fresh window");
    // A period-only pin keeps the rate.
    fc.pin(
        "k",
        Pin {
            period: Period::from_secs(60),
            ..Pin::default()
        },
        at(2),
    )
    .unwrap();
    let i = info(&fc, "k", at(2));
    assert_eq!((i.rate_max, i.rate_period, i.rate_count), (Some(2), 60, 0));
}

#[test]
fn pin_of_a_period_for_a_key_without_rate_is_an_error() {
    let mut fc = engine();
    let err = fc
        .pin(
            "k",
            Pin {
                period: Period::from_secs(60),
                ..Pin::default()
            },
            at(0),
        )
        .unwrap_err();
    assert_eq!(
        err,
        FlowError::PeriodWithoutRate {
            period: "1m".to_owned()
        }
    );
    assert!(fc.key_info("k", at(0)).is_none());
}

#[test]
fn unpin_parts_independently_values_stay_until_a_message_brings_others() {
    let mut fc = engine();
    let pin = Pin {
        parallelism: nz(2),
        rate: nz(4),
        period: Period::from_secs(60),
    };
    fc.pin("k", pin, at(0)).unwrap();
    fc.unpin(
        "k",
        Unpin {
            parallelism: true,
            rate: false,
        },
        at(0),
    )
    .unwrap();
    let i = info(&fc, "k", at(0));
    assert_eq!((i.is_pinned_parallelism, i.is_pinned_rate), (false, true));
    assert_eq!(
        (i.parallelism_max, i.rate_max, i.rate_period),
        (Some(2), Some(4), 60),
        "values stay in force"
    );

    publish_n(&mut fc, "k", "parallelism=7,rate=9,period=1s", 1, at(0));
    let i = info(&fc, "k", at(0));
    assert_eq!(
        (i.parallelism_max, i.rate_max, i.rate_period),
        (Some(7), Some(4), 60),
        "only the unpinned part follows the message"
    );

    fc.unpin(
        "k",
        Unpin {
            parallelism: false,
            rate: true,
        },
        at(0),
    )
    .unwrap();
    assert_eq!(
        info(&fc, "k", at(0)).rate_max,
        Some(4),
        "still in force after unpin"
    );
    publish_n(&mut fc, "k", "parallelism=7", 1, at(0));
    assert_eq!(
        info(&fc, "k", at(0)).rate_max,
        None,
        "a message brought other limits"
    );
}

#[test]
fn reset_rate_ends_the_window_and_the_next_dispatch_starts_a_fresh_one() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "rate=2,period=1h", 6, at(0));
    assert_eq!(drain(&mut fc, at(0)).len(), 2);
    fc.reset_rate("k", at(5_000)).unwrap();
    assert_eq!(info(&fc, "k", at(5_000)).rate_count, 0);
    assert_eq!(drain(&mut fc, at(5_000)).len(), 2);
    let i = info(&fc, "k", at(5_000));
    assert_eq!(
        (i.rate_count, i.rate_period_start),
        (2, (T0 + 5_000) / 1000)
    );
    assert_eq!(fc.poll_timeout(), Some(at(5_000 + 3_600_000)));
    assert_eq!(
        fc.reset_rate("nope", at(0)),
        Err(FlowError::UnknownKey {
            key: "nope".to_owned()
        })
    );
}

#[test]
fn cancel_removes_a_waiting_message_and_returns_it() {
    let mut fc = engine();
    let ids = publish_n(&mut fc, "k", "parallelism=1", 4, at(0));
    let d = fc.poll_dispatch(at(0)).unwrap();
    assert_eq!(fc.cancel(d.id), None, "an active call is not cancelled");
    assert_eq!(
        fc.cancel(ids[2]),
        Some(2),
        "from the middle of the waitlist"
    );
    assert_eq!(fc.cancel(ids[2]), None);
    assert_eq!(info(&fc, "k", at(0)).wait_list_size, 2);
    fc.complete(d.id, at(0)).unwrap();
    let rest: Vec<u32> = std::iter::from_fn(|| {
        let d = fc.poll_dispatch(at(0))?;
        fc.complete(d.id, at(0)).unwrap();
        Some(d.message)
    })
    .collect();
    assert_eq!(rest, vec![1, 3], "FIFO order kept around the hole");
}

#[test]
fn requeue_frees_the_slot_puts_the_message_first_and_counts_against_rate_again() {
    let mut fc = engine();
    let ids = publish_n(&mut fc, "k", "parallelism=1,rate=2,period=1m", 3, at(0));
    let d = fc.poll_dispatch(at(0)).unwrap();
    assert_eq!(d.id, ids[0]);
    fc.requeue(d.id, at(1)).unwrap();
    let i = info(&fc, "k", at(1));
    assert_eq!(
        (i.parallelism_count, i.wait_list_size, i.rate_count),
        (0, 3, 1)
    );
    let again = fc.poll_dispatch(at(1)).unwrap();
    assert_eq!(again.id, ids[0], "back at the head of the waitlist");
    assert_eq!(
        info(&fc, "k", at(1)).rate_count,
        2,
        "counted against rate again"
    );
    fc.complete(again.id, at(2)).unwrap();
    assert!(
        fc.poll_dispatch(at(2)).is_none(),
        "rate 2 per minute used up by the retry"
    );
    assert_eq!(fc.poll_dispatch(at(MINUTE)).map(|d| d.id), Some(ids[1]));
}

#[test]
fn pause_pin_and_unpin_create_unknown_keys_info_on_unknown_is_none() {
    let mut fc = engine();
    assert!(fc.key_info("a", at(0)).is_none());
    fc.pause("a", at(0)).unwrap();
    fc.pin(
        "b",
        Pin {
            rate: nz(3),
            ..Pin::default()
        },
        at(0),
    )
    .unwrap();
    fc.unpin("c", Unpin::default(), at(0)).unwrap();
    assert!(info(&fc, "a", at(0)).is_paused);
    assert_eq!(info(&fc, "b", at(0)).rate_max, Some(3));
    assert_eq!(
        fc.keys(at(0))
            .iter()
            .map(|k| k.flow_control_key.as_str())
            .collect::<Vec<_>>(),
        ["a", "b", "c"],
        "c is idle and unpinned: reclaimed only after its ttl"
    );
    // A paused key's first message waits.
    publish_n(&mut fc, "a", "rate=1", 1, at(0));
    assert!(fc.poll_dispatch(at(0)).is_none());
    assert_eq!(
        fc.resume("zzz", at(0)),
        Err(FlowError::UnknownKey {
            key: "zzz".to_owned()
        })
    );
}

#[test]
fn keys_without_limits_and_limits_without_keys_are_errors() {
    let mut fc = engine();
    assert_eq!(
        fc.publish(Some("k"), None, 1, at(0)),
        Err(FlowError::MissingLimits {
            key: "k".to_owned()
        })
    );
    let err = fc.publish(None, Some(l("rate=5")), 1, at(0)).unwrap_err();
    assert_eq!(
        err,
        FlowError::LimitsWithoutKey {
            limits: "rate=5,period=1s".to_owned()
        }
    );
    assert!(err.to_string().contains("rate=5"));
    assert_eq!(fc.waiting_count(), 0);
    assert_eq!(fc.key_count(), 0);
}

#[test]
fn bad_keys_are_rejected_everywhere() {
    let mut fc = engine();
    let long = "k".repeat(513);
    for bad in ["", "a\nb", "nul\0", long.as_str()] {
        assert!(
            matches!(
                fc.publish(Some(bad), Some(l("rate=1")), 1, at(0)),
                Err(FlowError::InvalidKey { .. })
            ),
            "{bad:?}"
        );
        assert!(matches!(
            fc.pause(bad, at(0)),
            Err(FlowError::InvalidKey { .. })
        ));
        assert!(matches!(
            fc.pin(
                bad,
                Pin {
                    parallelism: nz(1),
                    ..Pin::default()
                },
                at(0)
            ),
            Err(FlowError::InvalidKey { .. })
        ));
        assert!(matches!(
            fc.unpin(bad, Unpin::default(), at(0)),
            Err(FlowError::InvalidKey { .. })
        ));
        assert!(matches!(
            fc.resume(bad, at(0)),
            Err(FlowError::InvalidKey { .. })
        ));
        assert!(matches!(
            fc.reset_rate(bad, at(0)),
            Err(FlowError::InvalidKey { .. })
        ));
        assert!(fc.key_info(bad, at(0)).is_none());
    }
    assert_eq!(fc.key_count(), 0);
    fc.publish(Some(&"k".repeat(512)), Some(l("rate=1")), 1, at(0))
        .unwrap();
    fc.publish(
        Some("ключ with spaces/and:punctuation"),
        Some(l("rate=1")),
        1,
        at(0),
    )
    .unwrap();
    let err = fc.pause("a\tb", at(0)).unwrap_err().to_string();
    assert!(err.contains(r#""a\tb""#), "the key is quoted: {err}");
}

#[test]
fn unkeyed_messages_are_limited_only_by_the_global_maximum() {
    let mut fc = FlowControl::new(FlowConfig {
        global_parallelism: nz(3),
        ..FlowConfig::default()
    });
    for i in 0..5 {
        fc.publish(None, None, i, at(0)).unwrap();
    }
    let d = drain(&mut fc, at(0));
    assert_eq!(d.len(), 3);
    assert!(d.iter().all(|d| d.key.is_none()));
    assert_eq!(fc.global_info().parallelism_count, 3);
    fc.complete(d[0].id, at(0)).unwrap();
    assert_eq!(drain(&mut fc, at(0)).len(), 1);
    fc.set_global_parallelism(None);
    assert_eq!(drain(&mut fc, at(0)).len(), 1);
    assert_eq!(fc.key_count(), 0, "unkeyed messages are not a key");
}

#[test]
fn global_maximum_caps_all_keys() {
    let mut fc = FlowControl::new(FlowConfig {
        global_parallelism: nz(4),
        ..FlowConfig::default()
    });
    for k in ["a", "b", "c"] {
        publish_n(&mut fc, k, "parallelism=3", 3, at(0));
    }
    let d = drain(&mut fc, at(0));
    assert_eq!(d.len(), 4);
    let g = fc.global_info();
    assert_eq!((g.parallelism_max, g.parallelism_count), (Some(4), 4));
    fc.complete(d[0].id, at(0)).unwrap();
    assert_eq!(drain(&mut fc, at(0)).len(), 1);
}

#[test]
fn key_info_serializes_to_the_wire_shape() {
    let mut fc = engine();
    publish_n(
        &mut fc,
        "orders",
        "parallelism=5,rate=10,period=1m",
        2,
        at(0),
    );
    let _ = fc.poll_dispatch(at(1_500)).unwrap();
    fc.pin(
        "orders",
        Pin {
            parallelism: nz(5),
            ..Pin::default()
        },
        at(1_500),
    )
    .unwrap();
    let json = serde_json::to_value(info(&fc, "orders", at(2_000))).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "flowControlKey": "orders",
            "waitListSize": 1,
            "parallelismMax": 5,
            "parallelismCount": 1,
            "rateMax": 10,
            "rateCount": 1,
            "ratePeriod": 60,
            "ratePeriodStart": (T0 + 1_500) / 1000,
            "isPaused": false,
            "isPinnedParallelism": true,
            "isPinnedRate": false,
        })
    );
    fc.pause("bare", at(0)).unwrap();
    let json = serde_json::to_value(info(&fc, "bare", at(0))).unwrap();
    assert!(
        json.get("parallelismMax").is_none() && json.get("rateMax").is_none(),
        "absent maxima are omitted: {json}"
    );
    let back: KeyInfo = serde_json::from_value(json).unwrap();
    assert_eq!(back, info(&fc, "bare", at(0)));
    assert_eq!(
        serde_json::to_value(fc.global_info()).unwrap(),
        serde_json::json!({"parallelismCount": 1})
    );
}

#[test]
fn time_never_runs_backwards_inside_the_engine() {
    let mut fc = engine();
    publish_n(&mut fc, "k", "rate=1,period=10s", 3, at(10_000));
    assert!(fc.poll_dispatch(at(10_000)).is_some());
    assert!(
        fc.poll_dispatch(at(0)).is_none(),
        "an earlier now is the latest seen"
    );
    assert!(fc.poll_dispatch(at(20_000)).is_some());
    assert!(fc.poll_dispatch(at(5_000)).is_none());
}

#[test]
fn idle_keys_are_reclaimed_after_the_ttl_and_their_window() {
    let mut fc = FlowControl::new(FlowConfig {
        idle_key_ttl: Duration::from_secs(5),
        ..FlowConfig::default()
    });
    publish_n(&mut fc, "short", "rate=10,period=1s", 1, at(0));
    publish_n(&mut fc, "long", "rate=10,period=1h", 1, at(0));
    fc.pause("paused", at(0)).unwrap();
    fc.pin(
        "pinned",
        Pin {
            parallelism: nz(1),
            ..Pin::default()
        },
        at(0),
    )
    .unwrap();
    for d in drain(&mut fc, at(0)) {
        fc.complete(d.id, at(1_000)).unwrap();
    }
    assert_eq!(fc.key_count(), 4);
    assert_eq!(
        fc.poll_timeout(),
        Some(at(6_000)),
        "idle since 1 s + ttl 5 s"
    );
    fc.handle_timeout(at(5_999));
    assert_eq!(fc.key_count(), 4);
    fc.handle_timeout(at(6_000));
    let names: Vec<String> = fc
        .keys(at(6_000))
        .into_iter()
        .map(|k| k.flow_control_key)
        .collect();
    assert_eq!(
        names,
        ["long", "paused", "pinned"],
        "long waits for its hour-long window"
    );
    assert_eq!(fc.poll_timeout(), Some(at(3_600_000)));
    fc.handle_timeout(at(3_600_000));
    assert_eq!(fc.key_count(), 2, "paused and pinned keys are kept");
}
