//! A save taken while writers run is a consistent point-in-time view of each namespace: every
//! batch upsert is in it entirely or not at all, and namespaces created and deleted meanwhile
//! neither deadlock the save nor leave it inconsistent.

use flowvec::vector::{Fetch, Index, IndexConfig, Metric, Range, Vector};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    let mut writers = Vec::new();
    for ns in ["a", "b"] {
        let (index, stop) = (index.clone(), stop.clone());
        writers.push(thread::spawn(move || {
            let mut generation = 0;
            while !stop.load(Ordering::Relaxed) {
                generation += 1;
                index.upsert(ns, batch(generation)).unwrap();
                if generation % 7 == 0 {
                    index.reset(ns);
                }
            }
            generation
        }));
    }
    {
        let (index, stop) = (index.clone(), stop.clone());
        writers.push(thread::spawn(move || {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                rounds += 1;
                index.upsert("churn", batch(rounds)).unwrap();
                index.delete_namespace("churn").unwrap();
            }
            rounds
        }));
    }

    let mut saves = 0;
    let mut seen_data = false;
    while saves < 40 || !seen_data {
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
    let work: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(work.iter().all(|&n| n > 0), "every writer ran: {work:?}");
}
