//! Index snapshots: [`Index::save`] and [`Index::load`] over the host's `Write` / `Read`.
//!
//! # Format (version 2; version 1, which has no GRAPH sections, is still read)
//!
//! All integers little-endian.
//!
//! ```text
//! header    magic "FLOWVECI" (8 bytes) | format version u32 | flags u32 (0)
//! section   tag u8 | payload length u64 | payload | CRC-32 u32 of tag, length and payload
//!
//! CONFIG    (tag 1) the IndexConfig as JSON (kind, dimension, metric, graph, limits)
//! NAMESPACE (tag 2) name (u64 length + UTF-8) | record count u64
//! RECORDS   (tag 3) count u64, then per record, in id order:
//!             id (u64 length + UTF-8) | parts u8 (1 dense, 2 sparse, 4 metadata, 8 data)
//!             dense:    length u64 | f32 * length          (the vector as upserted)
//!             sparse:   count u64 | i32 * count | f32 * count   (sorted by index)
//!             metadata: binary JSON value (exact: f64 bits and integer kinds kept)
//!             data:     u64 length + UTF-8
//! GRAPH     (tag 5) the namespace's dense graph links, nodes numbered by record order
//!                   (layout in the `persist/graph.rs` source)
//! END       (tag 4) namespaces u64 | records u64 | CRC-32 of every byte before END except
//!                   the sections' own CRCs (a CRC over bytes and their own CRC is a constant)
//! ```
//!
//! Sections come as CONFIG, then per namespace in name order a NAMESPACE followed by RECORDS
//! sections of about 1 MiB each until its count is reached and, when the namespace has a native
//! graph, one GRAPH section; then END. Without GRAPH sections
//! ([`Index::save_without_graph`]) a snapshot is canonical: the same records give the same
//! bytes, whatever the history that led to them. A graph depends on the order of inserts, so
//! GRAPH sections do not have that property (a save of a loaded index still repeats its
//! snapshot byte for byte).
//!
//! # What a load checks
//!
//! A load never trusts a byte it has not checksummed, and returns an [`Index`] only once
//! everything has been read and verified; any failure drops the partial index, so an index is
//! never half-loaded:
//! - the magic ([`VectorError::SnapshotCorrupt`]), the version
//!   ([`VectorError::SnapshotVersion`]);
//! - each section's CRC-32 before its payload is parsed, and the END section's CRC-32 of the
//!   whole stream, so a dropped or repeated section is caught
//!   ([`VectorError::SnapshotCorrupt`]); bytes that run out before END
//!   ([`VectorError::SnapshotTruncated`]);
//! - structure: section order, namespace names and record ids strictly increasing, counts that
//!   add up, no trailing bytes inside a section;
//! - every record goes through [`Index::upsert`]'s validation (a crafted snapshot with a valid
//!   checksum still cannot smuggle in a NaN, a wrong dimension or an oversized id);
//! - graph links are adopted only after every field is checked: levels within the graph's
//!   maximum, lists within `m` (`2m` on the base layer), neighbours that exist and reach that
//!   level, no self-links or repeats, the entry point on the top level, one node per record and
//!   no words left over; the error names the first problem.
//!
//! No length field makes the loader allocate beyond the input: a section's length is capped by
//! what the configuration allows (1 MiB plus one largest-possible record), its buffer grows
//! only as bytes arrive, and every count inside it is checked against the bytes left before
//! anything is allocated for it. Metadata decoding recurses at most
//! [`METADATA_MAX_DEPTH`](crate::vector::METADATA_MAX_DEPTH) levels.
//!
//! # Search structures: the graph's links are saved
//!
//! Rebuilding a dense graph on load costs what building it cost; its links are about 5% of the
//! snapshot. So a namespace's native HNSW is saved as a GRAPH section after its records, and a
//! load adopts it: while a namespace's records arrive the engine only stores vectors, then
//! takes the links (renumbered from record order to its own slots) or, without a GRAPH section,
//! builds the graph once over all records. Everything else (sparse postings, the metadata value
//! index) is rebuilt from the records; it is cheap. Measured by `examples/persistence.rs` on the
//! minilm-text dataset (43,000 hybrid records, 384-d dense + BM25 sparse, source metadata,
//! passage text as data; one run, one core):
//!
//! | | snapshot | save | load |
//! |---|---|---|---|
//! | with the graph's links ([`Index::save`]) | 84.1 MiB, 2,052 bytes/record | 1.08 s CPU | 0.96 s CPU from memory, 1.63 s from a file |
//! | lean ([`Index::save_without_graph`]), graph rebuilt | 80.2 MiB | 0.59 s CPU | 27.2 s CPU |
//!
//! A reload with links answers every query exactly as the original did (600 of 600 in the
//! example; bit-for-bit in `tests/persist_graph.rs`), and inserting into it grows the same
//! graph (the level generator's state is saved too). A rebuilt graph is a different graph when
//! the records were inserted in another order than their ids', so its approximate answers may
//! differ. Tombstones (replaced or deleted vectors the store keeps until compaction) are left
//! out of the links, as compaction would leave them out: the graph was repaired around each one
//! when it went, so the saved graph does not depend on them. Namespaces of the `hnsw-rs`
//! backend are saved without links and rebuilt on load.
//!
//! # Saving while writers run
//!
//! Each namespace is serialised under its read lock, so it is a consistent point-in-time view
//! of that namespace: a batch upsert is in the snapshot entirely or not at all. Writers to that
//! namespace wait while it is written (pass a buffered writer or an in-memory buffer if the
//! sink is slow); queries and writers on other namespaces do not. Namespaces are visited one at
//! a time in name order, so the snapshot as a whole is *not* one instant across namespaces: a
//! namespace saved later may include writes made after an earlier one was saved. A namespace
//! created after the save began is not included; one deleted before it is reached is skipped.

mod bytes;
mod crc32;
mod graph;
mod metadata;
mod stream;

use crate::vector::namespace::Include;
use crate::vector::{FetchResult, Index, IndexConfig, SparseVector, Vector, VectorError};
use bytes::{Decoder, put_f32s, put_i32s, put_len, put_str, put_u8, put_u64};
use std::io::{Read, Write};
use stream::{Section, SectionReader, SectionWriter};

/// The snapshot format version this build writes and reads.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 2;
/// The older format this build still reads (no GRAPH sections: graphs are rebuilt).
const OLDEST_READABLE_VERSION: u32 = 1;

const MAGIC: [u8; 8] = *b"FLOWVECI";

const CONFIG: u8 = 1;
const NAMESPACE: u8 = 2;
const RECORDS: u8 = 3;
const END: u8 = 4;
const GRAPH: u8 = 5;

/// Records are grouped into sections of about this many bytes.
const CHUNK_BYTES: usize = 1 << 20;

const HAS_DENSE: u8 = 1;
const HAS_SPARSE: u8 = 2;
const HAS_METADATA: u8 = 4;
const HAS_DATA: u8 = 8;

const ALL: Include = Include {
    metadata: true,
    vectors: true,
    data: true,
};

impl Index {
    /// Writes a snapshot of the whole index (configuration, namespaces, records) to `w`.
    ///
    /// Each namespace is a consistent point-in-time view: it is serialised under its read lock,
    /// so writers to it wait meanwhile (hand in a `BufWriter` or a `Vec<u8>`, not a raw slow
    /// sink). Different namespaces are saved one after another, not at one instant. The format
    /// and what [`Index::load`] checks are described in the `persist` module source
    /// (`src/vector/persist.rs`).
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::{Fetch, Index, IndexConfig, Metric, Vector};
    /// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
    /// index.upsert("ns", vec![Vector::dense("a", vec![1.0, 2.0]).with_data("hello")])?;
    /// let mut bytes = Vec::new();
    /// index.save(&mut bytes)?;
    /// let loaded = Index::load(bytes.as_slice())?;
    /// let a = loaded.fetch("ns", Fetch::ids(["a"]).include_all())?;
    /// assert_eq!(a[0].as_ref().and_then(|r| r.data.as_deref()), Some("hello"));
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    ///
    /// # Errors
    /// [`VectorError::SnapshotIo`] when `w` fails; what was written is then not a complete
    /// snapshot (a load reports it truncated or corrupt).
    pub fn save(&self, w: impl Write) -> Result<(), VectorError> {
        self.save_with(w, true)
    }

    /// Like [`Index::save`], but without the dense graphs' links: a smaller snapshot (about
    /// 7% at `m = 16` and 384 dimensions) that does not depend on the graph's layout, whose
    /// load rebuilds every graph (on the 43,000-vector example, ~25 s instead of under a
    /// second; see the `persist` module source).
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::{Index, IndexConfig, Metric, Vector};
    /// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
    /// index.upsert("", vec![Vector::dense("a", vec![1.0, 2.0])])?;
    /// let (mut full, mut lean) = (Vec::new(), Vec::new());
    /// index.save(&mut full)?;
    /// index.save_without_graph(&mut lean)?;
    /// assert_eq!(Index::load(lean.as_slice())?.info().vector_count, 1);
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    ///
    /// # Errors
    /// As [`Index::save`].
    pub fn save_without_graph(&self, w: impl Write) -> Result<(), VectorError> {
        self.save_with(w, false)
    }

    fn save_with(&self, w: impl Write, graphs: bool) -> Result<(), VectorError> {
        let mut out = SectionWriter::new(w);
        let mut header = Vec::with_capacity(16);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        out.raw(&header)?;
        let config = serde_json::to_vec(self.config())
            .expect("IndexConfig serialises: plain numbers and unit enums only");
        out.section(CONFIG, &config)?;

        let (mut namespaces, mut records) = (0u64, 0u64);
        let mut buf = Vec::new();
        for (name, ns) in self.namespace_handles() {
            let ns = ns.read();
            if ns.deleted {
                continue;
            }
            buf.clear();
            put_str(&mut buf, &name);
            put_len(&mut buf, ns.len());
            out.section(NAMESPACE, &buf)?;
            namespaces += 1;

            let mut in_chunk = 0usize;
            buf.clear();
            put_u64(&mut buf, 0); // the chunk's record count, patched before writing
            for (_, slot) in ns.prefixed("", None) {
                encode_record(&ns.fetch_slot(slot, ALL), &mut buf);
                in_chunk += 1;
                records += 1;
                if buf.len() >= CHUNK_BYTES {
                    flush_chunk(&mut out, &mut buf, in_chunk)?;
                    in_chunk = 0;
                }
            }
            if in_chunk > 0 {
                flush_chunk(&mut out, &mut buf, in_chunk)?;
            }
            if let Some(image) = graphs.then(|| ns.graph_image()).flatten() {
                buf.clear();
                graph::encode(&image, &mut buf);
                out.section(GRAPH, &buf)?;
            }
        }
        buf.clear();
        put_u64(&mut buf, namespaces);
        put_u64(&mut buf, records);
        buf.extend_from_slice(&out.file_crc().to_le_bytes());
        out.section(END, &buf)?;
        out.flush()
    }

    /// Reads a snapshot written by [`Index::save`] and rebuilds the index, search structures
    /// included (every record is re-inserted through the engines).
    ///
    /// Reads exactly the snapshot's bytes from `r` and no further, so other data may follow it
    /// in the same stream. Small reads: hand in a `BufReader` for a file.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::{Index, VectorError};
    /// let err = Index::load(&b"not a snapshot at all"[..]).unwrap_err();
    /// assert!(matches!(err, VectorError::SnapshotCorrupt { offset: 0, .. }));
    /// ```
    ///
    /// # Errors
    /// [`VectorError::SnapshotTruncated`] when the bytes end early,
    /// [`VectorError::SnapshotVersion`] for another format version,
    /// [`VectorError::SnapshotCorrupt`] for anything else that is wrong (magic, a checksum, the
    /// structure, a record the index rejects), [`VectorError::SnapshotIo`] when `r` fails. No
    /// index is returned then.
    pub fn load(r: impl Read) -> Result<Index, VectorError> {
        let mut input = SectionReader::new(r);
        let mut header = [0u8; 16];
        input.raw(&mut header)?;
        if header[..8] != MAGIC {
            return Err(VectorError::SnapshotCorrupt {
                offset: 0,
                reason: format!(
                    "not a flowvec index snapshot: magic {:?}, expected {:?}",
                    String::from_utf8_lossy(&header[..8]),
                    String::from_utf8_lossy(&MAGIC)
                ),
            });
        }
        let word = |at: usize| {
            u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let found = word(8);
        if !(OLDEST_READABLE_VERSION..=SNAPSHOT_FORMAT_VERSION).contains(&found) {
            return Err(VectorError::SnapshotVersion {
                found,
                expected: SNAPSHOT_FORMAT_VERSION,
            });
        }
        if word(12) != 0 {
            return Err(VectorError::SnapshotCorrupt {
                offset: 12,
                reason: format!("unknown header flags {:#x}, expected 0", word(12)),
            });
        }

        let section = input.section(CHUNK_BYTES as u64)?;
        let d = Decoder::new(&section.payload, section.offset);
        if section.tag != CONFIG {
            return Err(d.corrupt(format!(
                "first section has type {}, expected the configuration ({CONFIG})",
                section.tag
            )));
        }
        let config: IndexConfig = serde_json::from_slice(&section.payload)
            .map_err(|e| d.corrupt(format!("configuration does not parse: {e}")))?;
        let max_section = (CHUNK_BYTES as u64).saturating_add(max_record_bytes(&config));
        let graph_node_bytes = max_graph_node_bytes(&config);
        let index =
            Index::new(config).map_err(|e| d.corrupt(format!("configuration is rejected: {e}")))?;

        let mut loader = Loader::default();
        loop {
            // A GRAPH section holds a namespace's whole graph: its cap follows the namespace's
            // announced record count (the buffer still grows only as bytes arrive).
            let graph_cap = loader
                .current
                .as_ref()
                .map_or(0, |(_, announced, _)| {
                    announced.saturating_mul(graph_node_bytes)
                })
                .saturating_add(64);
            let section = input.section(max_section.max(graph_cap))?;
            match section.tag {
                NAMESPACE => loader.namespace(&index, &section)?,
                RECORDS => loader.records(&index, &section)?,
                GRAPH if found >= 2 => loader.graph(&index, &section)?,
                END => {
                    loader.end(&index, &section)?;
                    return Ok(index);
                }
                other => {
                    return Err(VectorError::SnapshotCorrupt {
                        offset: section.offset,
                        reason: format!("unknown section type {other}"),
                    });
                }
            }
        }
    }
}

fn flush_chunk<W: Write>(
    out: &mut SectionWriter<W>,
    buf: &mut Vec<u8>,
    count: usize,
) -> Result<(), VectorError> {
    buf[..8].copy_from_slice(&(count as u64).to_le_bytes());
    out.section(RECORDS, buf)?;
    buf.clear();
    put_u64(buf, 0);
    Ok(())
}

fn encode_record(r: &FetchResult, out: &mut Vec<u8>) {
    put_str(out, &r.id);
    let parts = [
        (r.vector.is_some(), HAS_DENSE),
        (r.sparse_vector.is_some(), HAS_SPARSE),
        (r.metadata.is_some(), HAS_METADATA),
        (r.data.is_some(), HAS_DATA),
    ]
    .iter()
    .filter(|(present, _)| *present)
    .fold(0, |acc, (_, bit)| acc | bit);
    put_u8(out, parts);
    if let Some(v) = &r.vector {
        put_len(out, v.len());
        put_f32s(out, v);
    }
    if let Some(s) = &r.sparse_vector {
        put_len(out, s.indices.len());
        put_i32s(out, &s.indices);
        put_f32s(out, &s.values);
    }
    if let Some(m) = &r.metadata {
        metadata::encode(m, out);
    }
    if let Some(data) = &r.data {
        put_str(out, data);
    }
}

/// The most bytes one valid record can take under `config`'s limits (binary metadata is at
/// most 5× its compact JSON: `[0,0]` is 2 bytes a number in JSON, 9 in binary).
fn max_record_bytes(config: &IndexConfig) -> u64 {
    let l = &config.limits;
    let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    [
        8 + as_u64(l.id_max_bytes),
        1,
        8 + as_u64(config.dimension).saturating_mul(4),
        8 + as_u64(l.sparse_max_entries).saturating_mul(8),
        16 + as_u64(l.metadata_max_bytes).saturating_mul(5),
        8 + as_u64(l.data_max_bytes),
    ]
    .iter()
    .fold(8, |acc: u64, &n| acc.saturating_add(n))
}

/// Most bytes one node can take in a GRAPH section under `config`: its level byte, a count
/// word per level and a full neighbour list on each (`2m` on the base layer, `m` above).
fn max_graph_node_bytes(config: &IndexConfig) -> u64 {
    let m = config.dense_config().map_or(0, |c| c.m as u64);
    let levels = 16; // the native graph's MAX_LEVEL + 1
    1 + 4 * levels + 4 * (2 * m + (levels - 1) * m)
}

/// Where a load is in the section sequence.
#[derive(Default)]
struct Loader {
    /// The namespace being filled: name, records it announced, records read so far.
    current: Option<(String, u64, u64)>,
    /// The current namespace's graph has been adopted from a GRAPH section.
    graph_adopted: bool,
    /// Last record id of the current namespace (ids must increase).
    last_id: Option<String>,
    namespaces: u64,
    records: u64,
}

impl Loader {
    /// Checks that the current namespace got all its records and, unless a GRAPH section gave
    /// its graph, builds it (once, over every record).
    fn finish_namespace(&mut self, index: &Index, d: &Decoder<'_>) -> Result<(), VectorError> {
        let Some((name, announced, read)) = &self.current else {
            return Ok(());
        };
        if announced != read {
            return Err(d.corrupt(format!(
                "namespace {name:?} announced {announced} records but has {read}"
            )));
        }
        if !self.graph_adopted {
            index.with_namespace(name, |ns| {
                ns.finish_bulk_load(None)
                    .map_err(|e| d.corrupt(format!("namespace {name:?}: {e}")))
            })?;
        }
        Ok(())
    }

    fn graph(&mut self, index: &Index, s: &Section) -> Result<(), VectorError> {
        let mut d = Decoder::new(&s.payload, s.offset);
        let Some((name, announced, read)) = &self.current else {
            return Err(d.corrupt("graph links before any namespace"));
        };
        if self.graph_adopted {
            return Err(d.corrupt(format!("namespace {name:?} has a second graph section")));
        }
        if announced != read {
            return Err(d.corrupt(format!(
                "graph links of namespace {name:?} after {read} of its {announced} records"
            )));
        }
        let image = graph::decode(&mut d)?;
        index.with_namespace(name, |ns| {
            ns.finish_bulk_load(Some(&image))
                .map_err(|e| d.corrupt(format!("graph links of namespace {name:?}: {e}")))
        })?;
        self.graph_adopted = true;
        Ok(())
    }

    fn namespace(&mut self, index: &Index, s: &Section) -> Result<(), VectorError> {
        let mut d = Decoder::new(&s.payload, s.offset);
        self.finish_namespace(index, &d)?;
        let name = d.str("namespace name")?.to_owned();
        let count = d.u64("namespace record count")?;
        if !d.is_empty() {
            return Err(d.corrupt("namespace section has trailing bytes"));
        }
        if let Some((previous, _, _)) = &self.current
            && name <= *previous
        {
            return Err(d.corrupt(format!(
                "namespace {name:?} follows {previous:?}, expected names in increasing order"
            )));
        }
        index
            .with_namespace(&name, |ns| {
                ns.begin_bulk_load();
                Ok(())
            })
            .map_err(|e| d.corrupt(format!("namespace {name:?} is rejected: {e}")))?;
        self.current = Some((name, count, 0));
        self.graph_adopted = false;
        self.last_id = None;
        self.namespaces += 1;
        Ok(())
    }

    fn records(&mut self, index: &Index, s: &Section) -> Result<(), VectorError> {
        let mut d = Decoder::new(&s.payload, s.offset);
        let Some((name, announced, read)) = self.current.as_mut() else {
            return Err(d.corrupt("records before any namespace"));
        };
        // A record takes at least its id length and its parts byte.
        let n = d.count(9, "record count")?;
        let mut batch = Vec::new();
        for _ in 0..n {
            let v = decode_record(&mut d)?;
            if self
                .last_id
                .as_deref()
                .is_some_and(|last| v.id.as_str() <= last)
            {
                return Err(d.corrupt(format!(
                    "record id {:?} in namespace {name:?} is not after {:?}",
                    v.id,
                    self.last_id.as_deref().unwrap_or_default()
                )));
            }
            self.last_id = Some(v.id.clone());
            batch.push(v);
        }
        if !d.is_empty() {
            return Err(d.corrupt("records section has trailing bytes"));
        }
        *read += n as u64;
        if *read > *announced {
            return Err(d.corrupt(format!(
                "namespace {name:?} announced {announced} records but has more"
            )));
        }
        self.records += n as u64;
        index
            .upsert(name, batch)
            .map_err(|e| d.corrupt(format!("a record in namespace {name:?} is rejected: {e}")))
    }

    fn end(&mut self, index: &Index, s: &Section) -> Result<(), VectorError> {
        let mut d = Decoder::new(&s.payload, s.offset);
        self.finish_namespace(index, &d)?;
        let namespaces = d.u64("namespace total")?;
        let records = d.u64("record total")?;
        let crc = d.take(4, "snapshot checksum")?;
        let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if !d.is_empty() {
            return Err(d.corrupt("end section has trailing bytes"));
        }
        if (namespaces, records) != (self.namespaces, self.records) {
            return Err(d.corrupt(format!(
                "end section counts {namespaces} namespaces and {records} records, read {} and {}",
                self.namespaces, self.records
            )));
        }
        if crc != s.crc_before {
            return Err(d.corrupt(format!(
                "snapshot checksum mismatch: stored {crc:#010x}, computed {:#010x}",
                s.crc_before
            )));
        }
        Ok(())
    }
}

fn decode_record(d: &mut Decoder<'_>) -> Result<Vector, VectorError> {
    let id = d.str("record id")?.to_owned();
    let parts = d.u8("record parts")?;
    if parts & !(HAS_DENSE | HAS_SPARSE | HAS_METADATA | HAS_DATA) != 0 {
        return Err(d.corrupt(format!("record {id:?} has unknown parts {parts:#x}")));
    }
    let vector = if parts & HAS_DENSE != 0 {
        let n = d.count(4, "dense length")?;
        Some(d.f32s(n, "dense vector")?)
    } else {
        None
    };
    let sparse_vector = if parts & HAS_SPARSE != 0 {
        let n = d.count(8, "sparse entry count")?;
        let indices = d.i32s(n, "sparse indices")?;
        let values = d.f32s(n, "sparse values")?;
        Some(SparseVector { indices, values })
    } else {
        None
    };
    let metadata = if parts & HAS_METADATA != 0 {
        Some(metadata::decode(d, 0)?)
    } else {
        None
    };
    let data = if parts & HAS_DATA != 0 {
        Some(d.str("record data")?.to_owned())
    } else {
        None
    };
    Ok(Vector {
        id,
        vector,
        sparse_vector,
        metadata,
        data,
    })
}
