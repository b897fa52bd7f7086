//! Pruned sparse search against a brute-force oracle: same ids in the same order and the same
//! score bits, after random inserts, replaces and removes, with and without IDF, with filters,
//! custom tie-breaks, negative values, ties, and `k` above the number of matches.

use flowvec::vector::sparse::{SparseIndex, Weighting};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

type Model = BTreeMap<u32, (Vec<i32>, Vec<f32>)>;

/// Which ids a query accepts.
#[derive(Debug, Clone, Copy)]
enum Allow {
    All,
    Modulo(u32, u32),
}

impl Allow {
    fn accepts(self, id: u32) -> bool {
        match self {
            Allow::All => true,
            Allow::Modulo(m, r) => id % m != r,
        }
    }
}

/// The IDF formula, written out independently of the library, in `f64`.
fn idf_oracle(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// Scores every record (query-term order, `f64`, as documented), sorts, cuts.
fn brute(
    model: &Model,
    q: &[(i32, f32)],
    k: usize,
    weighting: Weighting,
    allow: Allow,
    reverse_ties: bool,
) -> Vec<(u32, f32)> {
    let n = model.len();
    let df = |t: i32| model.values().filter(|(ix, _)| ix.contains(&t)).count();
    let weights: Vec<f64> = q
        .iter()
        .map(|&(t, v)| match weighting {
            Weighting::None => f64::from(v),
            Weighting::Idf => f64::from(v) * idf_oracle(n, df(t)),
        })
        .collect();
    let mut hits: Vec<(u32, f32)> = Vec::new();
    for (&id, (ix, vals)) in model {
        if !allow.accepts(id) {
            continue;
        }
        let mut score = 0.0f64;
        let mut shared = false;
        for (&(t, _), w) in q.iter().zip(&weights) {
            if let Ok(p) = ix.binary_search(&t) {
                score += w * f64::from(vals[p]);
                shared = true;
            }
        }
        if shared {
            hits.push((id, score as f32));
        }
    }
    hits.sort_by(|a, b| {
        b.1.total_cmp(&a.1).then(if reverse_ties {
            b.0.cmp(&a.0)
        } else {
            a.0.cmp(&b.0)
        })
    });
    hits.truncate(k);
    hits
}

fn search(
    index: &SparseIndex,
    q: &[(i32, f32)],
    k: usize,
    weighting: Weighting,
    allow: Allow,
    reverse_ties: bool,
) -> Vec<(u32, f32)> {
    let (ix, vals): (Vec<i32>, Vec<f32>) = q.iter().copied().unzip();
    let filter = move |id: u32| allow.accepts(id);
    let allow_ref: Option<&dyn Fn(u32) -> bool> = match allow {
        Allow::All => None,
        Allow::Modulo(..) => Some(&filter),
    };
    let reverse = |a: u32, b: u32| b.cmp(&a);
    let tie: Option<&dyn Fn(u32, u32) -> Ordering> = reverse_ties.then_some(&reverse as _);
    index.search(&ix, &vals, k, weighting, allow_ref, tie)
}

fn assert_same(got: &[(u32, f32)], want: &[(u32, f32)], context: &str) {
    let ids = |v: &[(u32, f32)]| v.iter().map(|h| h.0).collect::<Vec<_>>();
    assert_eq!(ids(got), ids(want), "ids differ: {context}");
    for (g, w) in got.iter().zip(want) {
        let rel = (g.1 - w.1).abs() / w.1.abs().max(f32::MIN_POSITIVE);
        assert!(
            rel <= 1e-5,
            "score of {} {} vs {}: {context}",
            g.0,
            g.1,
            w.1
        );
        // Documented: scores are summed in query-term order, so they are bit-identical.
        assert_eq!(
            g.1.to_bits(),
            w.1.to_bits(),
            "score bits of {}: {context}",
            g.0
        );
    }
}

fn assert_stats(index: &SparseIndex, model: &Model, terms: impl Iterator<Item = i32>) {
    assert_eq!(index.len(), model.len());
    assert_eq!(
        index.postings(),
        model.values().map(|(ix, _)| ix.len()).sum::<usize>()
    );
    for t in terms {
        let df = model.values().filter(|(ix, _)| ix.contains(&t)).count() as u64;
        assert_eq!(index.doc_freq(t), df, "doc_freq of term {t}");
    }
    for (&id, v) in model {
        assert_eq!(index.vector(id).as_ref(), Some(v), "vector of {id}");
    }
}

// ---------------------------------------------------------------------------------------------
// Proptest: small vocabularies, heavy churn, many ties, negative values.

#[derive(Debug, Clone)]
enum Op {
    Upsert(u32, Vec<(i32, f32)>),
    Remove(u32),
}

fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        // Repeated values make score ties common, also at the k-th place.
        3 => prop::sample::select(vec![-1.0f32, 0.25, 0.5, 1.0, 2.0]),
        2 => -3.0f32..3.0,
        1 => 0.0f32..1e-3,
    ]
}

fn vector(max_len: usize) -> impl Strategy<Value = Vec<(i32, f32)>> {
    prop::collection::btree_map(-12i32..12, value(), 1..=max_len)
        .prop_map(|m| m.into_iter().collect())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..40, vector(8)).prop_map(|(id, v)| Op::Upsert(id, v)),
        1 => (0u32..40).prop_map(Op::Remove),
    ]
}

#[derive(Debug, Clone)]
struct Query {
    terms: Vec<(i32, f32)>,
    k: usize,
    idf: bool,
    allow: Allow,
    reverse_ties: bool,
}

fn query() -> impl Strategy<Value = Query> {
    let allow = prop_oneof![
        Just(Allow::All),
        (2u32..4, 0u32..2).prop_map(|(m, r)| Allow::Modulo(m, r))
    ];
    (
        vector(10),
        prop_oneof![1usize..6, 6usize..60],
        any::<bool>(),
        allow,
        any::<bool>(),
    )
        .prop_map(|(terms, k, idf, allow, reverse_ties)| Query {
            terms,
            k,
            idf,
            allow,
            reverse_ties,
        })
}

fn apply(index: &mut SparseIndex, model: &mut Model, op: &Op) {
    match op {
        Op::Upsert(id, v) => {
            let (ix, vals): (Vec<i32>, Vec<f32>) = v.iter().copied().unzip();
            index.insert(*id, &ix, &vals);
            model.insert(*id, (ix, vals));
        }
        Op::Remove(id) => assert_eq!(index.remove(*id), model.remove(id).is_some()),
    }
}

proptest! {
    #![proptest_config(Config {
        cases: 200,
        rng_seed: RngSeed::Fixed(5),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..Config::default()
    })]

    #[test]
    fn pruned_equals_brute_force_under_churn(
        ops in prop::collection::vec(op(), 1..80),
        queries in prop::collection::vec(query(), 1..8),
    ) {
        let mut index = SparseIndex::new();
        let mut model = Model::new();
        for (step, op) in ops.iter().enumerate() {
            apply(&mut index, &mut model, op);
            // Query midway too, so every query sees the index at several stages.
            if step % 16 == 15 || step + 1 == ops.len() {
                for q in &queries {
                    let w = if q.idf { Weighting::Idf } else { Weighting::None };
                    let got = search(&index, &q.terms, q.k, w, q.allow, q.reverse_ties);
                    let want = brute(&model, &q.terms, q.k, w, q.allow, q.reverse_ties);
                    assert_same(&got, &want, &format!("step {step} query {q:?}"));
                }
            }
        }
        assert_stats(&index, &model, -12..12);
    }
}

// ---------------------------------------------------------------------------------------------
// Fixed seeds: Zipf-distributed terms at a size where pruning skips most of the work.

struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut total = 0.0;
        let cumulative = (1..=n)
            .map(|r| {
                total += 1.0 / (r as f64).powf(s);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    fn sample(&self, rng: &mut StdRng) -> i32 {
        let total = *self.cumulative.last().expect("non-empty");
        let u = rng.random::<f64>() * total;
        self.cumulative.partition_point(|&c| c < u) as i32
    }
}

fn zipf_vector(rng: &mut StdRng, zipf: &Zipf, len: usize, negative: bool) -> Vec<(i32, f32)> {
    let mut terms = BTreeSet::new();
    while terms.len() < len {
        terms.insert(zipf.sample(rng));
    }
    terms
        .into_iter()
        .map(|t| {
            let v = if rng.random_bool(0.3) {
                // BM25-like repeated values: ties.
                [0.8f32, 1.2, 1.6][rng.random_range(0..3)]
            } else {
                rng.random_range(0.05f32..2.2)
            };
            (
                t,
                if negative && rng.random_bool(0.2) {
                    -v
                } else {
                    v
                },
            )
        })
        .collect()
}

fn zipf_run(seed: u64, negative: bool) {
    let mut rng = StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(3000, 1.0);
    let mut index = SparseIndex::new();
    let mut model = Model::new();
    // Ids sparse in u32 space (including the extremes) and inserted in random order.
    let ids: Vec<u32> = (0..2500u32)
        .map(|i| match i {
            0 => u32::MAX,
            1 => 0,
            _ => rng.random_range(0..i * 1000 + 2),
        })
        .collect();
    for _ in 0..5000 {
        let id = ids[rng.random_range(0..ids.len())];
        let op = if rng.random_bool(0.2) {
            Op::Remove(id)
        } else {
            let len = rng.random_range(1..30);
            Op::Upsert(id, zipf_vector(&mut rng, &zipf, len, negative))
        };
        apply(&mut index, &mut model, &op);
    }
    assert_stats(&index, &model, 0..3000);
    let (mut matched, mut candidates) = (0u64, 0u64);
    for qi in 0..150 {
        let len = rng.random_range(1..25);
        let q = zipf_vector(&mut rng, &zipf, len, negative);
        let k = [1, 10, 10, 100, 100_000][qi % 5];
        let weighting = if qi % 2 == 0 {
            Weighting::Idf
        } else {
            Weighting::None
        };
        let allow = if qi % 3 == 0 {
            Allow::Modulo(3, 1)
        } else {
            Allow::All
        };
        let reverse = qi % 7 == 0;
        let got = search(&index, &q, k, weighting, allow, reverse);
        let want = brute(&model, &q, k, weighting, allow, reverse);
        assert_same(&got, &want, &format!("seed {seed} query {qi}"));
        if k == 10 && matches!(allow, Allow::All) {
            let (ix, vals): (Vec<i32>, Vec<f32>) = q.iter().copied().unzip();
            let (_, stats) = index.search_with_stats(&ix, &vals, k, weighting, None, None);
            matched += brute(&model, &q, usize::MAX, weighting, allow, false).len() as u64;
            candidates += stats.candidates;
        }
    }
    if !negative {
        // Pruning must actually skip documents, not only be correct.
        assert!(
            candidates * 10 < matched * 9,
            "candidates {candidates} of {matched} matched"
        );
    }
}

#[test]
fn zipf_churn_matches_brute_force() {
    for seed in [1, 2, 3] {
        zipf_run(seed, false);
    }
}

#[test]
fn zipf_churn_with_negative_values_matches_brute_force() {
    for seed in [11, 12] {
        zipf_run(seed, true);
    }
}

#[test]
fn k_beyond_matches_returns_every_match() {
    let mut index = SparseIndex::new();
    let mut model = Model::new();
    for id in 0..50u32 {
        let v = vec![((id % 7) as i32, 1.0 + (id % 3) as f32)];
        apply(&mut index, &mut model, &Op::Upsert(id, v));
    }
    let q = [(0, 1.0f32), (3, 0.5)];
    let got = search(&index, &q, 1000, Weighting::Idf, Allow::All, false);
    assert_eq!(got.len(), 15); // ids ≡ 0 or 3 (mod 7) below 50: 8 + 7
    assert_same(
        &got,
        &brute(&model, &q, 1000, Weighting::Idf, Allow::All, false),
        "k=1000",
    );
}

/// Dense ids over many windows of the accumulator (tens of thousands of ids), so that windows
/// after the first run with a known threshold: all-positive values (the scatter that notes
/// crossing ids, from the first window on), values with zeros (monotone, but zero-score
/// documents exist), an all-negative query on all-negative lists (monotone downwards) and mixed
/// signs (the bitmap path), each with ties, filters, reversed ties and several `k`.
#[test]
fn dense_ids_across_windows_match_brute_force() {
    for (seed, kind) in [(21u64, 0u8), (22, 1), (23, 2), (24, 3)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let zipf = Zipf::new(400, 1.1);
        let mut index = SparseIndex::new();
        let mut model = Model::new();
        let value = |rng: &mut StdRng| -> f32 {
            let v = if rng.random_bool(0.4) {
                [0.5f32, 1.0, 1.5][rng.random_range(0..3)]
            } else {
                rng.random_range(0.05f32..2.0)
            };
            match kind {
                1 if rng.random_bool(0.05) => 0.0,
                2 => -v,
                3 if rng.random_bool(0.2) => -v,
                _ => v,
            }
        };
        for id in 0..40_000u32 {
            let len = rng.random_range(1..12);
            let mut terms = BTreeSet::new();
            while terms.len() < len {
                terms.insert(zipf.sample(&mut rng));
            }
            let v: Vec<(i32, f32)> = terms.into_iter().map(|t| (t, value(&mut rng))).collect();
            apply(&mut index, &mut model, &Op::Upsert(id, v));
        }
        // Churn: some ids removed, some re-inserted below the largest.
        for _ in 0..2000 {
            let id = rng.random_range(0..40_000u32);
            apply(&mut index, &mut model, &Op::Remove(id));
        }
        for qi in 0..40 {
            let len = rng.random_range(1..15);
            let mut terms = BTreeSet::new();
            while terms.len() < len {
                terms.insert(zipf.sample(&mut rng));
            }
            let q: Vec<(i32, f32)> = terms
                .into_iter()
                .map(|t| (t, if kind == 2 { -1.0 } else { 1.0 }))
                .collect();
            let k = [1, 10, 10, 50, 1000][qi % 5];
            let weighting = if qi % 2 == 0 {
                Weighting::Idf
            } else {
                Weighting::None
            };
            let allow = if qi % 3 == 0 {
                Allow::Modulo(4, 1)
            } else {
                Allow::All
            };
            let reverse = qi % 7 == 0;
            let got = search(&index, &q, k, weighting, allow, reverse);
            let want = brute(&model, &q, k, weighting, allow, reverse);
            assert_same(&got, &want, &format!("seed {seed} query {qi}"));
        }
    }
}
