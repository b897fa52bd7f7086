//! Properties of the fusion functions: the streaming statistics DBSF uses agree with the naive
//! two-pass formulas, outputs are ordered and complete, and DBSF ignores affine rescaling.

use flowvec::vector::fusion::{Welford, dbsf, dbsf_weighted, rrf, rrf_weighted};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use std::collections::BTreeSet;

fn config() -> Config {
    Config {
        cases: 512,
        rng_seed: RngSeed::Fixed(20_261_122),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..Config::default()
    }
}

/// A result list, best first: distinct ids; scores are multiples of 1/4 (repeats are common,
/// and distinct scores stay distinct under the rescaling below).
fn list() -> impl Strategy<Value = Vec<(u16, f32)>> {
    prop::collection::btree_map(0u16..60, -400i32..400, 0..30).prop_map(|m| {
        let mut v: Vec<(u16, f32)> = m.into_iter().map(|(id, q)| (id, q as f32 / 4.0)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    })
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_ordered(fused: &[(u16, f32)]) {
    for w in fused.windows(2) {
        assert!(
            w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0),
            "not best first with ties by id: {w:?}"
        );
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn welford_matches_naive_two_pass(
        xs in prop::collection::vec(-1e4f64..1e4, 1..500),
        offset in prop_oneof![Just(0.0f64), -1e6f64..1e6],
    ) {
        let xs: Vec<f64> = xs.iter().map(|x| x + offset).collect();
        let mut w = Welford::new();
        for &x in &xs {
            w.push(x);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        prop_assert_eq!(w.count(), xs.len() as u64);
        prop_assert!(close(w.mean().expect("non-empty"), mean, 1e-12), "{:?} vs {}", w.mean(), mean);
        if xs.len() > 1 {
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let got = w.sample_variance().expect("two samples");
            // Relative to the data's magnitude: the offset costs the naive formula digits too.
            let scale = (offset.abs() + 1e4).powi(2);
            prop_assert!((got - var).abs() <= 1e-9 * scale, "{} vs {}", got, var);
        } else {
            prop_assert_eq!(w.sample_variance(), None);
        }
    }

    #[test]
    fn outputs_are_ordered_complete_and_cut(
        lists in prop::collection::vec(list(), 0..4),
        k in 0usize..80,
    ) {
        let refs: Vec<&[(u16, f32)]> = lists.iter().map(Vec::as_slice).collect();
        let ids: BTreeSet<u16> = lists.iter().flatten().map(|h| h.0).collect();
        for fused in [rrf(&refs, k), dbsf(&refs, k)] {
            assert_ordered(&fused);
            prop_assert_eq!(fused.len(), ids.len().min(k));
            let got: BTreeSet<u16> = fused.iter().map(|h| h.0).collect();
            prop_assert_eq!(got.len(), fused.len());
            prop_assert!(got.is_subset(&ids));
        }
        // Missing weights are 1.0 in both.
        prop_assert_eq!(rrf_weighted(&refs, &[1.0], k), rrf(&refs, k));
        prop_assert_eq!(dbsf_weighted(&refs, &[1.0], k), dbsf(&refs, k));
    }

    #[test]
    fn dbsf_ignores_positive_affine_rescaling(
        a in list(),
        b in list(),
        scale in 0.01f32..100.0,
        shift in -50.0f32..50.0,
    ) {
        let rescaled: Vec<(u16, f32)> = a.iter().map(|&(id, s)| (id, s * scale + shift)).collect();
        let plain = dbsf(&[&a, &b], usize::MAX);
        let moved = dbsf(&[&rescaled, &b], usize::MAX);
        prop_assert_eq!(plain.len(), moved.len());
        let by_id = |v: &[(u16, f32)]| v.iter().map(|&(id, s)| (id, s)).collect::<std::collections::BTreeMap<_, _>>();
        let (p, m) = (by_id(&plain), by_id(&moved));
        for (id, s) in &p {
            prop_assert!(close(f64::from(*s), f64::from(m[id]), 1e-4), "id {}: {} vs {}", id, s, m[id]);
        }
    }
}
