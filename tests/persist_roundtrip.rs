//! Snapshots lose nothing: `load(save(index))` answers every query, fetch, range and info like
//! the original, for every index kind, after random sequences of upserts, updates, deletes and
//! namespace operations (proptest, fixed seed), and a second save gives the same bytes.

use flowvec::vector::{
    Delete, Fetch, FusionAlgorithm, GraphParams, Index, IndexConfig, IndexInfo, Limits,
    MetadataUpdateMode, Metric, Query, QueryMode, Range, SparseVector, Update, Vector, VectorError,
    WeightingStrategy,
};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;

const NAMESPACES: [&str; 3] = ["", "a", "b"];
const DIM: usize = 3;

fn snapshot(index: &Index) -> Vec<u8> {
    let mut bytes = Vec::new();
    index.save(&mut bytes).expect("saving to a Vec cannot fail");
    bytes
}

fn reload(index: &Index) -> Index {
    Index::load(snapshot(index).as_slice()).expect("a fresh snapshot loads")
}

/// Info without `index_size`: a reload compacts away freed slots and tombstones, so the
/// approximate memory figure may shrink; everything else must be equal.
fn info_without_size(index: &Index) -> IndexInfo {
    IndexInfo {
        index_size: 0,
        ..index.info()
    }
}

fn all_pages(index: &Index, ns: &str, prefix: Option<&str>, limit: usize) -> Vec<String> {
    let mut pages = Vec::new();
    let mut cursor = String::new();
    for _ in 0..100 {
        let page = index.range(
            ns,
            Range {
                cursor: cursor.clone(),
                limit,
                prefix: prefix.map(String::from),
                include_metadata: true,
                include_vectors: true,
                include_data: true,
            },
        );
        let next = page.as_ref().map(|p| p.next_cursor.clone()).ok();
        pages.push(format!("{page:?}"));
        match next {
            Some(c) if !c.is_empty() => cursor = c,
            _ => break,
        }
    }
    pages
}

fn queries(config: &IndexConfig) -> Vec<Query> {
    let dense = [
        vec![1.0, 0.0, 0.0],
        vec![0.5, -1.0, 2.0],
        vec![-3.0, -3.0, 1.0],
        vec![0.0, 0.25, 0.0],
    ];
    let sparse = [
        SparseVector::new(vec![0, 1], vec![1.0, 1.0]),
        SparseVector::new(vec![-3, 5, 2], vec![0.5, -2.0, 1.0]),
        SparseVector::new(vec![4], vec![3.0]),
    ];
    let mut out = Vec::new();
    for top_k in [1, 3, 40] {
        for include in [false, true] {
            for filter in ["", "g >= 2", "tag = 'x'"] {
                let base = Query {
                    top_k,
                    include_metadata: include,
                    include_vectors: include,
                    include_data: include,
                    filter: filter.to_owned(),
                    ..Query::default()
                };
                if config.kind.has_dense() {
                    for v in &dense {
                        out.push(Query {
                            vector: Some(v.clone()),
                            ..base.clone()
                        });
                    }
                }
                if config.kind.has_sparse() {
                    for s in &sparse {
                        for weighting in [None, Some(WeightingStrategy::Idf)] {
                            out.push(Query {
                                sparse_vector: Some(s.clone()),
                                weighting_strategy: weighting,
                                ..base.clone()
                            });
                        }
                    }
                }
                if config.kind.has_dense() && config.kind.has_sparse() {
                    for (v, s) in dense.iter().zip(&sparse) {
                        for fusion in [FusionAlgorithm::Rrf, FusionAlgorithm::Dbsf] {
                            for mode in [QueryMode::Hybrid, QueryMode::Dense, QueryMode::Sparse] {
                                out.push(Query {
                                    vector: Some(v.clone()),
                                    sparse_vector: Some(s.clone()),
                                    fusion_algorithm: fusion,
                                    query_mode: mode,
                                    weighting_strategy: Some(WeightingStrategy::Idf),
                                    ..base.clone()
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Asserts that `b` answers exactly like `a`, and that saving `b` gives `a`'s bytes.
fn assert_same(a: &Index, b: &Index) {
    assert_eq!(a.config(), b.config());
    assert_eq!(a.list_namespaces(), b.list_namespaces());
    assert_eq!(info_without_size(a), info_without_size(b));
    let qs = queries(a.config());
    let ids: Vec<String> = (0..16).map(id).chain(["zz".to_owned()]).collect();
    let mut names = a.list_namespaces();
    names.push("never-created".into());
    for ns in &names {
        assert_eq!(
            all_pages(a, ns, None, 3),
            all_pages(b, ns, None, 3),
            "{ns:?}"
        );
        assert_eq!(
            all_pages(a, ns, Some("r0"), 2),
            all_pages(b, ns, Some("r0"), 2)
        );
        for fetch in [
            Fetch::ids(ids.clone()).include_all(),
            Fetch::ids(ids.clone()),
            Fetch::prefix("r1").include_all(),
        ] {
            assert_eq!(a.fetch(ns, fetch.clone()), b.fetch(ns, fetch), "{ns:?}");
        }
        for q in &qs {
            assert_eq!(a.query(ns, q), b.query(ns, q), "{ns:?} {q:?}");
        }
        assert_eq!(a.query_batch(ns, &qs[..4]), b.query_batch(ns, &qs[..4]));
    }
    assert_eq!(snapshot(a), snapshot(b), "snapshots are canonical");
}

fn id(n: usize) -> String {
    format!("r{n:02}")
}

// ---------------------------------------------------------------------------------------------
// Random operation sequences.

#[derive(Debug, Clone)]
struct Rec {
    id: usize,
    dense: [i8; DIM],
    sparse: BTreeMap<i8, i8>,
    metadata: Option<(u8, bool)>,
    data: Option<u8>,
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(usize, Vec<Rec>),
    Update {
        ns: usize,
        rec: Rec,
        vectors: bool,
        metadata: bool,
        patch: bool,
        data: bool,
    },
    DeleteIds(usize, Vec<usize>),
    DeletePrefix(usize, usize),
    DeleteFilter(usize),
    Reset(usize),
    ResetAll,
    DeleteNamespace(usize),
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        0..16usize,
        prop::array::uniform3(-3i8..=3),
        prop::collection::btree_map(-3i8..=5, -4i8..=4, 1..4),
        prop::option::of((0u8..4, any::<bool>())),
        prop::option::of(0u8..3),
    )
        .prop_map(|(id, dense, sparse, metadata, data)| Rec {
            id,
            dense,
            sparse,
            metadata,
            data,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let ns = 0..NAMESPACES.len();
    prop_oneof![
        6 => (ns.clone(), prop::collection::vec(rec(), 0..6)).prop_map(|(n, r)| Op::Upsert(n, r)),
        3 => (ns.clone(), rec(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(ns, rec, vectors, metadata, patch, data)| Op::Update {
                ns, rec, vectors, metadata, patch, data
            }),
        2 => (ns.clone(), prop::collection::vec(0..16usize, 1..4)).prop_map(|(n, i)| Op::DeleteIds(n, i)),
        1 => (ns.clone(), 0..2usize).prop_map(|(n, p)| Op::DeletePrefix(n, p)),
        1 => ns.clone().prop_map(Op::DeleteFilter),
        1 => ns.clone().prop_map(Op::Reset),
        1 => Just(Op::ResetAll),
        1 => ns.prop_map(Op::DeleteNamespace),
    ]
}

fn config() -> impl Strategy<Value = IndexConfig> {
    prop_oneof![
        Just(IndexConfig::dense(DIM, Metric::Cosine)),
        Just(IndexConfig::dense(DIM, Metric::Euclidean)),
        Just(IndexConfig::dense(DIM, Metric::DotProduct)),
        Just(IndexConfig::sparse()),
        Just(IndexConfig::hybrid(DIM, Metric::Cosine)),
        Just(IndexConfig::hybrid(DIM, Metric::DotProduct)),
    ]
}

fn metadata(m: Option<(u8, bool)>) -> Option<Value> {
    m.map(|(g, x)| {
        json!({
            "g": g,
            "tag": if x { "x" } else { "y" },
            "f": f64::from(g) * 0.1,
            "nested": {"list": [g, null, true], "empty": {}}
        })
    })
}

fn record(config: &IndexConfig, r: &Rec) -> Vector {
    Vector {
        id: id(r.id),
        vector: config
            .kind
            .has_dense()
            .then(|| r.dense.iter().map(|&x| f32::from(x) / 2.0).collect()),
        sparse_vector: config.kind.has_sparse().then(|| {
            SparseVector::new(
                r.sparse.keys().map(|&k| i32::from(k)).collect(),
                r.sparse.values().map(|&v| f32::from(v) * 0.75).collect(),
            )
        }),
        metadata: metadata(r.metadata),
        data: r.data.map(|d| "data ".repeat(usize::from(d))),
    }
}

fn apply(index: &Index, op: &Op) {
    let config = index.config().clone();
    // Operations may fail (a zero cosine vector, a missing part): both sides of the comparison
    // come from the same index, so the errors need no model here.
    match op {
        Op::Upsert(ns, recs) => {
            let _ = index.upsert(
                NAMESPACES[*ns],
                recs.iter().map(|r| record(&config, r)).collect(),
            );
        }
        Op::Update {
            ns,
            rec,
            vectors,
            metadata: with_metadata,
            patch,
            data,
        } => {
            let full = record(&config, rec);
            let _ = index.update(
                NAMESPACES[*ns],
                Update {
                    id: full.id,
                    vector: full.vector.filter(|_| *vectors),
                    sparse_vector: full.sparse_vector.filter(|_| *vectors),
                    data: full.data.filter(|_| *data),
                    metadata: if *with_metadata {
                        Some(metadata(rec.metadata).unwrap_or(json!({"g": null})))
                    } else {
                        None
                    },
                    metadata_update_mode: if *patch {
                        MetadataUpdateMode::Patch
                    } else {
                        MetadataUpdateMode::Overwrite
                    },
                },
            );
        }
        Op::DeleteIds(ns, ids) => {
            let _ = index.delete(NAMESPACES[*ns], Delete::ids(ids.iter().map(|&i| id(i))));
        }
        Op::DeletePrefix(ns, p) => {
            let _ = index.delete(NAMESPACES[*ns], Delete::prefix(format!("r{p}")));
        }
        Op::DeleteFilter(ns) => {
            let _ = index.delete(NAMESPACES[*ns], Delete::filter("g = 1"));
        }
        Op::Reset(ns) => index.reset(NAMESPACES[*ns]),
        Op::ResetAll => index.reset_all(),
        Op::DeleteNamespace(ns) => {
            let _ = index.delete_namespace(NAMESPACES[*ns]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        rng_seed: RngSeed::Fixed(0x5eed_0007),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn load_of_save_answers_like_the_original(
        config in config(),
        ops in prop::collection::vec(op(), 0..40),
    ) {
        let index = Index::new(config).unwrap();
        for op in &ops {
            apply(&index, op);
        }
        let loaded = reload(&index);
        assert_same(&index, &loaded);
        // The loaded index keeps working like the original under further writes.
        for op in ops.iter().rev().take(5) {
            apply(&index, op);
            apply(&loaded, op);
        }
        assert_same(&index, &loaded);
    }
}

// ---------------------------------------------------------------------------------------------
// Edge values, configuration, streams.

#[test]
fn extreme_values_and_empty_parts_survive_exactly() {
    let mut config = IndexConfig::hybrid(4, Metric::Euclidean);
    config.graph = GraphParams {
        m: 7,
        ef_construction: 33,
        ef_search: 12,
        traversal: flowvec::vector::dense::Traversal::Int8,
    };
    config.limits = Limits {
        top_k_max: 77,
        id_max_bytes: 1000,
        ..Limits::default()
    };
    let index = Index::new(config.clone()).unwrap();
    let subnormal = f32::from_bits(1);
    let records = vec![
        Vector {
            id: "é/ü-漢字-🦀".into(),
            vector: Some(vec![1e38, -1e38, subnormal, -0.0]),
            sparse_vector: Some(SparseVector::new(
                vec![i32::MAX, i32::MIN, 0],
                vec![f32::MAX, -subnormal, 1e-30],
            )),
            metadata: Some(json!({})),
            data: Some(String::new()),
        },
        Vector {
            id: "x".repeat(1000),
            vector: Some(vec![0.0; 4]),
            sparse_vector: Some(SparseVector::new(vec![1], vec![0.0])),
            metadata: Some(json!({
                "u": u64::MAX, "i": i64::MIN, "f": 0.1 + 0.2, "tiny": 5e-324,
                "one": 1, "one_f": 1.0, "s": "\u{0}\"\\", "deep": {"a": [[[[{}]]]]}
            })),
            data: Some("d".repeat(10_000)),
        },
    ];
    index.upsert("ns with spaces", records.clone()).unwrap();
    index.upsert("", vec![records[0].clone()]).unwrap();
    index.upsert("emptied", vec![records[0].clone()]).unwrap();
    index.reset("emptied");
    let loaded = reload(&index);
    assert_eq!(loaded.config(), &config);
    assert_eq!(
        loaded.list_namespaces(),
        ["", "emptied", "ns with spaces"],
        "an empty namespace is kept"
    );
    let back = loaded
        .fetch(
            "ns with spaces",
            Fetch::ids(records.iter().map(|r| r.id.clone())).include_all(),
        )
        .unwrap();
    for (r, b) in records.iter().zip(&back) {
        let b = b.as_ref().expect("record is back");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(b.vector.as_deref().unwrap()),
            bits(r.vector.as_deref().unwrap())
        );
        assert_eq!(b.metadata, r.metadata);
        assert_eq!(b.data, r.data);
    }
    let meta = back[1].as_ref().and_then(|b| b.metadata.clone()).unwrap();
    assert!(meta["one"].is_u64() && meta["one_f"].is_f64());
    assert_eq!(
        meta["f"].as_f64().map(f64::to_bits),
        Some((0.1f64 + 0.2).to_bits())
    );
    assert_same(&index, &loaded);
}

#[test]
fn every_kind_round_trips_when_empty_and_when_full() {
    for config in [
        IndexConfig::dense(DIM, Metric::Cosine),
        IndexConfig::sparse(),
        IndexConfig::hybrid(DIM, Metric::Euclidean),
    ] {
        let index = Index::new(config.clone()).unwrap();
        assert_same(&index, &reload(&index));
        let recs: Vec<Vector> = (0..16)
            .map(|i| {
                record(
                    &config,
                    &Rec {
                        id: i,
                        dense: [(i % 4) as i8 - 1, 1, (i % 3) as i8],
                        sparse: BTreeMap::from([((i % 5) as i8, 1), (-3, (i % 4) as i8)]),
                        metadata: Some(((i % 4) as u8, i % 2 == 0)),
                        data: Some((i % 3) as u8),
                    },
                )
            })
            .collect();
        index.upsert("a", recs).unwrap();
        let loaded = reload(&index);
        assert_eq!(loaded.info().vector_count, 16);
        assert_same(&index, &loaded);
    }
}

#[test]
fn load_reads_exactly_one_snapshot_so_others_may_follow() {
    let a = Index::new(IndexConfig::dense(2, Metric::Cosine)).unwrap();
    a.upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    let b = Index::new(IndexConfig::sparse()).unwrap();
    b.upsert(
        "s",
        vec![Vector::sparse("b", SparseVector::new(vec![3], vec![1.0]))],
    )
    .unwrap();
    let mut stream = Vec::new();
    a.save(&mut stream).unwrap();
    b.save(&mut stream).unwrap();
    stream.extend_from_slice(b"trailer");
    let mut reader = stream.as_slice();
    let a2 = Index::load(&mut reader).unwrap();
    let b2 = Index::load(&mut reader).unwrap();
    assert_eq!(reader, b"trailer");
    assert_same(&a, &a2);
    assert_same(&b, &b2);
}

#[test]
fn a_failing_writer_is_a_typed_io_error() {
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    "disk full",
                ));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let index = Index::new(IndexConfig::dense(2, Metric::Cosine)).unwrap();
    index
        .upsert("", vec![Vector::dense("a", vec![1.0, 0.0])])
        .unwrap();
    let full = snapshot(&index).len();
    for room in [0, 10, full / 2, full - 1] {
        let err = index.save(Full(room)).unwrap_err();
        assert!(
            matches!(&err, VectorError::SnapshotIo { kind: std::io::ErrorKind::StorageFull, message } if message.contains("disk full")),
            "{err}"
        );
    }
    assert_eq!(index.save(Full(full)), Ok(()));
}

#[test]
fn large_namespaces_span_several_record_sections() {
    // 4 KiB of data per record: 600 records are ~2.4 MiB, so at least three 1 MiB sections.
    let index = Index::new(IndexConfig::dense(2, Metric::Euclidean)).unwrap();
    let recs: Vec<Vector> = (0..600)
        .map(|i| Vector::dense(format!("{i:05}"), vec![i as f32, 1.0]).with_data("z".repeat(4096)))
        .collect();
    index.upsert("big", recs).unwrap();
    let bytes = snapshot(&index);
    assert!(bytes.len() > 600 * 4096);
    let loaded = Index::load(bytes.as_slice()).unwrap();
    assert_eq!(loaded.info().namespaces["big"].vector_count, 600);
    let q = Query {
        include_data: true,
        ..Query::dense(vec![300.2, 1.0], 5)
    };
    assert_eq!(index.query("big", &q), loaded.query("big", &q));
    assert_eq!(snapshot(&loaded), bytes);
}
