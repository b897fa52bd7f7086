//! A save taken while writers run is a consistent point-in-time view of each namespace: every
//! batch upsert is in it entirely or not at all, and namespaces created and deleted meanwhile
//! neither deadlock the save nor leave it inconsistent.

use flowvec::vector::{Fetch, Index, IndexConfig, Metric, Range, Vector};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

const BATCH: usize = 40;

/// One batch: every id of the namespace, all stamped with generation `generation`.
fn batch(generation: u64) -> Vec<Vector> {
    (0..BATCH)
        .map(|i| {
            Vector::dense(format!("{i:03}"), vec![i as f32 + 1.0, generation as f32])
                .with_metadata(json!({ "gen": generation }))
        })
        .collect()
}

/// The generations found in a namespace (must be one, or none when empty).
fn generations(index: &Index, ns: &str) -> Vec<u64> {
    let page = index
        .range(
            ns,
            Range {
                include_metadata: true,
                ..Range::first(1000)
            },
        )
        .unwrap();
    let mut gens: Vec<u64> = page
        .vectors
        .iter()
        .map(|r| r.metadata.as_ref().unwrap()["gen"].as_u64().unwrap())
        .collect();
    let n = gens.len();
    gens.dedup();
    assert!(
        n == 0 || n == BATCH,
        "{ns:?} holds {n} records, a partial batch"
    );
    gens
}

#[test]
fn saves_under_concurrent_writers_are_consistent_per_namespace() {
    let index = Arc::new(Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // Rounds done by each writer: the saves go on until every writer has raced with them.
    let rounds: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let mut writers = Vec::new();
    for (w, ns) in ["a", "b"].into_iter().enumerate() {
        let (index, stop, rounds) = (index.clone(), stop.clone(), rounds.clone());
        writers.push(thread::spawn(move || {
            let mut generation = 0;
            while !stop.load(Ordering::Relaxed) {
                generation += 1;
                index.upsert(ns, batch(generation)).unwrap();
                if generation % 7 == 0 {
                    index.reset(ns);
                }
                rounds[w].fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    {
        let (index, stop, rounds) = (index.clone(), stop.clone(), rounds.clone());
        writers.push(thread::spawn(move || {
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                index.upsert("churn", batch(round)).unwrap();
                index.delete_namespace("churn").unwrap();
                rounds[2].fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    let mut saves = 0;
    let mut seen_data = false;
    let all_ran = || rounds.iter().all(|r| r.load(Ordering::Relaxed) >= 20);
    while saves < 40 || !seen_data || !all_ran() {
        let mut bytes = Vec::new();
        index.save(&mut bytes).unwrap();
        let loaded = Index::load(bytes.as_slice()).unwrap();
        for ns in loaded.list_namespaces() {
            let gens = generations(&loaded, &ns);
            assert!(gens.len() <= 1, "{ns:?} mixes generations {gens:?}");
            seen_data |= !gens.is_empty();
            // The vectors were written in the same batches as the metadata.
            if let Some(&g) = gens.first() {
                let rec = loaded
                    .fetch(&ns, Fetch::ids(["000"]).include_all())
                    .unwrap()
                    .remove(0)
                    .unwrap();
                assert_eq!(rec.vector, Some(vec![1.0, g as f32]));
            }
        }
        saves += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
}
