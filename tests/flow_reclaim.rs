//! Idle-key reclamation: memory follows live keys (DESIGN §1.3 "Key lifetime").
//!
//! One test per binary: it measures heap bytes with a counting global allocator.

use std::time::Duration;

use flowvec::flow::{FlowConfig, FlowControl, Limits, Timestamp};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

fn live() -> isize {
    counting_alloc::live_bytes()
}

#[test]
fn a_million_distinct_keys_are_reclaimed_once_idle() {
    const N: u32 = 1_000_000;
    let ttl = Duration::from_secs(30);
    let mut fc = FlowControl::new(FlowConfig {
        idle_key_ttl: ttl,
        ..FlowConfig::default()
    });
    let limits: Limits = "parallelism=2,rate=5,period=10s".parse().unwrap();
    let t0 = Timestamp::from_secs(1_700_000_000);
    // A handful of keys that must survive: paused and pinned ones.
    fc.pause("keep-paused", t0).unwrap();
    fc.pin(
        "keep-pinned",
        flowvec::flow::Pin {
            rate: std::num::NonZeroU32::new(3),
            ..Default::default()
        },
        t0,
    )
    .unwrap();
    let baseline = live();

    let mut key = String::new();
    for i in 0..N {
        key.clear();
        key.push_str("tenant-");
        key.push_str(&i.to_string());
        fc.publish(Some(&key), Some(limits), i, t0).unwrap();
    }
    let peak = live() - baseline;
    assert_eq!(fc.key_count(), N as usize + 2);
    let mut done = 0;
    while let Some(d) = fc.poll_dispatch(t0) {
        fc.complete(d.id, t0.add_millis(1)).unwrap();
        done += 1;
    }
    assert_eq!(done, N);
    assert_eq!(
        fc.key_count(),
        N as usize + 2,
        "idle keys wait for their ttl"
    );

    // Keys go once idle for the ttl and their 10 s windows have passed; the host just follows
    // poll_timeout.
    let due = fc
        .poll_timeout()
        .expect("idle keys have reclamation timers");
    assert_eq!(due, t0.add_millis(1 + 30_000));
    fc.handle_timeout(due);
    assert_eq!(
        fc.key_count(),
        2,
        "only the paused and the pinned key are held"
    );
    let names: Vec<String> = fc
        .keys(due)
        .into_iter()
        .map(|k| k.flow_control_key)
        .collect();
    assert_eq!(names, ["keep-paused", "keep-pinned"]);
    assert_eq!(fc.poll_timeout(), None, "nothing left waits on time");

    let after = live() - baseline;
    println!("heap: peak {peak} B for {N} keys with a message each, {after} B after reclamation");
    assert!(
        peak > 100 * i64::from(N) as isize,
        "the peak really held a million keys: {peak}"
    );
    assert!(
        after < 64 * 1024,
        "memory follows live keys: {after} B still held after reclamation"
    );

    // The engine keeps working with reused slots.
    fc.publish(Some("tenant-7"), Some(limits), 7, due).unwrap();
    assert_eq!(fc.poll_dispatch(due).map(|d| d.message), Some(7));
}
