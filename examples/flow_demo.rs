//! Drives the flow-control engine with a simulated clock through the seed's combined example:
//! rate 10 per minute with parallelism 20 on one key, 30 messages; call `i` takes
//! 150 s + 5 s × i, so calls finish one by one.
//!
//! Run: `cargo run --release --example flow_demo`
//!
//! Expected: 10 calls in the first minute, 10 in the next, then nothing (although the rate
//! window has room again) until a call completes; from then on one call starts per completion.

use std::collections::BTreeMap;

use flowvec::flow::{FlowConfig, FlowControl, FlowError, Limits, MessageId, Timestamp};

/// The simulation's epoch: 2024-01-01T00:00:00Z.
const EPOCH_MS: u64 = 1_704_067_200_000;
const KEY: &str = "api";

fn clock(t: Timestamp) -> String {
    let ms = t.as_millis() - EPOCH_MS;
    format!("+{:02}:{:02}.{:03}", ms / 60_000, ms / 1000 % 60, ms % 1000)
}

fn call_ms(message: u32) -> u64 {
    150_000 + 5_000 * u64::from(message)
}

fn main() -> Result<(), FlowError> {
    let limits: Limits = "rate=10,period=1m,parallelism=20".parse()?;
    let mut fc = FlowControl::new(FlowConfig::default());
    let mut now = Timestamp::from_millis(EPOCH_MS);
    // Completion times of the calls in flight (the simulated destination).
    let mut in_flight: BTreeMap<(Timestamp, MessageId), u32> = BTreeMap::new();

    println!("key {KEY:?} with `{limits}`; 30 messages; call i takes 150 s + 5 s * i");
    println!("the host wakes at poll_timeout(), at each completion, and once a minute\n");
    for i in 0..30 {
        fc.publish(Some(KEY), Some(limits), i, now)?;
    }
    println!("{}  published 0..29", clock(now));

    let mut completed = Vec::new();
    loop {
        let mut sent = Vec::new();
        while let Some(d) = fc.poll_dispatch(now) {
            in_flight.insert((now.add_millis(call_ms(d.message)), d.id), d.message);
            sent.push(d.message.to_string());
        }
        let info = fc.key_info(KEY, now).expect("the key has messages");
        let done = if completed.is_empty() {
            String::new()
        } else {
            format!("completed {}; ", completed.join(" "))
        };
        let what = if sent.is_empty() {
            "nothing dispatched".to_owned()
        } else {
            format!("dispatched {}", sent.join(" "))
        };
        println!(
            "{}  {:<44} active {:>2}/20  window {:>2}/10  waiting {:>2}",
            clock(now),
            format!("{done}{what}"),
            info.parallelism_count,
            info.rate_count,
            info.wait_list_size
        );
        completed.clear();
        if fc.waiting_count() == 0 {
            break;
        }
        // Sleep until the engine's timer, the next completion or the next whole minute.
        let timer = fc.poll_timeout();
        let completion = in_flight.keys().next().map(|(t, _)| *t);
        let minute = Timestamp::from_millis((now.as_millis() / 60_000 + 1) * 60_000);
        now = [timer, completion, Some(minute)]
            .into_iter()
            .flatten()
            .min()
            .expect("one is set");
        while let Some((&(t, id), &m)) = in_flight.iter().next() {
            if t > now {
                break;
            }
            in_flight.remove(&(t, id));
            fc.complete(id, now)?;
            completed.push(m.to_string());
        }
    }
    // Let the remaining calls finish.
    for ((t, id), _) in std::mem::take(&mut in_flight) {
        now = t;
        fc.complete(id, now)?;
    }
    println!(
        "\n{}  all 30 delivered and completed; key info:",
        clock(now)
    );
    let info = fc.key_info(KEY, now).expect("kept until its idle ttl");
    println!(
        "{}",
        serde_json::to_string_pretty(&info).expect("plain data serializes")
    );
    Ok(())
}
