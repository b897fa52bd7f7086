//! Bad parameters and bad vectors are typed errors naming the offending value, never panics.

use flowvec::vector::dense::{DenseConfig, DenseIndex, GraphBackend};
use flowvec::vector::{Metric, VectorError};

fn param_error(config: DenseConfig) -> (&'static str, String) {
    match DenseIndex::new(config) {
        Err(VectorError::InvalidParameter { name, value, .. }) => (name, value),
        other => panic!("expected InvalidParameter, got {other:?}"),
    }
}

#[test]
fn out_of_range_config_parameters_are_typed_errors() {
    let base = || DenseConfig::new(8, Metric::Cosine);
    assert_eq!(
        param_error(DenseConfig::new(0, Metric::Cosine)),
        ("dimension", "0".into())
    );
    // hnsw_rs would call process::exit above 256: caught before it is reached.
    for m in [0, 1, 257, 100_000] {
        assert_eq!(param_error(base().with_m(m)), ("m", m.to_string()));
    }
    for ef in [0, 10_001] {
        assert_eq!(
            param_error(base().with_ef_construction(ef)),
            ("ef_construction", ef.to_string())
        );
        assert_eq!(
            param_error(base().with_ef_search(ef)),
            ("ef_search", ef.to_string())
        );
    }
    for f in [0.0, -0.5, 1.5, f64::NAN] {
        assert_eq!(
            param_error(base().with_rebuild_fraction(f)).0,
            "rebuild_fraction"
        );
    }
    assert!(DenseIndex::new(base().with_m(256).with_ef_construction(10_000)).is_ok());
}

#[test]
fn bad_search_ef_is_a_typed_error() {
    let mut index = DenseIndex::new(DenseConfig::new(2, Metric::Euclidean)).expect("valid");
    index.insert(1, &[1.0, 2.0]).expect("valid");
    for ef in [0, 10_001] {
        let err = index
            .search(&[1.0, 2.0], 1, Some(ef), None, None)
            .unwrap_err();
        assert_eq!(
            err,
            VectorError::InvalidParameter {
                name: "ef",
                value: ef.to_string(),
                expected: "between 1 and 10000"
            }
        );
        assert!(err.to_string().contains(&ef.to_string()));
    }
}

#[test]
fn bad_vectors_are_typed_errors_and_change_nothing() {
    let mut index = DenseIndex::new(DenseConfig::new(3, Metric::Cosine)).expect("valid");
    let err = index.insert(1, &[1.0, 2.0]).unwrap_err();
    assert_eq!(
        err,
        VectorError::DimensionMismatch {
            received: 2,
            expected: 3
        }
    );
    assert_eq!(err.to_string(), "Invalid vector dimension: 2, expected: 3");
    assert_eq!(
        index.insert(1, &[1.0, f32::NAN, 0.0]).unwrap_err(),
        VectorError::NonFiniteValue {
            position: 1,
            value: "NaN".into()
        }
    );
    assert_eq!(
        index.insert(1, &[f32::NEG_INFINITY, 0.0, 0.0]).unwrap_err(),
        VectorError::NonFiniteValue {
            position: 0,
            value: "-inf".into()
        }
    );
    assert_eq!(
        index.insert(1, &[0.0, 0.0, 0.0]).unwrap_err(),
        VectorError::ZeroVector
    );
    assert!(index.is_empty());
    assert_eq!(
        index
            .search(&[0.0, 0.0, 0.0], 1, None, None, None)
            .unwrap_err(),
        VectorError::ZeroVector
    );
}

#[test]
fn huge_but_finite_values_do_not_panic_the_graph() {
    let mut backends = vec![GraphBackend::Native];
    if cfg!(feature = "hnsw-rs") {
        backends.push(GraphBackend::HnswRs);
    }
    for (backend, metric) in backends
        .into_iter()
        .flat_map(|b| [Metric::Euclidean, Metric::DotProduct, Metric::Cosine].map(|m| (b, m)))
    {
        let config = DenseConfig::new(2, metric)
            .with_exact_threshold(0)
            .with_backend(backend);
        let mut index = DenseIndex::new(config).expect("valid");
        for i in 0..50u32 {
            let s = if i % 2 == 0 { 3e38 } else { -3e38 };
            index.insert(i, &[s, -s]).expect("finite");
        }
        let hits = index
            .search(&[3e38, 3e38], 5, None, None, None)
            .expect("valid");
        assert_eq!(hits.len(), 5);
        assert!(
            hits.iter().all(|h| (0.0..=1.0).contains(&h.1)),
            "{backend:?} {metric:?} {hits:?}"
        );
    }
}
