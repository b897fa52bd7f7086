//! Nearest-neighbour search over dense, sparse and hybrid vectors (DESIGN §2).
//!
//! The public surface has two levels:
//! - the record-level [`Index`] with namespaces, string ids, metadata and data, and the query
//!   contract of the reference service; its request and response types ([`Vector`], [`Query`],
//!   [`QueryResult`], [`Update`], [`Fetch`], [`Delete`], [`Range`], [`IndexInfo`], ...) carry
//!   the wire's JSON names so an HTTP layer can deserialize bodies straight into them;
//! - the low-level engines it is built from, public for hosts that manage their own records and
//!   for benchmarks: [`dense::DenseIndex`], [`sparse::SparseIndex`], [`fusion`] and [`filter`].
//!
//! Resumable queries ([`Index::resumable_query`], [`ResumableQuery`], [`ResumableQueries`]) rank a
//! namespace exactly once and hand out the ranking page by page; see [`ResumableQuery`] for what
//! pages see while writers run.
//!
//! Inside a namespace each string id maps to an internal `u32` slot (freed slots are reused);
//! the record layer keeps id, metadata and data per slot, the engines keep the vectors and give
//! them back as inserted. Score ties in every engine break by a [`TieBreak`] that compares the
//! records' string ids, so results are deterministic.

mod config;
pub mod dense;
mod error;
pub mod filter;
mod filtering;
pub mod fusion;
mod index;
mod merge_patch;
mod metric;
mod namespace;
mod ops;
mod persist;
mod query;
mod record;
mod resumable;
pub mod sparse;
pub mod text;
mod topk;
mod validate;
mod value_index;

pub use config::{Embedders, GraphParams, IndexConfig, IndexKind, Limits};
pub use error::VectorError;
pub(crate) use index::DENSE_EMBEDDER_HINT;
pub use index::{DEFAULT_NAMESPACE, Index};
pub use metric::Metric;
pub use ops::{
    Delete, DenseIndexInfo, Fetch, IndexInfo, MetadataUpdateMode, NamespaceInfo, Range,
    RangeResult, SparseIndexInfo, Update,
};
pub use persist::SNAPSHOT_FORMAT_VERSION;
pub use query::{FusionAlgorithm, Query, QueryMode, QueryResult, WeightingStrategy};
pub use record::{FetchResult, SparseVector, Vector};
pub use resumable::{ResumableError, ResumableLimits, ResumableQueries, ResumableQuery};
pub use topk::{TieBreak, TopK};
pub use validate::METADATA_MAX_DEPTH;
pub use value_index::{MAX_ARRAY_ELEMENTS, MAX_FIELDS, MAX_STRING_BYTES, ValueIndex};
