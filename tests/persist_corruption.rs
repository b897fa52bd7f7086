//! A damaged snapshot is a typed error, never a panic or a half-loaded index: truncation at
//! every byte, every single-bit flip, random garbage, wrong magic or version, and crafted
//! snapshots whose checksums are valid but whose contents are not.

use flowvec::vector::{
    Index, IndexConfig, Metric, SNAPSHOT_FORMAT_VERSION, SparseVector, Vector, VectorError,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::io::Read;

/// A small hybrid snapshot: two namespaces, metadata, data, an empty namespace.
fn small_index() -> Index {
    let index = Index::new(IndexConfig::hybrid(2, Metric::Cosine)).unwrap();
    let rec = |id: &str, x: f32, t: i32| Vector {
        id: id.into(),
        vector: Some(vec![x, 1.0]),
        sparse_vector: Some(SparseVector::new(vec![t, 7], vec![1.0, 0.5])),
        metadata: Some(json!({"g": t, "s": "v", "a": [1.5, null]})),
        data: Some(format!("text {id}")),
    };
    index
        .upsert("", vec![rec("a", 0.5, 1), rec("b", -1.0, 2)])
        .unwrap();
    index.upsert("ns", vec![rec("c", 2.0, 3)]).unwrap();
    index.upsert("gone", vec![rec("d", 2.0, 3)]).unwrap();
    index.reset("gone");
    index
}

fn snapshot(index: &Index) -> Vec<u8> {
    let mut bytes = Vec::new();
    index.save(&mut bytes).unwrap();
    bytes
}

#[test]
fn the_small_snapshot_loads() {
    let bytes = snapshot(&small_index());
    assert!(bytes.len() > 200 && bytes.len() < 2000, "{}", bytes.len());
    let index = Index::load(bytes.as_slice()).unwrap();
    assert_eq!(index.info().vector_count, 3);
}

#[test]
fn truncation_at_every_offset_is_a_truncation_error() {
    let bytes = snapshot(&small_index());
    for cut in 0..bytes.len() {
        match Index::load(&bytes[..cut]) {
            Err(VectorError::SnapshotTruncated { offset }) => {
                assert_eq!(offset, cut as u64, "the error says where the bytes ran out");
            }
            other => panic!("cut at {cut} of {}: {other:?}", bytes.len()),
        }
    }
}

#[test]
fn every_single_bit_flip_is_detected() {
    let bytes = snapshot(&small_index());
    for byte in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[byte] ^= 1 << bit;
            match Index::load(bad.as_slice()) {
                Err(VectorError::SnapshotVersion { found, expected }) => {
                    assert!((8..12).contains(&byte), "version error from byte {byte}");
                    assert_eq!(expected, SNAPSHOT_FORMAT_VERSION);
                    assert_ne!(found, expected);
                }
                // A flipped length can make a section run past the end.
                Err(
                    VectorError::SnapshotCorrupt { .. } | VectorError::SnapshotTruncated { .. },
                ) => {}
                other => panic!("flip of bit {bit} in byte {byte}: {other:?}"),
            }
        }
    }
}

#[test]
fn random_damage_never_panics_and_almost_always_errs() {
    let bytes = snapshot(&small_index());
    let mut rng = StdRng::seed_from_u64(7);
    let mut loaded = 0;
    for _ in 0..3000 {
        let mut bad = bytes.clone();
        match rng.random_range(0..4) {
            0 => {
                for _ in 0..rng.random_range(1..16) {
                    let at = rng.random_range(0..bad.len());
                    bad[at] = rng.random();
                }
            }
            1 => {
                let at = rng.random_range(0..bad.len());
                let n = rng.random_range(1..32).min(bad.len() - at);
                bad.drain(at..at + n);
            }
            2 => {
                let at = rng.random_range(0..bad.len());
                let junk: Vec<u8> = (0..rng.random_range(1..32)).map(|_| rng.random()).collect();
                bad.splice(at..at, junk);
            }
            _ => {
                let at = rng.random_range(0..bad.len());
                let n = rng.random_range(1..64).min(bad.len() - at);
                let from = rng.random_range(0..bad.len() - n);
                let chunk = bad[from..from + n].to_vec();
                bad[at..at + n].copy_from_slice(&chunk);
            }
        }
        if bad != bytes && Index::load(bad.as_slice()).is_ok() {
            loaded += 1;
        }
    }
    assert_eq!(loaded, 0, "a damaged snapshot loaded");
    // Pure garbage of every small length, and long runs of one byte.
    for len in 0..200 {
        let junk: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        assert!(Index::load(junk.as_slice()).is_err());
    }
    for b in [0u8, 0xff] {
        assert!(Index::load(vec![b; 1 << 16].as_slice()).is_err());
    }
}

#[test]
fn wrong_magic_and_wrong_versions() {
    let bytes = snapshot(&small_index());
    let mut magic = bytes.clone();
    magic[..8].copy_from_slice(b"FLOWVECX");
    assert!(matches!(
        Index::load(magic.as_slice()),
        Err(VectorError::SnapshotCorrupt { offset: 0, reason }) if reason.contains("magic")
    ));
    for version in [0, SNAPSHOT_FORMAT_VERSION + 1, u32::MAX] {
        let mut v = bytes.clone();
        v[8..12].copy_from_slice(&version.to_le_bytes());
        assert_eq!(
            Index::load(v.as_slice()).unwrap_err(),
            VectorError::SnapshotVersion {
                found: version,
                expected: SNAPSHOT_FORMAT_VERSION
            }
        );
    }
    let mut flags = bytes.clone();
    flags[12] = 1;
    assert!(matches!(
        Index::load(flags.as_slice()),
        Err(VectorError::SnapshotCorrupt { offset: 12, .. })
    ));
    // A JSON export is not a snapshot either.
    assert!(matches!(
        Index::load(&b"{\"kind\":\"DENSE\"}"[..]),
        Err(VectorError::SnapshotCorrupt { offset: 0, .. })
    ));
}

#[test]
fn reader_errors_are_typed_io_errors() {
    struct Failing(Vec<u8>, usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1 >= self.0.len() / 2 {
                return Err(std::io::Error::other("cable unplugged"));
            }
            let n = buf.len().min(3).min(self.0.len() - self.1);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }
    let err = Index::load(Failing(snapshot(&small_index()), 0)).unwrap_err();
    assert!(
        matches!(&err, VectorError::SnapshotIo { kind: std::io::ErrorKind::Other, message } if message.contains("cable")),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Crafted snapshots with valid checksums: the structure and the records are checked too.

fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Writes snapshots by hand, with correct checksums.
struct Craft(Vec<u8>);

impl Craft {
    fn new(config: &IndexConfig) -> Self {
        let mut c = Craft(Vec::new());
        c.0.extend_from_slice(b"FLOWVECI");
        c.0.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
        c.0.extend_from_slice(&0u32.to_le_bytes());
        c.section(1, &serde_json::to_vec(config).unwrap());
        c
    }

    fn section(&mut self, tag: u8, payload: &[u8]) -> &mut Self {
        let mut s = vec![tag];
        s.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        s.extend_from_slice(payload);
        let crc = crc32(&s);
        self.0.extend_from_slice(&s);
        self.0.extend_from_slice(&crc.to_le_bytes());
        self
    }

    fn namespace(&mut self, name: &str, count: u64) -> &mut Self {
        let mut p = Vec::new();
        p.extend_from_slice(&(name.len() as u64).to_le_bytes());
        p.extend_from_slice(name.as_bytes());
        p.extend_from_slice(&count.to_le_bytes());
        self.section(2, &p)
    }

    /// A RECORDS section of dense-only records `(id, vector)`.
    fn dense_records(&mut self, records: &[(&str, &[f32])]) -> &mut Self {
        let mut p = Vec::new();
        p.extend_from_slice(&(records.len() as u64).to_le_bytes());
        for (id, v) in records {
            p.extend_from_slice(&(id.len() as u64).to_le_bytes());
            p.extend_from_slice(id.as_bytes());
            p.push(1);
            p.extend_from_slice(&(v.len() as u64).to_le_bytes());
            for x in *v {
                p.extend_from_slice(&x.to_le_bytes());
            }
        }
        self.section(3, &p)
    }

    /// The stream so far without each section's trailing CRC (what END's checksum covers).
    fn without_section_crcs(&self) -> Vec<u8> {
        let mut out = self.0[..16].to_vec();
        let mut at = 16;
        while at < self.0.len() {
            let len = u64::from_le_bytes(self.0[at + 1..at + 9].try_into().unwrap()) as usize;
            out.extend_from_slice(&self.0[at..at + 9 + len]);
            at += 9 + len + 4;
        }
        out
    }

    fn end(&mut self, namespaces: u64, records: u64) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&namespaces.to_le_bytes());
        p.extend_from_slice(&records.to_le_bytes());
        p.extend_from_slice(&crc32(&self.without_section_crcs()).to_le_bytes());
        self.section(4, &p);
        self.0.clone()
    }
}

fn reason(bytes: &[u8]) -> String {
    match Index::load(bytes) {
        Err(VectorError::SnapshotCorrupt { reason, .. }) => reason,
        other => panic!("expected SnapshotCorrupt, got {other:?}"),
    }
}

#[test]
fn crafted_snapshots_equal_to_real_ones_load() {
    let config = IndexConfig::dense(2, Metric::Euclidean);
    let real = Index::new(config.clone()).unwrap();
    real.upsert(
        "n",
        vec![
            Vector::dense("a", vec![1.0, 2.0]),
            Vector::dense("b", vec![3.0, 4.0]),
        ],
    )
    .unwrap();
    let crafted = Craft::new(&config)
        .namespace("", 0)
        .namespace("n", 2)
        .dense_records(&[("a", &[1.0, 2.0]), ("b", &[3.0, 4.0])])
        .end(2, 2);
    assert_eq!(
        crafted,
        snapshot(&real),
        "the crafter writes the real format"
    );
    assert!(Index::load(crafted.as_slice()).is_ok());
}

#[test]
fn crafted_structure_errors() {
    let config = IndexConfig::dense(2, Metric::Euclidean);
    let c = || Craft::new(&config);
    let v: &[f32] = &[1.0, 2.0];

    let dup = c()
        .namespace("", 2)
        .dense_records(&[("a", v), ("a", v)])
        .end(1, 2);
    assert!(reason(&dup).contains("is not after"), "{}", reason(&dup));
    let across = c()
        .namespace("", 2)
        .dense_records(&[("b", v)])
        .dense_records(&[("a", v)])
        .end(1, 2);
    assert!(reason(&across).contains("is not after"));
    let order = c().namespace("b", 0).namespace("a", 0).end(2, 0);
    assert!(reason(&order).contains("increasing order"));
    let short = c().namespace("", 2).dense_records(&[("a", v)]).end(1, 1);
    assert!(reason(&short).contains("announced 2 records but has 1"));
    let long = c()
        .namespace("", 1)
        .dense_records(&[("a", v), ("b", v)])
        .end(1, 2);
    assert!(reason(&long).contains("announced 1 records but has more"));
    let orphan = c().dense_records(&[("a", v)]).end(0, 1);
    assert!(reason(&orphan).contains("before any namespace"));
    let totals = c().namespace("", 0).end(5, 0);
    assert!(reason(&totals).contains("end section counts"));
    let unknown = c().section(9, b"?").end(0, 0);
    assert!(reason(&unknown).contains("unknown section type 9"));
    // A section swapped for another valid one: only END's whole-stream checksum can tell.
    let mut x = c();
    x.namespace("", 0).namespace("x", 0);
    let x_len = x.0.len();
    let with_x = x.end(2, 0);
    let mut y = c();
    y.namespace("", 0).namespace("y", 0);
    assert_eq!(y.0.len(), x_len);
    y.0.extend_from_slice(&with_x[x_len..]);
    assert!(reason(&y.0).contains("snapshot checksum mismatch"));
    // No END at all.
    let open = c().namespace("", 0).0.clone();
    assert!(matches!(
        Index::load(open.as_slice()),
        Err(VectorError::SnapshotTruncated { .. })
    ));
    // The first section must be the configuration, and a valid one.
    let mut no_config = Craft(open[..16].to_vec());
    let no_config = no_config.namespace("", 0).end(1, 0);
    assert!(reason(&no_config).contains("expected the configuration"));
    let mut bad_config = Craft(open[..16].to_vec());
    bad_config.section(1, br#"{"kind":"DENSE","dimension":0,"metric":"COSINE"}"#);
    assert!(reason(&bad_config.end(0, 0)).contains("configuration is rejected"));
}

#[test]
fn crafted_records_are_validated_like_upserts() {
    let config = IndexConfig::dense(2, Metric::Cosine);
    let c = || Craft::new(&config);
    for (v, expect) in [
        (&[f32::NAN, 1.0][..], "finite"),
        (&[0.0, 0.0][..], "zero vector"),
        (&[1.0, 2.0, 3.0][..], "dimension"),
    ] {
        let bytes = c().namespace("", 1).dense_records(&[("a", v)]).end(1, 1);
        let r = reason(&bytes);
        assert!(r.contains("rejected") && r.contains(expect), "{r}");
    }
    let long_id = "x".repeat(513);
    let bytes = c()
        .namespace("", 1)
        .dense_records(&[(&long_id, &[1.0, 0.0])])
        .end(1, 1);
    assert!(reason(&bytes).contains("too long"));
    let bytes = c()
        .namespace("", 1)
        .dense_records(&[("", &[1.0, 0.0])])
        .end(1, 1);
    assert!(reason(&bytes).contains("empty vector id"));
}

#[test]
fn crafted_huge_lengths_are_refused_without_allocating() {
    let config = IndexConfig::dense(2, Metric::Cosine);
    // A section claiming 2^60 bytes: refused from the length field alone.
    let mut huge = Craft::new(&config);
    huge.0.push(3);
    huge.0.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(reason(&huge.0).contains("claims"));
    // Valid checksums around counts far beyond the payload.
    for count in [u64::MAX, 1 << 40, 1000] {
        let mut p = count.to_le_bytes().to_vec();
        p.extend_from_slice(&[0; 16]);
        let bytes = Craft::new(&config)
            .namespace("", 1)
            .section(3, &p)
            .end(1, 1);
        assert!(
            reason(&bytes).contains("record count"),
            "{}",
            reason(&bytes)
        );
    }
    let mut p = Vec::new();
    p.extend_from_slice(&1u64.to_le_bytes());
    p.extend_from_slice(&1u64.to_le_bytes());
    p.push(b'a');
    p.push(1);
    p.extend_from_slice(&(u64::MAX / 2).to_le_bytes());
    let bytes = Craft::new(&config)
        .namespace("", 1)
        .section(3, &p)
        .end(1, 1);
    assert!(reason(&bytes).contains("dense length"));
    // A namespace name of 2^63 bytes.
    let mut p = (1u64 << 63).to_le_bytes().to_vec();
    p.extend_from_slice(&[0; 8]);
    let bytes = Craft::new(&config).section(2, &p).end(1, 0);
    assert!(reason(&bytes).contains("namespace name"));
}

// ---------------------------------------------------------------------------------------------
// Crafted GRAPH sections (saved dense-graph links) with valid checksums.

/// The sections of a snapshot after CONFIG and before END, as `(tag, payload)`.
fn body_sections(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 16;
    while at < bytes.len() {
        let tag = bytes[at];
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize;
        out.push((tag, bytes[at + 9..at + 9 + len].to_vec()));
        at += 9 + len + 4;
    }
    out.retain(|(tag, _)| ![1, 4].contains(tag));
    out
}

/// A dense index big enough to have a graph (more than 4,000 vectors), and its config.
fn graph_index() -> (IndexConfig, Index) {
    let mut config = IndexConfig::dense(3, Metric::Euclidean);
    config.graph.m = 4;
    config.graph.ef_construction = 8;
    let index = Index::new(config.clone()).unwrap();
    let recs: Vec<Vector> = (0..4_100)
        .map(|i| {
            let x = i as f32;
            Vector::dense(format!("{i:05}"), vec![x.sin(), x.cos(), (x * 0.37).sin()])
        })
        .collect();
    index.upsert("g", recs).unwrap();
    (config, index)
}

/// Re-frames the snapshot's sections as format `version`, with `change` applied to the list,
/// and fresh checksums (END keeps the original's counts).
fn reframed(
    config: &IndexConfig,
    bytes: &[u8],
    version: u32,
    change: impl FnOnce(&mut Vec<(u8, Vec<u8>)>),
) -> Vec<u8> {
    let end_at = bytes.len() - 33; // END: tag and length (9), counts (16), stream CRC, CRC
    let counts = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let (namespaces, records) = (counts(end_at + 9), counts(end_at + 17));
    let mut sections = body_sections(bytes);
    change(&mut sections);
    let mut c = Craft::new(config);
    c.0[8..12].copy_from_slice(&version.to_le_bytes());
    for (tag, payload) in &sections {
        c.section(*tag, payload);
    }
    c.end(namespaces, records)
}

#[test]
fn crafted_graph_links_are_checked_like_any_input() {
    let (config, index) = graph_index();
    let bytes = snapshot(&index);
    let v = SNAPSHOT_FORMAT_VERSION;
    let same = reframed(&config, &bytes, v, |_| {});
    let first = same.iter().zip(&bytes).position(|(a, b)| a != b);
    assert!(
        same == bytes,
        "re-framing gives the same bytes: lengths {} {}, first difference {first:?}",
        same.len(),
        bytes.len()
    );
    let graph = |s: &mut Vec<(u8, Vec<u8>)>| -> usize {
        s.iter()
            .position(|(tag, _)| *tag == 5)
            .expect("a graph section")
    };
    let nodes = 4_100usize;
    let links_at = 32 + nodes; // nodes, rng, entry, levels, word count
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Damage)> = vec![
        // The first node's base-layer count, then its first neighbour.
        ("expected at most 8", Box::new(move |p| p[links_at] = 200)),
        (
            "expected a node below 4100",
            Box::new(move |p| {
                p[links_at + 4..links_at + 8].copy_from_slice(&5_000u32.to_le_bytes())
            }),
        ),
        (
            "twice or itself",
            Box::new(move |p| p[links_at + 4..links_at + 8].copy_from_slice(&0u32.to_le_bytes())),
        ),
        ("expected at most 15", Box::new(|p| p[24] = 16)),
        (
            "graph entry node 9999",
            Box::new(|p| p[16..24].copy_from_slice(&9_999u64.to_le_bytes())),
        ),
        (
            "no entry node",
            Box::new(|p| p[16..24].copy_from_slice(&u64::MAX.to_le_bytes())),
        ),
        (
            "expected one per vector",
            Box::new(|p| {
                // One node fewer: drop the last level byte and shift the rest.
                p[..8].copy_from_slice(&4_099u64.to_le_bytes());
                p.remove(24 + 4_099);
            }),
        ),
        (
            "links end",
            Box::new(move |p| {
                let words = u64::from_le_bytes(p[24 + nodes..32 + nodes].try_into().unwrap());
                p[24 + nodes..32 + nodes].copy_from_slice(&(words - 1).to_le_bytes());
                p.truncate(p.len() - 4);
            }),
        ),
        ("trailing bytes", Box::new(|p| p.push(0))),
    ];
    for (want, damage) in cases {
        let bad = reframed(&config, &bytes, v, |s| {
            let g = graph(s);
            damage(&mut s[g].1);
        });
        let why = reason(&bad);
        assert!(why.contains(want), "{why:?} should say {want:?}");
    }
    // Out of place: before the namespace's last records, twice, or with no namespace.
    let early = reframed(&config, &bytes, v, |s| {
        let at = graph(s);
        let g = s.remove(at);
        s.insert(2, g); // after namespace "g" (the default namespace "" comes first)
    });
    assert!(reason(&early).contains("after 0 of its 4100 records"));
    let twice = reframed(&config, &bytes, v, |s| {
        let at = graph(s);
        let g = s[at].clone();
        s.push(g);
    });
    assert!(reason(&twice).contains("second graph section"));
    let orphan = reframed(&config, &bytes, v, |s| {
        let at = graph(s);
        let g = s.remove(at);
        s.clear();
        s.push(g);
    });
    assert!(reason(&orphan).contains("before any namespace"));
}

#[test]
fn version_1_snapshots_still_load_and_rebuild_their_graphs() {
    let (config, index) = graph_index();
    let mut lean = Vec::new();
    index.save_without_graph(&mut lean).unwrap();
    let v1 = reframed(&config, &lean, 1, |_| {});
    let loaded = Index::load(v1.as_slice()).unwrap();
    assert_eq!(loaded.info().vector_count, 4_100);
    let q = flowvec::vector::Query::dense(vec![0.1, 0.9, 0.2], 3);
    assert_eq!(loaded.query("g", &q), index.query("g", &q));
    // A GRAPH section is not part of version 1.
    let with_graph = reframed(&config, &snapshot(&index), 1, |_| {});
    assert!(reason(&with_graph).contains("unknown section type 5"));
}
