//! `search` is `&self`: four threads searching at once get exactly what one thread gets.

mod dense_support;

use dense_support::{METRICS, backends, build, build_with, clustered, for_metric};

#[test]
fn concurrent_searches_match_sequential_ones() {
    for metric in METRICS {
        let data = for_metric(metric, clustered(2_000, 16, 20, 41));
        let queries = for_metric(metric, clustered(64, 16, 20, 42));
        let mut indexes = vec![("exact".to_string(), build(metric, &data, false))];
        for backend in backends() {
            indexes.push((
                format!("{backend:?}"),
                build_with(metric, &data, true, backend),
            ));
        }
        for (graph, index) in &indexes {
            let allow = |id: u32| !id.is_multiple_of(3);
            let run = |q: &Vec<f32>| {
                (
                    index.search(q, 10, None, None, None).expect("valid"),
                    index
                        .search(q, 10, Some(32), Some(&allow), None)
                        .expect("valid"),
                )
            };
            let sequential: Vec<_> = queries.iter().map(run).collect();
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|t| {
                        let (queries, run) = (&queries, &run);
                        s.spawn(move || {
                            // Each thread walks the queries from a different start.
                            (0..queries.len())
                                .map(|i| (i + t * 16) % queries.len())
                                .map(|i| (i, run(&queries[i])))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                for h in handles {
                    for (i, got) in h.join().expect("no panic") {
                        assert_eq!(got, sequential[i], "{metric:?} graph={graph} query {i}");
                    }
                }
            });
        }
    }
}
