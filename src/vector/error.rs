//! The vector engine's error type.

use crate::vector::IndexKind;
use crate::vector::filter::FilterError;

/// Everything that can go wrong in [`crate::vector`]: bad input and misuse.
///
/// Each variant carries the offending values; the message says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// A dense vector does not have the index's dimension.
    #[error("Invalid vector dimension: {received}, expected: {expected}")]
    DimensionMismatch {
        /// The length that was given.
        received: usize,
        /// The index's dimension.
        expected: usize,
    },
    /// A configuration or search parameter is out of range.
    #[error("invalid {name}: {value}, expected {expected}")]
    InvalidParameter {
        /// Which parameter.
        name: &'static str,
        /// The value that was given, as text.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// A vector holds NaN or an infinity.
    #[error("vector value at position {position} is {value}, expected a finite number")]
    NonFiniteValue {
        /// Index of the bad value within the vector.
        position: usize,
        /// The value, as text (`NaN`, `inf`, `-inf`).
        value: String,
    },
    /// A zero vector under the cosine metric, where its direction is undefined.
    #[error("zero vector under the cosine metric: cosine similarity is undefined for it")]
    ZeroVector,
    /// A record id is the empty string.
    #[error("empty vector id: an id must be a non-empty string")]
    EmptyId,
    /// A record id is longer than the index allows.
    #[error("vector id of {length} bytes is too long, expected at most {max} bytes")]
    IdTooLong {
        /// The id's length in bytes.
        length: usize,
        /// The limit ([`Limits::id_max_bytes`](crate::vector::Limits::id_max_bytes)).
        max: usize,
    },
    /// A record or query lacks a part its index kind needs.
    #[error("{kind} index requires `{part}`{context}")]
    MissingPart {
        /// The index kind.
        kind: IndexKind,
        /// The wire name of the missing part (`vector` or `sparseVector`).
        part: &'static str,
        /// Where it was missing, e.g. ` for vector id "a"` (may be empty).
        context: String,
    },
    /// A record or query carries a part its index kind does not have.
    #[error("{kind} index does not accept `{part}`{context}")]
    PartNotInIndex {
        /// The index kind.
        kind: IndexKind,
        /// The wire name of the unexpected part (`vector` or `sparseVector`).
        part: &'static str,
        /// Where it was found, e.g. ` for vector id "a"` (may be empty).
        context: String,
    },
    /// An update of a hybrid record gives only one of its two vector parts.
    #[error(
        "hybrid index update of vector id {id:?} gives only `{given}`: give both `vector` and \
         `sparseVector`, or neither"
    )]
    HybridPartsTogether {
        /// The record's id.
        id: String,
        /// The part that was given.
        given: &'static str,
    },
    /// Metadata is not a JSON object.
    #[error("metadata must be a JSON object, got {found}")]
    MetadataNotObject {
        /// The JSON type that was given (`array`, `string`, ...).
        found: &'static str,
    },
    /// Metadata is larger than the index allows.
    #[error("metadata of {size} bytes is too large, expected at most {max} bytes")]
    MetadataTooLarge {
        /// Its size as compact JSON.
        size: usize,
        /// The limit ([`Limits::metadata_max_bytes`](crate::vector::Limits::metadata_max_bytes)).
        max: usize,
    },
    /// `data` is larger than the index allows.
    #[error("data of {size} bytes is too large, expected at most {max} bytes")]
    DataTooLarge {
        /// Its length in bytes.
        size: usize,
        /// The limit ([`Limits::data_max_bytes`](crate::vector::Limits::data_max_bytes)).
        max: usize,
    },
    /// A sparse vector's `indices` and `values` differ in length.
    #[error(
        "sparse vector has {indices} indices but {values} values, expected the same number of each"
    )]
    SparseLengthMismatch {
        /// Number of indices.
        indices: usize,
        /// Number of values.
        values: usize,
    },
    /// A sparse vector without entries.
    #[error("sparse vector is empty, expected at least one entry")]
    SparseEmpty,
    /// A sparse vector with more entries than the index allows.
    #[error("sparse vector has {count} entries, expected at most {max}")]
    SparseTooManyEntries {
        /// Number of entries given.
        count: usize,
        /// The limit ([`Limits::sparse_max_entries`](crate::vector::Limits::sparse_max_entries)).
        max: usize,
    },
    /// A sparse vector names the same index twice.
    #[error("sparse vector has index {index} more than once, expected unique indices")]
    SparseDuplicateIndex {
        /// The repeated index.
        index: i32,
    },
    /// A sparse vector value is NaN or infinite.
    #[error("sparse vector value at position {position} is {value}, expected a finite number")]
    SparseNonFiniteValue {
        /// Position of the bad value within `values`.
        position: usize,
        /// The value, as text.
        value: String,
    },
    /// `topK` is zero or above the index's cap.
    #[error("invalid topK: {top_k}, expected 1 ..= {max}")]
    TopKOutOfRange {
        /// The value given.
        top_k: usize,
        /// The cap ([`Limits::top_k_max`](crate::vector::Limits::top_k_max)).
        max: usize,
    },
    /// A range `limit` is zero or above the index's cap.
    #[error("invalid range limit: {limit}, expected 1 ..= {max}")]
    LimitOutOfRange {
        /// The value given.
        limit: usize,
        /// The cap ([`Limits::range_limit_max`](crate::vector::Limits::range_limit_max)).
        max: usize,
    },
    /// A range cursor that this index did not hand out.
    #[error("invalid range cursor {cursor:?}, expected \"\", \"0\" or a nextCursor from range")]
    InvalidCursor {
        /// The cursor given.
        cursor: String,
    },
    /// A metadata filter that does not parse.
    #[error("invalid filter {filter:?}: {error}")]
    InvalidFilter {
        /// The filter text.
        filter: String,
        /// What is wrong with it, and where.
        #[source]
        error: FilterError,
    },
    /// A delete or fetch that does not name exactly one selector.
    #[error("{operation} needs exactly one of {allowed}, got {given}")]
    SelectorCount {
        /// `delete` or `fetch`.
        operation: &'static str,
        /// The selectors it accepts, e.g. `ids, prefix, filter`.
        allowed: &'static str,
        /// How many were given.
        given: usize,
    },
    /// An update that changes nothing.
    #[error(
        "update of vector id {id:?} names nothing to update, expected at least one of vector, \
         sparseVector, metadata, data"
    )]
    EmptyUpdate {
        /// The record's id.
        id: String,
    },
    /// A text upsert's record without `data`.
    #[error("record {id:?} has no `data`, expected the text to embed")]
    MissingData {
        /// The record's id.
        id: String,
    },
    /// A text upsert's record that also carries a vector part the index makes from `data`.
    #[error("record {id:?} has `data` and `{part}`, expected only `data` (the index embeds it)")]
    VectorWithData {
        /// The record's id.
        id: String,
        /// `vector` or `sparseVector`.
        part: &'static str,
    },
    /// Text whose sparse part would be empty: no term survives the tokenizer.
    #[error(
        "`data` of record {id:?} has no terms to index (only stopwords, punctuation or nothing), expected at least one word"
    )]
    NoTerms {
        /// The record's id.
        id: String,
    },
    /// Text sent to an index without a model for one of its parts.
    #[error("this index has no {part} embedding model for text `data`: {hint}")]
    NoEmbedder {
        /// `dense` or `sparse`.
        part: &'static str,
        /// How to configure one.
        hint: &'static str,
    },
    /// The host's embedding model failed.
    #[error(transparent)]
    Embed(#[from] crate::vector::text::EmbedError),
    /// An attempt to delete the default namespace `""`.
    #[error("the default namespace cannot be deleted")]
    CannotDeleteDefaultNamespace,
    /// A namespace that does not exist.
    #[error("namespace {namespace:?} does not exist")]
    NamespaceNotFound {
        /// The namespace name.
        namespace: String,
    },
    /// Metadata nested deeper than the index allows (every stored metadata must survive a
    /// JSON round trip and a snapshot, and be walked without deep recursion).
    #[error(
        "metadata nested {depth} levels deep, expected at most {max} levels of objects and arrays"
    )]
    MetadataTooDeep {
        /// How deep it is nested (at least `max + 1`; counting stops there).
        depth: usize,
        /// The limit ([`METADATA_MAX_DEPTH`](crate::vector::METADATA_MAX_DEPTH)).
        max: usize,
    },
    /// A snapshot's bytes are not a valid index snapshot: wrong magic, a checksum mismatch, a
    /// malformed section or a record the index rejects.
    #[error("index snapshot is corrupt at byte {offset}: {reason}")]
    SnapshotCorrupt {
        /// Byte offset (from the snapshot's start) of the header or section at fault.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A snapshot that ends before its end marker (an interrupted write or copy).
    #[error("index snapshot is truncated: it ends at byte {offset}, before its end marker")]
    SnapshotTruncated {
        /// Where the bytes ran out.
        offset: u64,
    },
    /// A snapshot written in a format version this build does not read.
    #[error("index snapshot format version {found} is not supported, expected version {expected}")]
    SnapshotVersion {
        /// The version in the snapshot's header.
        found: u32,
        /// The version this build writes and reads.
        expected: u32,
    },
    /// The host's reader or writer failed while loading or saving a snapshot.
    #[error("index snapshot I/O error ({kind:?}): {message}")]
    SnapshotIo {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
}
