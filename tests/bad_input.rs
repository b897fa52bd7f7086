//! Bad input at scale, as a table: every row is one call on the public API that must give a
//! clear typed error or a correct answer, never a panic; after a rejected write the index is
//! unchanged, byte for byte (its snapshot before and after is compared).

use flowvec::vector::dense::{DenseConfig, DenseIndex};
use flowvec::vector::sparse::{SparseIndex, Weighting};
use flowvec::vector::{
    Delete, Fetch, GraphParams, Index, IndexConfig, IndexKind, METADATA_MAX_DEPTH,
    MetadataUpdateMode, Metric, Query, QueryMode, Range, SparseVector, Update, Vector, VectorError,
};
use serde_json::{Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};

type Check = Box<dyn Fn(&Index) -> Outcome>;

/// What a row's call did: an error to match, or an answer the row already checked.
enum Outcome {
    Rejected(VectorError),
    Answered,
}

struct Row {
    name: &'static str,
    kind: IndexKind,
    run: Check,
    /// For rejected calls: whether the error is the expected one.
    expect: Option<fn(&VectorError) -> bool>,
}

fn row(
    name: &'static str,
    kind: IndexKind,
    expect: Option<fn(&VectorError) -> bool>,
    run: impl Fn(&Index) -> Outcome + 'static,
) -> Row {
    Row {
        name,
        kind,
        run: Box::new(run),
        expect,
    }
}

/// `Rejected` for an error, `Answered` after `check` for an answer.
fn outcome<T>(r: Result<T, VectorError>, check: impl FnOnce(T)) -> Outcome {
    match r {
        Ok(v) => {
            check(v);
            Outcome::Answered
        }
        Err(e) => Outcome::Rejected(e),
    }
}

const DIM: usize = 4;

fn index(kind: IndexKind) -> Index {
    let config = match kind {
        IndexKind::Dense => IndexConfig::dense(DIM, Metric::Cosine),
        IndexKind::Sparse => IndexConfig::sparse(),
        IndexKind::Hybrid => IndexConfig::hybrid(DIM, Metric::Euclidean),
    };
    let index = Index::new(config).unwrap();
    let recs = (0..5)
        .map(|i| good(kind, &format!("seed-{i}"), i as f32 + 1.0))
        .collect();
    index.upsert("", recs).unwrap();
    index.upsert("other", vec![good(kind, "o", 2.0)]).unwrap();
    index
}

fn good(kind: IndexKind, id: &str, x: f32) -> Vector {
    Vector {
        id: id.into(),
        vector: kind.has_dense().then(|| vec![x, 1.0, -x, 0.5]),
        sparse_vector: kind
            .has_sparse()
            .then(|| SparseVector::new(vec![1, x as i32 + 2], vec![x, 1.0])),
        metadata: Some(json!({"g": x})),
        data: Some(format!("data {id}")),
    }
}

fn snapshot(index: &Index) -> Vec<u8> {
    let mut bytes = Vec::new();
    index.save(&mut bytes).unwrap();
    bytes
}

fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!({ "k": v });
    }
    v
}

fn fetch_all(index: &Index, id: &str) -> Option<flowvec::vector::FetchResult> {
    index
        .fetch("", Fetch::ids([id]).include_all())
        .unwrap()
        .remove(0)
}

/// Scores in [0, 1], best first.
fn assert_scores(hits: &[flowvec::vector::QueryResult]) {
    for h in hits {
        assert!(
            (0.0..=1.0).contains(&h.score),
            "score {} of {}",
            h.score,
            h.id
        );
    }
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

use IndexKind::{Dense, Hybrid, Sparse};

fn rows() -> Vec<Row> {
    let d = Dense;
    vec![
        // --- records: sizes
        row(
            "metadata one byte over the cap",
            d,
            Some(|e| matches!(e, VectorError::MetadataTooLarge { size, max } if *size == max + 1)),
            |ix| {
                let pad = 48 * 1024 - r#"{"p":""}"#.len() + 1;
                outcome(
                    ix.upsert(
                        "",
                        vec![good(Dense, "m", 1.0).with_metadata(json!({"p": "x".repeat(pad)}))],
                    ),
                    |_| (),
                )
            },
        ),
        row("metadata exactly at the cap", d, None, |ix| {
            let pad = 48 * 1024 - r#"{"p":""}"#.len();
            let m = json!({"p": "x".repeat(pad)});
            outcome(
                ix.upsert("", vec![good(Dense, "m", 1.0).with_metadata(m.clone())]),
                |_| {
                    assert_eq!(fetch_all(ix, "m").unwrap().metadata, Some(m));
                },
            )
        }),
        row(
            "metadata of 10 MB",
            d,
            Some(|e| matches!(e, VectorError::MetadataTooLarge { .. })),
            |ix| {
                outcome(
                    ix.upsert(
                        "",
                        vec![
                            good(Dense, "m", 1.0).with_metadata(json!({"p": "x".repeat(10 << 20)})),
                        ],
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "data one byte over 1 MiB",
            d,
            Some(|e| matches!(e, VectorError::DataTooLarge { size, max } if *size == 1 + *max)),
            |ix| {
                outcome(
                    ix.upsert(
                        "",
                        vec![good(Dense, "m", 1.0).with_data("x".repeat((1 << 20) + 1))],
                    ),
                    |_| (),
                )
            },
        ),
        row("data exactly 1 MiB", d, None, |ix| {
            outcome(
                ix.upsert(
                    "",
                    vec![good(Dense, "m", 1.0).with_data("é".repeat(1 << 19))],
                ),
                |_| {
                    assert_eq!(
                        fetch_all(ix, "m").unwrap().data.map(|d| d.len()),
                        Some(1 << 20)
                    );
                },
            )
        }),
        row(
            "metadata nested 1000 deep (built in Rust)",
            d,
            Some(|e| {
                matches!(
                    e,
                    VectorError::MetadataTooDeep {
                        max: METADATA_MAX_DEPTH,
                        ..
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.upsert("", vec![good(Dense, "m", 1.0).with_metadata(nested(1000))]),
                    |_| (),
                )
            },
        ),
        row("metadata nested exactly at the depth cap", d, None, |ix| {
            let m = nested(METADATA_MAX_DEPTH);
            outcome(
                ix.upsert("", vec![good(Dense, "m", 1.0).with_metadata(m.clone())]),
                |_| {
                    assert_eq!(fetch_all(ix, "m").unwrap().metadata, Some(m));
                },
            )
        }),
        row("metadata nested 200 deep as JSON text", d, None, |_| {
            let text = format!(
                r#"{{"id":"m","vector":[1,2,3,4],"metadata":{}1{}}}"#,
                r#"{"k":"#.repeat(200),
                "}".repeat(200)
            );
            assert!(
                serde_json::from_str::<Vector>(&text).is_err(),
                "serde_json refuses > 128 levels"
            );
            Outcome::Answered
        }),
        row(
            "metadata that is an array",
            d,
            Some(|e| matches!(e, VectorError::MetadataNotObject { found: "an array" })),
            |ix| {
                outcome(
                    ix.upsert("", vec![good(Dense, "m", 1.0).with_metadata(json!([1, 2]))]),
                    |_| (),
                )
            },
        ),
        row(
            "update PATCH nested 1000 deep",
            d,
            Some(|e| matches!(e, VectorError::MetadataTooDeep { .. })),
            |ix| {
                outcome(
                    ix.update(
                        "",
                        Update {
                            id: "seed-1".into(),
                            metadata: Some(nested(1000)),
                            metadata_update_mode: MetadataUpdateMode::Patch,
                            ..Update::default()
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "update PATCH growing metadata past the cap",
            d,
            Some(|e| matches!(e, VectorError::MetadataTooLarge { .. })),
            |ix| {
                outcome(
                    ix.update(
                        "",
                        Update {
                            id: "seed-1".into(),
                            metadata: Some(json!({"big": "x".repeat(48 * 1024)})),
                            metadata_update_mode: MetadataUpdateMode::Patch,
                            ..Update::default()
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "update with 2 MiB data",
            d,
            Some(|e| matches!(e, VectorError::DataTooLarge { .. })),
            |ix| {
                outcome(
                    ix.update(
                        "",
                        Update {
                            id: "seed-1".into(),
                            data: Some("x".repeat(2 << 20)),
                            ..Update::default()
                        },
                    ),
                    |_| (),
                )
            },
        ),
        // --- ids and namespaces
        row(
            "id of 10 KB",
            d,
            Some(|e| {
                matches!(
                    e,
                    VectorError::IdTooLong {
                        length: 10240,
                        max: 512
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.upsert("", vec![good(Dense, &"i".repeat(10 * 1024), 1.0)]),
                    |_| (),
                )
            },
        ),
        row("id of exactly 512 bytes", d, None, |ix| {
            let id = "ü".repeat(256);
            outcome(ix.upsert("", vec![good(Dense, &id, 1.0)]), |_| {
                assert!(fetch_all(ix, &id).is_some());
            })
        }),
        row(
            "empty id",
            d,
            Some(|e| matches!(e, VectorError::EmptyId)),
            |ix| outcome(ix.upsert("", vec![good(Dense, "", 1.0)]), |_| ()),
        ),
        row("fetch of a 10 KB id and 10,000 ids", d, None, |ix| {
            let mut ids = vec!["i".repeat(10 * 1024)];
            ids.extend((0..10_000).map(|i| format!("seed-{i}")));
            outcome(ix.fetch("", Fetch::ids(ids)), |r| {
                assert_eq!(r.len(), 10_001);
                assert_eq!(r.iter().flatten().count(), 5);
            })
        }),
        row("namespace name of 10 KB", d, None, |ix| {
            let ns = "n".repeat(10 * 1024);
            outcome(ix.upsert(&ns, vec![good(Dense, "a", 1.0)]), |_| {
                assert_eq!(ix.info().namespaces[&ns].vector_count, 1);
            })
        }),
        row(
            "delete the default namespace",
            d,
            Some(|e| matches!(e, VectorError::CannotDeleteDefaultNamespace)),
            |ix| outcome(ix.delete_namespace(""), |_| ()),
        ),
        row(
            "delete a missing namespace",
            d,
            Some(|e| matches!(e, VectorError::NamespaceNotFound { .. })),
            |ix| outcome(ix.delete_namespace("nope"), |_| ()),
        ),
        // --- batches
        row("empty batch", d, None, |ix| {
            let before = snapshot(ix);
            outcome(ix.upsert("", Vec::new()), |_| {
                assert_eq!(snapshot(ix), before)
            })
        }),
        row(
            "empty batch into a new namespace creates nothing",
            d,
            None,
            |ix| {
                outcome(ix.upsert("fresh", Vec::new()), |_| {
                    assert!(!ix.list_namespaces().contains(&"fresh".to_owned()))
                })
            },
        ),
        row(
            "batch of 1000 with one bad record last",
            d,
            Some(|e| {
                matches!(
                    e,
                    VectorError::DimensionMismatch {
                        received: 3,
                        expected: 4
                    }
                )
            }),
            |ix| {
                let mut batch: Vec<Vector> = (0..999)
                    .map(|i| good(Dense, &format!("b{i}"), 1.0))
                    .collect();
                batch.push(Vector::dense("bad", vec![1.0, 2.0, 3.0]));
                outcome(ix.upsert("", batch), |_| ())
            },
        ),
        row(
            "batch replacing seeds with one NaN record first",
            d,
            Some(|e| matches!(e, VectorError::NonFiniteValue { position: 0, .. })),
            |ix| {
                let mut batch = vec![Vector::dense("seed-0", vec![f32::NAN, 0.0, 0.0, 1.0])];
                batch.extend((1..5).map(|i| good(Dense, &format!("seed-{i}"), 9.0)));
                outcome(ix.upsert("", batch), |_| ())
            },
        ),
        // --- dense values
        row(
            "65,536-dimension vector into a 4-d index",
            d,
            Some(|e| {
                matches!(
                    e,
                    VectorError::DimensionMismatch {
                        received: 65_536,
                        expected: 4
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.upsert("", vec![Vector::dense("x", vec![0.5; 65_536])]),
                    |_| (),
                )
            },
        ),
        row(
            "65,536-dimension query into a 4-d index",
            d,
            Some(|e| {
                matches!(
                    e,
                    VectorError::DimensionMismatch {
                        received: 65_536,
                        ..
                    }
                )
            }),
            |ix| outcome(ix.query("", &Query::dense(vec![0.5; 65_536], 3)), |_| ()),
        ),
        row("a 65,536-dimension index works", d, None, |_| {
            let big = Index::new(IndexConfig::dense(65_536, Metric::DotProduct)).unwrap();
            let mut v = vec![0.0; 65_536];
            v[65_535] = 0.5;
            big.upsert(
                "",
                vec![
                    Vector::dense("last", v.clone()),
                    Vector::dense("first", vec![0.001; 65_536]),
                ],
            )
            .unwrap();
            outcome(big.query("", &Query::dense(v, 2)), |hits| {
                assert_eq!(hits[0].id, "last");
                assert_scores(&hits);
            })
        }),
        row(
            "empty dense vector",
            d,
            Some(|e| matches!(e, VectorError::DimensionMismatch { received: 0, .. })),
            |ix| outcome(ix.upsert("", vec![Vector::dense("x", Vec::new())]), |_| ()),
        ),
        row(
            "infinity in a vector",
            d,
            Some(|e| matches!(e, VectorError::NonFiniteValue { position: 2, .. })),
            |ix| {
                outcome(
                    ix.upsert(
                        "",
                        vec![Vector::dense("x", vec![1.0, 0.0, f32::INFINITY, 0.0])],
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "NaN in a query",
            d,
            Some(|e| matches!(e, VectorError::NonFiniteValue { .. })),
            |ix| outcome(ix.query("", &Query::dense(vec![f32::NAN; 4], 3)), |_| ()),
        ),
        row(
            "zero vector under cosine",
            d,
            Some(|e| matches!(e, VectorError::ZeroVector)),
            |ix| {
                outcome(
                    ix.upsert("", vec![Vector::dense("x", vec![0.0, -0.0, 0.0, 0.0])]),
                    |_| (),
                )
            },
        ),
        row(
            "values of 1e38 under euclidean and dot product",
            d,
            None,
            |_| {
                for metric in [Metric::Euclidean, Metric::DotProduct] {
                    let ix = Index::new(IndexConfig::dense(2, metric)).unwrap();
                    ix.upsert(
                        "",
                        vec![
                            Vector::dense("big", vec![1e38, -1e38]),
                            Vector::dense("small", vec![1.0, 1.0]),
                        ],
                    )
                    .unwrap();
                    let hits = ix.query("", &Query::dense(vec![1e38, 1e38], 2)).unwrap();
                    assert_eq!(hits.len(), 2);
                    assert_scores(&hits);
                    assert_eq!(
                        fetch_all(&ix, "big").unwrap().vector,
                        Some(vec![1e38, -1e38])
                    );
                }
                Outcome::Answered
            },
        ),
        row("subnormal values are stored bit-exact", d, None, |ix| {
            let v = vec![
                f32::from_bits(1),
                -f32::from_bits(7),
                1.0,
                f32::MIN_POSITIVE / 3.0,
            ];
            outcome(ix.upsert("", vec![Vector::dense("sub", v.clone())]), |_| {
                let back = fetch_all(ix, "sub").unwrap().vector.unwrap();
                assert_eq!(
                    back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
                let hits = ix.query("", &Query::dense(v.clone(), 10)).unwrap();
                assert_eq!(hits.len(), 6);
                assert_eq!(hits[0].id, "sub");
            })
        }),
        // --- sparse values
        row(
            "sparse vector of 1001 entries",
            Sparse,
            Some(|e| {
                matches!(
                    e,
                    VectorError::SparseTooManyEntries {
                        count: 1001,
                        max: 1000
                    }
                )
            }),
            |ix| {
                let s = SparseVector::new((0..1001).collect(), vec![1.0; 1001]);
                outcome(ix.upsert("", vec![Vector::sparse("s", s)]), |_| ())
            },
        ),
        row(
            "sparse query of 1,000,000 entries",
            Sparse,
            Some(|e| matches!(e, VectorError::SparseTooManyEntries { .. })),
            |ix| {
                let s = SparseVector::new((0..1_000_000).collect(), vec![1.0; 1_000_000]);
                outcome(ix.query("", &Query::sparse(s, 5)), |_| ())
            },
        ),
        row(
            "sparse lengths differ",
            Sparse,
            Some(|e| {
                matches!(
                    e,
                    VectorError::SparseLengthMismatch {
                        indices: 2,
                        values: 1
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.upsert(
                        "",
                        vec![Vector::sparse(
                            "s",
                            SparseVector::new(vec![1, 2], vec![1.0]),
                        )],
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "sparse duplicate index",
            Sparse,
            Some(|e| matches!(e, VectorError::SparseDuplicateIndex { index: 7 })),
            |ix| {
                outcome(
                    ix.upsert(
                        "",
                        vec![Vector::sparse(
                            "s",
                            SparseVector::new(vec![7, 1, 7], vec![1.0, 2.0, 3.0]),
                        )],
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "sparse NaN value",
            Sparse,
            Some(|e| matches!(e, VectorError::SparseNonFiniteValue { position: 1, .. })),
            |ix| {
                outcome(
                    ix.upsert(
                        "",
                        vec![Vector::sparse(
                            "s",
                            SparseVector::new(vec![1, 2], vec![1.0, f32::NAN]),
                        )],
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "empty sparse vector",
            Sparse,
            Some(|e| matches!(e, VectorError::SparseEmpty)),
            |ix| {
                outcome(
                    ix.query("", &Query::sparse(SparseVector::default(), 3)),
                    |_| (),
                )
            },
        ),
        row("sparse extreme indices and values", Sparse, None, |ix| {
            let s = SparseVector::new(vec![i32::MAX, i32::MIN], vec![f32::MAX, f32::from_bits(1)]);
            outcome(
                ix.upsert("", vec![Vector::sparse("ext", s.clone())]),
                |_| {
                    let hits = ix
                        .query(
                            "",
                            &Query::sparse(SparseVector::new(vec![i32::MIN], vec![1.0]), 3),
                        )
                        .unwrap();
                    assert_eq!(
                        hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
                        ["ext"]
                    );
                    assert!(hits[0].score.is_finite());
                    let back = fetch_all(ix, "ext").unwrap().sparse_vector.unwrap();
                    assert_eq!(
                        back,
                        SparseVector::new(
                            vec![i32::MIN, i32::MAX],
                            vec![f32::from_bits(1), f32::MAX]
                        )
                    );
                },
            )
        }),
        row(
            "sparse values of 1e38 summed (IDF) stay ordered",
            Sparse,
            None,
            |ix| {
                let s = SparseVector::new(vec![1, 2, 3], vec![1e38, 1e38, 1e38]);
                outcome(
                    ix.upsert("", vec![Vector::sparse("huge", s.clone())]),
                    |_| {
                        let q = Query {
                            weighting_strategy: Some(flowvec::vector::WeightingStrategy::Idf),
                            ..Query::sparse(s, 10)
                        };
                        let hits = ix.query("", &q).unwrap();
                        assert!(!hits.is_empty() && hits.iter().all(|h| !h.score.is_nan()));
                    },
                )
            },
        ),
        // --- kinds and parts
        row(
            "dense part into a sparse index",
            Sparse,
            Some(|e| matches!(e, VectorError::PartNotInIndex { part: "vector", .. })),
            |ix| {
                outcome(
                    ix.upsert("", vec![Vector::dense("x", vec![1.0; 4])]),
                    |_| (),
                )
            },
        ),
        row(
            "hybrid record without its sparse part",
            Hybrid,
            Some(|e| {
                matches!(
                    e,
                    VectorError::MissingPart {
                        part: "sparseVector",
                        ..
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.upsert("", vec![Vector::dense("x", vec![1.0; 4])]),
                    |_| (),
                )
            },
        ),
        row(
            "hybrid update of one part",
            Hybrid,
            Some(|e| {
                matches!(
                    e,
                    VectorError::HybridPartsTogether {
                        given: "vector",
                        ..
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.update(
                        "",
                        Update {
                            id: "seed-1".into(),
                            vector: Some(vec![1.0; 4]),
                            ..Update::default()
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "sparse query mode on a dense index",
            d,
            Some(|e| matches!(e, VectorError::PartNotInIndex { .. })),
            |ix| {
                outcome(
                    ix.query(
                        "",
                        &Query {
                            query_mode: QueryMode::Sparse,
                            ..Query::dense(vec![1.0; 4], 3)
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "update naming nothing",
            d,
            Some(|e| matches!(e, VectorError::EmptyUpdate { .. })),
            |ix| {
                outcome(
                    ix.update(
                        "",
                        Update {
                            id: "seed-1".into(),
                            ..Update::default()
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row("update of a missing id", d, None, |ix| {
            let before = snapshot(ix);
            outcome(
                ix.update(
                    "",
                    Update {
                        id: "ghost".into(),
                        data: Some("x".into()),
                        ..Update::default()
                    },
                ),
                |updated| {
                    assert!(!updated);
                    assert_eq!(snapshot(ix), before);
                },
            )
        }),
        // --- topK, range, cursors, selectors
        row(
            "topK of usize::MAX",
            d,
            Some(|e| {
                matches!(
                    e,
                    VectorError::TopKOutOfRange {
                        top_k: usize::MAX,
                        max: 1000
                    }
                )
            }),
            |ix| {
                outcome(
                    ix.query("", &Query::dense(vec![1.0; 4], usize::MAX)),
                    |_| (),
                )
            },
        ),
        row(
            "topK of 0",
            d,
            Some(|e| matches!(e, VectorError::TopKOutOfRange { top_k: 0, .. })),
            |ix| outcome(ix.query("", &Query::dense(vec![1.0; 4], 0)), |_| ()),
        ),
        row("topK at the cap returns every record", Hybrid, None, |ix| {
            let q = Query {
                sparse_vector: Some(SparseVector::new(vec![1], vec![1.0])),
                ..Query::dense(vec![1.0; 4], 1000)
            };
            outcome(ix.query("", &q), |hits| assert_eq!(hits.len(), 5))
        }),
        row(
            "topK 2^40 from JSON",
            d,
            Some(|e| matches!(e, VectorError::TopKOutOfRange { .. })),
            |ix| {
                let q: Query =
                    serde_json::from_str(r#"{"vector": [1, 1, 1, 1], "topK": 1099511627776}"#)
                        .unwrap();
                outcome(ix.query("", &q), |_| ())
            },
        ),
        row("negative and fractional topK in JSON", d, None, |_| {
            for text in [
                r#"{"vector":[1,1,1,1],"topK":-1}"#,
                r#"{"vector":[1,1,1,1],"topK":1e30}"#,
                r#"{"vector":[1,1,1,1],"topK":2.5}"#,
            ] {
                assert!(serde_json::from_str::<Query>(text).is_err(), "{text}");
            }
            Outcome::Answered
        }),
        row(
            "range limit of usize::MAX",
            d,
            Some(|e| matches!(e, VectorError::LimitOutOfRange { .. })),
            |ix| outcome(ix.range("", Range::first(usize::MAX)), |_| ()),
        ),
        row(
            "range cursor that is not ours",
            d,
            Some(|e| matches!(e, VectorError::InvalidCursor { .. })),
            |ix| {
                outcome(
                    ix.range(
                        "",
                        Range {
                            cursor: "%%%".repeat(5000),
                            ..Range::first(5)
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "fetch naming ids and a prefix",
            d,
            Some(|e| matches!(e, VectorError::SelectorCount { given: 2, .. })),
            |ix| {
                outcome(
                    ix.fetch(
                        "",
                        Fetch {
                            prefix: Some("s".into()),
                            ..Fetch::ids(["a"])
                        },
                    ),
                    |_| (),
                )
            },
        ),
        row(
            "delete naming nothing",
            d,
            Some(|e| matches!(e, VectorError::SelectorCount { given: 0, .. })),
            |ix| outcome(ix.delete("", Delete::default()), |_| ()),
        ),
        row(
            "delete with a blank filter",
            d,
            Some(|e| matches!(e, VectorError::InvalidParameter { name: "filter", .. })),
            |ix| outcome(ix.delete("", Delete::filter("   ")), |_| ()),
        ),
        // --- filters
        row("filters that do not parse", d, None, |ix| {
            for f in [
                "(((",
                "g =",
                "g = 'unterminated",
                "= 1",
                "g >>= 1",
                "g = 1 AND",
                ")",
                "g IN (1, 2",
            ] {
                let q = Query {
                    filter: f.into(),
                    ..Query::dense(vec![1.0; 4], 3)
                };
                assert!(
                    matches!(ix.query("", &q), Err(VectorError::InvalidFilter { .. })),
                    "{f}"
                );
            }
            Outcome::Answered
        }),
        row(
            "delete with an invalid filter",
            d,
            Some(|e| matches!(e, VectorError::InvalidFilter { .. })),
            |ix| outcome(ix.delete("", Delete::filter("g = = 1")), |_| ()),
        ),
        row("filter of 1 MB", d, None, |ix| {
            let f = format!("g = '{}'", "x".repeat(1 << 20));
            let r = ix.query(
                "",
                &Query {
                    filter: f,
                    ..Query::dense(vec![1.0; 4], 3)
                },
            );
            assert!(
                matches!(&r, Ok(hits) if hits.is_empty())
                    || matches!(r, Err(VectorError::InvalidFilter { .. }))
            );
            Outcome::Answered
        }),
        row("filter nested 10,000 parentheses deep", d, None, |ix| {
            let f = format!("{}g = 1{}", "(".repeat(10_000), ")".repeat(10_000));
            let r = ix.query(
                "",
                &Query {
                    filter: f,
                    ..Query::dense(vec![1.0; 4], 3)
                },
            );
            assert!(r.is_ok() || matches!(r, Err(VectorError::InvalidFilter { .. })));
            Outcome::Answered
        }),
        // --- configuration
        row("invalid configurations", d, None, |_| {
            let mut configs = vec![IndexConfig::dense(0, Metric::Cosine)];
            let mut sparse_dim = IndexConfig::sparse();
            sparse_dim.dimension = 8;
            configs.push(sparse_dim);
            let mut m = IndexConfig::dense(4, Metric::Cosine);
            m.graph = GraphParams {
                m: 100_000,
                ..GraphParams::default()
            };
            configs.push(m);
            let mut ef = IndexConfig::dense(4, Metric::Cosine);
            ef.graph.ef_search = 0;
            configs.push(ef);
            let mut limit = IndexConfig::dense(4, Metric::Cosine);
            limit.limits.top_k_max = 0;
            configs.push(limit);
            for c in configs {
                assert!(
                    matches!(
                        Index::new(c.clone()),
                        Err(VectorError::InvalidParameter { .. })
                    ),
                    "{c:?}"
                );
            }
            Outcome::Answered
        }),
        // --- the engines used directly
        row(
            "dense engine: zero dimension, wrong dimension, huge k",
            d,
            None,
            |_| {
                assert!(matches!(
                    DenseIndex::new(DenseConfig::new(0, Metric::Cosine)),
                    Err(VectorError::InvalidParameter { .. })
                ));
                let mut e = DenseIndex::new(DenseConfig::new(3, Metric::Euclidean)).unwrap();
                assert!(matches!(
                    e.insert(1, &[1.0; 65_536]),
                    Err(VectorError::DimensionMismatch { .. })
                ));
                assert!(e.is_empty(), "a rejected insert stores nothing");
                e.insert(1, &[1.0, 2.0, 3.0]).unwrap();
                e.insert(u32::MAX, &[1e38, -1e38, 0.0]).unwrap();
                // A huge ef is either clamped or refused with a typed error naming it.
                match e.search(&[1.0, 2.0, 3.0], 5, Some(usize::MAX), None, None) {
                    Ok(hits) => assert_eq!(hits.len(), 2),
                    Err(err) => assert!(
                        matches!(err, VectorError::InvalidParameter { name: "ef", .. }),
                        "{err:?}"
                    ),
                }
                let hits = e
                    .search(&[1.0, 2.0, 3.0], usize::MAX, None, None, None)
                    .unwrap();
                assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [1, u32::MAX]);
                assert!(
                    e.search(&[1.0, 2.0, 3.0], 0, None, None, None)
                        .unwrap()
                        .is_empty()
                );
                Outcome::Answered
            },
        ),
        row(
            "sparse engine: huge k, unknown terms, empty index",
            Sparse,
            None,
            |_| {
                let mut e = SparseIndex::new();
                assert!(
                    e.search(&[1], &[1.0], usize::MAX, Weighting::Idf, None, None)
                        .is_empty()
                );
                e.insert(u32::MAX, &[i32::MIN, 5], &[1.0, 2.0]);
                let hits = e.search(
                    &[5, 99],
                    &[1.0, 1.0],
                    usize::MAX,
                    Weighting::Idf,
                    None,
                    None,
                );
                assert_eq!(hits.len(), 1);
                assert!(hits[0].1.is_finite());
                assert!(
                    e.search(&[99], &[1.0], 10, Weighting::None, None, None)
                        .is_empty()
                );
                Outcome::Answered
            },
        ),
    ]
}

#[test]
fn bad_input_table() {
    let rows = rows();
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        let ix = index(row.kind);
        let before = snapshot(&ix);
        let result = catch_unwind(AssertUnwindSafe(|| (row.run)(&ix)));
        match (result, row.expect) {
            (Err(panic), _) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failures.push(format!("{}: panicked: {msg}", row.name));
            }
            (Ok(Outcome::Rejected(e)), Some(expected)) => {
                if !expected(&e) {
                    failures.push(format!("{}: unexpected error {e:?}", row.name));
                }
                if e.to_string().is_empty() {
                    failures.push(format!("{}: empty error message", row.name));
                }
                if snapshot(&ix) != before {
                    failures.push(format!("{}: rejected but the index changed", row.name));
                }
            }
            (Ok(Outcome::Rejected(e)), None) => {
                failures.push(format!("{}: expected an answer, got {e:?}", row.name));
            }
            (Ok(Outcome::Answered), Some(_)) => {
                failures.push(format!("{}: expected an error, got an answer", row.name));
            }
            (Ok(Outcome::Answered), None) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Products of finite values can overflow (`1e38 * 1e38 - 1e38 * 1e38` is `inf - inf`, NaN);
/// DESIGN §2.2 promises dense scores in [0, 1] whatever the metric.
#[test]
fn overflowing_dense_products_still_score_in_the_unit_interval() {
    for metric in [Metric::Euclidean, Metric::DotProduct, Metric::Cosine] {
        let ix = Index::new(IndexConfig::dense(2, metric)).unwrap();
        ix.upsert(
            "",
            vec![
                Vector::dense("big", vec![1e38, -1e38]),
                Vector::dense("small", vec![1.0, 1.0]),
            ],
        )
        .unwrap();
        for q in [vec![1e38, 1e38], vec![-1e38, 3e38], vec![1.0, 0.5]] {
            let hits = ix.query("", &Query::dense(q, 2)).unwrap();
            assert_eq!(hits.len(), 2);
            assert_scores(&hits);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The flow-control engine: header values, keys, ids, time, snapshots.

mod flow_rows {
    use flowvec::flow::{
        FlowConfig, FlowControl, FlowError, FlowSnapshot, Limits, MessageId, Pin, Timestamp,
    };
    use std::panic::{AssertUnwindSafe, catch_unwind};

    type Engine = FlowControl<String>;

    /// An engine with two keys, one message active and some waiting.
    fn engine() -> (Engine, MessageId) {
        let mut fc = Engine::new(FlowConfig::default());
        let t = Timestamp::from_secs(1_700_000_000);
        let limits: Limits = "rate=2,period=1m,parallelism=1".parse().unwrap();
        for i in 0..3 {
            fc.publish(Some("k"), Some(limits), format!("m{i}"), t)
                .unwrap();
        }
        fc.publish(None, None, "free".into(), t).unwrap();
        let active = fc.poll_dispatch(t).unwrap().id;
        (fc, active)
    }

    fn image(fc: &Engine) -> String {
        serde_json::to_string(&fc.snapshot()).unwrap()
    }

    fn parse(value: &str) -> Result<Limits, FlowError> {
        value.parse()
    }

    #[test]
    fn flow_bad_input_table() {
        let t = Timestamp::from_secs(1_700_000_000);
        let ok_limits: Limits = "rate=1".parse().unwrap();
        type Run = Box<dyn Fn(&mut Engine, MessageId) -> Result<(), FlowError>>;
        type Expect = Option<fn(&FlowError) -> bool>;
        let rows: Vec<(&str, Expect, Run)> = vec![
            (
                "period of 0",
                Some(|e| {
                    matches!(
                        e,
                        FlowError::InvalidPeriod { .. } | FlowError::InvalidLimitValue { .. }
                    )
                }),
                Box::new(|_, _| parse("rate=1,period=0").map(drop)),
            ),
            (
                "period of 0s",
                Some(|e| {
                    matches!(
                        e,
                        FlowError::InvalidPeriod { .. } | FlowError::InvalidLimitValue { .. }
                    )
                }),
                Box::new(|_, _| parse("rate=1,period=0s").map(drop)),
            ),
            (
                "period of 10 years",
                Some(|e| matches!(e, FlowError::InvalidPeriod { .. })),
                Box::new(|_, _| parse("rate=1,period=3650d").map(drop)),
            ),
            (
                "period of 10 years in seconds",
                Some(|e| matches!(e, FlowError::InvalidPeriod { .. })),
                Box::new(|_, _| parse("rate=1,period=315360000").map(drop)),
            ),
            (
                "period overflowing u64",
                Some(|e| {
                    matches!(
                        e,
                        FlowError::InvalidPeriod { .. } | FlowError::InvalidLimitValue { .. }
                    )
                }),
                Box::new(|_, _| parse("rate=1,period=99999999999999999999999d").map(drop)),
            ),
            (
                "period of exactly 7 days",
                None,
                Box::new(|_, _| {
                    let l = parse("rate=1,period=7d")?;
                    assert_eq!(l.to_string().parse::<Limits>()?, l);
                    Ok(())
                }),
            ),
            (
                "period with an unknown unit",
                Some(|e| matches!(e, FlowError::InvalidPeriod { .. })),
                Box::new(|_, _| parse("rate=1,period=10y").map(drop)),
            ),
            (
                "period without rate",
                Some(|e| matches!(e, FlowError::PeriodWithoutRate { .. })),
                Box::new(|_, _| parse("period=1m").map(drop)),
            ),
            (
                "rate of 0",
                Some(|e| matches!(e, FlowError::InvalidLimitValue { .. })),
                Box::new(|_, _| parse("rate=0").map(drop)),
            ),
            (
                "parallelism of 2^32",
                Some(|e| matches!(e, FlowError::InvalidLimitValue { .. })),
                Box::new(|_, _| parse("parallelism=4294967296").map(drop)),
            ),
            (
                "negative rate",
                Some(|e| matches!(e, FlowError::InvalidLimitValue { .. })),
                Box::new(|_, _| parse("rate=-1").map(drop)),
            ),
            (
                "empty value",
                Some(|e| matches!(e, FlowError::EmptyLimits)),
                Box::new(|_, _| parse("").map(drop)),
            ),
            (
                "repeated limit",
                Some(|e| matches!(e, FlowError::RepeatedLimit { .. })),
                Box::new(|_, _| parse("rate=1,RATE=2").map(drop)),
            ),
            (
                "unknown limit",
                Some(|e| matches!(e, FlowError::UnknownLimit { .. })),
                Box::new(|_, _| parse("burst=3").map(drop)),
            ),
            (
                "header value of 1 MB",
                Some(|_| true),
                Box::new(|_, _| parse(&"rate=1,".repeat(150_000)).map(drop)),
            ),
            (
                "key of 10 KB",
                Some(|e| matches!(e, FlowError::InvalidKey { .. })),
                Box::new(move |fc, _| {
                    fc.publish(Some(&"k".repeat(10 * 1024)), Some(ok_limits), "x".into(), t)
                        .map(drop)
                }),
            ),
            (
                "key of exactly 512 bytes",
                None,
                Box::new(move |fc, _| {
                    let key = "é".repeat(256);
                    fc.publish(Some(&key), Some(ok_limits), "x".into(), t)?;
                    assert_eq!(fc.key_info(&key, t).map(|i| i.wait_list_size), Some(1));
                    Ok(())
                }),
            ),
            (
                "key with a control character",
                Some(|e| matches!(e, FlowError::InvalidKey { .. })),
                Box::new(move |fc, _| {
                    fc.publish(Some("a\nb"), Some(ok_limits), "x".into(), t)
                        .map(drop)
                }),
            ),
            (
                "empty key",
                Some(|e| matches!(e, FlowError::InvalidKey { .. })),
                Box::new(move |fc, _| {
                    fc.publish(Some(""), Some(ok_limits), "x".into(), t)
                        .map(drop)
                }),
            ),
            (
                "key without limits",
                Some(|e| matches!(e, FlowError::MissingLimits { .. })),
                Box::new(move |fc, _| fc.publish(Some("k"), None, "x".into(), t).map(drop)),
            ),
            (
                "limits without key",
                Some(|e| matches!(e, FlowError::LimitsWithoutKey { .. })),
                Box::new(move |fc, _| fc.publish(None, Some(ok_limits), "x".into(), t).map(drop)),
            ),
            (
                "pause of a 10 KB key",
                Some(|e| matches!(e, FlowError::InvalidKey { .. })),
                Box::new(move |fc, _| fc.pause(&"k".repeat(10 * 1024), t)),
            ),
            (
                "resume of an unknown key",
                Some(|e| matches!(e, FlowError::UnknownKey { .. })),
                Box::new(move |fc, _| fc.resume("nobody", t)),
            ),
            (
                "empty pin",
                Some(|e| matches!(e, FlowError::EmptyPin { .. })),
                Box::new(move |fc, _| fc.pin("k", Pin::default(), t)),
            ),
            (
                "complete of a waiting message's id",
                Some(|e| matches!(e, FlowError::NotActive { .. })),
                Box::new(move |fc, _| {
                    let id = fc.publish(None, None, "w".into(), t)?;
                    fc.cancel(id);
                    fc.complete(id, t).map(drop)
                }),
            ),
            (
                "complete twice",
                Some(|e| matches!(e, FlowError::NotActive { .. })),
                Box::new(move |fc, active| {
                    // The first completes for real; only the second is the rejected call, so
                    // compare against the state in between.
                    fc.complete(active, t)?;
                    fc.complete(active, t).map(drop)
                }),
            ),
            (
                "requeue of a forged id",
                Some(|e| matches!(e, FlowError::NotActive { .. })),
                Box::new(move |fc, _| fc.requeue("999999-7".parse()?, t)),
            ),
            (
                "message ids that do not parse",
                Some(|e| matches!(e, FlowError::InvalidMessageId { .. })),
                Box::new(|_, _| {
                    for bad in [
                        "",
                        "abc",
                        "1-",
                        "-1",
                        "1-2-3",
                        "18446744073709551616-1",
                        "1-4294967296",
                    ] {
                        assert!(bad.parse::<MessageId>().is_err(), "{bad}");
                    }
                    "x-y".parse::<MessageId>().map(drop)
                }),
            ),
            (
                "time at u64::MAX with a 7-day window",
                None,
                Box::new(|fc, _| {
                    let end = Timestamp::from_millis(u64::MAX - 1);
                    fc.publish(
                        Some("late"),
                        Some(parse("rate=1,period=7d")?),
                        "x".into(),
                        end,
                    )?;
                    fc.publish(
                        Some("late"),
                        Some(parse("rate=1,period=7d")?),
                        "y".into(),
                        end,
                    )?;
                    let mut n = 0;
                    while fc.poll_dispatch(end).is_some() {
                        n += 1;
                    }
                    assert!(n >= 1);
                    let _ = fc.poll_timeout();
                    fc.handle_timeout(Timestamp::from_millis(u64::MAX));
                    Ok(())
                }),
            ),
            (
                "time running backwards",
                None,
                Box::new(move |fc, _| {
                    fc.publish(
                        Some("k"),
                        Some(parse("rate=2,period=1m,parallelism=1")?),
                        "b".into(),
                        Timestamp::from_millis(0),
                    )?;
                    let _ = fc.poll_dispatch(Timestamp::from_millis(0));
                    assert_eq!(fc.key_info("k", t).map(|i| i.wait_list_size), Some(3));
                    Ok(())
                }),
            ),
            (
                "restore of a tampered snapshot",
                Some(|e| matches!(e, FlowError::InvalidSnapshot { .. })),
                Box::new(move |fc, _| {
                    let json = serde_json::to_string(&fc.snapshot()).unwrap();
                    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
                    doc["keySlots"] = serde_json::json!(u32::MAX);
                    doc["ready"] = serde_json::json!([4_000_000_000u32, 0, 0]);
                    let snap: FlowSnapshot<String> = serde_json::from_value(doc).unwrap();
                    FlowControl::restore(snap, t).map(drop)
                }),
            ),
        ];
        assert!(rows.len() >= 25);
        let mut failures = Vec::new();
        for (name, expect, run) in &rows {
            let (mut fc, active) = engine();
            let before = image(&fc);
            let result = catch_unwind(AssertUnwindSafe(|| run(&mut fc, active)));
            match (result, expect) {
                (Err(_), _) => failures.push(format!("{name}: panicked")),
                (Ok(Err(e)), Some(expected)) => {
                    if !expected(&e) {
                        failures.push(format!("{name}: unexpected error {e:?}"));
                    }
                    // A rejected call changes nothing (rows that first make a real change
                    // compare against that change's own effect instead).
                    if *name != "complete twice"
                        && *name != "complete of a waiting message's id"
                        && image(&fc) != before
                    {
                        failures.push(format!("{name}: rejected but the engine changed"));
                    }
                }
                (Ok(Err(e)), None) => {
                    failures.push(format!("{name}: expected an answer, got {e:?}"))
                }
                (Ok(Ok(())), Some(_)) => {
                    failures.push(format!("{name}: expected an error, got an answer"))
                }
                (Ok(Ok(())), None) => {}
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
