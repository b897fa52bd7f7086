//! `SharedFlowControl` from 4 threads × 100k operations: the invariants hold and nothing is lost.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flowvec::flow::{FlowConfig, Limits, SharedFlowControl, Timestamp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const THREADS: u64 = 4;
const OPS: u64 = 100_000;
const GLOBAL: u32 = 16;

#[test]
fn four_threads_hundred_thousand_ops_each() {
    let fc = Arc::new(SharedFlowControl::new(FlowConfig {
        global_parallelism: NonZeroU32::new(GLOBAL),
        ..FlowConfig::default()
    }));
    let clock = Arc::new(AtomicU64::new(1_700_000_000_000));
    let limits: [Limits; 3] = [
        "parallelism=2".parse().unwrap(),
        "parallelism=3,rate=50,period=1s".parse().unwrap(),
        "rate=20".parse().unwrap(),
    ];
    let workers: Vec<_> = (0..THREADS)
        .map(|tid| {
            let fc = Arc::clone(&fc);
            let clock = Arc::clone(&clock);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(tid);
                let mut mine = Vec::new(); // this thread's active calls
                let (mut published, mut completed, mut cancelled) = (0u64, 0u64, 0u64);
                let mut waiting_ids = Vec::new();
                for op in 0..OPS {
                    let now = Timestamp::from_millis(clock.fetch_add(1, Ordering::Relaxed));
                    match rng.random_range(0..10) {
                        0..=3 => {
                            let k = rng.random_range(0..8u32);
                            let id = fc
                                .publish(
                                    Some(&format!("k{k}")),
                                    Some(limits[(k % 3) as usize]),
                                    (tid, op),
                                    now,
                                )
                                .unwrap();
                            waiting_ids.push(id);
                            published += 1;
                        }
                        4..=6 => {
                            if let Some(d) = fc.poll_dispatch(now) {
                                assert!(fc.global_info().parallelism_count <= GLOBAL);
                                mine.push(d.id);
                            }
                        }
                        7 | 8 if !mine.is_empty() => {
                            let i = rng.random_range(0..mine.len());
                            let id = mine.swap_remove(i);
                            if rng.random_bool(0.9) {
                                fc.complete(id, now).unwrap();
                                completed += 1;
                            } else {
                                fc.requeue(id, now).unwrap();
                            }
                        }
                        _ if !waiting_ids.is_empty() => {
                            let i = rng.random_range(0..waiting_ids.len());
                            if fc.cancel(waiting_ids.swap_remove(i)).is_some() {
                                cancelled += 1;
                            }
                        }
                        _ => {}
                    }
                }
                for id in mine {
                    fc.complete(id, Timestamp::from_millis(clock.load(Ordering::Relaxed)))
                        .unwrap();
                    completed += 1;
                }
                (published, completed, cancelled)
            })
        })
        .collect();
    let (mut published, mut completed, mut cancelled) = (0, 0, 0);
    for w in workers {
        let (p, c, x) = w.join().expect("worker panicked");
        published += p;
        completed += c;
        cancelled += x;
    }
    let mut fc = Arc::into_inner(fc).expect("workers are done").into_engine();
    assert_eq!(fc.active_count(), 0);
    let waiting = fc.waiting_count() as u64;
    assert_eq!(
        published,
        completed + cancelled + waiting,
        "nothing lost or duplicated"
    );
    let per_key: u64 = fc
        .keys(Timestamp::from_millis(u64::MAX / 2))
        .iter()
        .map(|k| k.wait_list_size)
        .sum();
    assert_eq!(per_key, waiting);
    // Drain the rest single-threaded, far in the future: each message exactly once.
    let mut now = Timestamp::from_millis(clock.load(Ordering::Relaxed));
    let mut seen = std::collections::HashSet::new();
    while fc.waiting_count() > 0 {
        now = now.add_millis(1_000);
        while let Some(d) = fc.poll_dispatch(now) {
            assert!(seen.insert(d.message), "delivered twice: {:?}", d.message);
            fc.complete(d.id, now).unwrap();
        }
    }
    assert_eq!(seen.len() as u64, waiting);
}
